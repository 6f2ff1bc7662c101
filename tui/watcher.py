"""Follow one session file with watchfiles, robust to how editors and agents write files.

The file's *directory* is watched (watching the file itself misses atomic replaces: the watched
inode is gone), changes are filtered to the file's name, and a cheap ``stat`` signature check on
every wake-up catches anything the event stream missed. A folder session (an OpenCode storage folder,
a Cline task folder) is watched itself, with everything below it. While the directory does not exist the
loop polls for it; when it is deleted or replaced the watch is set up again.

watchfiles reports a change once a whole step has passed with no newer one, so the step is most of the
time from a write to the screen. A file being written is watched with a short step (``ACTIVE_STEP_MS``:
an agent's next line is on screen a few milliseconds after it lands), a quiet one with a longer step
(``STEP_MS``): each step wakes the watch thread, and a short one costs idle CPU (measured: ≈0.2 % of a
core at 30 ms, ≈1.2 % at 2 ms). The first write after a quiet spell is seen at the quiet step, and the
watch then waits at the short one until the file has been quiet for ``ACTIVE_SECONDS``. A file
last written less than ``ACTIVE_SECONDS`` before the watch starts (its mtime: an agent at work when the
app is opened on its session) is being written from the start: seen at the quiet step, the first write
took 30–60 ms more to reach the screen than any later one.

The step changes without starting the watch again (``tui/watchbackend.py``: watchfiles' backend, opened once
and waited on at either step), so no write lands in a gap between two watches, and a followed folder's
recursive watch (an OpenCode ``storage`` folder: one folder per message) walks its tree once, not at every
change of step (0.4–0.7 s holding the interpreter for a storage of 12 000 folders).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from tokenbox.tui.filestamp import Stamp, stamp
from tokenbox.tui.watchbackend import Backend, open_backend

POLL_SECONDS = 0.25
WAKE_MS = 250
STEP_MS = 30  # the step while the file is quiet
ACTIVE_STEP_MS = 2  # the step while it is being written
ACTIVE_SECONDS = 30.0  # a file is being written until it has been quiet this long (an agent's pauses)
DEBOUNCE_MS = 300
SMALL_TREE_FOLDERS = 64  # a followed folder with at most this many below it is watched at once (see ``follow``)


def step_ms(quiet_seconds: float, *, idle: int = STEP_MS, active: int = ACTIVE_STEP_MS) -> int:
    """The watch step for a file whose last change was ``quiet_seconds`` ago (see the module docstring)."""
    return active if quiet_seconds < ACTIVE_SECONDS else idle


def _written_at(found: Stamp, clock: Callable[[], float] = time.monotonic) -> float:
    """When the file of stamp ``found`` was last written, on ``clock``'s scale (its mtime's age taken from
    it; a future mtime is now); ``-inf`` for a missing file (quiet: the long step)."""
    if found is None:
        return float("-inf")
    age = max(0.0, time.time() - found[3] / 1e9)
    return clock() - age


def few_folders(root: str, limit: int = SMALL_TREE_FOLDERS) -> bool:
    """Whether at most ``limit`` folders lie below ``root`` (the walk stops at the one over: bounded by it,
    whatever the tree's size; an unreadable folder counts as empty)."""
    count = 0
    pending = [root]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        count += 1
                        if count > limit:
                            return False
                        pending.append(entry.path)
        except OSError:
            continue
    return True


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
    idle_step_ms: int = STEP_MS,
    active_step_ms: int = ACTIVE_STEP_MS,
    force_polling: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    backend: Callable[[list[str], bool | None, bool], Backend] = open_backend,
    folder_opened_after: threading.Event | None = None,
) -> None:
    """Call ``on_change(what)`` whenever ``path`` may have changed, until ``stop`` is set.

    Runs in a worker thread. ``what`` is ``created``, ``deleted``, ``replaced`` or ``modified``. The file
    is watched at ``active_step_ms`` while it is being written and at ``idle_step_ms`` once it has been
    quiet for ``ACTIVE_SECONDS`` (``clock`` tells the time); ``backend`` opens the watch. A folder's watch
    with more than ``SMALL_TREE_FOLDERS`` below it is opened once ``folder_opened_after`` is set, if given, and
    then reports a change at once (see below).
    """
    path = os.path.abspath(path)
    # a folder session (an OpenCode storage folder, a Cline task folder) changes inside: its own tree is
    # watched, every change in it counts; a file's directory is watched for the file's name
    tree = os.path.isdir(path)
    directory, name = (path, "") if tree else os.path.split(path)
    recursive = tree
    last = stamp(path)
    changed_at = _written_at(last, clock)  # written a moment ago: the short step from the start

    def check(force: bool) -> None:
        nonlocal last, changed_at
        now = stamp(path)
        if force or now != last:
            what = describe(last, now)
            last = now
            changed_at = clock()
            on_change(what)

    def ours(changed: str) -> bool:
        return tree or os.path.basename(changed) == name

    # setting a folder's recursive watch up walks its tree holding the interpreter (0.4–0.7 s for an OpenCode
    # storage of 12 000 folders), which held the first plan off the screen as long: the app opens a big one
    # after its first plan is drawn. A change below the folder meanwhile does not show in its stamp (its own
    # entries): one is reported once the watch is open, and the folder read again. A small tree (a Cline task,
    # an OpenCode message folder) is set up in milliseconds, at once.
    unseen = False
    if tree and folder_opened_after is not None and not few_folders(path):
        while not folder_opened_after.wait(POLL_SECONDS):
            if stop.is_set():
                return
        unseen = True

    while not stop.is_set():
        identity = _dir_identity(directory)
        if identity is None:
            stop.wait(POLL_SECONDS)
            check(False)
            continue
        try:
            notify = backend([directory], force_polling, recursive)
        except (OSError, RuntimeError):
            if recursive:
                # a tree too big to watch whole (the system's limit of watches): its own entries from now on,
                # with the stamp checked at every wake-up (a change deeper down is seen when it reaches them)
                recursive = False
                continue
            stop.wait(POLL_SECONDS)
            continue
        try:
            check(unseen)  # the file may have changed while the watch was being set up
            unseen = False
            while not stop.is_set():
                step = step_ms(clock() - changed_at, idle=idle_step_ms, active=active_step_ms)
                waited = notify.watch(debounce_ms, step, WAKE_MS, stop)
                if waited in ("signal", "stop"):
                    break  # (a signal: the main thread's only) set up again, as ``watchfiles.watch`` would end
                check(isinstance(waited, set) and any(ours(changed) for _, changed in waited))
                if _dir_identity(directory) != identity:
                    break  # the directory was removed or replaced: watch the new one
        except (OSError, RuntimeError):
            stop.wait(POLL_SECONDS)
        finally:
            notify.close()
