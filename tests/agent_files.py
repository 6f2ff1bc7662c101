"""The real Claude Code session of the agent-view tests (provenance: tests/tui/fixtures/README.md), and what
its files record, read here without tokenbox: the expected figures of those tests."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

ARCHIVE = Path(__file__).resolve().parent / "tui" / "fixtures" / "claude-code_2.1.39_autocompact_subagents.tar.gz"
TRANSCRIPT = "8463c716.jsonl"  # in the archive, beside its sub-agents' folder ``8463c716/subagents/``


def unpack(folder: Path) -> Path:
    """The session unpacked into ``folder``; the transcript's path."""
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(folder, filter="data")
    return folder / TRANSCRIPT


def requests_of(path: Path) -> list[tuple[str, dict]]:
    """``(model, usage)`` of each request of a transcript file, in file order: the last line of a message id
    carries its final usage; Claude Code's own ``<synthetic>`` notes were never sent."""
    found: dict[str, tuple[str, dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, dict) and message.get("model") != "<synthetic>":
            found[message["id"]] = (message["model"], message["usage"])
    return list(found.values())


def context(usage: dict) -> int:
    """The recorded context of a request: input + cache creation + cache read tokens (CONTRACT §7)."""
    return usage["input_tokens"] + usage.get("cache_creation_input_tokens", 0) + usage.get("cache_read_input_tokens", 0)
