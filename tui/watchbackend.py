"""watchfiles' backend, opened once and waited on at any step: what the inspector's and the board's watches
run on.

``watchfiles.watch`` fixes its step for the life of its backend, and both watches need two (a short one
while a session is being written, a long one once it is quiet: ``tui/watcher.step_ms``). Starting a new
watch to change the step would leave a gap in which a write is not seen, and setting a recursive watch up
walks the whole tree holding the interpreter (0.4–0.7 s for an OpenCode storage of 12 000 folders). The
backend (watchfiles' ``RustNotify``, what ``watchfiles.watch`` runs) gathers every change from the moment it
is opened until it is closed, and each ``watch`` call only waits for that gathered set at the step it is
given: opened once, it is waited on at whichever step applies.

These names are watchfiles' internals (unchanged from 0.21 to 1.3): a release that moves them leaves the
watches on the public ``watch`` (``PublicBackend``), its step fixed at the first wait's — slower to show a
write, never blind.
"""

from __future__ import annotations

import threading
from typing import Literal, Protocol

from watchfiles import watch

try:
    from watchfiles._rust_notify import RustNotify
    from watchfiles.main import (
        _default_debug,
        _default_force_polling,
        _default_ignore_permission_denied,
        _default_poll_delay_ms,
    )
except ImportError:  # pragma: no cover - only with a watchfiles that reorganised its internals
    RustNotify = None

POLL_DELAY_MS = 300  # watchfiles' default wait between two polls, when it must poll

Waited = set[tuple[int, str]] | Literal["signal", "stop", "timeout"]


class Backend(Protocol):
    """What a watch needs of watchfiles' backend (``RustNotify``)."""

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: threading.Event | None) -> Waited:
        """The changes gathered, once ``step_ms`` passed with no newer one (see watchfiles)."""
        ...

    def close(self) -> None:
        """Stop gathering."""
        ...


class PublicBackend:
    """The same over watchfiles' public ``watch``, started at the first wait with its debounce, step and
    timeout, which it keeps: what the watches fall back on when the backend's internals are not where they
    were (see the module docstring)."""

    def __init__(self, places: list[str], force_polling: bool | None, recursive: bool = True) -> None:
        self._places = list(places)
        self._force_polling = force_polling
        self._recursive = recursive
        self._stop = threading.Event()
        self._changes = None

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: threading.Event | None) -> Waited:
        """The next set of changes (``timeout``: none within the first wait's timeout; ``stop``: the watch ended)."""
        if stop_event is not None and stop_event.is_set():
            self._stop.set()
        if self._changes is None:
            self._changes = watch(*self._places, debounce=debounce_ms, step=step_ms, stop_event=self._stop,
                                  rust_timeout=timeout_ms, yield_on_timeout=True, raise_interrupt=False,
                                  recursive=self._recursive, force_polling=self._force_polling, watch_filter=None)
        changes = next(self._changes, None)
        if changes is None:
            return "stop"
        return {(int(change), path) for change, path in changes} if changes else "timeout"

    def close(self) -> None:
        """Stop gathering."""
        self._stop.set()
        if self._changes is not None:
            self._changes.close()


def open_backend(places: list[str], force_polling: bool | None, recursive: bool = True) -> Backend:
    """watchfiles' backend over ``places`` (with everything below them when ``recursive``), set up as
    ``watchfiles.watch`` sets it up: it gathers changes from now on. Raises ``OSError`` or ``RuntimeError``
    when the system refuses the watch (a place missing, too many folders for its watches)."""
    if RustNotify is None:  # pragma: no cover - see the imports
        return PublicBackend(places, force_polling, recursive)
    try:
        return RustNotify(list(places), _default_debug(None), _default_force_polling(force_polling),
                          _default_poll_delay_ms(POLL_DELAY_MS), recursive, _default_ignore_permission_denied(None))
    except TypeError:  # a backend whose arguments changed: the public watch
        return PublicBackend(places, force_polling, recursive)
