"""Shared pieces of the hardening tests: the corpus table and a bounded, isolated ``tokenbox`` run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "bad_inputs"
TABLE = CORPUS / "expected.yaml"
NOT_CASES = {"README.md", "expected.yaml", ".gitattributes"}

MEMORY_LIMIT = 2 * 1024**3  # address space of every CLI run: a bomb must fail, not swap
TIMEOUT = 60  # seconds; a hang guard only, never a performance assertion

# The child sets its own limit before importing tokenbox (preexec_fn is unsafe with threads).
_LAUNCH = (
    "import resource, runpy, sys;"
    "resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}));"
    "sys.argv = ['tokenbox', *sys.argv[1:]];"
    "runpy.run_module('tokenbox.core.commands.cli', run_name='__main__')"
)

_TOKENBOX_VARS = ("TOKENBOX_MAX_CTX", "TOKENBOX_TOKENIZER", "CONTEXT_MAX_TOKENS", "TOKENBOX_MAX_FILE_SIZE", "TOKENBOX_CACHE")


def load_table() -> dict[str, dict[str, Any]]:
    """``expected.yaml``: file name → ``{"error": class name or None, "at": [line, col] or None, "message": ...}``."""
    with open(TABLE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def corpus_files() -> list[str]:
    """Every case file of the corpus, sorted."""
    return sorted(p.name for p in CORPUS.iterdir() if p.is_file() and p.name not in NOT_CASES)


def isolated_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The current environment without tokenbox settings, with HOME and the XDG folders under ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in _TOKENBOX_VARS and not k.startswith("XDG_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
    )
    env.update(extra or {})
    return env


def run_cli(
    *args: str,
    home: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    child: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """``tokenbox ARGS`` isolated from the user's settings (``home``).

    In this process (``tokenbox.core.commands.cli.main`` with swapped streams) unless ``child`` is set, the
    run reads the real standard input (``stdin``, e.g. ``/dev/stdin``) or depends on the interpreter's
    start-up (``PYTHONIOENCODING``): then in a child limited to ``MEMORY_LIMIT`` bytes and ``TIMEOUT`` s.
    """
    if not child and stdin is None and "PYTHONIOENCODING" not in (env or {}):
        return run_main(args, environ=isolated_env(home, env), cwd=cwd)
    code = _LAUNCH.format(limit=MEMORY_LIMIT)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=isolated_env(home, env),
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


_BATCH = (
    "import base64, io, json, resource, sys;"
    "resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}));"
    "from tests.inprocess import run_main;"
    "jobs = json.load(sys.stdin); out = [];"
    "[out.append((r.returncode, base64.b64encode(r.stdout).decode(), base64.b64encode(r.stderr).decode()))"
    " for r in (run_main(job) for job in jobs)];"
    "sys.__stdout__.write(json.dumps(out))"
)


def run_batch(
    jobs: list[list[str]], *, home: Path, cwd: Path | None = None
) -> list[subprocess.CompletedProcess[bytes]]:
    """Every ``tokenbox JOB`` in ONE child limited to ``MEMORY_LIMIT`` bytes (a bomb must fail, not swap).

    Each job runs in-process in that child, one after the other, so the limit covers them all at
    the cost of a single interpreter start.
    """
    import base64
    import json

    done = subprocess.run(
        [sys.executable, "-c", _BATCH.format(limit=MEMORY_LIMIT)],
        cwd=cwd,
        env={**isolated_env(home), "PYTHONPATH": str(ROOT)},
        input=json.dumps(jobs).encode(),
        capture_output=True,
        timeout=TIMEOUT * 10,
        check=True,
    )
    return [
        subprocess.CompletedProcess(["tokenbox", *job], code, base64.b64decode(out), base64.b64decode(err))
        for job, (code, out, err) in zip(jobs, json.loads(done.stdout), strict=True)
    ]


def one_line_error(result: subprocess.CompletedProcess[bytes]) -> str:
    """The message of a bad-input run (after ``tokenbox: error: ``), checking exit 2, one line, no traceback."""
    err = result.stderr.decode("utf-8", errors="replace")
    assert result.returncode == 2, (result.returncode, err[:2000])
    assert "Traceback" not in err, err[:2000]
    assert err.startswith("tokenbox: error: ") and err.endswith("\n") and err.count("\n") == 1, err[:2000]
    assert "\r" not in err and "\x1b" not in err, err[:2000]
    return err[len("tokenbox: error: ") : -1]
