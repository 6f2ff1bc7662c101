"""``tokenbox check --stable-prefix`` and ``--max-growth`` at their boundaries (CONTRACT §10), on
transcripts whose recorded usage is chosen here.

Growth is the difference of the two recorded contexts: exactly ``N`` passes, ``N + 1`` fails. The cache
rule: the newest request reading less from the cache than the earlier one had (read + written) by more
than 1024 tokens is a break; by exactly 1024 it is not.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.inprocess import run_main


def _usage(write: int, read: int) -> dict:
    return {"input_tokens": 5, "cache_creation_input_tokens": write, "cache_read_input_tokens": read, "output_tokens": 7}


def _user(uuid: str, parent: str | None, text: str) -> dict:
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "g", "version": "2.1.0",
            "message": {"role": "user", "content": text}}


def _reply(uuid: str, parent: str, mid: str, usage: dict, thinking: bool = False) -> dict:
    content = [{"type": "thinking", "thinking": f"pondering {mid}", "signature": "sig"}] if thinking else []
    content.append({"type": "text", "text": f"answer {mid}"})
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "g", "version": "2.1.0",
            "message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5", "content": content, "usage": usage}}


def _write(path: Path, lines: list[dict]) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


def _two_requests(tmp_path: Path, first: dict, second: dict, *, rewound: bool = False, thinking: bool = False) -> str:
    lines = [_user("u1", None, "first question"), _reply("a1", "u1", "m1", first, thinking=thinking)]
    if rewound:  # the second request starts over from a different first message
        lines += [_user("v1", None, "a different first question"), _reply("a2", "v1", "m2", second)]
    else:
        lines += [_user("u2", "a1", "second question"), _reply("a2", "u2", "m2", second)]
    return _write(tmp_path / "t.jsonl", lines)


def _context(usage: dict) -> int:
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def test_max_growth_passes_at_exactly_the_growth_and_fails_one_below(tmp_path):
    first, second = _usage(2000, 10_000), _usage(500, 13_000)
    path = _two_requests(tmp_path, first, second)
    growth = _context(second) - _context(first)
    assert run_main(["check", path, "--max-growth", str(growth)]).returncode == 0
    failed = run_main(["check", path, "--max-growth", str(growth - 1)])
    assert failed.returncode == 1
    assert (f"turn 2 grew by {growth} tokens ({_context(first)} → {_context(second)}), more than --max-growth {growth - 1}"
            in failed.stderr.decode())
    one = run_main(["check", path, "--turn", "1", "--max-growth", "0"])  # one turn: nothing to compare
    assert one.returncode == 0 and f"note: {path}: one turn only, nothing to compare with" in one.stdout.decode()


def test_stable_prefix_holds_when_the_newer_request_extends_the_earlier_one(tmp_path):
    first, second = _usage(2000, 10_000), _usage(500, 12_000)  # read 12000 >= 12000 cached: the cache held
    path = _two_requests(tmp_path, first, second, thinking=True)  # thinking is stripped by the API: not a break
    result = run_main(["check", path, "--stable-prefix"])
    assert result.returncode == 0, result.stderr


def test_a_request_that_does_not_start_with_the_earlier_one_breaks_the_prefix(tmp_path):
    path = _two_requests(tmp_path, _usage(2000, 10_000), _usage(500, 12_000), rewound=True)
    result = run_main(["check", path, "--stable-prefix"])
    assert result.returncode == 1
    assert result.stderr.decode() == (f"tokenbox: check failed: {path}: turn 2: part 1 of the earlier request "
                                      "(user: first question) is not where the newest request starts\n")


def test_a_cache_read_short_by_more_than_the_slack_is_a_break(tmp_path):
    cached = 2000 + 10_000  # what the first request read and wrote
    at_slack = _two_requests(tmp_path, _usage(2000, 10_000), _usage(3000, cached - 1024))
    assert run_main(["check", at_slack, "--stable-prefix"]).returncode == 0
    past_slack = _two_requests(tmp_path, _usage(2000, 10_000), _usage(3000, cached - 1025))
    result = run_main(["check", past_slack, "--stable-prefix"])
    assert result.returncode == 1
    assert f"the newest request read {cached - 1025} tokens from the cache, the one before had {cached} cached" in result.stderr.decode()
    no_cache = _two_requests(tmp_path, _usage(0, 0), _usage(0, 0))  # nothing cached before: nothing to miss
    assert run_main(["check", no_cache, "--stable-prefix"]).returncode == 0


def test_a_pending_newest_turn_is_compared_by_its_parts_only(tmp_path):
    """The newest turn not sent yet (a user message after the last request) has no usage: the cache rule
    does not apply, its parts still extend the earlier request's."""
    lines = [_user("u1", None, "first question"), _reply("a1", "u1", "m1", _usage(2000, 10_000)),
             _user("u2", "a1", "second question")]
    path = _write(tmp_path / "pending.jsonl", lines)
    result = run_main(["check", path, "--stable-prefix"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().startswith(f"ok: {path}: ≈")  # the pending turn's headline is a prediction


def test_a_newer_request_holding_less_than_the_earlier_one_breaks_the_prefix(tmp_path):
    """Rewound to the first message: the newest request holds only what started the earlier one."""
    lines = [_user("u1", None, "first question"), _reply("a1", "u1", "m1", _usage(2000, 10_000)),
             _user("u2", "a1", "second question"), _reply("a2", "u2", "m2", _usage(500, 12_000)),
             _reply("a3", "u1", "m3", _usage(0, 12_005))]  # answered u1 again: a request of u1 alone
    path = _write(tmp_path / "rewound.jsonl", lines)
    result = run_main(["check", path, "--stable-prefix"])
    assert result.returncode == 1
    assert "turn 3: part 2 of the earlier request" in result.stderr.decode()
