"""How a Claude Code transcript's lines become nodes, requests and contexts, at the edges the usual layout
does not reach: a transcript that starts with a reply, a line written after later ones (one request's lines
interleaved with another's, before or across a compaction), a call and a result without ids, a main-thread
line that belongs to another thread's request or call. Each expected figure is worked out from the lines
written here (or from the same transcript written in order), not from the reader's code.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenbox.core import load_turns
from tokenbox.core.model.session import Session
from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers.claude_code import TranscriptFollower, TranscriptReader, read_transcript
from tokenbox.core.sources.readers.common import THINKING

KEEPS = "claude-opus-4-6"  # a model that keeps earlier turns' thinking (tests/importers/test_thinking_kept.py)
DROPS = "claude-sonnet-4-5-20250929"  # one that does not


def _usage(context: int, output: int = 2) -> dict:
    return {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": context - 103,
            "output_tokens": output}


def _user(uuid: str, parent: str | None, content: str | list[dict], **extra: object) -> dict:
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s",
            "message": {"role": "user", "content": content}, **extra}


def _reply(uuid: str, parent: str | None, mid: str, content: list[dict], usage: dict | None,
           model: str = DROPS, **extra: object) -> dict:
    message = {"id": mid, "role": "assistant", "model": model, "content": content, **({"usage": usage} if usage else {})}
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s",
            "message": message, **extra}


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _read(tmp_path: Path, rows: list[dict]) -> TranscriptReader:
    path = _write(tmp_path / "t.jsonl", rows)
    return read_transcript(path, Path(path).read_text(encoding="utf-8"))


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _texts(turn: Session) -> list[str]:
    return [s.text or "" for s in turn.sections if s.meta.get("category") != "reply"]


# ------------------------------------------------------------------ a transcript that starts with a reply


def test_a_transcript_that_starts_with_a_reply_has_nothing_before_it_and_cuts_no_thinking(tmp_path: Path) -> None:
    """The first request has no context (estimate and growth 0), and with a model that keeps earlier
    thinking no context ever leaves any out: the thinking cut stays exactly 0 from the first line on."""
    rows = [
        _reply("a1", None, "m1", [{"type": "thinking", "thinking": "where am I", "signature": "x"},
                                  {"type": "text", "text": "Starting over."}], _usage(9_000), KEEPS),
        _user("u1", "a1", "go on"),
        _reply("a2", "u1", "m2", _text("Going on."), _usage(9_100), KEEPS),
    ]
    reader = _read(tmp_path, rows)
    first, second = reader.threads["main"].requests
    assert (first.context, first.estimate, first.grown) == (None, 0.0, 0.0)
    for index in range(len(reader.nodes)):
        state = reader.state_of(index)
        assert state is not None and state.thinking > 0 and state.thinking_cut == 0.0
        assert state.estimate == state.visible + state.thinking
    assert second.estimate == reader.state_of(1).estimate > 0


def test_before_any_reply_a_prompt_strips_the_thinking_before_it(tmp_path: Path) -> None:
    """Before a reply names its model, a context is taken as one whose model drops earlier thinking: thinking
    written in a line that is no reply (here, in the first prompt's line) is cut by the next prompt."""
    rows = [
        _user("u1", None, [{"type": "thinking", "thinking": "a thought pasted in", "signature": "x"},
                           {"type": "text", "text": "look at this"}]),
        _user("u2", "u1", "and this"),
        _reply("a1", "u2", "m1", _text("Looked."), _usage(9_000)),
    ]
    reader = _read(tmp_path, rows)
    context = reader.threads["main"].requests[0].context
    assert context is not None
    assert any(b.role == THINKING for m in context.messages() for b in m.blocks)
    assert context.thinking > 0 and context.thinking_cut == context.thinking
    assert context.estimate == context.visible  # the thinking is sent to no model after the second prompt


# ------------------------------------------------------------------ a line written after later ones


def _interleaved() -> list[dict]:
    """Request m1 (a call), its result, request m2, then m1's last line (its final usage and a text) written
    late, m2's own later line without usage, a prompt and request m3."""
    call = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls src"}}
    return [
        _user("u1", None, "list the sources"),
        _reply("a1", "u1", "m1", [call], _usage(20_000, 5)),
        _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "c1", "content": "main.py util.py"}]),
        _reply("a2", "r1", "m2", _text("Two files."), _usage(20_500, 7)),
        _reply("a1b", "a1", "m1", _text("a late note of the first reply"), _usage(20_000, 90)),
        _reply("a2b", "a2", "m2", _text("Both small."), None),
        _user("u2", "a2b", "and the tests?"),
        _reply("a3", "u2", "m3", _text("None yet."), _usage(21_000, 4)),
    ]


def test_a_late_line_of_an_earlier_request_joins_it_and_the_contexts_after_it(tmp_path: Path) -> None:
    rows = _interleaved()
    path = _write(tmp_path / "t.jsonl", rows)
    reader = read_transcript(path, Path(path).read_text(encoding="utf-8"))
    requests = reader.threads["main"].requests
    # each line goes to its own request (by message id), whichever request came last
    assert [r.lines for r in requests] == [(2, 5), (4, 6), (8,)]
    # a request's usage is its last line with usage: m1's late line's; m2's line without usage changes nothing
    assert [r.usage.output_tokens for r in requests] == [90, 7, 4]
    # the third request's context holds the late line where m1's reply is: as the file written in order gives it
    in_order = [rows[i] for i in (0, 1, 4, 2, 3, 5, 6, 7)]
    turns, ordered = load_turns(path), load_turns(_write(tmp_path / "ordered.jsonl", in_order))
    assert len(turns) == len(ordered) == 3
    assert "a late note of the first reply" in "\n".join(_texts(turns[2]))
    assert _texts(turns[2]) == _texts(ordered[2])


def test_a_late_line_of_a_request_before_a_compaction_reads_the_file_again_keeping_it_all(tmp_path: Path) -> None:
    """A followed reader drops what the main thread held before its last compaction; a line of a request
    from before it, written after it (here a root line: nothing else of it continues from a dropped node),
    needs that request: the follower reads the file again, keeping it all, and the request is as a reader
    that keeps everything reads it."""
    rows = [
        _user("u1", None, "first task"),
        _reply("a1", "u1", "m1", _text("Done with the first."), _usage(20_000, 5)),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "sessionId": "s",
         "isSidechain": False, "logicalParentUuid": "a1", "compactMetadata": {"trigger": "auto", "preTokens": 20_000}},
        _user("s1", "b1", "This session is being continued. Summary: one task.", isCompactSummary=True,
              isVisibleInTranscriptOnly=True),
        _user("u2", "s1", "second task"),
        _reply("a2", "u2", "m2", _text("Done with the second."), _usage(12_000, 6)),
    ]
    path = _write(tmp_path / "t.jsonl", rows)
    follower = TranscriptFollower(path, None)
    assert not follower.read().history_needed
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(_reply("a1b", None, "m1", _text("a late word"), _usage(20_000, 40))) + "\n")
    reader = follower.read()
    assert follower.resets == 1 and not reader.history_needed
    first = reader.threads["main"].requests[0]
    assert first.lines == (2, 7) and first.usage.output_tokens == 40
    kept = TranscriptFollower(path, None, drop_history=False).read().main_turns()
    assert reader.main_turns()[0] == kept[0]


# ------------------------------------------------------------------ a call and a result without ids


def test_a_result_without_a_call_id_continues_from_its_own_parent(tmp_path: Path) -> None:
    """A call and a result that carry no id are matched to nothing: the result line continues from the line
    it names as its parent (the reply after the call), which the next request's context therefore holds."""
    rows = [
        _user("u1", None, "run it"),
        _reply("a1", "u1", "m1", [{"type": "tool_use", "name": "Bash", "input": {"command": "make"}}], _usage(9_000)),
        _reply("a2", "a1", "m2", _text("an answer between the call and its result"), _usage(9_100)),
        _user("r1", "a2", [{"type": "tool_result", "content": "built"}]),
        _reply("a3", "r1", "m3", _text("Built."), _usage(9_200)),
    ]
    turns = load_turns(_write(tmp_path / "t.jsonl", rows))
    assert len(turns) == 3
    texts = "\n".join(_texts(turns[2]))
    assert "an answer between the call and its result" in texts and "built" in texts


# ------------------------------------------------------------------ a main-thread line of another thread's


def _with_agent(last: dict) -> list[dict]:
    """A main thread's call, a sub-agent's line answering it, and ``last`` (a main-thread line) at the end."""
    call = {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}}
    return [
        _user("u1", None, "list it"),
        _reply("a1", "u1", "m1", [call], _usage(9_000)),
        _reply("x1", None, "mx", _text("the agent's reply"), _usage(3_000), isSidechain=True, agentId="ag"),
        _user("x2", "a1", [{"type": "tool_result", "tool_use_id": "c1", "content": "from the agent"}],
              isSidechain=True, agentId="ag"),
        last,
    ]


def _read_whole_at_once(path: str) -> None:
    """A one-shot read of the main thread knows from the line itself that the main thread needs another
    thread's (the crossing line is the last: no context is built through it while reading), and the session
    it gives is the whole read's."""
    light = TranscriptFollower(path, 1 << 30).read_main_only()
    assert light.whole_read_needed
    assert Loader(one_shot=True).load_session(path) == Loader().load_session(path)


def test_a_main_thread_line_of_an_agents_request_is_seen_at_once(tmp_path: Path) -> None:
    _read_whole_at_once(_write(tmp_path / "t.jsonl", _with_agent(_reply("a2", "a1", "mx", _text("more"), _usage(9_100)))))


def test_a_main_thread_result_joining_an_agents_results_is_seen_at_once(tmp_path: Path) -> None:
    last = _user("r1", "a1", [{"type": "tool_result", "tool_use_id": "c1", "content": "from the main thread"}])
    _read_whole_at_once(_write(tmp_path / "t.jsonl", _with_agent(last)))
