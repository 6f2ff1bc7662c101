"""A prediction is not an overflow, on screen (CONTRACT §11): the TUI's side of the file that
tests/importers/test_truth_moments.py plans, checks and shows in the status line."""

from __future__ import annotations

import json
from pathlib import Path

from tokenbox.core import Engine, load_session

from tests.importers.support import HERE
from tests.tui.helpers import SIZE, gauge_text, make_app, wait_plan

SCREENSHOT = HERE / "fixtures" / "truth" / "claude-code_2.1.6_mcp-screenshot_43391f62.prefix20.jsonl"


def _pending_above_the_window(tmp_path: Path) -> Path:
    lines = SCREENSHOT.read_text(encoding="utf-8").splitlines(keepends=True)[:18]
    huge = {"type": "user", "uuid": "big", "parentUuid": json.loads(lines[-1])["uuid"], "sessionId": "s",
            "message": {"role": "user", "content": "lorem ipsum dolor sit amet " * 50_000}}
    path = tmp_path / "project" / "s.jsonl"
    path.parent.mkdir()
    path.write_text("".join(lines) + json.dumps(huge) + "\n", encoding="utf-8")
    return path


async def test_a_prediction_above_the_window_is_not_red_and_not_toasted_as_reached(tmp_path):
    path = _pending_above_the_window(tmp_path)
    expected = Engine().plan(load_session(path))
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        view = app.current_view()
        assert app.plan.pending and app.plan.ok and view.percent == expected.window_percent > 100
        assert view.level == "warn"  # never "crit" before anything was sent
        text = gauge_text(app)
        assert f"Context ≈{expected.window_percent}%" in text and "/ 200 000" in text
        assert "would exceed by" in text and "compact first" in text and "CRITICAL OVERFLOW" not in text
        messages = [n.message for n in app._notifications]
        assert not any("reached" in m or "crossed 100" in m for m in messages), messages
