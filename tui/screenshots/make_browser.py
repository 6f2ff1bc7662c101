"""Save the README's browser screenshot again: ``tokenbox-tui --serve`` on the same real Claude Code
transcript as ``make.py``, in a headless Chromium tab (a PNG the browser took). Needs Chromium (Debian:
``apt-get install chromium``). Run from the repository: ``python tui/screenshots/make_browser.py``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # the test suite's browser driver

from tests.tui.browser import Browser, chromium_path  # noqa: E402

TRANSCRIPT = ROOT / "tests" / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
WINDOW = (1400, 820)


def main() -> None:
    executable = chromium_path()
    if executable is None:
        sys.exit("make_browser.py: no Chromium on PATH (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / TRANSCRIPT.name
        shutil.copyfile(TRANSCRIPT, path)
        environment = dict(os.environ, TOKENBOX_TUI_FROZEN="1")  # no clock or timings in the picture
        server = subprocess.Popen([sys.executable, "-m", "tokenbox.tui", str(path), "--serve", "127.0.0.1:0"],
                                  stdout=subprocess.PIPE, env=environment, start_new_session=True)
        browser = Browser(executable, Path(directory) / "profile", WINDOW)
        try:
            address = re.search(r"http://\S+/", server.stdout.readline().decode())
            assert address, "the server printed no address"
            page = browser.open(address.group(0))
            page.wait_for(lambda screen: re.search(r"Context ≈?\d+%", screen) and "palette" in screen, 30)
            drawn = ""
            while drawn != page.screen():  # until a frame changes nothing
                drawn = page.screen()
                time.sleep(0.3)
            (HERE / "browser.png").write_bytes(page.screenshot())
        finally:
            browser.close()
            os.killpg(server.pid, signal.SIGINT)
            server.wait(10)
    print(HERE / "browser.png")


if __name__ == "__main__":
    main()
