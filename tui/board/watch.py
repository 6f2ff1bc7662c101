"""Watch every agent's storage at once (watchfiles, recursively) and hand over the paths that changed.

The places come from the board's sessions (``Sessions.places``: the storage folders that exist, aider's
histories). One watch covers them all and yields sets of changed paths, with the inspector's step and
debounce (``tui/watcher.py``): nothing is polled file by file. Every ``PLACES_SECONDS`` the list of
places is asked for again (a few ``stat``s): when an agent's folder appears (its first session) or goes,
the watch starts again on the new list, and the new place is reported as changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tokenbox.tui.watcher import DEBOUNCE_MS, STEP_MS
from watchfiles import watch

PLACES_SECONDS = 5.0  # how often the list of places is checked for a folder that appeared or went
WAKE_MS = 1000  # the watch wakes this often with nothing to report (to check the places; stopping is at once)


def watch_places(
    places: Callable[[], list[str]],
    stop: threading.Event,
    on_changes: Callable[[set[str]], None],
    *,
    every: float = PLACES_SECONDS,
    force_polling: bool | None = None,
) -> None:
    """Call ``on_changes(paths)`` with each set of paths that changed under ``places()``, until ``stop`` is
    set. Runs in a worker thread."""
    watched = places()
    while not stop.is_set():
        if not watched:
            stop.wait(every)
            now = places()
            if now:
                on_changes(set(now))
            watched = now
            continue
        deadline = time.monotonic() + every
        try:
            for changes in watch(*watched, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop, rust_timeout=WAKE_MS,
                                 yield_on_timeout=True, raise_interrupt=False, recursive=True,
                                 force_polling=force_polling):
                if changes:
                    on_changes({path for _, path in changes})
                if time.monotonic() >= deadline:
                    deadline = time.monotonic() + every
                    now = places()
                    if now != watched:
                        on_changes(set(now) - set(watched))
                        watched = now
                        break  # a place appeared or went: watch the new list
        except (OSError, RuntimeError):  # a place removed while the watch started: list them again
            stop.wait(every / 10)
            watched = places()
