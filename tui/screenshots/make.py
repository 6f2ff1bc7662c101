"""Save the README's screenshot again: the inspector beside a real Claude Code transcript (a sub-agent,
an auto-compaction) at 140×42, as the app itself saves it (an SVG). Run from the repository:
``python tui/screenshots/make.py``."""

from __future__ import annotations

import asyncio
import tarfile
import tempfile
from pathlib import Path

from tokenbox.tui.app import TokenboxApp

HERE = Path(__file__).resolve().parent
# the real session of the agent-view tests (provenance: tests/tui/fixtures/README.md)
ARCHIVE = HERE.parents[1] / "tests" / "tui" / "fixtures" / "claude-code_2.1.39_autocompact_subagents.tar.gz"
SIZE = (140, 42)


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        with tarfile.open(ARCHIVE) as archive:
            archive.extractall(directory, filter="data")
        path = Path(directory) / "8463c716.jsonl"
        app = TokenboxApp(str(path), frozen=True, watch=False)  # frozen: no clock or timings in the picture
        async with app.run_test(size=SIZE) as pilot:
            while app.plan is None or app.busy:
                await pilot.pause(0.05)
            await pilot.pause()
            app.save_screenshot(filename="inspector.svg", path=str(HERE))
    print(HERE / "inspector.svg")


if __name__ == "__main__":
    asyncio.run(main())
