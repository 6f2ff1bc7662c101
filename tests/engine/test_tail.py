"""``FileTail`` and ``LogReader``: only new lines are read and parsed; any rewrite reads from the top;
the turns always equal a cold parse of the file as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import load_session, load_turns
from tokenbox.core.model.errors import FileTooLarge, SessionError
from tokenbox.core.model.session import TurnHistory
from tokenbox.core.sources.documents import parse_turns
from tokenbox.core.sources.logreader import LogReader, with_histories
from tokenbox.core.sources.tail import FileTail


def turn(k: int, text: str = "") -> str:
    return json.dumps({"tokenbox": 1, "sections": [{"id": "a", "text": text or f"turn {k}"}]})


def test_tail_returns_only_new_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"one\ntwo\nthr")
    tail = FileTail(path)
    first = tail.read()
    assert first.reset and first.numbered() == [(1, "one"), (2, "two")] and first.partial == "thr"
    with path.open("ab") as handle:
        handle.write(b"ee\nfour\n")
    second = tail.read()
    assert not second.reset and second.numbered() == [(3, "three"), (4, "four")] and second.partial == ""
    assert tail.read().lines == [] and tail.resets == 1


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda p: p.write_bytes(b"one\n"),  # truncated
        lambda p: p.write_bytes(b"one\ntwX\nthree\n"),  # the last line read changed, in place
        lambda p: ((p.parent / "new").write_bytes(b"one\ntwo\nthree\n"), os.replace(p.parent / "new", p)),  # replaced
    ],
)
def test_tail_reads_a_rewritten_file_from_the_top(tmp_path: Path, rewrite) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(b"one\ntwo\n")
    tail = FileTail(path)
    tail.read()
    rewrite(path)
    again = tail.read()
    assert again.reset and again.first_line == 1
    assert again.lines == path.read_text().split("\n")[:-1]


def test_tail_keeps_the_size_limit_for_each_read_and_places_bad_bytes(tmp_path: Path) -> None:
    """The limit is for what one read takes in (issue 24: a followed capture stopped at 64 MiB): a file
    followed from its start grows past it; a file over it read from the top, or more than it appended
    between two reads, is refused."""
    path = tmp_path / "log.txt"
    path.write_bytes(b"one\n")
    tail = FileTail(path, max_bytes=10)
    tail.read()
    for line in (b"two\n", b"three\n", b"four\n", b"five\n"):  # 23 bytes in all, each read under 10
        with path.open("ab") as handle:
            handle.write(line)
        assert tail.read().lines == [line.decode().strip()]
    with pytest.raises(FileTooLarge):
        FileTail(path, max_bytes=10).read()  # from the top: a one-shot read of 23 bytes
    with path.open("ab") as handle:
        handle.write(b"six\nseven\neight\n")
    with pytest.raises(FileTooLarge):
        tail.read()
    path.write_bytes(b"ok\n")
    assert tail.read().lines == ["ok"]
    with path.open("ab") as handle:
        handle.write(b"b\xffd\n")
    with pytest.raises(SessionError) as caught:
        tail.read()
    assert (caught.value.line, caught.value.col) == (2, 2)


def test_an_appended_line_is_parsed_once(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(turn(1) + "\n" + turn(2))  # the last line is complete JSON without its newline
    reader = LogReader(log)
    assert [t.turn for t in reader.read()] == [1, 2] and reader.lines_parsed == 2
    with log.open("a") as handle:
        handle.write("\n" + turn(3)[:10])  # line 2 gets its newline; line 3 is half written
    turns = reader.read()
    assert len(turns) == 2 and reader.lines_parsed == 3  # the half line was tried once
    with log.open("a") as handle:
        handle.write(turn(3)[10:] + "\n")
    turns = reader.read()
    assert [t.turn_count for t in turns] == [3, 3, 3] and reader.lines_parsed == 4
    assert reader.read() is turns and reader.lines_parsed == 4  # nothing new: nothing parsed
    assert reader.resets == 1


def test_histories_are_shared_views(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(turn(k) + "\n" for k in range(50)))
    turns = load_turns(log)
    assert all(isinstance(t.history, TurnHistory) and len(t.history) == t.turn - 1 for t in turns)
    assert turns[-1].history[:10] == turns[10].history
    assert tuple(turns[-1].history[:3]) == tuple(turns[3].history)
    assert load_session(log, turn=5).history == turns[4].history
    assert load_session(log, turn=-1).turn == 50


def test_a_broken_line_is_the_cold_error_and_mending_recovers(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(turn(1) + "\n")
    reader = LogReader(log)
    reader.read()
    with log.open("a") as handle:
        handle.write('{"tokenbox": 1, "sections": [}\n' + turn(3) + "\n")
    with pytest.raises(SessionError) as caught:
        reader.read()
    with pytest.raises(SessionError) as cold:
        parse_turns(log.read_text(), str(log))
    assert str(caught.value) == str(cold.value)
    log.write_text(turn(1) + "\n" + turn(3) + "\n")
    assert [t.sections[0].text for t in reader.read()] == ["turn 1", "turn 3"]


# Operations on a log between reads: append whole lines, append a fragment, truncate, rewrite in place.
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.sampled_from(["a", "b", "ccc", "é", ""]), min_size=1, max_size=3)),
        st.tuples(st.just("fragment"), st.integers(1, 20)),
        st.tuples(st.just("truncate"), st.integers(0, 400)),
        st.tuples(st.just("replace"), st.lists(st.sampled_from(["x", "yy"]), max_size=3)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_following_equals_a_cold_load(tmp_path_factory: pytest.TempPathFactory, ops) -> None:
    log = tmp_path_factory.mktemp("follow") / "log.jsonl"
    log.write_bytes(b"")
    reader = LogReader(log)
    counter = 0
    for op, arg in ops:
        data = log.read_bytes()
        if op == "append":
            lines = []
            for text in arg:
                counter += 1
                lines.append(turn(counter, text) if text else "")
            with log.open("ab") as handle:
                handle.write(("\n".join(lines) + "\n").encode())
        elif op == "fragment":
            counter += 1
            with log.open("ab") as handle:
                handle.write(turn(counter).encode()[: arg])
        elif op == "truncate":
            os.truncate(log, min(arg, len(data)))
        else:
            counter += 1
            log.write_bytes("".join(turn(counter, t) + "\n" for t in arg).encode())
        try:
            cold = with_histories(parse_turns(log.read_text(encoding="utf-8", errors="strict"), str(log)))
        except (SessionError, UnicodeDecodeError) as exc:
            with pytest.raises(SessionError):
                reader.read()
            assert isinstance(exc, (SessionError, UnicodeDecodeError))
            continue
        assert reader.read() == cold


# ------------------------------------------------- the read a block at a time (``read(each)``, a transcript's)

_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=40)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=25), partial=_LINE, bom=st.booleans(), block=st.integers(4, 48),
       raw=st.booleans(), more=st.lists(_LINE, max_size=6))
def test_a_read_a_block_at_a_time_hands_over_the_lines_a_whole_read_returns(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, lines, partial, bom, block, raw, more
) -> None:
    """Streamed from the top in blocks of a few bytes (lines spanning blocks, a byte-order mark, a last line
    still being written), the lines handed over are the file's lines as ``str.split`` gives them, numbered from
    1; then an appended line is read as appended, not from the top again (what the read kept of its last
    line checks the file is the same)."""
    from tokenbox.core.sources import tail as tail_module

    monkeypatch.setattr(tail_module, "STREAM_BLOCK", block)
    path = tmp_path_factory.mktemp("stream") / "log.jsonl"
    text = "".join(line + "\n" for line in lines) + partial
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    handed: list[tuple[int, str]] = []

    def each(number: int, line) -> None:
        handed.append((number, line.decode("utf-8") if raw else line))

    tail = FileTail(path)
    first = tail.read(each, raw=raw)
    assert handed == list(enumerate(lines, 1))
    assert (first.lines, first.partial, first.reset) == ([], partial, True)
    assert tail.line_count == len(lines)
    assert tail.offset == (3 if bom and lines else 0) + len("".join(line + "\n" for line in lines).encode("utf-8"))
    handed.clear()
    with path.open("ab") as handle:
        handle.write("".join("\n" + line for line in more).encode("utf-8") + b"\n")
    second = tail.read(each, raw=raw)
    appended = [partial, *more]  # the line that was being written, completed, then the new ones
    assert handed == list(enumerate(appended, len(lines) + 1))
    assert not second.reset and tail.resets == 1 and tail.line_count == len(lines) + len(appended)


def test_a_read_a_block_at_a_time_is_refused_one_byte_over_its_limit(tmp_path: Path) -> None:
    """A limit given is the limit of the read from the top a block at a time too; at the limit it is read."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"one\ntwo\n")
    size = path.stat().st_size
    handed: list[tuple[int, str]] = []
    FileTail(path, max_bytes=size).read(lambda number, line: handed.append((number, line)))
    assert handed == [(1, "one"), (2, "two")]
    with pytest.raises(FileTooLarge) as caught:
        FileTail(path, max_bytes=size - 1).read(lambda number, line: None)
    assert caught.value.problem == f"file is {size} bytes, over the {size - 1}-byte limit"
