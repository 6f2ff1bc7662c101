"""The board's worker: one thread owns the ``Sessions`` (their loaders, the engine) and publishes rows.

It lists every agent's storage, takes the first looks a forked process made meanwhile (``firstlooks``), then
does the background work one piece at a time (first looks, recorded usage first; then plans; then followers
warmed), publishing the rows every ``PUBLISH_SECONDS`` meanwhile.
The watcher's change sets arrive through ``changes`` (any thread) and go first: everything waiting is taken
at once, the sessions it concerns are read, the rows published at once. With no work and no change the
thread sleeps on its queue: an idle board costs nothing here.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenbox.tui.board.sessions import Row, Sessions

if TYPE_CHECKING:
    from tokenbox.tui.board.firstlooks import FirstLooks

PUBLISH_SECONDS = 0.1  # while first looks go on, rows are published this often (and when they are done)


@dataclass(frozen=True)
class Published:
    """What the worker hands the UI."""

    rows: tuple[Row, ...]
    busy: bool  # background work left
    places: int  # places looked at that exist
    skipped: int


class Feed:
    """Runs ``Sessions`` in one thread (``run``); ``changes`` hands it paths from any other."""

    def __init__(self, sessions: Sessions, publish: Callable[[Published], None], *,
                 first_looks: FirstLooks | None = None) -> None:
        self.sessions = sessions
        self.publish = publish
        self.first_looks = first_looks  # the first looks a forked process is making (``tui/board/firstlooks.py``)
        self._inbox: queue.SimpleQueue[set[str] | None] = queue.SimpleQueue()
        self._candidates: tuple[str, ...] = ()  # the places to watch, as last listed (read by the watcher)

    def changes(self, paths: set[str]) -> None:
        """Paths that changed (from the watcher's thread)."""
        self._inbox.put(paths)

    def wake(self) -> None:
        """Wake the worker (to see that it must stop)."""
        self._inbox.put(None)

    def places(self) -> list[str]:
        """The places to watch that exist now (any thread: reads the last listing's snapshot)."""
        return [place for place in self._candidates if os.path.exists(place)]

    def run(self, stop: threading.Event) -> None:
        """List, read, follow, until ``stop`` is set (then ``wake``)."""
        sessions = self.sessions
        sessions.discover()
        self._publish()
        if self.first_looks is not None:  # the forked process's looks, for the files it saw as they are
            looks, self.first_looks = self.first_looks.take(), None
            if sessions.adopt(looks):
                self._publish()
        last = time.monotonic()
        while not stop.is_set():
            try:
                paths = self._inbox.get(block=not sessions.busy)
            except queue.Empty:
                paths = None
            if stop.is_set():
                return
            if paths is not None:
                while True:  # everything waiting, at once
                    try:
                        more = self._inbox.get_nowait()
                    except queue.Empty:
                        break
                    if more is not None:
                        paths |= more
                sessions.changed(paths)
                self._publish()
                last = time.monotonic()
                continue
            if sessions.busy:
                sessions.step()
                if not sessions.busy or time.monotonic() - last >= PUBLISH_SECONDS:
                    self._publish()
                    last = time.monotonic()

    def _publish(self) -> None:
        sessions = self.sessions
        self._candidates = tuple(sessions.places(existing=False))
        self.publish(Published(sessions.rows(), sessions.busy, len(self.places()), sessions.skipped))
