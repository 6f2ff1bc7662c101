"""Baselines and real-terminal runs for the TUI rows of figure 8.

* ``BareFollower``: the least a file follower can do with watchfiles — watch the directory with the
  same ``step`` and ``debounce`` as the app, read the file and ``json.loads`` it on every change.
  Write → screen of the TUI is compared with write → loaded of this follower, measured in the same
  run on the same edits.
* ``pauses``: the waits before each write. Each is the spacing plus a part of one watch ``step``
  (seeded, the same for the app and the follower): a follower's watch loop wakes every ``step`` and
  restarts when it reports, so writes spaced by a whole number of steps after a report all land at
  the same point of its cycle. With a fixed spacing of 10 steps the bare follower's writes always
  landed just before a wake-up (one step, its best case, every time) while the app's landed wherever
  its own latency put them; an agent's writes are not timed to either.
* ``tmux_run``: the app in a real terminal (a private tmux server, 120 × 40): the time from starting
  it to its first plan on screen (the sidebar's fingerprint appears), and from each write to the edit
  being visible (the edited section's new id in the section bars). What the app draws is read as it
  reaches the terminal: ``tmux pipe-pane`` copies the pane's output to a file, read every millisecond
  with its escape sequences taken out. (Polling ``tmux capture-pane`` instead started a process every
  few milliseconds: on two cores that took most of one from the app it was timing.)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable

_FINGERPRINT = re.compile(r"fingerprint\s+[0-9a-f]{8,}")
# CSI (colours, cursor moves, modes), OSC, charset and keypad sequences: what is left is the text drawn
_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
_KEEP = 8192  # characters of output kept from one read to the next (a marker may straddle two reads)
TIMEOUT = 30.0


class BareFollower:
    """watchfiles on the file's directory; on each change the file is read and json-loaded."""

    def __init__(self, path: str, step_ms: int, debounce_ms: int) -> None:
        self.path = os.path.abspath(path)
        self.step_ms = step_ms
        self.debounce_ms = debounce_ms
        self.seen = threading.Event()
        self.when = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bare-follower", daemon=True)
        self._ready = threading.Event()
        self.failure: BaseException | None = None  # what ended the follower's thread, raised by ``latency``

    def _run(self) -> None:
        try:
            self._follow()
        except BaseException as exc:  # handed to the measuring thread, not lost with this one
            self.failure = exc
            self.seen.set()

    def _follow(self) -> None:
        from watchfiles import watch

        directory, name = os.path.split(self.path)
        self._ready.set()
        for changes in watch(directory, watch_filter=lambda _, changed: os.path.basename(changed) == name,
                             step=self.step_ms, debounce=self.debounce_ms, stop_event=self._stop,
                             raise_interrupt=False, recursive=False):
            if changes and self.load():
                self.when = time.perf_counter()
                self.seen.set()

    def load(self) -> bool:
        """What the follower does on a change: read the file and json-load it.

        False when the read caught the write half done (the file is written in place: truncated,
        then filled). The rest of the write is a change of its own, reported next, as the app's
        reader waits for a torn line to be completed.
        """
        with open(self.path, "rb") as handle:
            data = handle.read()
        try:
            json.loads(data)
        except ValueError:
            return False
        return True

    def __enter__(self) -> BareFollower:
        self._thread.start()
        self._ready.wait()
        time.sleep(0.2)  # the watch is set up
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def latency(self, write: Callable[[], None]) -> float:
        """Seconds from ``write()`` to the follower having loaded the new file."""
        self.seen.clear()
        started = time.perf_counter()
        write()
        if not self.seen.wait(TIMEOUT):
            raise TimeoutError("the bare follower saw no change")
        if self.failure is not None:
            raise RuntimeError("the bare follower's thread failed") from self.failure
        return self.when - started



def end_server(server: str) -> None:
    """Kill the tmux server ``-L server`` and remove its socket (tmux 3.3 leaves the file behind: one per run)."""
    found = subprocess.run(["tmux", "-L", server, "display-message", "-p", "#{socket_path}"],
                           capture_output=True, text=True, check=False)
    subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, check=False)
    socket = found.stdout.strip()
    if found.returncode == 0 and socket:
        with contextlib.suppress(OSError):
            os.remove(socket)

def pauses(spacing: float, count: int, step_ms: int, seed: int = 8) -> list[float]:
    """``count`` waits before writes: ``spacing`` plus a seeded part of one watch step (see above)."""
    rng = random.Random(seed)
    return [spacing + rng.uniform(0.0, step_ms / 1000) for _ in range(count)]


def bare_latencies(path: str, edits: list[bytes], waits: list[float], step_ms: int, debounce_ms: int) -> list[float]:
    """Write → loaded of a ``BareFollower`` for each edit (written in place, after ``waits[k]``)."""

    def writer(data: bytes) -> Callable[[], None]:
        def write() -> None:
            with open(path, "wb") as handle:
                handle.write(data)

        return write

    times = []
    with BareFollower(path, step_ms, debounce_ms) as follower:
        for data, wait in zip(edits, waits, strict=True):
            time.sleep(wait)
            times.append(follower.latency(writer(data)))
    return times


_SERVERS = itertools.count()


def _server_name() -> str:
    """A tmux server of its own for each run (a server just killed may still be going away under its name)."""
    return f"tokenbox-bench-{os.getpid()}-{next(_SERVERS)}"


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


GLANCE_TEXT = " · newest request"  # the top bar while a big file is read (``tui/agentview.glance_fields``)

class _PaneOutput:
    """The pane's output as the app writes it (``tmux pipe-pane`` into a file), without escapes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.tail = ""

    def skip(self) -> None:
        """Forget what was drawn so far: the next ``wait`` looks only at what comes after."""
        self.offset = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        self.tail = ""

    def wait(self, found: Callable[[str], bool]) -> float:
        """The time at which ``found`` first holds for the text drawn since the last ``skip``."""
        deadline = time.perf_counter() + TIMEOUT
        while time.perf_counter() < deadline:
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(self.offset)
                    data = handle.read()
            except FileNotFoundError:
                data = b""
            if data:
                now = time.perf_counter()
                self.offset += len(data)
                # all that came in is searched (a whole frame can arrive in one read, far more than
                # _KEEP: cutting first lost a marker drawn early in it); the tail only bridges reads
                text = self.tail + data.decode("utf-8", "replace")
                self.tail = text[-_KEEP:]
                if found(_ESCAPES.sub("", text)):
                    return now
            time.sleep(0.001)
        shown = " ".join(_ESCAPES.sub("", self.tail).split())[-160:]
        raise TimeoutError(f"the screen never showed it; the last text drawn: {shown!r}")


def tmux_run(path: str, edits: list[tuple[bytes, str]], waits: list[float], env: dict[str, str]) -> tuple[float, list[float]]:
    """Start the app on ``path`` in tmux; seconds to the first plan on screen, and write → visible
    for each ``(content, marker)`` edit (the marker is text the new plan shows)."""
    server = _server_name()
    command = shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *(f"{k}={v}" for k, v in env.items() if k.startswith(("PYTHON", "XDG_", "TOKENBOX"))),
                          sys.executable, "-m", "tokenbox.tui", path])
    output = _PaneOutput(f"{path}.pane-{os.getpid()}")
    started = time.perf_counter()
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", "120", "-y", "40", command], check=True)
    try:
        # attached at once: the app takes far longer to start than tmux takes to run this
        subprocess.run(["tmux", "-L", server, "pipe-pane", "-o", f"cat >> {shlex.quote(output.path)}"], check=True)
        first = output.wait(lambda screen: _FINGERPRINT.search(screen) is not None) - started
        latencies = []
        for (data, marker), wait in zip(edits, waits, strict=True):
            time.sleep(wait)
            output.skip()
            started = time.perf_counter()
            with open(path, "wb") as handle:
                handle.write(data)
            latencies.append(output.wait(lambda screen, marker=marker: marker in screen) - started)
        return first, latencies
    finally:
        end_server(server)
        with contextlib.suppress(OSError):
            os.remove(output.path)


def _rss(pid: int) -> int:
    """Resident memory of process ``pid`` in bytes (``/proc``; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _app_pid(server: str) -> int:
    out = subprocess.run(["tmux", "-L", server, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True, check=False)
    return int(out.stdout.split()[0]) if out.stdout.split() else 0


_TURN = re.compile(r"(?:turn|request) (\d+)/(\d+)")  # the top bar: a tokenbox session's turn, an agent's request


def tmux_start_append(path: str, append: str, env: dict[str, str], later: tuple[str, ...] = (), spacing: float = 1.0,
                      size: tuple[int, int] = (140, 42), module: str = "tokenbox.tui",
                      context_at: list[float] | None = None) -> tuple[float, float, list[float]]:
    """The app started on ``path`` in tmux; ``append`` (one more main-thread request) is written the moment
    the first plan is on screen, then each of ``later`` (one main-thread request each) ``spacing`` seconds
    (plus a seeded part of a second) after the one before was shown. Seconds from the start to the first
    plan, from the first write to its request on screen (the top bar's ``request N/N`` counts it), and
    from each later write to its request on screen. ``context_at`` is given the seconds from the start to
    the newest request's context on screen: a big file's glance at its tail (``tui/glance.py``), else the
    first plan."""
    server = _server_name()
    output = _PaneOutput(f"{path}.pane-{os.getpid()}")
    started = time.perf_counter()
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", str(size[0]), "-y", str(size[1]),
                    _command(path, env, module)], check=True)
    try:
        subprocess.run(["tmux", "-L", server, "pipe-pane", "-o", f"cat >> {shlex.quote(output.path)}"], check=True)
        count: list[int] = []

        def first_turn(screen: str) -> bool:
            found = _TURN.findall(screen)
            if context_at is not None and not context_at and (found or GLANCE_TEXT in screen):
                context_at.append(time.perf_counter() - started)
            if found:
                count.append(int(found[-1][1]))
            return bool(found)

        def written(text: str) -> float:
            output.skip()
            at = time.perf_counter()
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)
            want = count[-1] + 1
            shown = output.wait(lambda screen: any(int(total) >= want for _, total in _TURN.findall(screen)))
            count.append(want)
            return shown - at

        stage = "the first plan"
        try:
            first = output.wait(first_turn) - started
            stage = f"request {count[-1] + 1} (appended at the first plan)"
            shown = written(append)
            rng = random.Random(9)
            latencies = []
            for text in later:
                time.sleep(spacing + rng.uniform(0.0, 0.2))
                stage = f"request {count[-1] + 1}"
                latencies.append(written(text))
        except TimeoutError as exc:
            screen = subprocess.run(["tmux", "-L", server, "capture-pane", "-p"], capture_output=True, text=True, check=False)
            top = (screen.stdout.splitlines() or [""])[0].strip()
            raise TimeoutError(f"{stage} never shown; the screen's top line: {top!r}; {exc}") from None
        return first, shown, latencies
    finally:
        end_server(server)
        with contextlib.suppress(OSError):
            os.remove(output.path)


class LineFollower(BareFollower):
    """The least a follower of a JSON-lines file can do: watchfiles on its directory; on each change the
    bytes appended since the last change are read and each complete line json-loaded (``loads``)."""

    def __init__(self, path: str, step_ms: int, debounce_ms: int, loads: Callable[[bytes], object] = json.loads) -> None:
        super().__init__(path, step_ms, debounce_ms)
        self.loads = loads
        self.offset = os.path.getsize(path)

    def load(self) -> bool:
        """Read what was appended since the last change and json-load each complete line; False when no
        line was complete yet (the append caught half done: its end is a change of its own)."""
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            if line.strip():
                self.loads(line)
        return end > 0


def line_follower_latencies(path: str, texts: list[str], spacing: float, step_ms: int, debounce_ms: int) -> list[float]:
    """Append → loaded of a ``LineFollower`` for each of ``texts``, spaced as ``tmux_start_append`` spaces them."""
    rng = random.Random(9)
    times = []

    def writer(text: str) -> Callable[[], None]:
        def write() -> None:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)

        return write

    with LineFollower(path, step_ms, debounce_ms) as tail:
        for text in texts:
            time.sleep(spacing + rng.uniform(0.0, 0.2))
            times.append(tail.latency(writer(text)))
    return times


def _command(path: str, env: dict[str, str], module: str = "tokenbox.tui") -> str:
    """The app on ``path`` as tmux runs it (the server has the caller's environment: a ``COLUMNS`` or
    ``LINES`` there, as a test runner sets, would make Textual draw at that size, not the pane's);
    ``module``: another program run the same way (``benchmarks.textual_follower``, from this checkout)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path_env = [] if module.startswith("tokenbox.") else [f"PYTHONPATH={here}"]
    return shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *(f"{k}={v}" for k, v in env.items() if k.startswith(("PYTHON", "XDG_", "TOKENBOX"))),
                       *path_env, sys.executable, "-m", module, path])


def tmux_follow(path: str, requests: list[str], rate: float, env: dict[str, str], settle: float = 60.0,
                size: tuple[int, int] = (140, 42), quiet: float = 1.5) -> dict:
    """The app following ``path`` in tmux while ``requests`` are appended ``rate`` a second: its RSS
    (``/proc``) every second, the longest time without anything drawn (the pane's output, read as
    written) and the lag of the last request. RSS growth is taken from ``settle`` seconds on (the
    caches fill in the first minute), per 1000 requests."""
    server = _server_name()
    output = _PaneOutput(f"{path}.pane-{os.getpid()}")
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), _command(path, env)],
                   check=True)
    try:
        subprocess.run(["tmux", "-L", server, "pipe-pane", "-o", f"cat >> {shlex.quote(output.path)}"], check=True)
        output.wait(lambda screen: _TURN.search(screen) is not None)
        pid = _app_pid(server)
        started = time.perf_counter()
        samples: list[tuple[float, int, int]] = []  # (seconds, requests written, rss)
        drawn_at = [started]
        size_seen = os.path.getsize(output.path)
        written = 0
        next_sample = started
        while written < len(requests):
            now = time.perf_counter()
            due = started + written / rate
            if now >= due:
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(requests[written])
                written += 1
            if now >= next_sample:
                samples.append((now - started, written, _rss(pid)))
                next_sample += 1.0
            grown = os.path.getsize(output.path)
            if grown != size_seen:
                size_seen = grown
                drawn_at.append(time.perf_counter())
            time.sleep(0.002)
        ended = time.perf_counter()
        # the last request on screen: the pane stops changing once it is drawn (``quiet`` seconds; at most 30 s)
        while time.perf_counter() - drawn_at[-1] < quiet and time.perf_counter() - ended < 30:
            grown = os.path.getsize(output.path)
            if grown != size_seen:
                size_seen = grown
                drawn_at.append(time.perf_counter())
            time.sleep(0.002)
        samples.append((time.perf_counter() - started, written, _rss(pid)))
        gaps = [(b - a, a - started) for a, b in itertools.pairwise(drawn_at) if a < ended]
        widest = max(gaps, default=(0.0, 0.0))
        late = [s for s in samples if s[0] >= settle] or samples[-2:]
        first, last = late[0], samples[-1]
        per_1000 = (last[2] - first[2]) * 1000 / max(1, last[1] - first[1])
        return {"rss_start": samples[0][2], "rss_settled": first[2], "rss_end": last[2], "growth_per_1000": per_1000,
                "requests": written, "seconds": ended - started, "max_gap": widest[0], "max_gap_at": widest[1],
                "last_drawn_after": drawn_at[-1] - ended, "samples": samples}
    finally:
        end_server(server)
        with contextlib.suppress(OSError):
            os.remove(output.path)
