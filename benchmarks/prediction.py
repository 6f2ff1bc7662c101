"""Figure 10: how close the pending-request prediction comes to what the request then recorded.

Over the real Claude Code transcripts in ``tests/fixtures/real_sessions`` (the project's own copies,
provenance in their README; the two hand-written ``claude-code_fixture_*`` files are left out: their
usage is made up), every main-thread request from the thread's second on is predicted as an inspector
would see it while the agent waits: the transcript cut just before that request's first assistant
line. The error is |predicted − recorded| / recorded, recorded = input + cache creation + cache read.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

REAL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real_sessions"


def transcripts() -> list[Path]:
    """The real Claude Code transcripts (main sessions and sub-agent files alike), sorted."""
    found = [p for p in REAL.rglob("*.jsonl")
             if not any(part.startswith("claude-code_fixture_") for part in p.relative_to(REAL).parts)]
    return sorted(p for p in found if _is_claude_code(p))


def _is_claude_code(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            return any('"sessionId"' in line and '"uuid"' in line for line in handle)
    except (OSError, UnicodeDecodeError):
        return False


def requests(lines: list[str]) -> list[tuple[int, int]]:
    """(first line index, recorded context) of each main-thread request with usage, in file order."""
    found: dict[str, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") != "assistant" or entry.get("isSidechain") or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if message.get("model") == "<synthetic>" or not isinstance(usage, dict) or "id" not in message:
            continue
        context = (usage.get("input_tokens") or 0) + (usage.get("cache_creation_input_tokens") or 0) \
            + (usage.get("cache_read_input_tokens") or 0)
        found.setdefault(message["id"], (index, context))
    return list(found.values())


def prediction_errors(workdir: str) -> list[float]:
    """The relative error of each predicted request (from each thread's second request on)."""
    from tokenbox.core import Engine, load_session

    errors: list[float] = []
    for path in transcripts():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        engine = Engine()
        for number, (first, recorded) in enumerate(requests(lines)):
            if number == 0 or recorded <= 0:
                continue
            cut = os.path.join(workdir, "pending.jsonl")
            with open(cut, "w", encoding="utf-8") as handle:
                handle.writelines(lines[:first])
            plan = engine.plan(load_session(cut))
            if not plan.pending:
                continue  # a cut that ends on the thread's own reply is not a pending request
            errors.append(abs(plan.tokens_after - recorded) / recorded)
    return errors


def summary(errors: list[float]) -> tuple[float, float]:
    """(median, max) of ``errors``, in percent."""
    return statistics.median(errors) * 100, max(errors) * 100
