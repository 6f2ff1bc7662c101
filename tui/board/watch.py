"""Watch every agent's storage at once (watchfiles, recursively) and hand over the paths that changed.

The places come from the board's sessions (``Sessions.places``: the storage folders that exist, aider's
histories). One watch covers them all and yields sets of changed paths, with the inspector's steps and
debounce (``tui/watcher.py``): nothing is polled file by file. Every ``PLACES_SECONDS`` the list of
places is asked for again (a few ``stat``s): when an agent's folder appears (its first session) or goes,
the watch starts again on the new list, and the new place is reported as changed.

The step is most of a write's way to its row: while something under the places is being written the
watch hands changes over at the inspector's short step (``ACTIVE_STEP_MS``), once nothing has changed for
``ACTIVE_SECONDS`` at the quiet step (``STEP_MS``: an idle board wakes ≈33 times a second, not 500). The
step changes without starting the watch again, so no write can land in a gap between two watches: the
backend (``tui/watchbackend.py``: watchfiles' ``RustNotify``, what ``watchfiles.watch`` runs) gathers every
change from the moment it is made until it is closed, and each ``RustNotify.watch`` call only waits for that
gathered set at the step it is given. Only a change of the places themselves makes a new backend; the place that
appeared is then reported whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tokenbox.tui.watchbackend import Backend, open_backend
from tokenbox.tui.watcher import ACTIVE_STEP_MS, DEBOUNCE_MS, STEP_MS, step_ms
from watchfiles import Change, DefaultFilter

PLACES_SECONDS = 5.0  # how often the list of places is checked for a folder that appeared or went
WAKE_MS = 1000  # the watch wakes this often with nothing to report (to check the places; stopping is at once)


def watch_places(
    places: Callable[[], list[str]],
    stop: threading.Event,
    on_changes: Callable[[set[str]], None],
    *,
    every: float = PLACES_SECONDS,
    force_polling: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    idle_step_ms: int = STEP_MS,
    active_step_ms: int = ACTIVE_STEP_MS,
    backend: Callable[[list[str], bool | None, bool], Backend] = open_backend,
) -> None:
    """Call ``on_changes(paths)`` with each set of paths that changed under ``places()``, until ``stop`` is
    set. Runs in a worker thread. The step is ``active_step_ms`` while a change was reported in the last
    ``ACTIVE_SECONDS`` (``clock`` tells the time), else ``idle_step_ms``; ``backend`` opens the watch."""
    keep = DefaultFilter()  # what ``watchfiles.watch`` leaves out by default (editors' swap files, .git, …)
    watched = places()
    changed_at = float("-inf")  # nothing reported yet: the quiet step first
    while not stop.is_set():
        if not watched:
            stop.wait(every)
            now = places()
            if now:
                on_changes(set(now))
            watched = now
            continue
        deadline = clock() + every
        try:
            notify = backend(watched, force_polling, True)
        except (OSError, RuntimeError):  # a place removed while the watch started: list them again
            stop.wait(every / 10)
            watched = places()
            continue
        try:
            while not stop.is_set():
                step = step_ms(clock() - changed_at, idle=idle_step_ms, active=active_step_ms)
                raw = notify.watch(DEBOUNCE_MS, step, WAKE_MS, stop)
                if raw == "signal":
                    break  # (the main thread's only) set up again, as ``watchfiles.watch`` would end
                if isinstance(raw, set):
                    paths = {path for code, path in raw if keep(Change(code), path)}
                    if paths:
                        changed_at = clock()
                        on_changes(paths)
                if clock() >= deadline:
                    deadline = clock() + every
                    now = places()
                    if now != watched:
                        on_changes(set(now) - set(watched))
                        watched = now
                        break  # a place appeared or went: watch the new list
        except (OSError, RuntimeError):  # a place removed under the watch: list them again
            stop.wait(every / 10)
            watched = places()
        finally:
            notify.close()
