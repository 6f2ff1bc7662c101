"""A Codex rollout read a line at a time and followed as it grows (``readers/codex_follow.RolloutFollower``).

* followed == cold: a rollout written a piece at a time (at every line end, just before it, inside a line)
  and loaded by one loader after each piece gives what a fresh loader gives for the same bytes, and each
  line was parsed once;
* an append costs its own lines: the lines parsed per appended request are the request's lines, the
  same after a few requests as after hundreds (counted, never timed);
* the limit of a rollout is the one of a read a block at a time (``DEFAULT_MAX_STREAMED_BYTES``), not the
  one of a file read whole (smaller limits injected here; the defaults are 64 and 512 MiB).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from tokenbox.core.model.errors import FileTooLarge, SessionError
from tokenbox.core.sources import files
from tokenbox.core.sources.formats import FORMATS
from tokenbox.core.sources.loader import Loader

FIXTURES = Path(__file__).parent / "fixtures"
ROLLOUTS = sorted([*FIXTURES.glob("codex_rollout_*.jsonl"), *FIXTURES.glob("truth/codex_*.jsonl")])
TRUTH = FIXTURES / "truth" / "codex_0.104_gpt-5.3-codex_reasoning_localpush.jsonl"


class Counted:
    """The formats table with the ``codex`` row's follower kept, to read its public counters."""

    def __init__(self) -> None:
        self.followers: list = []
        rows = []
        for row in FORMATS:
            if row.name == "codex":
                assert row.follow is not None, "a Codex rollout has a follower"
                make = row.follow

                def follow(path: str, max_bytes: int | None, make=make):
                    follower = make(path, max_bytes)
                    self.followers.append(follower)
                    return follower

                row = dataclasses.replace(row, follow=follow)
            rows.append(row)
        self.formats = tuple(rows)


def _outcome(loader: Loader, path: Path) -> object:
    """What a load gives: every turn's number, sections, headline, meta and warnings, or the error."""
    try:
        turns = loader.load_turns(path)
    except SessionError as exc:
        return type(exc).__name__, str(exc)
    return [(t.turn, t.turn_count, len(t.history), t.sections, t.context_tokens, t.recorded, t.meta, t.warnings, t.window)
            for t in turns]


def _cuts(data: bytes) -> list[int]:
    ends = [i + 1 for i, byte in enumerate(data) if byte == 10]
    inside = [end - 2 for end in ends if end > 2] + [end - 9 for end in ends if end > 9]  # the last line complete, or half
    return sorted({*ends, *inside, len(data)})


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=lambda p: p.name)
def test_a_followed_rollout_reads_as_the_whole_file_at_every_cut(tmp_path: Path, rollout: Path) -> None:
    data = rollout.read_bytes()
    path = tmp_path / "rollout-live.jsonl"
    path.write_bytes(b"")
    counted = Counted()
    followed = Loader(formats=counted.formats)
    written = 0
    for cut in _cuts(data):
        with path.open("ab") as handle:
            handle.write(data[written:cut])
        written = cut
        assert _outcome(followed, path) == _outcome(Loader(), path), f"{rollout.name} cut at byte {cut}"
    lines = [line for line in data.split(b"\n") if line.strip()]
    (follower,) = counted.followers
    # each line parsed once, whole; a last line read while it had no newline yet is not parsed again
    assert follower.resets == 0 and follower.lines_parsed == len(lines)


def _request(number: int) -> list[str]:
    """One request's lines: the user's message, its usage, the model's reasoning and reply."""
    usage = {"input_tokens": 1000 + number, "cached_input_tokens": 0, "output_tokens": 7, "reasoning_output_tokens": 3}
    records = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"q{number}"}]},
        {"type": "token_count", "info": {"total_token_usage": {"input_tokens": number}, "last_token_usage": usage,
                                         "model_context_window": 272000}},
        {"type": "reasoning", "summary": [], "encrypted_content": f"gAAA{number}"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"a{number}"}]},
    ]
    return [json.dumps({"type": "event_msg" if record["type"] == "token_count" else "response_item", "payload": record})
            for record in records]


def test_an_appended_request_costs_its_own_lines_whatever_came_before(tmp_path: Path) -> None:
    path = tmp_path / "rollout-grow.jsonl"
    path.write_bytes(TRUTH.read_bytes())
    counted = Counted()
    loader = Loader(formats=counted.formats)
    assert loader.load_turns(path)
    (follower,) = counted.followers
    parsed = []
    for number in range(1, 301):
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in _request(number)))
        before = follower.lines_parsed
        turns = loader.load_turns(path)
        parsed.append(follower.lines_parsed - before)
        assert turns[-1].recorded.context_tokens == 1000 + number
    assert parsed == [4] * 300 and follower.resets == 0
    newest = Loader().load_turns(path)[-1]
    assert (turns[-1].sections, turns[-1].meta, turns[-1].turn_count) == (newest.sections, newest.meta, newest.turn_count)


def test_a_replaced_rollout_is_read_again_from_the_top(tmp_path: Path) -> None:
    path = tmp_path / "rollout-replaced.jsonl"
    data = TRUTH.read_bytes()
    path.write_bytes(data)
    counted = Counted()
    loader = Loader(formats=counted.formats)
    first = len(loader.load_turns(path))
    shorter = b"".join(data.splitlines(keepends=True)[:40])
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(shorter)
    replacement.replace(path)
    assert _outcome(loader, path) == _outcome(Loader(), path)
    assert len(loader.load_turns(path)) < first and counted.followers[-1].resets == 1


def _big_rollout(path: Path, size: int) -> None:
    data = TRUTH.read_bytes().splitlines(keepends=True)
    with path.open("wb") as handle:
        handle.write(data[0])
        written = len(data[0])
        while written < size:
            body = b"".join(data[1:])
            handle.write(body)
            written += len(body)


def test_a_rollout_is_limited_as_a_read_a_block_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "rollout-big.jsonl"
    _big_rollout(path, 200_000)
    monkeypatch.setattr(files, "DEFAULT_MAX_FILE_BYTES", 100_000)  # what a file read whole may be
    turns = Loader().load_turns(path)
    assert len(turns) > 7 and turns[-1].recorded is not None
    assert Loader(one_shot=True).load_session(path).recorded == turns[-1].recorded
    monkeypatch.setattr(files, "DEFAULT_MAX_STREAMED_BYTES", 150_000)  # what a read a block at a time may be
    with pytest.raises(FileTooLarge):
        Loader().load_turns(path)
    with pytest.raises(FileTooLarge):  # a limit given is the limit of every read
        Loader().load_turns(path, max_bytes=150_000)


def test_a_bad_line_is_named_where_it_is(tmp_path: Path) -> None:
    lines = TRUTH.read_text(encoding="utf-8").split("\n")
    lines[9] = '{"type": "event_msg", "payload": {bad json'
    path = tmp_path / "rollout-bad.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(SessionError) as caught:
        Loader().load_turns(path)
    assert str(caught.value).startswith(f"{path}:10:35: expected a quoted key")
    turns, warnings = Loader().load_turns_skipping(path)
    assert len(turns) == 6 and warnings == (f"{path}:10:35: expected a quoted key (JSON keys are strings in double quotes)"
                                            " — line 10 skipped",)


def test_turns_handed_out_before_an_append_stay_as_the_file_was(tmp_path: Path) -> None:
    path = tmp_path / "rollout-earlier.jsonl"
    data = TRUTH.read_bytes()
    path.write_bytes(data)
    loader = Loader()
    earlier = loader.load_turns(path)  # nothing built yet
    cold = _outcome(Loader(), path)
    with path.open("a", encoding="utf-8") as handle:  # a line every turn's warnings now name
        handle.write('{"type": "weird", "payload": {}}\n')
    later = loader.load_turns(path)
    assert "not a rollout record" in later[0].meta["warnings"][-1]
    assert _outcome_of(earlier) == cold


def _outcome_of(turns: object) -> list:
    return [(t.turn, t.turn_count, len(t.history), t.sections, t.context_tokens, t.recorded, t.meta, t.warnings, t.window)
            for t in turns]  # type: ignore[attr-defined]
