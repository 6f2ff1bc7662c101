"""Save the README's screenshot again: the inspector beside a real Claude Code transcript at 140×42,
as the app itself saves it (an SVG). Run from the repository: ``python tui/screenshots/make.py``."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from tokenbox.tui.app import TokenboxApp

HERE = Path(__file__).resolve().parent
TRANSCRIPT = HERE.parents[1] / "tests" / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
SIZE = (140, 42)


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / TRANSCRIPT.name
        shutil.copyfile(TRANSCRIPT, path)
        app = TokenboxApp(str(path), frozen=True, watch=False)  # frozen: no clock or timings in the picture
        async with app.run_test(size=SIZE) as pilot:
            while app.plan is None or app.busy:
                await pilot.pause(0.05)
            await pilot.pause()
            app.save_screenshot(filename="inspector.svg", path=str(HERE))
    print(HERE / "inspector.svg")


if __name__ == "__main__":
    asyncio.run(main())
