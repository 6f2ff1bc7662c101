"""The first plan of ``tokenbox-tui FILE``, worked out in a forked process while the app imports Textual.

Start-up is two long jobs that each hold the GIL: importing Textual and building the app (≈ 300–400
ms), and loading the BPE table and planning the file (≈ 400 ms, what ``tokenbox plan`` does). A
thread beside the import saves nothing (both are Python, and tiktoken builds its tables holding the
GIL), so done one after the other the first plan reached the screen ≈ 1.8× later than a
``tokenbox plan`` process. The console entry therefore forks, before anything heavy is imported
(no thread exists yet): the child runs the planner on the request the app will make first and
sends back the finished ``Outcome`` (pickled, over a pipe that only the two processes hold), while
the parent imports Textual and mounts the app on the other core. The app's plan worker takes that
outcome instead of planning (``take``), draws it, and only then builds its own engine for the
requests that follow, in the background.

Nothing changes in what is shown: the child runs the same ``Planner`` on the same request with the
same environment, so a plan, a file that fails to load, a missing tokenizer or bad settings arrive
exactly as the app's own planner would report them. Anything unexpected (no ``fork``, the child
dying, a pickle that fails, a request that does not match) means ``take`` returns ``None`` and the
app plans as it always did. The child never touches the terminal (its standard streams are
``/dev/null``), ignores Ctrl-C (the app handles it; ``close`` ends the child), writes no file, and
ends itself after ``CHILD_SECONDS`` whatever happens (``SIGALRM``), so that even a parent killed
outright leaves nothing behind for long. The parent reaps it (``take`` or ``close``, both safe from
any thread), so no zombie outlives the app.

Forking is only safe while the process has one thread (a lock held by another thread at the fork
stays held in the child for ever): ``start`` refuses when it finds another (``single_threaded``),
and the entry forks first thing, before anything that could start one is imported. On one CPU it
does not fork either: the two processes would only take turns (``usable_cpus``); the entry then
loads the table before Textual instead (``tokenbox.tui.prewarm``).

The fork, the pipe and the reaping are ``Forked``'s, which the board's first looks share
(``tui/board/firstlooks.py``). The gain needs that second core to be free: on a machine whose cores are
already busy, the app's own start-up competes with the child's and the first plan comes no sooner than
with the prewarm.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Self

from tokenbox.tui.filestamp import Stamp, stamp

if TYPE_CHECKING:  # the planner is imported by the child and by ``take``, not at fork time
    from tokenbox.tui.planner import Outcome, PlanRequest

# A file larger than this is planned by the app itself: its load and plan dominate the table's, so
# planning it twice (the child, then the app's own engine) would cost more than it saves.
FORK_MAX_BYTES = 4 * 1024 * 1024
CHILD_SECONDS = 60  # the child's hard limit (``SIGALRM``): past it, it ends without a word
TAKE_TIMEOUT = CHILD_SECONDS + 5.0  # seconds ``take`` waits at most (the child has ended by then)


class Forked:
    """A process forked before Textual is imported, working out one result for the app (pickled bytes);
    ``result`` waits for them (once). ``FirstPlan`` is the inspector's, ``tui/board/firstlooks.py`` the
    board's."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid  # the child's process id (reaped by ``result`` or ``close``)
        self._live: int | None = pid  # not reaped yet
        self._fd: int | None = fd
        self._lock = threading.Lock()  # ``close`` (the UI thread) can meet ``result`` (a worker)

    @classmethod
    def fork(cls, work: Callable[[], bytes | None]) -> Self | None:
        """Fork a process that sends back what ``work()`` returns there (nothing for ``None``); ``None``
        where no process can be forked (the app does the work itself)."""
        if not hasattr(os, "fork") or not single_threaded() or usable_cpus() < 2:
            return None
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:  # pragma: no cover - the child (its work is what the app itself would do)
            os.close(read_fd)
            _child(work, write_fd)
        os.close(write_fd)
        return cls(pid, read_fd)

    def result(self, timeout: float = TAKE_TIMEOUT) -> bytes:
        """What the child sent (``b""``: nothing, it failed, or already taken). Blocks until it is done."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is None:
            return b""
        try:
            return _read_all(fd, time.monotonic() + timeout)
        finally:
            os.close(fd)
            self._reap()

    def close(self) -> None:
        """End the child if it still runs (the app quit first, or never took it) and reap it; a ``result``
        waiting in another thread then returns at once. Idempotent, from any thread."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self._reap()

    def _reap(self) -> None:
        """Kill the child (done already: it exits once written; or not wanted any more) and wait for it."""
        with self._lock:  # the pid is signalled and waited for once: never a recycled one
            pid, self._live = self._live, None
            if pid is None:
                return
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


class FirstPlan(Forked):
    """A forked process planning the app's first request; ``take`` waits for its outcome (once)."""

    def __init__(self, pid: int, fd: int) -> None:
        super().__init__(pid, fd)
        self.stamp: Stamp = None  # the file as the child read it (set by ``take``)
        self.handed = False  # whether ``take`` handed the child's outcome over

    @classmethod
    def start(cls, make_request: Callable[[], PlanRequest | None]) -> FirstPlan | None:
        """Fork a process that plans what ``make_request()`` returns there (nothing when it returns
        ``None``); ``None`` where no process can be forked (the app plans itself).

        Called before Textual is imported and before any thread starts: the child parses the flags
        (``make_request``) and loads the table at once while the parent imports Textual."""
        return cls.fork(lambda: _planned(make_request))

    def take(self, request: PlanRequest, timeout: float = TAKE_TIMEOUT) -> Outcome | None:
        """The child's outcome for ``request`` (the app's own request object in it), or ``None``: not
        the same request, already taken, or the child failed. Blocks until the child is done."""
        data = self.result(timeout)
        if not data:
            return None
        from tokenbox.tui.planner import Outcome

        try:
            read_stamp, outcome = pickle.loads(data)  # written by our own child, over our own pipe
        except Exception:
            return None
        if not isinstance(outcome, Outcome) or _key(outcome.request) != _key(request):
            return None
        self.stamp = read_stamp
        self.handed = True
        return replace(outcome, request=request)


def usable_cpus() -> int:
    """The CPUs this process may run on: with one, the child only takes turns with the app (no gain)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def single_threaded() -> bool:
    """Whether this process runs one thread only (forking is safe then); ``False`` when unsure."""
    try:
        return len(os.listdir("/proc/self/task")) == 1  # every thread, Python's or not
    except OSError:
        pass
    module = sys.modules.get("threading")  # elsewhere: the threads Python knows of
    return module is None or module.active_count() == 1


def _key(request: PlanRequest) -> PlanRequest:
    """What must match between the child's request and the app's (not its number or reason)."""
    return replace(request, seq=0, reason="")


def _read_all(fd: int, deadline: float) -> bytes:
    """Everything the child writes, until it closes the pipe; ``b""`` past ``deadline``."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        try:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
        except InterruptedError:
            continue
        except OSError:
            return b""
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _planned(make_request: Callable[[], PlanRequest | None]) -> bytes | None:  # pragma: no cover - forked
    """In the child: ``(stamp, outcome)`` of planning ``make_request()``, pickled (``None``: nothing to plan)."""
    request = make_request()
    if request is None:
        return None
    read_stamp = stamp(request.path)  # before reading: a later change shows as a difference
    if read_stamp is not None and read_stamp[2] > FORK_MAX_BYTES:
        return None
    from tokenbox.tui.planner import Planner

    outcome = Planner().run(request)
    return pickle.dumps((read_stamp, outcome), protocol=pickle.HIGHEST_PROTOCOL)


def _child(work: Callable[[], bytes | None], write_fd: int) -> None:  # pragma: no cover - forked
    """Write what ``work()`` returns to ``write_fd``; never returns."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the app's; it ends this process
        signal.alarm(CHILD_SECONDS)  # the default action ends the process: bounded, whatever hangs
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never a byte to or from the terminal the app is about to take over
            os.dup2(null, fd)
        data = work()
        if data is None:
            return
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view):]
    except BaseException:  # the app does the work itself when nothing arrives
        pass
    finally:
        os._exit(0)
