"""A headless Chromium driven over the Chrome DevTools Protocol, for the ``--serve`` tests and the
README's browser screenshot.

The protocol runs over a pipe (``--remote-debugging-pipe``: Chromium reads JSON messages ending in a
NUL byte on its fd 3 and writes them on fd 4), not over a port: no chromedriver process, no
WebDriver client library and no debugging port that another local process could attach to. The page
is textual-serve's: xterm.js draws the app on a canvas, so the screen is read from xterm's own buffer
(``Terminal.buffer.active``, public xterm API), which a script installed before the page's own finds
when textual.js stores its terminal (``this.terminal = new Terminal(…)``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

# the machine notes' flags: without the background-networking ones Chromium keeps dialling out
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--remote-debugging-pipe",
)
WINDOW = (1280, 720)

# Before textual.js runs: keep the xterm Terminal it creates, so the test can read what it drew.
FIND_TERMINAL = """
Object.defineProperty(Object.prototype, 'terminal', {configurable: true, set(value) {
  Object.defineProperty(this, 'terminal', {value, writable: true, configurable: true, enumerable: true});
  if (value && value.buffer && value.onData) window.__tokenboxTerminal = value;
}});
"""
SCREEN = """(() => {
  const t = window.__tokenboxTerminal;
  if (!t) return null;
  const rows = [];
  for (let y = 0; y < t.rows; y++) rows.push(t.buffer.active.getLine(y)?.translateToString(true) ?? '');
  return rows.join('\\n');
})()"""


def chromium_path() -> str | None:
    """Debian's ``chromium`` (or another Chromium on PATH), or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium process (in a session of its own, so ``close`` ends all its children)."""

    def __init__(self, executable: str, profile: Path, size: tuple[int, int] = WINDOW) -> None:
        chromium_reads, self.writer = _pipe()  # commands go down one pipe (Chromium's fd 3) …
        self.reader, chromium_writes = _pipe()  # … answers and events come up the other (its fd 4)

        def as_fds_3_and_4() -> None:  # in the child, before exec: only dup2, no Python objects
            os.dup2(chromium_reads, 3)
            os.dup2(chromium_writes, 4)

        try:
            self.process = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "about:blank"],
                pass_fds=(3, 4), preexec_fn=as_fds_3_and_4, start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        except BaseException:
            for end in (self.reader, self.writer):
                os.close(end)
            raise
        finally:
            os.close(chromium_reads)
            os.close(chromium_writes)
        self.buffer = b""
        self.last_id = 0

    def call(self, method: str, session: str | None = None, timeout: float = 10.0, **params: object) -> dict:
        """Send one command and wait for its answer (events in between are skipped)."""
        self.last_id += 1
        message: dict[str, object] = {"id": self.last_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self.writer, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.last_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"Chromium did not answer {method} in {timeout} s")
            if select.select([self.reader], [], [], left)[0]:
                chunk = os.read(self.reader, 1 << 16)
                if not chunk:
                    raise EOFError(f"Chromium closed its pipe (exit {self.process.poll()})")
                self.buffer += chunk

    def open(self, url: str) -> Page:
        """A new tab on ``url``, with the terminal finder installed before the page's scripts run."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session)
        self.call("Page.addScriptToEvaluateOnNewDocument", session, source=FIND_TERMINAL)
        self.call("Page.navigate", session, url=url)
        return Page(self, session)

    def close(self) -> None:
        """End Chromium and every process it started; close the pipes. Never raises."""
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=2)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever is left of its session
        self.process.wait()
        for fd in (self.reader, self.writer):
            with contextlib.suppress(OSError):
                os.close(fd)


class Page:
    """One tab of textual-serve's page."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> object:
        result = self.browser.call("Runtime.evaluate", self.session, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screen(self) -> str:
        """The text xterm.js holds for the terminal's rows ('' before the page made its terminal)."""
        return str(self.evaluate(SCREEN) or "")

    def wait_for(self, found: Callable[[str], re.Match | None], timeout: float) -> re.Match:
        """Poll the screen until ``found`` matches it; raises ``AssertionError`` with the last screen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            match = found(screen)
            if match:
                return match
            time.sleep(0.05)
        raise AssertionError(f"not on the browser's screen after {timeout} s:\n{screen}")

    def press(self, key: str) -> None:
        """Type one printable key into the terminal, as a keyboard would (keydown, keypress, keyup)."""
        self.evaluate("window.__tokenboxTerminal.focus()")
        self.browser.call("Input.dispatchKeyEvent", self.session, type="keyDown", key=key, text=key)
        self.browser.call("Input.dispatchKeyEvent", self.session, type="keyUp", key=key)

    def screenshot(self) -> bytes:
        """The tab as a PNG."""
        return base64.b64decode(self.browser.call("Page.captureScreenshot", self.session, format="png")["data"])


def _pipe() -> tuple[int, int]:
    """A pipe whose ends are above fd 10 (close-on-exec), so that the child can put them on 3 and 4."""
    ends = os.pipe()
    try:
        return tuple(fcntl.fcntl(end, fcntl.F_DUPFD_CLOEXEC, 10) for end in ends)  # type: ignore[return-value]
    finally:
        for end in ends:
            os.close(end)


def served_screenshot(executable: str, args: list[str], env: Mapping[str, str], directory: str,
                      ready: Callable[[str], object], out: Path, window: tuple[int, int] = WINDOW,
                      settle: float = 0.5) -> str:
    """Serve ``tokenbox-tui ARGS --serve 127.0.0.1:0`` (``env``, run in ``directory``), open it in a headless
    Chromium tab, wait until ``ready(screen)`` and a frame changes nothing, save the tab as a PNG at ``out``
    and stop the server (Ctrl-C); the screen's text is returned. For the README's screenshots."""
    server = subprocess.Popen([sys.executable, "-m", "tokenbox.tui", *args, "--serve", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, env=dict(env), cwd=directory, start_new_session=True)
    browser = Browser(executable, Path(directory) / "profile", window)
    try:
        address = re.search(r"http://\S+/", server.stdout.readline().decode())
        assert address, "the server printed no address"
        page = browser.open(address.group(0))
        page.wait_for(ready, 30)
        drawn = ""
        while drawn != page.screen():  # until a frame changes nothing
            drawn = page.screen()
            time.sleep(settle)
        out.write_bytes(page.screenshot())
        return drawn
    finally:
        browser.close()
        os.killpg(server.pid, signal.SIGINT)
        server.wait(10)
