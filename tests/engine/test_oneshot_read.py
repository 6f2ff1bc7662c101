"""A Claude Code transcript read for a one-shot command: its lines parsed from their bytes (decoded once, by
the JSON decoder) with the outcome of reading the decoded text, errors placed as before; the reader freed
as soon as its loader forgets it; the plan's JSON written as ``json.dumps(indent=2)`` writes it."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.commands.jsonwrite import IndentedJson
from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import MAIN_THREAD as MAIN
from tokenbox.core.parse import fastjson
from tokenbox.core.sources.files import decode_text
from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers.claude_code import TranscriptFollower, TranscriptReader, read_transcript

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"

# lines a transcript may hold that the two ways of reading could tell apart
HOSTILE = [
    b'{"type":"user","message":{"role":"user","content":"lone \\ud800 half"},"uuid":"h1","parentUuid":null}',
    b'{"type":"user","message":{"role":"user","content":"a pair \\ud83d\\ude00 whole"},"uuid":"h2","parentUuid":"h1"}',
    "\u3000".encode(),  # blank as text (str.strip), not as bytes
    b"\x1c\x1d",  # blank as text too
    "\ufeff{}".encode(),  # a byte-order mark inside the file: not JSON
    b'{"type":"user","message":{"role":"user","content":"x"},"n":NaN}',
    b'{"type":"user","message":{"role":"user","content":"big"},"n":123456789012345678901234567890}',
    b'{"type":"user","message":{"role":"user","content":"crlf"},"uuid":"h3","parentUuid":"h2"}\r',
    b"[1, 2",
    b"   ",
    '{"type":"user","message":{"role":"user","content":"caf\u00e9 \u65e5\u672c"},"uuid":"h4","parentUuid":"h3"}'.encode(),
]


@pytest.fixture
def accelerated() -> None:
    """The fast decoder in use from the first line (it is imported after 1 M characters otherwise)."""
    assert fastjson.accelerated()


def _outcome(reader: TranscriptReader) -> tuple:
    turns = reader.main_turns()
    return reader.warnings, reader.warning_count, reader.lines_read, len(turns), turns[-1]


def test_lines_read_from_bytes_give_what_the_decoded_text_gives(tmp_path: Path, accelerated: None) -> None:
    lines = REAL.read_bytes().split(b"\n")[:-1]
    for k, line in enumerate(HOSTILE):  # spread among the real lines
        lines.insert(1 + 5 * k, line)
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    follower = TranscriptFollower(str(path), 1 << 30)
    assert _outcome(follower.read()) == _outcome(read_transcript(str(path), data.decode("utf-8")))
    assert follower.lines_parsed == follower.reader.lines_read


def test_lines_are_parsed_from_their_bytes(tmp_path: Path, accelerated: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the fast decoder is in use no line of an ordinary transcript is decoded to text first."""
    decoded: list[int] = []
    original = TranscriptReader.feed_text

    def feed_text(self: TranscriptReader, number: int, text: str) -> None:
        decoded.append(number)
        original(self, number, text)

    monkeypatch.setattr(TranscriptReader, "feed_text", feed_text)
    path = tmp_path / "t.jsonl"
    path.write_bytes(REAL.read_bytes())
    reader = TranscriptFollower(str(path), 1 << 30).read()
    assert reader.lines_read > 20 and decoded == []


@pytest.mark.parametrize("far", [False, True])  # in the first block read, or in a later one
def test_invalid_utf8_is_the_error_a_decoded_read_gives(tmp_path: Path, accelerated: None, far: bool) -> None:
    real = REAL.read_bytes()
    head = real * (1 + (1_200_000 // len(real))) if far else real
    bad = b'{"type":"user","message":{"role":"user","content":"caf\xc3 au lait"},"uuid":"b1","parentUuid":null}\n'
    data = head + bad + real
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    with pytest.raises(SessionError) as expected:
        decode_text(data, str(path))
    with pytest.raises(SessionError) as got:
        TranscriptFollower(str(path), 1 << 30).read()
    assert (got.value.line, got.value.col, str(got.value)) == (expected.value.line, expected.value.col, str(expected.value))
    assert got.value.line == head.count(b"\n") + 1


def test_a_forgotten_transcript_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    """A one-shot command's loader forgets what it read before the plan is made: the reader (its threads'
    turns refer back to it) must go then, not at the next full collection."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(REAL.read_bytes())
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        def readers() -> list[TranscriptReader]:
            return [o for o in gc.get_objects() if type(o) is TranscriptReader and o.path == str(path)]

        loader = Loader()
        session = loader.load_session(str(path))
        assert readers()
        loader.forget()
        del loader
        assert readers() == []
        assert session.sections  # the session stays whole
    finally:
        if enabled:
            gc.enable()


def test_a_followed_transcript_keeps_its_turns_until_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(REAL.read_bytes())
    loader = Loader()
    first = loader.load_turns(str(path))
    assert loader.load_turns(str(path)) is first  # nothing appended: the same turns (the planner's caches know them)
    loader.forget(str(path))
    again = loader.load_turns(str(path))
    assert again is not first and again[-1] == first[-1]


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text())
_KEYS = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.none(), st.booleans(), st.floats())
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=30,
)


def _either(encode, value) -> object:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_plan_json_is_json_dumps_with_indent_2(value: object) -> None:
    assert _either(lambda v: "".join(IndentedJson().pieces(v)), value) == _either(
        lambda v: json.dumps(v, ensure_ascii=False, indent=2), value)


def test_plan_json_of_odd_values_is_json_dumps_with_indent_2() -> None:
    import enum

    class Number(enum.IntEnum):
        THREE = 3

    class Text(str):
        pass

    cycle: list = []
    cycle.append([1, cycle])
    looped: dict = {}
    looped["a"] = [{"b": looped}]
    for value in (cycle, looped, {"a": object()}, [Number.THREE, {Number.THREE: Text("x")}], {"a": {Text("k"): [1]}},
                  {"nan": float("nan"), "inf": [float("-inf")], "": {}}, [[], {}, [[]], ()], "just text", 1.0, None):
        assert _either(lambda v: "".join(IndentedJson().pieces(v)), value) == _either(
            lambda v: json.dumps(v, ensure_ascii=False, indent=2), value)


def test_plan_json_encodes_each_section_in_one_piece() -> None:
    """A plan's sections are flat objects: one piece each, not one per key, value and separator."""
    sections = [{"id": f"m{k}", "tokens": k, "lenses": [], "label": "a → b", "ok": True, "x": None} for k in range(500)]
    plan = {"schema": "tokenbox.plan/1", "sections": sections, "steps": [], "budget": {"max_ctx": 1}}
    pieces = list(IndentedJson().pieces(plan))
    assert "".join(pieces) == json.dumps(plan, ensure_ascii=False, indent=2)
    assert len(pieces) < len(sections) + 20



# ------------------------------------------------------------------ a one-shot read of the main thread only


def _crafted(rows: list[dict], case: str) -> list[dict]:
    """The real transcript changed so that its main thread needs a sub-agent's line (or has no turn)."""
    rows = [dict(r) for r in rows]
    side = [r for r in rows if r.get("isSidechain") is True]
    main_at = [i for i, r in enumerate(rows) if r.get("isSidechain") is not True]
    last_side = rows.index(side[-1])
    later_main = [i for i in main_at if i > last_side]
    if case == "parent":  # a main-thread request continues from a sub-agent's line
        ids = [rows[i]["message"].get("id") if rows[i]["type"] == "assistant" else None for i in later_main]
        first = next(later_main[k] for k in range(1, len(ids)) if ids[k] is not None and ids[k] != ids[k - 1])
        rows[first]["parentUuid"] = side[3]["uuid"]
    elif case == "result":  # a main-thread tool result answers a sub-agent's call
        call = next(r for r in side if r["type"] == "assistant" and r["message"]["content"][0]["type"] == "tool_use")
        target = next(i for i in later_main if rows[i]["type"] == "user" and isinstance(rows[i]["message"]["content"], list))
        message = dict(rows[target]["message"])
        block = dict(message["content"][0])
        block["tool_use_id"] = call["message"]["content"][0]["id"]
        message["content"] = [block]
        rows[target]["message"] = message
    elif case == "request":  # a main-thread reply line carries a sub-agent's request id
        target = next(i for i in later_main if rows[i]["type"] == "assistant")
        message = dict(rows[target]["message"])
        message["id"] = next(r for r in side if r["type"] == "assistant")["message"]["id"]
        rows[target]["message"] = message
    elif case == "pending":  # the main thread ends with input that continues from a sub-agent's line
        rows.append({**rows[0], "uuid": "pending-1", "parentUuid": side[3]["uuid"],
                     "message": {"role": "user", "content": "and now?"}})
    elif case == "no-main":  # only the sub-agents' lines: the default thread is one of theirs
        rows = side
    return rows


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _sessions_equal(path: str) -> None:
    assert Loader(one_shot=True).load_session(path) == Loader().load_session(path)


@pytest.mark.parametrize("case", ["parent", "result", "request", "pending", "no-main"])
def test_a_main_thread_that_needs_a_sub_agent_line_is_read_whole(tmp_path: Path, case: str) -> None:
    rows = [json.loads(line) for line in REAL.read_text(encoding="utf-8").splitlines()]
    path = _write(tmp_path / "t.jsonl", _crafted(rows, case))
    light = TranscriptFollower(path, 1 << 30).read_main_only()
    light.main_turns_only()
    assert light.whole_read_needed or case == "no-main"  # read again, whole
    _sessions_equal(path)


def test_a_one_shot_read_keeps_no_sub_agent_block(tmp_path: Path) -> None:
    path = str(tmp_path / "t.jsonl")
    Path(path).write_bytes(REAL.read_bytes())
    reader = TranscriptFollower(path, 1 << 30).read_main_only()
    assert not reader.whole_read_needed
    others = [node for node in reader.nodes if node.thread != "main"]
    assert others and all(not node.blocks for node in others)
    assert all(r.context is None for name, t in reader.threads.items() if name != "main" for r in t.requests)
    _sessions_equal(path)


def _claude_code_logs() -> list[Path]:
    found = []
    for base in (ROOT / "tests", ROOT / "sample_sessions"):
        for path in sorted(base.rglob("*.jsonl")):
            head = path.read_bytes()[:4000]
            if b'"sessionId"' in head or b'"parentUuid"' in head:
                found.append(path)
    return found


@pytest.mark.parametrize("path", _claude_code_logs(), ids=lambda p: p.name)
def test_a_one_shot_load_is_the_followed_load(path: Path) -> None:
    try:
        expected = Loader().load_session(str(path))
    except SessionError as exc:
        with pytest.raises(SessionError) as got:
            Loader(one_shot=True).load_session(str(path))
        assert str(got.value) == str(exc)
        return
    assert Loader(one_shot=True).load_session(str(path)) == expected


def test_a_one_shot_read_makes_no_cyclic_garbage(tmp_path: Path) -> None:
    """The one-shot loader reads a transcript with the cyclic collector waiting: that is sound only while
    the read leaves (next to) no garbage that only the collector can free."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(REAL.read_bytes() * 3)
    Loader(one_shot=True).load_session(str(path))  # imports and first-use caches
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        session = Loader(one_shot=True).load_session(str(path))
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage = len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert session.sections and garbage < 50


def test_the_memory_of_a_one_shot_plan_is_bounded_by_the_transcript(tmp_path: Path) -> None:
    """``tokenbox plan --json`` of an uncompacted chain (figure 9's, built from a real transcript) holds at its
    peak well under three times the file (Python's own allocations, traced; the interpreter and imports aside):
    the sub-agents' blocks are not kept, the reader is gone before the plan, the JSON is written in pieces
    (before: 2.24 × at 8 MB, 3.42 × at 3 MB)."""
    import contextlib
    import tracemalloc

    from tokenbox.core.commands.cli import main

    from benchmarks.transcripts import Transcript, main_requests_of
    from benchmarks.worker import CountedOutput

    transcript = Transcript(compact=False, seed=15).grow_to(3_000_000)
    list(main_requests_of(transcript, 1))
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    del transcript
    with contextlib.redirect_stdout(CountedOutput()):
        assert main(["plan", str(path), "--json"]) == 0  # imports and first-use caches
    gc.collect()
    out = CountedOutput()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out):
            assert main(["plan", str(path), "--json"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.written > 100_000 and peak < 2.6 * path.stat().st_size  # 2.09 × now, the fixed caches included


# strings a line may hold: lone surrogates (high, low, two highs, a low before a high), a pair, plain text
_SURROGATE_TEXTS = st.lists(st.sampled_from(["\ud800", "\udc00", "\udbff", "\ud83d\ude00", "\udc00\ud800", "a", "\\u", "日本",
                                             "\\", '"']), max_size=5).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["content", "text", "input", "uuid", "model", "key"]), _SURROGATE_TEXTS),
                min_size=1, max_size=4))
def test_a_line_with_lone_surrogate_escapes_reads_from_bytes_as_from_text(places: list) -> None:
    """A line's bytes read by the fast decoder give what its decoded text gives, warnings included, wherever a
    lone surrogate escape sits (Node's JSON.stringify writes one as an escape, ``ensure_ascii``): the bytes are
    not searched for one, the decoder refuses it."""
    assert fastjson.accelerated()
    lines = []
    for n, (where, text) in enumerate(places):
        uuid = f"u{n}" + (text if where == "uuid" else "")
        if where in ("text", "input", "model"):
            message = {"id": f"m{n}", "role": "assistant", "model": text if where == "model" else "claude-sonnet-4-5",
                       "content": [{"type": "text", "text": text}] if where == "text" else
                       [{"type": "tool_use", "id": f"c{n}", "name": "Bash", "input": {"command": text}}],
                       "usage": {"input_tokens": 10 + n, "output_tokens": 1}}
            row = {"type": "assistant", "message": message}
        else:
            row = {"type": "user", "message": {"role": "user", "content": text}}
            if where == "key":
                row[text] = 1
        row.update({"uuid": uuid, "parentUuid": lines[-1][1] if lines else None, "sessionId": "s"})
        lines.append((json.dumps(row).encode(), uuid))
    from_bytes, from_text = TranscriptReader("t.jsonl"), TranscriptReader("t.jsonl")
    for number, (line, _) in enumerate(lines, 1):
        from_bytes.feed_line(number, line)
        from_text.feed_text(number, line.decode())
    assert from_bytes.warnings == from_text.warnings
    assert [[b.text for b in node.blocks] for node in from_bytes.nodes] == \
        [[b.text for b in node.blocks] for node in from_text.nodes]
    assert [r.model for r in from_bytes.threads[MAIN].requests] == [r.model for r in from_text.threads[MAIN].requests]
