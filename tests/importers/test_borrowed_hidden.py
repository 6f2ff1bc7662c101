"""A Claude Code session with no recorded request yet borrows the hidden part (system prompt, tools,
memory) from the newest other session of the same project folder (CONTRACT §7, ``truth.project_hidden``).

The figure is fixed by construction, not by the estimator: the sibling recorded ``C`` tokens for a
request holding exactly what the new session is about to send, so the same hidden part plus the same
visible part is ``C`` again. A sibling with the same session id (the file itself, copied or renamed) is
not a source; without any sibling the figure is unknown (a floor, with a warning).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tokenbox.core import Engine, load_session

RECORDED = 31_337
PROMPT = "Summarise the open issues in this repository and propose the next step."


def _user(session: str) -> dict:
    return {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False, "sessionId": session, "version": "2.1.0",
            "message": {"role": "user", "content": PROMPT}}


def _recorded(session: str) -> list[dict]:
    usage = {"input_tokens": 4, "cache_creation_input_tokens": 1200, "cache_read_input_tokens": RECORDED - 1204, "output_tokens": 9}
    return [_user(session), {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": False, "sessionId": session,
                             "version": "2.1.0", "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                                                             "content": [{"type": "text", "text": "On it."}], "usage": usage}}]


def _write(path: Path, lines: list[dict], mtime: int) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    os.utime(path, ns=(mtime, mtime))
    return path


def test_the_hidden_part_comes_from_the_newest_sibling_session(tmp_path):
    _write(tmp_path / "older.jsonl", _recorded("older"), 1_000_000_000_000_000_000)
    _write(tmp_path / "sibling.jsonl", _recorded("sibling"), 1_000_000_100_000_000_000)
    new = _write(tmp_path / "new.jsonl", [_user("new")], 1_000_000_200_000_000_000)
    session = load_session(new)
    assert session.pending
    plan = Engine().plan(session)
    assert plan.tokens_after == RECORDED  # the same hidden part + the same visible request
    assert plan.headline_kind == "predicted"
    assert "sibling.jsonl" in plan.calibration.method and "borrowed" in plan.calibration.method
    assert sum(s.tokens_after for s in plan.sections) + plan.joins == plan.tokens_after


def test_a_sibling_of_the_same_session_id_is_not_a_source(tmp_path):
    _write(tmp_path / "copy.jsonl", _recorded("same"), 1_000_000_100_000_000_000)
    new = _write(tmp_path / "new.jsonl", [_user("same")], 1_000_000_200_000_000_000)
    plan = Engine().plan(load_session(new))
    # not borrowed from a copy of itself: Claude Code's typical hidden part instead (≈, said so)
    assert plan.calibration is not None and "borrowed" not in plan.calibration.method
    assert plan.calibration.hidden == 25_900 and any("typical hidden part" in w for w in plan.warnings)


def test_without_a_sibling_the_hidden_part_is_unknown(tmp_path):
    new = _write(tmp_path / "alone.jsonl", [_user("alone")], 1_000_000_200_000_000_000)
    plan = Engine().plan(load_session(new))
    assert plan.calibration.hidden == 25_900 and plan.tokens_after < 25_900 + 100  # the typical part and the line
    assert "borrowed" not in plan.calibration.method
