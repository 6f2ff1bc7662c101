"""The least a terminal program following a Claude Code transcript can do: figure 9's floor for write → screen
through the same terminal as the app (tmux), without Textual.

    python -m benchmarks.print_follower TRANSCRIPT [STEP_MS]

It prints ``request N/N`` on one line of its terminal, N the main thread's requests (distinct ``message.id``
of its assistant lines, as the app's top bar counts them), and rewrites that line after each change:
watchfiles on the file's directory at a ``STEP_MS`` step (default 1); on each change the appended complete
lines are read and json-loaded. What is left is watching, reading, and the terminal's way to the screen
(the pty, tmux, its ``pipe-pane``, the benchmark's read of it), which every program on that screen pays.
The in-process line follower (``follower.LineFollower``) pays all but the terminal.
"""

from __future__ import annotations

import json
import os
import sys


def count_requests(lines: list[bytes], seen: set[str]) -> None:
    """Add the main thread's assistant message ids of ``lines`` (complete JSON lines) to ``seen``."""
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("type") == "assistant" and not record.get("isSidechain"):
            message = record.get("message") or {}
            seen.add(str(message.get("id") or record.get("uuid")))


class RequestCounter:
    """The main thread's requests of one transcript, counted as its complete lines are appended."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.seen: set[str] = set()
        self.offset = 0

    def read(self) -> None:
        """Read the complete lines appended since the last read and count their requests."""
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        count_requests(data[:end].splitlines(), self.seen)

    @property
    def text(self) -> str:
        """``request N/N``, as the app's top bar shows the newest request."""
        count = len(self.seen)
        return f"request {count}/{count}"


def main(argv: list[str] | None = None) -> int:
    """Follow the transcript named on the command line until interrupted."""
    from watchfiles import watch

    args = sys.argv[1:] if argv is None else argv
    follower = RequestCounter(args[0])
    step_ms = int(args[1]) if len(args) > 1 else 1
    directory, name = os.path.split(follower.path)
    changes_seen = watch(directory, watch_filter=lambda _, changed: os.path.basename(changed) == name,
                         step=step_ms, debounce=1600, raise_interrupt=False, recursive=False, yield_on_timeout=True,
                         rust_timeout=100)
    # the watch is set up before the first read (its first yield comes after the first timeout), so a write
    # made the moment the first count is printed is seen
    first = True
    for changes in changes_seen:
        if changes or first:
            follower.read()
            # rewrite the terminal's line: carriage return, erase the line, no newline
            sys.stdout.write(f"\r\x1b[2K{follower.text}")
            sys.stdout.flush()
            first = False
    return 0


if __name__ == "__main__":
    sys.exit(main())
