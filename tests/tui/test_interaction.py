"""Pilot tests of every interaction: trace stepping, selection, detail, what-if budget, policy,
tokenizers, turns, follow, help, command palette, quit; and that planning never blocks the UI."""

from __future__ import annotations

import re
import threading

from rich.table import Table
from tokenbox.core import Engine, TokenizerError
from tokenbox.core.tokens.tokenizers import TokenizerEntry, TokenizerRegistry
from tokenbox.tui.detail import DetailView
from tokenbox.tui.help import LEGEND, HelpScreen
from tokenbox.tui.keys import KEYS
from tokenbox.tui.planner import Planner
from tokenbox.tui.sections import SectionBars
from tokenbox.tui.trace import TraceView

from tests.tui.helpers import (
    SIZE,
    copy_sample,
    detail_text,
    gauge_text,
    make_app,
    rows,
    screen_lines,
    status_text,
    wait_for,
    wait_idle,
    wait_plan,
)

# Parts of a scenario run one after another on one app (an app start costs more than most parts):
# each starts from the final step of the FACET sample with the file's settings, and leaves it so.


async def stepping_moves_the_whole_view(pilot) -> None:
    app = pilot.app
    assert app.step == 4 and "step 4/4" in gauge_text(app)
    final_gauge = gauge_text(app)
    await pilot.press("home")
    assert app.step == 0
    assert "Context 108%" in gauge_text(app)  # 577 of 530 tokens, untrimmed
    assert all("dropped" not in row for row in rows(app))
    assert app.query_one(TraceView).cursor == 0
    await pilot.press("right", "right")
    assert app.step == 2
    assert "470 / 530" in gauge_text(app)
    assert "dropped" in rows(app)[1] and "compressed" in rows(app)[2]
    assert rows(app)[2].startswith("◀")  # the section the shown step changed
    await pilot.press("left")
    assert app.step == 1
    await pilot.press("left", "left", "left")
    assert app.step == 0  # clamped
    await pilot.press("end")
    assert app.step == 4 and gauge_text(app) == final_gauge
    await pilot.press("right")
    assert app.step == 4


async def selection_and_detail_follow_the_step(pilot) -> None:
    app = pilot.app
    await pilot.press(*["up"] * len(app.plan.sections))  # the first section (the last step selected another)
    assert app.selected == 0 and "system" in detail_text(app)
    await pilot.press("down")
    assert app.selected == 1
    assert app.query_one(SectionBars).cursor == 1
    assert "dropped at step 1" in detail_text(app)  # scratchpad, final layout
    await pilot.press("home")
    assert "dropped" not in detail_text(app)
    assert "Earlier reasoning" in detail_text(app)
    await pilot.press("up", "up")
    assert app.selected == 0  # clamped
    await pilot.press("enter")
    assert app.focused is app.query_one(DetailView)
    await pilot.press("down")  # scrolls the detail, keeps the selection
    assert app.selected == 0
    await pilot.press("escape")
    assert app.focused is app.query_one(SectionBars)
    await pilot.press("end")


async def turn_keys_on_a_single_session(pilot) -> None:
    app = pilot.app
    await pilot.press("left_square_bracket")
    await wait_idle(pilot)
    assert app.plan.session.turn == 1
    assert not app.query_one("#timeline").display


async def help_screen(pilot) -> None:
    app = pilot.app
    await pilot.press("question_mark")
    assert isinstance(app.screen, HelpScreen)
    from tokenbox.tui.help import help_plain

    text = help_plain(width=200)  # wide: each key's row on one line
    rows = {line.strip() for line in text.splitlines()}
    for key in (k for k in KEYS if k.listed):  # every key has its own row (a stand-in saying why not aside)
        assert any(re.fullmatch(rf"{re.escape(key.shown)} +{re.escape(key.help)}", row) for row in rows), key.shown
    for shown in ("←", "→", "Home", "End", "+", "-", "0", "p", "t", "[", "]", "f", "q", "Enter", "?", "v", "s"):
        assert shown in {key.shown for key in KEYS}
    assert "Tab moves the focus; q or ctrl+q quits" in " ".join(text.split())
    await pilot.press("escape")
    assert not isinstance(app.screen, HelpScreen)


async def what_if_budget(pilot) -> None:
    app = pilot.app
    assert app.plan.budget.max_ctx == 530
    await pilot.press("plus")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 556, what="+5%")
    await pilot.press("plus")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 583, what="+10%")
    assert "what-if" in gauge_text(app) and "+10%" in gauge_text(app)
    await pilot.press("minus", "minus", "minus")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 503, what="-5%")
    await pilot.press("0")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 530, what="back to the file")
    assert "what-if" not in gauge_text(app)


async def impossible_what_if_shows_error_and_keeps_plan(pilot) -> None:
    app = pilot.app
    for _ in range(15):  # 530 * 25% = 132: less than reserve_out 200, nothing available
        await pilot.press("minus")
    await wait_for(pilot, lambda: app.settings_error is not None, what="a settings error")
    assert app.plan is not None
    status = status_text(app)
    assert "what-if budget too small — press 0" in status and "reload failed" not in status
    assert app.file_error is None  # the file is not blamed
    await pilot.press("0")
    await wait_for(pilot, lambda: app.settings_error is None and app.plan.budget.max_ctx == 530)


async def policy_switch(pilot) -> None:
    app = pilot.app
    assert app.plan.trimming == "tokenbox"
    await pilot.press("p")
    await wait_for(pilot, lambda: app.plan.trimming == "progressive", what="progressive")
    assert re.search(r"policy\s+progressive", gauge_text(app))
    await pilot.press("p")
    await wait_for(pilot, lambda: app.plan.trimming == "tokenbox", what="tokenbox")


async def footer_and_palette_list_every_action(pilot) -> None:
    app = pilot.app
    shown = {b.binding.action for b in app.active_bindings.values() if b.binding.show}
    assert {"step(-1)", "step(1)", "budget(1)", "budget(-1)", "policy", "tokenizer", "help", "quit"} <= shown
    titles = [c.title for c in app.get_system_commands(app.screen)]
    for word in ("trimming policy", "tokenizers", "Previous turn", "Follow", "untrimmed", "Help"):
        assert any(word in title for title in titles), word
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*"trimming policy")
    await pilot.pause(0.3)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.plan.trimming == "progressive", what="palette switched the policy")
    await pilot.press("p")
    await wait_for(pilot, lambda: app.plan.trimming == "tokenbox", what="back to tokenbox")


async def tokenizer_cycle_marks_approximations(pilot) -> None:
    app = pilot.app
    assert app.plan.tokenizer.name == "cl100k_base" and "≈" not in gauge_text(app)
    await pilot.press("t")
    await wait_for(pilot, lambda: app.plan.tokenizer.name == "heuristic", what="heuristic")
    assert "≈" in gauge_text(app) and "≈ approximate" in gauge_text(app)
    assert any("≈" in row for row in rows(app))
    await pilot.press("t")
    await wait_for(pilot, lambda: app.plan.tokenizer.name == "floop-estimate", what="floop-estimate")
    await pilot.press("t")  # the calibrated Claude estimate is one of them too (at scale 1 outside a transcript)
    await wait_for(pilot, lambda: app.plan.tokenizer.name == "claude-estimate", what="claude-estimate")
    await pilot.press("t")
    await wait_for(pilot, lambda: app.plan.tokenizer.name == "o200k_base", what="o200k_base")
    await pilot.press("t")
    await wait_for(pilot, lambda: app.plan.tokenizer.name == "cl100k_base", what="back to the file's tokenizer")


async def tab_and_equals(pilot) -> None:
    """Tab moves the focus between the section table and the detail; ``=`` is ``+`` on keyboards
    where ``+`` needs shift."""
    app = pilot.app
    bars, detail = app.query_one(SectionBars), app.query_one(DetailView)
    assert app.focused is bars
    await pilot.press("tab")
    assert app.focused is detail
    await pilot.press("tab")
    assert app.focused is bars
    await pilot.press("shift+tab")
    assert app.focused is detail
    await pilot.press("escape")
    assert app.focused is bars
    await pilot.press("equals_sign")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 556, what="= is +5%")  # floor(530 × 1.05)
    await pilot.press("0")
    await wait_for(pilot, lambda: app.plan.budget.max_ctx == 530, what="the file's budget")
    await wait_idle(pilot)


SCENARIO = (
    tab_and_equals,
    stepping_moves_the_whole_view,
    selection_and_detail_follow_the_step,
    turn_keys_on_a_single_session,
    help_screen,
    what_if_budget,
    impossible_what_if_shows_error_and_keeps_plan,
    policy_switch,
    footer_and_palette_list_every_action,
    tokenizer_cycle_marks_approximations,
)


async def test_every_key_on_one_app_then_quit(tmp_path):
    """Every part of ``SCENARIO`` in turn on one app of the FACET sample, then ``ctrl+q`` quits it."""
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        for part in SCENARIO:
            await part(pilot)
            assert app.step == len(app.plan.steps) and app.plan.budget.max_ctx == 530, part.__name__
        await pilot.press("ctrl+q")  # the other quit key; q quits in test_help_wraps_each_paragraph_under_itself_at_80_columns
        await wait_for(pilot, lambda: app.return_code is not None, what="quit")
    assert app.return_code == 0


async def test_truncation_cut_is_marked(tmp_path):
    path = tmp_path / "cut.yaml"
    body = "\n".join(f"line {i} of the document" for i in range(60))
    path.write_text(
        "tokenbox: 1\ntokenizer: o200k_base\nbudget: {max_ctx: 200}\nsections:\n"
        "  - id: sys\n    text: be brief\n    shrink: 0\n"
        "  - id: doc\n    keep: tail\n    text: |\n" + "".join(f"      {line}\n" for line in body.split("\n"))
    )
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.section("doc").action == "truncated"
        await pilot.press("down")
        text = detail_text(app)
        assert "cut from the head" in text
        cut, kept = text.split("✂──── kept ────")
        assert "✂ line 0 of the document" in cut  # the cut head comes first, marked
        assert "line 0 of the document" not in kept
        assert text.rstrip().endswith("line 59 of the document")


async def test_budget_flag_is_the_base_of_what_if(tmp_path):
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False, budget=1000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.budget.max_ctx == 1000 and not app.plan.steps
        await pilot.press("minus")
        await wait_for(pilot, lambda: app.plan.budget.max_ctx == 950, what="-5% of the flag")


async def test_tokenizer_cycle_skips_broken_tokenizers(tmp_path):
    def broken():
        raise TokenizerError("cannot load", "it is a test")

    registry = TokenizerRegistry(plugins=False)
    registry.register(TokenizerEntry("broken", False, "test", broken))
    planner = Planner(lambda: Engine(registry=registry, environ={}))
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False, planner=planner)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        for name in ("heuristic", "floop-estimate", "claude-estimate"):
            await pilot.press("t")
            await wait_for(pilot, lambda name=name: app.plan.tokenizer.name == name, what=name)
        await pilot.press("t")  # broken is next: skipped
        await wait_for(pilot, lambda: app.plan.tokenizer.name == "o200k_base", what="skip to o200k_base")
        assert "skipped tokenizers broken" in status_text(app)


async def test_tokenizer_plugins_are_looked_up_after_the_first_plan_and_cycled_through(tmp_path, monkeypatch):
    """The first plan lists the tokenizers without looking the plug-ins up (importlib.metadata: ≈50 ms of
    it); once it is drawn they are looked up, the plan again lists them, and ``t`` cycles into one."""
    from importlib import metadata

    from tokenbox.tui import app as app_module

    class Point:
        name = "plug"
        value = "fake:Heuristic"

        def load(self):
            return lambda: TokenizerRegistry(plugins=False).get("heuristic")

    plans_when_looked_up = []

    def entry_points(group):
        plans_when_looked_up.append(app.plans_shown)
        return [Point()] if group == "tokenbox.tokenizers" else []

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(app_module, "TOKENIZERS_AFTER", 0.05)  # the app's wait after its first plan, shortened
    registry = TokenizerRegistry()
    planner = Planner(lambda: Engine(registry=registry, environ={}))
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False, planner=planner)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await wait_for(pilot, lambda: "plug" in app.state.outcome.tokenizers, what="the plug-in listed")
        assert plans_when_looked_up == [1]  # once, after the first plan was shown
        for name in ("heuristic", "floop-estimate", "claude-estimate", "plug"):
            await pilot.press("t")
            await wait_for(pilot, lambda name=name: app.plan.tokenizer.name == name, what=name)


async def test_turns_follow_and_timeline(tmp_path):
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.session.turn == 6 and len(app.timeline) == 6
        assert [p.prefix_cache for p in app.timeline][4] == "miss"
        timeline = app.query_one("#timeline")
        assert timeline.display and "Turns 6/6" in timeline.last_text.plain
        await pilot.press("left_square_bracket", "left_square_bracket")
        await wait_for(pilot, lambda: app.plan.session.turn == 4, what="turn 4")
        assert "pinned" in timeline.last_text.plain
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: app.plan.session.turn == 5, what="turn 5")
        assert "break" in gauge_text(app)  # prefix-cache miss on turn 5
        await pilot.press(*["left_square_bracket"] * 4)
        await wait_for(pilot, lambda: app.plan.session.turn == 1, what="turn 1")
        assert "miss (cold)" in gauge_text(app) and "break" not in gauge_text(app)  # nothing cached yet
        await pilot.press("f")
        await wait_for(pilot, lambda: app.plan.session.turn == 6 and app.state.following, what="following")
        assert "following" in timeline.last_text.plain


TERMS = {term for term, _ in LEGEND}  # the legend's terms start rows; all else continues under the text


async def test_help_wraps_each_paragraph_under_itself_at_80_columns(tmp_path):
    """At 80×24 a long key help or legend paragraph continues under its own first word, never at the
    box's edge under the keys (the legend had hard line breaks made for a wide screen)."""
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        rows = [line.split("│")[1].rstrip("▆▇█▁▂▃▄▅ ") for line in screen_lines(app) if line.count("│") >= 2]
        rows = [row for row in rows if row.strip()]
        first = next(row for row in rows if row.split()[0] in TERMS)  # the text starts after its term's blanks
        after = first.index(first.split()[0]) + len(first.split()[0])
        text_column = len(first) - len(first[after:].lstrip())
        for row in rows:  # a term and its text, or a continuation under the text
            assert row.split()[0] in TERMS or len(row) - len(row.lstrip()) == text_column, rows
        await pilot.press("q")  # q closes the help first...
        assert not isinstance(app.screen, HelpScreen) and app.return_code is None
        await pilot.press("q")  # ...then quits
        await wait_for(pilot, lambda: app.return_code is not None, what="quit")
    assert app.return_code == 0


async def test_the_help_lays_out_neither_the_screen_behind_it_nor_its_tables_again(tmp_path, monkeypatch):
    """``?`` pushes the help at the size everything is laid out at already: the main screen is not laid out
    again, neither as the help opens (Textual did for the pushed screen's first ``Resize``) nor as it
    closes (the help is kept, not removed: a removal laid out the screen under it), and the help's tables
    are laid out once for every push at one width (rich laid them out anew each time Textual measured or
    drew them).
    A real resize still lays out the screen behind, and the help closes onto it. Layouts are counted by
    the screen's public ``screen_layout_refresh_signal``, the tables' layouts by rich's ``__rich_console__``."""
    keys_row = KEYS[0].help
    laid_out_tables: list[Table] = []
    render_table = Table.__rich_console__

    def counted(table: Table, console, options):
        if any(keys_row in str(cell) for column in table.columns for cell in column.cells):
            laid_out_tables.append(table)  # the help's keys table
        return render_table(table, console, options)

    monkeypatch.setattr(Table, "__rich_console__", counted)
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_plan(pilot)
        main = app.screen
        layouts: list[object] = []
        main.screen_layout_refresh_signal.subscribe(main, layouts.append)
        for _ in range(2):
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert keys_row in " ".join(screen_lines(app))
            await pilot.press("escape")
            await pilot.pause()
        assert layouts == []
        first_push = len(laid_out_tables)
        await pilot.press("question_mark")
        await pilot.pause()
        assert len(laid_out_tables) == first_push  # the same width: nothing laid out again
        await pilot.resize_terminal(90, 28)
        await pilot.pause()
        assert layouts and keys_row[:20] in " ".join(screen_lines(app))
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and app.screen.size == (90, 28)


class SlowPlanner(Planner):
    """A planner that blocks until released, to show that the UI keeps responding meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()
        self.timed_out = False

    def run(self, request):
        if request.reason != "start":
            self.started.set()
            self.timed_out = not self.release.wait(10)  # a UI-thread planner would block the test here
        return super().run(request)


async def test_ui_stays_responsive_while_planning(tmp_path):
    planner = SlowPlanner()
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False, planner=planner)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("plus")
        await wait_for(pilot, planner.started.is_set, what="planning started")
        await pilot.press("home")  # handled while the planner is busy
        assert app.step == 0
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        planner.release.set()
        await wait_for(pilot, lambda: app.plan.budget.max_ctx == 556, what="the slow plan")
        assert not planner.timed_out


async def test_huge_section_stays_responsive(tmp_path):
    import json

    big = "\n".join(f"log line {i} " + "x" * 80 for i in range(30_000))  # ~2.7 MB
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"tokenbox": 1, "tokenizer": "heuristic", "budget": {"max_ctx": 400000},
                                "sections": [{"id": "logs", "kind": "logs", "text": big},
                                             {"id": "user", "kind": "user", "text": "why?"}]}))
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        text = detail_text(app)
        assert "more characters not shown" in text or "shown up to" in text
        await pilot.press("down", "up", "home", "end")
        assert app.selected == 0


async def test_keys_with_nothing_to_show_say_why(tmp_path):
    """``v`` with the sidebar hidden (80 columns) and ``→`` on a plan that trims nothing change nothing on
    screen: each says why in a toast instead of doing nothing silently."""
    from textual.notifications import Notify

    from tests.tui.helpers import Recorder

    record = Recorder()
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False, budget=2000)  # 577 tokens fit
    async with app.run_test(size=(80, 24), message_hook=record) as pilot:
        await wait_plan(pilot)
        assert not app.plan.steps
        await pilot.press("right")
        await wait_for(pilot, lambda: record.count(Notify) == 1, what="a toast for →")
        assert "nothing is trimmed" in record.of(Notify)[-1].notification.message
        await pilot.press("v")
        await wait_for(pilot, lambda: record.count(Notify) == 2, what="a toast for v")
        assert "s shows it" in record.of(Notify)[-1].notification.message
        await pilot.press("s")  # shown: v switches the sidebar's view, no toast
        await pilot.press("v")
        await pilot.pause()
        assert record.count(Notify) == 2
    record = Recorder()
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)  # the file's max_ctx 530
    async with app.run_test(size=(80, 24), message_hook=record) as pilot:
        await wait_plan(pilot)
        for _ in range(20):  # a what-if far below the critical sections: the plan fails, with no trace
            await pilot.press("minus")
        await wait_for(pilot, lambda: not app.plan.ok and not app.busy, what="a failed plan")
        assert not app.plan.steps
        shown = record.count(Notify)
        await pilot.press("right")
        await wait_for(pilot, lambda: record.count(Notify) == shown + 1, what="a toast for → on a failed plan")
        assert "no trim trace: the plan failed" in record.of(Notify)[-1].notification.message


async def test_keys_at_an_end_say_so(tmp_path):
    """→ on the trace's last step, ← on step 0, and ``-`` at the smallest what-if budget change nothing on
    screen: each says why in a toast (and ``-`` plans nothing). The smallest what-if is one step of 5 % of
    the file's max_ctx (``core/planning/config.py``): nineteen presses from 100 % reach it."""
    from textual.notifications import Notify

    from tests.tui.helpers import Recorder

    record = Recorder()
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)  # 577 tokens over max_ctx 530
    async with app.run_test(size=SIZE, message_hook=record) as pilot:
        await wait_plan(pilot)
        last = len(app.plan.steps)
        assert last > 0
        await pilot.press("end", "right")
        await wait_for(pilot, lambda: record.count(Notify) == 1, what="a toast for → on the last step")
        assert f"last step of the trace ({last}/{last})" in record.of(Notify)[-1].notification.message
        assert app.step == last
        await pilot.press("home", "left")
        await wait_for(pilot, lambda: record.count(Notify) == 2, what="a toast for ← on step 0")
        assert "step 0, the untrimmed layout" in record.of(Notify)[-1].notification.message
        assert app.step == 0
        def at_smallest() -> int:
            return sum("at its smallest" in m.notification.message for m in record.of(Notify))

        for _ in range(19):
            await pilot.press("minus")
        await wait_for(pilot, lambda: not app.busy, what="the smallest what-if planned")
        assert at_smallest() == 0  # each of the nineteen moved the budget (a failed plan's alert may toast)
        planned = app.plans_shown
        await pilot.press("minus")
        await wait_for(pilot, lambda: at_smallest() == 1, what="a toast for - at the smallest budget")
        assert "at its smallest: 5 % of the file's max_ctx" in record.of(Notify)[-1].notification.message
        await pilot.pause(0.2)
        assert app.plans_shown == planned and not app.busy  # nothing planned for it
