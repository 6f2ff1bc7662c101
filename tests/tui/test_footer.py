"""The key footer (``tui/footer.py``): keys that come and go are shown and hidden in place, and what it
shows is what Textual's own footer shows for the same keys."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from tokenbox.tui.footer import KeysFooter
from tokenbox.tui.planner import Planner

from tests.tui.helpers import copy_sample, make_app, screen_lines, screen_strips, wait_for, wait_plan

REAL_SESSIONS = Path(__file__).parent.parent / "fixtures" / "real_sessions"
STEP = Binding.Group("step")
SWITCHED = {"step(-1)": "pair", "step(1)": "pair", "a": "a", "b": "b", "c": "c"}  # action -> the switch it follows


class Keys(App[None]):
    """Bindings that come and go by ``on`` (``b``: shown disabled under ``dim``), with either footer."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "step◀", group=STEP), Binding("right", "step(1)", "step▶", group=STEP),
        Binding("a", "a", "alpha"), Binding("b,x", "b", "bravo", tooltip="b or x"), Binding("c", "c", "charlie"),
        Binding("question_mark", "help", "help"), Binding("q", "quit", "quit"),
    ]

    def __init__(self, ours: bool) -> None:
        super().__init__()
        self.ours = ours
        self.on: set[str] = set()

    def compose(self) -> ComposeResult:
        yield KeysFooter(compact=True, possible=self.BINDINGS) if self.ours else Footer(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        switch = SWITCHED.get(action + (f"({parameters[0]})" if parameters else ""), SWITCHED.get(action))
        if switch is None:
            return True
        if switch == "b" and "dim" in self.on:
            return None if "b" in self.on else False
        return switch in self.on


def footer_row(app: App) -> list[Segment]:
    """The footer's row as drawn: its segments' texts and styles."""
    return [Segment(segment.text, segment.style) for segment in screen_strips(app)[-1]]


async def test_the_footer_shows_what_textuals_own_shows_for_every_set_of_keys():
    """Sets of switched keys one after another (keys shown, hidden, a group shown and hidden, a key shown
    disabled: composed again) draw the footer's row as Textual's ``Footer`` draws it, segment for segment."""
    states = [{"pair", "a", "b", "c"}, {"a"}, {"dim", "b", "pair"}, {"c"}, set(), {"pair", "a", "c"}]
    rows: dict[bool, list] = {}
    for ours in (True, False):
        app = Keys(ours)
        rows[ours] = []
        async with app.run_test(size=(100, 5)) as pilot:
            for on in states:
                app.on = on
                app.refresh_bindings()
                await pilot.pause()
                rows[ours].append((sorted(on), footer_row(app)))
    assert rows[True] == rows[False]
    assert any("alpha" in "".join(s.text for s in row) for _, row in rows[True])


class HeldPlanner(Planner):
    """The first plan held until released: the first frame has no plan."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def run(self, request):
        self.release.wait(10)
        return super().run(request)


async def test_the_first_plan_shows_its_keys_without_composing_the_footer_again(tmp_path):
    """Before the first plan the footer shows the keys that apply then (help, quit, the palette); the
    plan's keys (budget, turns, follow...) are shown by the same key widgets, composed hidden from the
    start (composing them just as the plan was drawn took tens of milliseconds from an agent's next request)."""
    planner = HeldPlanner()
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False, planner=planner)
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        await pilot.pause()
        before = screen_lines(app)[-1]
        assert "? help" in before and "budget" not in before and "turn" not in before
        keys = list(app.screen.query(FooterKey))
        planner.release.set()
        await wait_plan(pilot)
        await pilot.pause()
        after = screen_lines(app)[-1]
        assert "+ - budget" in after and "[ ] turn" in after and "? help" in after
        assert list(app.screen.query(FooterKey)) == keys  # the same widgets, none composed again


async def test_the_palette_key_gives_way_to_the_keys_at_80_columns():
    """The palette's key is docked at the right: at 80 columns an agent's session with threads has keys up to
    the 78th column, and the palette's key covered the last two (``t tokenizer``, ``q quit``). It is hidden
    while it would cover a key and shown again when the terminal is wide enough."""
    app = make_app(REAL_SESSIONS / "corpus" / "spotter-4d5611e5.jsonl", watch=False)

    def footer() -> str:
        return screen_lines(app)[-1].rstrip()

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        # the palette's key is fitted after the frame that lays the keys out: wait for the row, not a number of frames
        await wait_for(pilot, lambda: footer().endswith("q quit"), what="the keys' row without the palette")
        narrow = footer()
        assert "a threads" in narrow and narrow.endswith("t tokenizer q quit") and "palette" not in narrow
        await pilot.resize_terminal(120, 24)
        await wait_for(pilot, lambda: footer().endswith("^p palette"), what="the palette's key back")
        assert "t tokenizer q quit" in footer()
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: footer() == narrow, what="the narrow row again")
