"""Seeded key sequences on every kind of session, with the terminal resized between bursts to sizes
from 60×20 to 250×70: whatever order the keys and sizes come in, the app keeps running, draws only
inert text, never cuts a number in the section table or the sidebar (from the first frame at a new
size) and answers the next key at once. (Quit and the palette are left out: the first ends the run,
the second turns later keys into a search; the tokenizer switch is tested on its own.)"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
from tokenbox.tui.keys import KEYS

from tests.tui.helpers import assert_responsive, copy_sample, make_app, rows, screen_lines, screen_problems, wait_idle, wait_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real_sessions"
# every bound key (a Key may name several) but quit and the tokenizer switch (each press loads a BPE
# table: tested on its own), and the keys Textual binds itself
PRESSABLE = sorted({name for key in KEYS if key.action not in ("quit", "tokenizer") for name in key.keys.split(",")}
                   | {"tab", "shift+tab", "escape", "x"})
CASES = [  # each kind of view once: own format (trims), a log's timeline, a transcript's breakdown
    ("facet_layout.yaml", (60, 20), 1),
    ("agent_log.jsonl", (80, 24), 2),
    ("claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", (200, 60), 3),
]
SIZES = [(60, 20), (80, 24), (100, 30), (119, 40), (120, 40), (140, 42), (200, 60), (250, 70)]
CUT_NUMBER = re.compile(r"(?:^|[\s≈→])[0-9][0-9 ]*…")  # a count (not the digits ending an id) cut short


def _session(name: str, directory: Path) -> Path:
    if (FIXTURES / name).exists():
        target = directory / name
        shutil.copyfile(FIXTURES / name, target)
        return target
    return copy_sample(name, directory)


def cut_numbers(app) -> list[str]:
    """Counts cut short in the section table or the sidebar (none while the help is over them)."""
    if app.screen is not app.screen_stack[0]:
        return []
    shown = [row for row in rows(app)]
    sidebar = app.query_one("#sidebar")
    if sidebar.display:
        box = sidebar.region
        shown += [line[box.x : box.right] for line in screen_lines(app)[box.y : box.bottom]]
    return [row for row in shown if CUT_NUMBER.search(row)]


@pytest.mark.parametrize(("name", "size", "seed"), CASES, ids=[f"{c[0].split('_')[0]}-{c[1][0]}x{c[1][1]}" for c in CASES])
async def test_any_key_sequence_keeps_the_app_whole(tmp_path, name, size, seed):
    app = make_app(_session(name, tmp_path), watch=False)
    chance = random.Random(seed)
    keys = chance.choices(PRESSABLE, k=24)
    async with app.run_test(size=size) as pilot:
        await wait_plan(pilot)
        for start in range(0, len(keys), 8):
            done = keys[: start + 8]
            await pilot.press(*keys[start : start + 8])
            await wait_idle(pilot)
            assert app.is_running, done
            assert screen_problems(app) == [], done
            assert not cut_numbers(app), (done, cut_numbers(app), screen_lines(app))
            resized = chance.choice(SIZES)
            await pilot.resize_terminal(*resized)
            await pilot.pause()  # the first frame at the new size
            assert not cut_numbers(app), (done, resized, cut_numbers(app), screen_lines(app))
        await pilot.press("escape", "escape")
        await wait_idle(pilot)
        await assert_responsive(pilot)
