"""Gemini CLI's JSON-lines chats followed line by line (the ``gemini-lines`` row's ``line_follower``).

Each complete line is parsed once and applied to the chat's records and turns (``gemini.ChatLines``):
a new message adds its own parts to the turns kept so far, so an append costs that message, not the
file. What changes a record added before — the newest reply written again as its tool calls finish
(Gemini CLI's usual write), an older one written again, ``$rewindTo``, ``$set`` with ``messages`` —
takes the turns back to that record and adds the records after it again, each parsed again from the
text kept for it (the follower keeps each record's newest line, not its positioned tree).

An unterminated last line that is complete JSON is read too, as a cold read reads it (``turns_with``),
and taken back if it changes before its newline comes.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import Node, parse_json
from tokenbox.core.sources.readers.gemini import ChatLines

Source = tuple[int, str, int | None]  # (line number, the line's text, the item of its ``$set`` list or None)


class ChatFollower:
    """Follows one Gemini CLI JSON-lines chat (a ``formats.LineFollower``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines = ChatLines(path, self._reparse, _item_source)
        self.parsed = 0  # lines parsed (each fed line once; records after one written again, once more each)
        self._tentative: tuple[int, str, tuple] | None = None  # an unterminated line read ahead, and what it changed
        self._turns: Sequence[Session] | None = None

    def feed(self, number: int, text: str) -> None:
        """One complete line of the file (known to be JSON)."""
        if self._tentative is not None:
            if self._tentative[:2] == (number, text):
                self._tentative = None  # the unterminated line read ahead, now complete: already applied
                return
            self._take_back()
        self._apply(number, text)

    def turns(self) -> Sequence[Session]:
        """The chat's turns so far (built when read)."""
        if self._tentative is not None:
            self._take_back()
        return self._current()

    def turns_with(self, number: int, text: str) -> Sequence[Session]:
        """The turns with the file's unterminated last line read too (complete JSON: a cold read reads it)."""
        if self._tentative is None or self._tentative[:2] != (number, text):
            if self._tentative is not None:
                self._take_back()
            saved = self.lines.save()
            self._apply(number, text)
            self._tentative = (number, text, saved)
        return self._current()

    def _current(self) -> Sequence[Session]:
        if self._turns is None:
            self._turns = self.lines.turns()
        return self._turns

    def _apply(self, number: int, text: str) -> None:
        self.lines.add(self._parse(number, text), (number, text, None))
        self._turns = None

    def _take_back(self) -> None:
        assert self._tentative is not None
        saved = self._tentative[2]
        self._tentative = None
        self.lines.restore(saved)
        self._turns = None

    def _parse(self, number: int, text: str) -> Node:
        self.parsed += 1
        return parse_json(text, self.path, number, 1, unit="line")  # positioned, as a cold read's lines

    def _reparse(self, source: Source) -> Node:
        number, text, item = source
        node = self._parse(number, text)
        if item is None:
            return node
        return node.value["$set"].value["messages"].value[item]


def _item_source(line: Source, index: int, _item: Node) -> Source:
    return line[0], line[1], index
