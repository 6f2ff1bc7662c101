"""Incremental loading of a JSON-lines turn log (tokenbox's own ``.jsonl``, or a foreign line format).

``LogReader(path).read()`` gives the same turns as a cold ``load_turns(path)``, but each call parses
only the lines appended since the previous one (``core.tail.FileTail`` finds them). Parsed lines and
validated turns are kept by the reader, so what it holds is the followed file's turns, nothing else;
every turn's ``history`` is a ``TurnHistory`` view of the one list of turns (no copy per turn).

A file that was truncated, rotated, replaced or rewritten is read again from the top. A file that
fails to load is read again from the top on the next call too (the error is the cold load's).
A content-detected foreign format (a ``session.register_line_importer`` importer) gets every
parsed line on each call: its converter decides what to rebuild — unless the format has a follower
(``session.register_line_follower``: capture logs), which is fed each new complete line once; the
reader then keeps none of the lines itself.

``lines_parsed`` counts lines parsed (the unterminated last line included, once per text seen), and
``resets`` the reads that started from the top: a follower can check that an append cost one line.
"""

from __future__ import annotations

import os
import threading

from tokenbox.core import session as _session
from tokenbox.core.errors import SessionError
from tokenbox.core.model import Session, TurnHistory
from tokenbox.core.tail import FileTail
from tokenbox.core.truth import LazyTurns


class LogReader:
    """Follows one ``.jsonl`` log; ``read()`` returns every turn, parsing only the new lines."""

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = _session.DEFAULT_MAX_FILE_BYTES) -> None:
        self.path = os.fspath(path)
        self.max_bytes = max_bytes
        self.lines_parsed = 0
        self._tail = FileTail(self.path, max_bytes=max_bytes)
        self._lock = threading.Lock()
        self._start()

    @property
    def resets(self) -> int:
        """Reads that started from the top of the file (the first one included)."""
        return self._tail.resets

    def _start(self, *, keep_tail: bool = False) -> None:
        if not keep_tail:
            self._tail.forget()
        self._entries: list[_session._LogLine] = []  # complete, non-blank lines, in order
        self._bare: list[Session] = []  # their turns, as validated (native format only)
        self._partial: _session._LogLine | None = None  # the unterminated last line, if it parses
        self._partial_text = ""
        self._turns: list[Session] | None = None
        self._foreign = False
        self._transcript: bool | None = None  # a Claude Code transcript? (None: no lines seen yet)
        self._follower = None  # a line format followed incrementally: its lines are fed once, not kept

    def read(self) -> list[Session] | None:
        """Every turn of the log, oldest first, each with its history, turn number and turn count.

        ``None`` for a Claude Code transcript (``session.is_transcript``): its importer reads it.
        """
        from tokenbox.core.importers import ensure_registered

        ensure_registered()  # the foreign formats

        with self._lock:
            try:
                return self._read()
            except BaseException:
                self._start()  # next time from the top: the error is the one a cold load raises
                raise

    def _read(self) -> list[Session] | None:
        path = self.path
        chunk = self._tail.read()
        if chunk.reset:
            self._start(keep_tail=True)
        if self._transcript is None and not self._entries and self._partial is None:  # which format is this?
            head = _head(chunk.lines, chunk.partial)
            if head.strip():  # decided on the first lines there are (as a cold load decides)
                self._transcript = _session.is_transcript(head)
        if self._transcript:
            return None  # a Claude Code transcript: its importer reads the text whole
        changed = chunk.reset
        for number, line in chunk.numbered():
            if not line.strip():
                continue
            if self._partial is not None and self._partial_text == line and self._partial.number == number:
                entry = self._partial  # the last line was complete JSON already; now it has its newline
            else:
                try:
                    entry = self._parse(number, line)
                except SessionError:
                    stand_in = _session.torn_line_stand_in(self._entries[0].text if self._entries else None)
                    if stand_in is None:
                        raise
                    entry = self._parse(number, stand_in)  # a torn record of a format that skips them
            self._entries.append(entry)
            changed = True
        partial = None
        text = chunk.partial
        if text.strip():
            number = chunk.first_line + len(chunk.lines)
            if self._partial is not None and self._partial_text == text and self._partial.number == number:
                partial = self._partial
            else:
                try:
                    partial = self._parse(number, text)
                except SessionError:
                    partial = None  # still being written
        if partial is not self._partial:
            changed = True
        self._partial, self._partial_text = partial, text if partial is not None else ""
        if not changed and self._turns is not None:
            return self._turns
        entries = self._entries if partial is None else [*self._entries, partial]
        if not entries and self._follower is None:
            raise _session.no_complete_line(path)
        turns = self._convert(entries)
        self._turns = turns
        return turns

    def _parse(self, number: int, text: str) -> _session._LogLine:
        self.lines_parsed += 1
        return _session._LogLine(number, text, self.path)

    def _convert(self, entries: list[_session._LogLine]) -> list[Session]:
        path = self.path
        if self._follower is not None:
            return self._follow()
        if _session._LINE_IMPORTERS:
            views = [entry.view(path) for entry in entries]
            for detect, convert in _session._LINE_IMPORTERS:
                if _session._detects(detect, views, entries, path):
                    self._foreign = True
                    follower = _session._LINE_FOLLOWERS.get(convert)
                    if follower is not None:
                        self._follower = follower(path)
                        return self._follow()
                    turns = convert([entry.node(path) for entry in entries], path)
                    return with_histories(turns)
        self._foreign = False
        bare = self._bare
        if not bare:
            # another tool's log is refused by name, as a cold load refuses it
            from tokenbox.core.importers import foreign

            refusal = foreign.sniff_lines([entry.view(path) for entry in entries[: _session._SNIFF_LINES]], path)
            if refusal is not None:
                raise refusal
        for entry in self._entries[len(bare) :]:
            bare.append(entry.session(path))
        count = len(entries)
        complete = len(bare)
        last = entries[-1].session(path) if count > complete else None  # the unterminated last line, complete already

        def build(index: int) -> Session:
            # Each turn says "turn k of count", so a list of them would be rebuilt whole at every append:
            # the turns are made when asked for (the newest, mostly), and cost nothing otherwise.
            turn = bare[index] if index < complete else last
            return _session._with_history(turn, TurnHistory(bare, index), index + 1, count)

        return LazyTurns(count, build)


    def _follow(self) -> list[Session]:
        """Feed the follower the complete lines it has not seen, and let them go (it keeps what it needs).

        An unterminated last line is left until its newline comes (a capture writes whole lines)."""
        follower = self._follower
        for entry in self._entries:
            follower.feed(entry.number, entry.text)
        self._entries.clear()
        return follower.turns()


def with_histories(turns: list[Session]) -> list[Session]:
    """``turns`` each with the turns before it as history (a shared view), its number and the count."""
    count = len(turns)
    return [_session._with_history(turn, TurnHistory(turns, index), index + 1, count) for index, turn in enumerate(turns)]


def _head(lines: list[str], partial: str) -> str:
    """The first lines that ``session.is_transcript`` looks at (as many non-blank ones as it reads)."""
    head: list[str] = []
    seen = 0
    for line in [*lines, partial]:
        head.append(line)
        if line.strip():
            seen += 1
            if seen >= _session._SNIFF_LINES:
                break
    return "\n".join(head)
