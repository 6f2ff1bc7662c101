"""Following a growing capture log (``tokenbox-tui --record``): each line read once, each turn built when asked.

``capture.convert`` reads a whole capture and builds every turn; a follower that did so at every
appended request paid for every earlier request again (1 000 followed requests: 383 s and 855 MB).
``CaptureFollower`` keeps the capture reader between reads and is fed only the new lines; ``turns()``
is a ``LazyTurns`` whose turns are built on access (the TUI asks for the newest, and for the recorded
figures of the others through ``info``, which builds nothing). What it keeps per request is the
request's record and its rebuilt body, which shares every unchanged message with the request it
continues; sessions are not kept. The turns are those ``capture.convert`` gives for the same lines
(``tests/record/test_capture_follow.py`` compares them).
"""

from __future__ import annotations

import json
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.model.session import Session
from tokenbox.core.sources.readers.capture import At, CaptureReader, main_root, recorded_usage
from tokenbox.core.sources.readers.common import SectionCache
from tokenbox.core.sources.turns import LazyTurns

_UNKNOWN = object()


class CaptureFollower:
    """Reads a capture log line by line (``feed``); ``turns()`` are its turns so far, built when read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.reader = CaptureReader(path)
        self.cache: SectionCache = {}
        self.turn_requests: list[int] = []  # the requests (indexes into reader.requests) that are turns
        self._fits: dict[int, Any] = {}  # turn -> the scale its recorded usage fitted (None: it fits none)

    def feed(self, number: int, text: str) -> None:
        """One complete line of the file (already known to be JSON: a torn line arrives as its stand-in)."""
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None  # the record() below names it
        self.feed_record(number, value)

    def feed_record(self, number: int, value: Any) -> None:
        """One record, already parsed (a peer's capture translated into this format arrives so)."""
        reader = self.reader
        if not reader.record(At(number, 1), value):
            return
        where, record = reader.requests[-1]
        try:
            has_turn = reader.turn(where, record, self.cache, build=False) is not None
        except SessionError as exc:
            reader._skip(record, exc.problem)
            has_turn = False
        if has_turn:
            self.turn_requests.append(len(reader.requests) - 1)

    def turns(self) -> LazyTurns:
        """Every turn so far (a capture without a readable request is an error, as a cold read's)."""
        reader = self.reader
        count = len(self.turn_requests)
        if not count:
            raise reader.no_turn()
        records = [reader.requests[index] for index in self.turn_requests]
        roots = [reader.roots.get(record["id"], record["id"]) for _, record in records]
        main = main_root(roots)
        torn = reader._torn_warning()

        def build(index: int) -> Session:
            waiting = reader.responses.get(records[index][1]["id"]) is None
            reader.last_fit = self._fit_before(index) if waiting else None  # only a turn without usage borrows a fit
            return reader.finish(self._headline(index), index, count, roots, main, torn)

        def info(index: int) -> dict[str, Any]:
            where, record = records[index]
            response = reader.responses.get(record["id"])
            api = record.get("api")
            return {  # a request still waiting for its response may change: it has no identity yet
                "request": record["id"] if response is not None else None,
                "thread": "main" if roots[index] == main else f"request-{roots[index]}",
                "line": where.line,
                "recorded": recorded_usage(api, response) if isinstance(api, str) else None,
            }

        return LazyTurns(count, build, info)

    def _headline(self, index: int) -> Session:
        where, record = self.reader.requests[self.turn_requests[index]]
        session = self.reader.turn(where, record, self.cache)
        return self.reader._headline(session, index + 1)

    def _fit_before(self, index: int) -> Any:
        """The scale the nearest earlier recorded Claude request fitted (what a cold read carries forward)."""
        for earlier in range(index - 1, -1, -1):
            fit = self._fits.get(earlier, _UNKNOWN)
            if fit is _UNKNOWN:
                fit = self._fit_of(earlier)
            if fit is not None:
                return fit
        return None

    def _fit_of(self, index: int) -> Any:
        reader = self.reader
        _, record = reader.requests[self.turn_requests[index]]
        if reader.responses.get(record["id"]) is None:
            return None  # no usage yet: fits nothing (and may, once its response comes)
        if record.get("api") != "anthropic-messages":
            self._fits[index] = None  # counted by a tokenizer, never scaled
            return None
        reader.last_fit = None
        session = self._headline(index)
        fit = reader.last_fit if session.tokenizer == ESTIMATE else None
        self._fits[index] = fit
        return fit
