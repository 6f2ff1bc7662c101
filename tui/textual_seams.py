"""The terminal driver: Textual's, plus an exit when the terminal disappears.

Started under ``su`` or ``setsid``, the app can lose its terminal without a hang-up signal: reads
of the tty then return end of file (or fail with EIO) at once, forever, and Textual's input thread
spins on them at full CPU. This driver posts ``TerminalGone`` instead, and the app quits.
"""

from __future__ import annotations

import os
import sys

from textual.driver import Driver
from textual.message import Message


class TerminalGone(Message):
    """The terminal's input reached end of file or failed: nobody can see or answer the app any more."""


def driver_class() -> type[Driver] | None:
    """The driver for this platform (``None``: Textual's default, e.g. on Windows)."""
    if sys.platform == "win32":
        return None
    from textual.drivers.linux_driver import LinuxDriver

    class FollowingDriver(LinuxDriver):
        """``LinuxDriver`` whose input thread ends, and tells the app, when the terminal is gone."""

        def run_input_thread(self) -> None:
            """Textual's input loop (``LinuxDriver.run_input_thread``, 8.x), ending on end of file or EIO."""
            import selectors
            from codecs import getincrementaldecoder

            from textual._xterm_parser import XTermParser

            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)
            parser = XTermParser(self._debug)
            decode = getincrementaldecoder("utf-8")().decode
            try:
                while not self.exit_event.is_set():
                    for _key, mask in selector.select(0.1):
                        if not mask & selectors.EVENT_READ:
                            continue
                        try:
                            data = os.read(self.fileno, 1024 * 4)
                        except OSError:
                            data = b""
                        if not data:  # readable yet empty: end of file, the terminal is gone
                            self._app.post_message(TerminalGone())
                            return
                        for event in parser.feed(decode(data)):
                            self.process_message(event)
                    for event in parser.tick():
                        self.process_message(event)
            finally:
                selector.close()

    return FollowingDriver
