"""The least a Textual app following a Claude Code transcript can do: figure 9's floor for write → screen
drawn in a terminal.

    python -m benchmarks.textual_follower TRANSCRIPT [STEP_MS]

One ``Static`` showing ``request N/N``, N the main thread's requests (distinct ``message.id`` of its
assistant lines, as the app's top bar counts them). watchfiles on the file's directory at a ``STEP_MS``
step (default 1) in a thread; on each change the appended complete lines are read and json-loaded, and
the label is updated from that thread (``call_from_thread``). No plan, no layout of parts: what is left
is watching, reading and Textual drawing one frame into the terminal, which any Textual follower pays.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from textual.app import App, ComposeResult
from textual.widgets import Static

from benchmarks.print_follower import RequestCounter


class TextualFollower(App[None]):
    """A label of the main thread's request count, kept up to date from a watchfiles thread."""

    def __init__(self, path: str, step_ms: int) -> None:
        super().__init__()
        self.counter = RequestCounter(path)
        self.path = self.counter.path
        self.step_ms = step_ms
        self.stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static(id="count")

    def on_mount(self) -> None:
        # the watch first: a write made the moment the first count is drawn must be seen (as the app sees it)
        threading.Thread(target=self._watch, name="watch", daemon=True).start()
        time.sleep(0.2)  # watchfiles sets its watch up in its own thread; the first read comes after it
        self.counter.read()
        self._show()

    def on_unmount(self) -> None:
        self.stop.set()

    def _show(self) -> None:
        self.query_one("#count", Static).update(self.counter.text)

    def _watch(self) -> None:
        from watchfiles import watch

        directory, name = os.path.split(self.path)
        for changes in watch(directory, watch_filter=lambda _, changed: os.path.basename(changed) == name,
                             step=self.step_ms, debounce=1600, stop_event=self.stop, raise_interrupt=False,
                             recursive=False):
            if changes:
                self.counter.read()
                self.call_from_thread(self._show)


def main(argv: list[str] | None = None) -> int:
    """Follow the transcript named on the command line until quit."""
    args = sys.argv[1:] if argv is None else argv
    TextualFollower(args[0], int(args[1]) if len(args) > 1 else 1).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
