"""Incremental loading of a JSON-lines turn log (tokenbox's own ``.jsonl``, or a foreign line format).

``LogReader(path).read()`` gives the same turns as a cold ``load_turns(path)``, but each call parses
only the lines appended since the previous one (``tail.FileTail`` finds them). Parsed lines and
validated turns are kept by the reader, so what it holds is the followed file's turns, nothing else;
every turn's ``history`` is a ``TurnHistory`` view of the one list of turns (no copy per turn).

A file that was truncated, rotated, replaced or rewritten is read again from the top. A file that
fails to load is read again from the top on the next call too (the error is the cold load's).
A format of the ``formats.FORMATS`` table read line by line (``Shape.LINES``) gets every parsed line
on each call: its converter decides what to rebuild — unless its row has a ``line_follower`` (capture
logs), which is fed each new complete line once; the reader then keeps none of the lines itself. A
line that does not parse is an error, unless the row's ``torn_line`` names what to read in its place
(a record its writer cut short). A ``Shape.TRANSCRIPT`` format is not read here: ``read()`` returns
``None`` and ``transcript`` names the row (the loader follows it with the row's follower).

``lines_parsed`` counts lines parsed (the unterminated last line included, once per text seen), and
``resets`` the reads that started from the top: a follower can check that an append cost one line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.session import Session, TurnHistory
from tokenbox.core.sources import foreign
from tokenbox.core.sources.documents import LogLine, detects
from tokenbox.core.sources.formats import (
    FORMATS,
    SNIFF_LINES,
    Format,
    LineFollower,
    Shape,
    of_shape,
    torn_line_stand_in,
    transcript_format,
)
from tokenbox.core.sources.tail import FileTail, Head
from tokenbox.core.sources.turns import LazyTurns, no_complete_line, with_histories, with_history


class LogReader:
    """Follows one ``.jsonl`` log; ``read()`` returns every turn, parsing only the new lines."""

    def __init__(
        self, path: str | os.PathLike[str], *, max_bytes: int | None = None, formats: Sequence[Format] = FORMATS
    ) -> None:
        self.path = os.fspath(path)
        self.max_bytes = max_bytes
        self.formats = tuple(formats)
        self.transcript: Format | None = None  # the row of a log read as a transcript (decided on its first lines)
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
        self._entries: list[LogLine] = []  # complete, non-blank lines, in order
        self._bare: list[Session] = []  # their turns, as validated (native format only)
        self._partial: LogLine | None = None  # the unterminated last line, if it parses
        self._partial_text = ""
        self._turns: Sequence[Session] | None = None
        self._foreign = False
        self._decided = False  # whether the first lines decided if this is a transcript
        self._first_text: str | None = None  # the first complete line
        self.transcript = None
        self._follower: LineFollower | None = None  # a line format followed incrementally: lines fed once, not kept
        self._head: Head | None = None  # the first lines that said this is a transcript (read alone)

    def read(self) -> Sequence[Session] | None:
        """Every turn of the log, oldest first, each with its history, turn number and turn count.

        ``None`` for a transcript (a ``Shape.TRANSCRIPT`` row claims it, ``transcript``): its reader follows it.
        """
        with self._lock:
            try:
                return self._read()
            except BaseException:
                self._start()  # next time from the top: the error is the one a cold load raises
                raise

    def _read(self) -> Sequence[Session] | None:
        path = self.path
        if self.transcript is not None and self._head is not None:
            if self._tail.unchanged(self._head):
                return None  # still the transcript whose first lines said so: its row's follower reads it
            self._start()  # replaced or rewritten: decided again, as a cold load decides
        if not self._decided and self._tail.offset == 0:
            # A transcript is told by its first lines: read only those (its follower reads the rest),
            # not the whole file twice
            head = self._tail.head(SNIFF_LINES)
            if head is not None and head.text.strip():
                self.transcript = transcript_format(self.formats, head.text)
                if self.transcript is not None:
                    self._decided = True
                    self._head = head
                    return None
        chunk = self._tail.read()
        if chunk.reset:
            self._start(keep_tail=True)
        if not self._decided and not self._entries and self._partial is None:  # which format is this?
            head = _head(chunk.lines, chunk.partial)
            if head.strip():  # decided on the first lines there are (as a cold load decides)
                self.transcript = transcript_format(self.formats, head)
                self._decided = True
        if self.transcript is not None:
            return None  # a transcript: its row's follower reads it
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
                    stand_in = torn_line_stand_in(self.formats, self._first_text)
                    if stand_in is None:
                        raise
                    entry = self._parse(number, stand_in)  # a torn record of a format that skips them
            if self._first_text is None:
                self._first_text = entry.text  # what says which format may skip a torn line (kept past a follower)
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
            raise no_complete_line(path)
        turns = self._convert(entries)
        self._turns = turns
        return turns

    def _parse(self, number: int, text: str) -> LogLine:
        self.lines_parsed += 1
        return LogLine(number, text, self.path)

    def _convert(self, entries: list[LogLine]) -> Sequence[Session]:
        path = self.path
        if self._follower is not None:
            return self._follow()
        rows = of_shape(self.formats, Shape.LINES)
        if rows:
            views = [entry.view(path) for entry in entries]
            for row in rows:
                if detects(row.detect, views, entries, path):
                    self._foreign = True
                    if row.line_follower is not None:
                        self._follower = row.line_follower(path)
                        return self._follow()
                    turns = row.convert([entry.node(path) for entry in entries], path)
                    if isinstance(turns, LazyTurns):
                        return turns  # built when read, numbered by the reader (a list would build them all)
                    return with_histories(list(turns))
        self._foreign = False
        bare = self._bare
        if not bare:
            # another tool's log is refused by name, as a cold load refuses it
            refusal = foreign.sniff_lines([entry.view(path) for entry in entries[:SNIFF_LINES]], path)
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
            return with_history(turn, TurnHistory(bare, index), index + 1, count)

        return LazyTurns(count, build)


    def _follow(self) -> Sequence[Session]:
        """Feed the follower the complete lines it has not seen, and let them go (it keeps what it needs).

        An unterminated last line is left until its newline comes (a capture writes whole lines), unless the
        follower reads one ahead (``turns_with``: Gemini CLI's chats, which a cold read reads so)."""
        follower = self._follower
        assert follower is not None
        for entry in self._entries:
            follower.feed(entry.number, entry.text)
        self._entries.clear()
        if self._partial is not None and hasattr(follower, "turns_with"):
            return follower.turns_with(self._partial.number, self._partial.text)
        return follower.turns()


def _head(lines: list[str], partial: str) -> str:
    """The first lines that transcript detection looks at (as many non-blank ones as it reads)."""
    head: list[str] = []
    seen = 0
    for line in [*lines, partial]:
        head.append(line)
        if line.strip():
            seen += 1
            if seen >= SNIFF_LINES:
                break
    return "\n".join(head)
