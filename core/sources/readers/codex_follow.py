"""Following a Codex rollout as Codex appends to it: ``RolloutFollower``, the ``codex`` row's follower.

A rollout is read from the top a block at a time (``tail.FileTail.read(each)``: its lines are parsed and
read one at a time as they are decoded, never held whole; the streamed size limit,
``files.DEFAULT_MAX_STREAMED_BYTES``, applies), then each ``read`` feeds the ``codex.Rollout`` only the
lines appended since. A truncated, rotated or replaced file is read again from the top with a fresh
rollout. The unterminated last line is read when it is complete JSON already (as a whole read of the
text reads it); when its newline comes it is not read twice, and if it changed instead, the file is read
again from the top.
"""

from __future__ import annotations

from tokenbox.core.model.errors import SessionError
from tokenbox.core.parse.nodes import json_line
from tokenbox.core.sources.readers.codex import Rollout
from tokenbox.core.sources.tail import FileTail


class _Changed(Exception):
    """The unterminated line read last time is not the line the file now holds there."""


class RolloutFollower:
    """Follows one rollout: each ``read`` parses and reads only the lines appended since the last one.

    ``lines_parsed`` counts the lines parsed since the follower was made (each appended line once), and
    ``resets`` the reads that had to start again from the top (the first read is not one).
    """

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        self.path = path
        self.rollout = Rollout(path)
        self.lines_parsed = 0
        self._tail = FileTail(path, max_bytes=max_bytes)
        self._partial: tuple[int, str] | None = None  # the unterminated last line, read already

    @property
    def resets(self) -> int:
        """Reads that had to start again from the top (the first read is not one)."""
        return max(0, self._tail.resets - 1)

    def read(self) -> Rollout:
        """Read what was appended since the last read (everything after a reset); the rollout, updated."""
        resets = self._tail.resets
        fed = False

        def feed(number: int, line: str) -> None:
            nonlocal fed
            if not fed:
                fed = True
                if self._tail.resets != resets:
                    self._fresh()
            if self._partial is not None:
                if self._partial != (number, line):
                    raise _Changed
                self._partial = None  # read already, while it had no newline
                return
            self._feed(number, line)

        try:
            chunk = self._tail.read(feed)
        except _Changed:
            return self._again()
        except BaseException:
            if fed:  # lines were read before the read failed further on: the next read starts afresh
                self._tail.forget()
                self._fresh()
            raise
        if chunk.reset and not fed:
            self._fresh()
        number = self._tail.line_count + 1
        if self._partial is not None:
            if self._partial != (number, chunk.partial):
                return self._again()  # the line read without its newline is gone or was rewritten
        elif chunk.partial.strip():
            try:
                node = json_line(chunk.partial, self.path, number)
            except SessionError:
                node = None  # still being written
            if node is not None:
                self.lines_parsed += 1
                self.rollout.feed(number, node)
                self._partial = (number, chunk.partial)
        return self.rollout

    def read_main_only(self) -> Rollout:
        """``read()`` for a one-shot command (``Loader._transcript_once``, which reads with the cyclic collector
        paused): a rollout has one thread, read whole either way."""
        return self.read()

    def _feed(self, number: int, line: str) -> None:
        if line.strip():
            self.lines_parsed += 1
            self.rollout.feed(number, json_line(line, self.path, number))

    def _fresh(self) -> None:
        if self.rollout.lines_read or self._partial is not None:
            self.rollout.release()
            self.rollout = Rollout(self.path)
        self._partial = None

    def _again(self) -> Rollout:
        self._tail.forget()
        self._fresh()
        return self.read()

    def release(self) -> None:
        """Let go of the turns handed out (they refer back to the rollout)."""
        self.rollout.release()

