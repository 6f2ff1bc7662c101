"""Save the README's browser screenshot again: ``tokenbox-tui --serve`` on the same real Claude Code
transcript as ``make.py``, in a headless Chromium tab (a PNG the browser took). Needs Chromium (Debian:
``apt-get install chromium``). Run from the repository: ``python tui/screenshots/make_browser.py``."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # the test suite's browser driver

from tests.tui.browser import chromium_path, served_screenshot  # noqa: E402

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
        served_screenshot(executable, [str(path)], environment, directory,
                          lambda screen: re.search(r"Context ≈?\d+%", screen) and "palette" in screen,
                          HERE / "browser.png", WINDOW, settle=0.3)
    print(HERE / "browser.png")


if __name__ == "__main__":
    main()
