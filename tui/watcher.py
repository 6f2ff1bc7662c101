"""Follow one session file with watchfiles, robust to how editors and agents write files.

The file's *directory* is watched (watching the file itself misses atomic replaces: the watched
inode is gone), changes are filtered to the file's name, and a cheap ``stat`` signature check on
every wake-up catches anything the event stream missed. While the directory does not exist the
loop polls for it; when it is deleted or replaced the watch is set up again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from tokenbox.tui.filestamp import Stamp, stamp
from watchfiles import Change, watch

POLL_SECONDS = 0.25
WAKE_MS = 250
STEP_MS = 30
DEBOUNCE_MS = 300



def _dir_identity(directory: str) -> tuple[int, int] | None:
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(directory) else None


def describe(before: Stamp, after: Stamp) -> str:
    """A word for what happened between two signatures."""
    if before is None and after is not None:
        return "created"
    if before is not None and after is None:
        return "deleted"
    if before is not None and after is not None and before[:2] != after[:2]:
        return "replaced"
    return "modified"


def follow(
    path: str,
    stop: threading.Event,
    on_change: Callable[[str], None],
    *,
    debounce_ms: int = DEBOUNCE_MS,
    step_ms: int = STEP_MS,
    force_polling: bool | None = None,
) -> None:
    """Call ``on_change(what)`` whenever ``path`` may have changed, until ``stop`` is set.

    Runs in a worker thread. ``what`` is ``created``, ``deleted``, ``replaced`` or ``modified``.
    """
    path = os.path.abspath(path)
    directory, name = os.path.split(path)
    last = stamp(path)

    def check(force: bool) -> None:
        nonlocal last
        now = stamp(path)
        if force or now != last:
            what = describe(last, now)
            last = now
            on_change(what)

    def only_our_file(change: Change, changed: str) -> bool:
        return os.path.basename(changed) == name

    while not stop.is_set():
        identity = _dir_identity(directory)
        if identity is None:
            stop.wait(POLL_SECONDS)
            check(False)
            continue
        check(False)  # the file may have appeared while the watch was being set up
        try:
            for changes in watch(
                directory,
                watch_filter=only_our_file,
                debounce=debounce_ms,
                step=step_ms,
                stop_event=stop,
                rust_timeout=WAKE_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                recursive=False,
                force_polling=force_polling,
            ):
                check(bool(changes))
                if _dir_identity(directory) != identity:
                    break  # the directory was removed or replaced: watch the new one
        except (OSError, RuntimeError):
            stop.wait(POLL_SECONDS)
