"""Baselines and real-terminal runs for the TUI rows of figure 8.

* ``BareFollower``: the least a file follower can do with watchfiles — watch the directory with the
  same ``step`` and ``debounce`` as the app, read the file and ``json.loads`` it on every change.
  Write → screen of the TUI is compared with write → loaded of this follower, measured in the same
  run on the same edits.
* ``tmux_run``: the app in a real terminal (a private tmux server, 120 × 40): the time from starting
  it to its first plan on screen (the sidebar's fingerprint appears), and from each write to the edit
  being visible (the edited section's new id in the section bars), read with ``tmux capture-pane``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable

_FINGERPRINT = re.compile(r"fingerprint\s+[0-9a-f]{8,}")
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

    def _run(self) -> None:
        from watchfiles import watch

        directory, name = os.path.split(self.path)
        self._ready.set()
        for changes in watch(directory, watch_filter=lambda _, changed: os.path.basename(changed) == name,
                             step=self.step_ms, debounce=self.debounce_ms, stop_event=self._stop,
                             raise_interrupt=False, recursive=False):
            if changes:
                with open(self.path, "rb") as handle:
                    json.loads(handle.read())
                self.when = time.perf_counter()
                self.seen.set()

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
        return self.when - started


def bare_latencies(path: str, edits: list[bytes], spacing: float, step_ms: int, debounce_ms: int) -> list[float]:
    """Write → loaded of a ``BareFollower`` for each edit (written in place, ``spacing`` apart)."""

    def writer(data: bytes) -> Callable[[], None]:
        def write() -> None:
            with open(path, "wb") as handle:
                handle.write(data)

        return write

    times = []
    with BareFollower(path, step_ms, debounce_ms) as follower:
        for data in edits:
            time.sleep(spacing)
            times.append(follower.latency(writer(data)))
    return times


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


def _capture(server: str) -> str:
    return subprocess.run(["tmux", "-L", server, "capture-pane", "-p"], capture_output=True, text=True,
                          check=False).stdout


def _wait_for(server: str, found: Callable[[str], bool]) -> float:
    deadline = time.perf_counter() + TIMEOUT
    while time.perf_counter() < deadline:
        if found(_capture(server)):
            return time.perf_counter()
        time.sleep(0.002)
    raise TimeoutError("the screen never showed it")


def tmux_run(path: str, edits: list[tuple[bytes, str]], spacing: float, env: dict[str, str]) -> tuple[float, list[float]]:
    """Start the app on ``path`` in tmux; seconds to the first plan on screen, and write → visible
    for each ``(content, marker)`` edit (the marker is text the new plan shows)."""
    server = f"tokenbox-bench-{os.getpid()}"
    command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items() if k.startswith(("PYTHON", "XDG_", "TOKENBOX"))),
                          sys.executable, "-m", "tokenbox.tui", path])
    started = time.perf_counter()
    subprocess.run(["tmux", "-L", server, "new-session", "-d", "-x", "120", "-y", "40", command], check=True)
    try:
        first = _wait_for(server, lambda screen: _FINGERPRINT.search(screen) is not None) - started
        latencies = []
        for data, marker in edits:
            time.sleep(spacing)
            started = time.perf_counter()
            with open(path, "wb") as handle:
                handle.write(data)
            latencies.append(_wait_for(server, lambda screen, marker=marker: marker in screen) - started)
        return first, latencies
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], capture_output=True, check=False)
