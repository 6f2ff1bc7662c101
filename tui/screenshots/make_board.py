"""Save the README's screenshots of the board again (``tokenbox-tui --all``): the sessions of three agents
of the board's tests (``tests/tui/board_home.py``: real Claude Code, Codex and Gemini CLI files in a
made-up home, a fixed clock), as the app saves it (``board.svg``, 120×16), and the same board served to
a headless Chromium tab (``board-browser.png``; skipped without Chromium). Run from the repository:
``python tui/screenshots/make_board.py``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # the test suite's home of three agents and browser driver

from tokenbox.tui.board.app import BoardApp  # noqa: E402

from tests.tui.board_home import NOW, clock, environ, make_home  # noqa: E402
from tests.tui.browser import chromium_path, served_screenshot  # noqa: E402

SIZE = (120, 16)
WINDOW = (1400, 420)


async def terminal(home: Path) -> None:
    app = BoardApp(environ=environ(home), clock=clock, frozen=True, watch=False, tick=None)
    async with app.run_test(size=SIZE) as pilot:
        while not app.board.listed or app.board.busy:
            await pilot.pause(0.05)
        await pilot.pause()
        app.save_screenshot(filename="board.svg", path=str(HERE))
    print(HERE / "board.svg")


def browser(home: Path, directory: str) -> None:
    executable = chromium_path()
    if executable is None:
        print("make_board.py: no Chromium on PATH, board-browser.png not made (Debian: apt-get install chromium)")
        return
    for path in home.rglob("*.json*"):  # the served app reads the real clock: the sessions changed just now
        stamp = os.stat(path).st_mtime - NOW + time.time()
        os.utime(path, (stamp, stamp))
    env = {**os.environ, **environ(home), "TOKENBOX_TUI_FROZEN": "1"}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DIR", "AIDER_CHAT_HISTORY_FILE"):
        env.pop(name, None)
    drawn = served_screenshot(executable, ["--all"], env, directory,
                              lambda screen: re.search(r"4 sessions", screen) and "gemini" in screen.lower(),
                              HERE / "board-browser.png", WINDOW)
    print(json.dumps(drawn.splitlines()[:8], ensure_ascii=False, indent=0))
    print(HERE / "board-browser.png")


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory) / "home"
        make_home(home)
        asyncio.run(terminal(home))
        browser(home, directory)


if __name__ == "__main__":
    main()
