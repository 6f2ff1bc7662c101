"""A new plan repaints only what changed, and what is repainted is what a fresh draw shows.

Rows built are counted with texts that count their own renders (a spy set by the test); what is
drawn is read from the compositor (what would reach the terminal) and from the widget's line API.
"""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from tokenbox.tui.lines import LineView
from tokenbox.tui.messages import FileChanged
from tokenbox.tui.redraw import same_text, show_text

from tests.tui.helpers import SIZE, copy_sample, detail_text, make_app, screen_lines, screen_strips, wait_plan

HEIGHT = 5
RENDERS: list[str] = []  # the rows turned into segments since the test last cleared it


class Counted(Text):
    """A row that notes each time it is turned into segments (a strip is built from it)."""

    def render(self, console, end=""):
        RENDERS.append(self.plain)
        return super().render(console, end)


def _rows(*texts: str) -> list[Text]:
    return [Counted(t) for t in texts]


class Rows(App[None]):
    CSS = f"LineView {{ height: {HEIGHT}; }}"
    AUTO_FOCUS = None  # the two views alike (a focused view's cursor is brighter)

    def compose(self) -> ComposeResult:
        yield LineView(id="live")
        yield LineView(id="fresh")


def _drawn(view: LineView) -> list[str]:
    return [strip.text for strip in view.render_lines(view.size.region)]


async def test_only_the_changed_row_is_built_and_all_rows_draw_as_fresh():
    app = Rows()
    async with app.run_test(size=(40, 12)) as pilot:
        live, fresh = app.query_one("#live", LineView), app.query_one("#fresh", LineView)
        live.set_lines(_rows("a", "b", "c", "d", "e"))
        await pilot.pause()
        RENDERS.clear()
        live.set_lines(_rows("a", "b", "C", "d", "e"))
        await pilot.pause()
        assert RENDERS == ["C"]
        fresh.set_lines(_rows("a", "b", "C", "d", "e"))
        await pilot.pause()
        assert _drawn(live) == _drawn(fresh)
        assert [row.strip() for row in _drawn(live)] == ["a", "b", "C", "d", "e"]


async def test_a_moved_cursor_rebuilds_the_rows_it_left_and_reached():
    app = Rows()
    async with app.run_test(size=(40, 12)) as pilot:
        live, fresh = app.query_one("#live", LineView), app.query_one("#fresh", LineView)
        live.set_lines(_rows("a", "b", "c", "d", "e"), cursor=1)
        await pilot.pause()
        RENDERS.clear()
        live.set_lines(_rows("a", "b", "c", "d", "e"), cursor=3)
        await pilot.pause()
        assert sorted(RENDERS) == ["b", "d"]
        fresh.set_lines(_rows("a", "b", "c", "d", "e"), cursor=3)
        await pilot.pause()
        region = live.size.region
        assert live.render_lines(region) == fresh.render_lines(region)  # the cursor's colours too


async def test_a_longer_list_redraws_everything():
    app = Rows()
    async with app.run_test(size=(40, 12)) as pilot:
        live = app.query_one("#live", LineView)
        live.set_lines(_rows("a", "b"))
        await pilot.pause()
        live.set_lines(_rows("a", "b", "c"))
        await pilot.pause()
        assert [row.strip() for row in _drawn(live)] == ["a", "b", "c", "", ""]


class Long(App[None]):
    """A table taller than its view (a scrollbar shown), as a followed session's parts table is."""

    CSS = f"LineView {{ height: {HEIGHT}; }}"

    def compose(self) -> ComposeResult:
        yield LineView(id="live")
        yield LineView(id="fresh")


def _long(count: int, changed: int | None = None) -> list[Text]:
    return _rows(*(f"ROW {i}" if i == changed else f"row {i}" for i in range(count)))  # as wide as before


async def test_a_table_one_row_longer_is_not_laid_out_again_and_repaints_only_the_changed_row(monkeypatch):
    """A new request adds a part: the table's height grows, its width and scrollbar stay. No layout
    pass (it reflowed the whole screen), the scrollbar's thumb follows, the rows that read as before
    are neither built nor repainted again, and what is drawn is what a fresh table draws."""
    from textual.screen import Screen

    app = Long()
    async with app.run_test(size=(40, 12)) as pilot:
        live, fresh = app.query_one("#live", LineView), app.query_one("#fresh", LineView)
        live.set_lines(_long(40))
        await pilot.pause()
        assert live.show_vertical_scrollbar
        layouts = []
        original = Screen._refresh_layout
        monkeypatch.setattr(Screen, "_refresh_layout", lambda screen, *a, **k: (layouts.append(1), original(screen, *a, **k))[1])
        RENDERS.clear()
        live.set_lines(_long(41, changed=2))
        await pilot.pause()
        assert layouts == []
        assert RENDERS == ["ROW 2"]
        assert live.vertical_scrollbar.window_virtual_size == 41
        fresh.set_lines(_long(41, changed=2))
        await pilot.pause()
        assert _drawn(live) == _drawn(fresh)
        live.scroll_end(animate=False, immediate=True)
        fresh.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert _drawn(live) == _drawn(fresh)
        assert _drawn(live)[-1].strip() == "row 40"


async def test_a_scrollbar_that_draws_as_before_is_not_repainted_and_one_whose_thumb_moves_is(monkeypatch):
    """A table of hundreds of rows one row longer: its thumb is one cell at the top, as it was, so the
    scrollbar is not drawn again (it cost as much as the table's rows); a table twice as long scrolled
    halfway has its thumb elsewhere: drawn again. Either way the screen reads as a fresh table's."""
    from textual.geometry import Region
    from textual.scrollbar import ScrollBar

    drawn: list[ScrollBar] = []  # each scrollbar whose rows were made again (not taken from Textual's cache)
    render, original = ScrollBar.render, ScrollBar.render_lines

    def bar(view: LineView) -> list[list]:  # what its scrollbar draws now (the segments, styles too)
        return [list(strip) for strip in original(view.vertical_scrollbar, Region(0, 0, 1, HEIGHT))]

    monkeypatch.setattr(ScrollBar, "render", lambda bar: (drawn.append(bar), render(bar))[1])
    app = Long()
    async with app.run_test(size=(40, 12)) as pilot:
        live, fresh = app.query_one("#live", LineView), app.query_one("#fresh", LineView)
        live.set_lines(_long(400))
        fresh.set_lines(_long(401))
        await pilot.pause(0.1)  # (drawn: the screen's refresh runs on a timer)
        drawn.clear()
        live.set_lines(_long(401, changed=2))
        await pilot.pause()
        assert drawn == []
        assert live.vertical_scrollbar.window_virtual_size == 401
        assert bar(live) == bar(fresh)
        for view in (live, fresh):
            view.scroll_to(y=200, animate=False, immediate=True)
        await pilot.pause(0.1)
        drawn.clear()
        live.set_lines(_long(800))
        await pilot.pause()
        assert drawn == [live.vertical_scrollbar]  # the thumb moved up
        fresh.set_lines(_long(800))
        await pilot.pause()
        assert bar(live) == bar(fresh)


async def test_rows_a_shorter_table_no_longer_has_are_drawn_blank():
    app = Rows()
    async with app.run_test(size=(40, 12)) as pilot:
        live = app.query_one("#live", LineView)
        live.set_lines(_rows("a", "b", "c", "d"))
        await pilot.pause()
        live.set_lines(_rows("a", "b"))
        await pilot.pause()
        assert [row.strip() for row in screen_lines(app)[:HEIGHT]] == ["a", "b", "", "", ""]


def test_same_text_compares_what_is_drawn():
    assert same_text(Text("x", "bold"), Text("x", "bold"))
    assert not same_text(Text("x", "bold"), Text("x", "italic"))  # rich's == ignores the base style
    assert not same_text(Text("x"), Text("x", overflow="ellipsis"))
    assert not same_text(Text.assemble(("x", "red")), Text.assemble(("x", "blue")))
    shown = Text("x")
    assert not same_text(shown, shown)  # it may have been changed in place since it was drawn
    assert not same_text(None, shown)


async def test_show_text_updates_only_a_changed_text_and_lays_out_only_a_new_height(monkeypatch):
    updates: list[bool] = []
    original = Static.update

    def spy(self, content="", *, layout=True):
        updates.append(layout)
        original(self, content, layout=layout)

    class One(App[None]):
        CSS = "Static { height: auto; text-wrap: nowrap; }"  # as the status line: its height is its lines

        def compose(self) -> ComposeResult:
            yield Static(Text("zero"))

    async with One().run_test(size=(40, 6)) as pilot:
        status = pilot.app.query_one(Static)
        monkeypatch.setattr(Static, "update", spy)
        assert show_text(status, Text("one"))
        assert not show_text(status, Text("one"))
        assert show_text(status, Text("two"))
        assert show_text(status, Text("two\nlines"))
        assert updates == [False, False, True]  # one line for one line: no layout pass; two lines: one
        await pilot.pause()
        assert status.size.height == 2


async def test_a_reloaded_plan_draws_as_a_fresh_start(tmp_path):
    """Through the app: one section edited, the live screen equals a new app's on the edited file
    (but the status line, which says what changed)."""
    path = copy_sample("facet_layout.yaml", tmp_path, "session.yaml")
    live = make_app(path, watch=False)
    async with live.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("down", "down")  # a selected row that the edit does not touch
        path.write_text(path.read_text().replace("the v2 client retries 429", "the v3 client retries 503"))
        live.post_message(FileChanged("modified"))
        await wait_plan(pilot, 2)
        shown = screen_lines(live)
    fresh = make_app(path, watch=False)
    async with fresh.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("down", "down")
        await pilot.pause()
        expected = screen_lines(fresh)
    status = SIZE[1] - 2  # the status line (the footer is below it)
    assert shown[:status] == expected[:status]
    assert shown != [] and any("scratchpad" in row for row in shown)


async def test_the_detail_is_kept_through_an_edit_elsewhere_and_rebuilt_by_one_of_its_section(tmp_path, monkeypatch):
    from tokenbox.tui import detail

    wraps: list[str] = []
    original = detail.iter_wrap

    def spy(raw, *args, **kwargs):
        wraps.append(raw)
        return original(raw, *args, **kwargs)

    path = copy_sample("facet_layout.yaml", tmp_path, "session.yaml")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("down")  # the scratchpad
        monkeypatch.setattr(detail, "iter_wrap", spy)
        path.write_text(path.read_text().replace("2.4.0 fix", "2.4.1 fix"))  # the changelog
        app.post_message(FileChanged("modified"))
        await wait_plan(pilot, 2)
        assert wraps == []
        path.write_text(path.read_text().replace("the v2 client retries 429", "the v3 client retries 503"))
        app.post_message(FileChanged("modified"))
        await wait_plan(pilot, 3)
        assert wraps != []
        assert "the v3 client retries 503" in detail_text(app)


class Boxed(App[None]):
    CSS = f"LineView {{ height: {HEIGHT}; }}"
    AUTO_FOCUS = None

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):  # as the sidebar, which hides with the trace in it
            yield LineView(id="live")


@pytest.mark.parametrize("hidden", ["#live", "#box"])
async def test_rows_set_while_hidden_are_drawn_when_shown_again(hidden):
    app = Boxed()
    async with app.run_test(size=(40, 12)) as pilot:
        live = app.query_one("#live", LineView)
        live.set_lines(_rows("a", "b", "c", "d", "e"))
        await pilot.pause()
        app.query_one(hidden).display = False
        await pilot.pause()
        live.set_lines(_rows("a", "B", "C", "D", "E"))
        await pilot.pause()
        app.query_one(hidden).display = True
        await pilot.pause()
        assert [row.strip() for row in _drawn(live)] == ["a", "B", "C", "D", "E"]
        assert [line.strip() for line in screen_lines(app)[:HEIGHT]] == ["a", "B", "C", "D", "E"]


async def test_a_followed_request_draws_as_a_fresh_app_and_an_unchanged_one_row_widget_is_not_refreshed(tmp_path):
    """Through the app, a Claude Code chain with one request appended: every row on screen (its segments and
    styles) is what a new app draws for the longer file, but the status line, which says what changed; the
    one-row widgets that name the request (the top bar, the breakdown's title) say the new one. The same file
    read again redraws none of them, nor the section header."""
    from tokenbox.tui.breakdown import BreakdownTitle
    from tokenbox.tui.sections import SectionHeader
    from tokenbox.tui.topbar import TopBar

    from benchmarks.transcripts import write_chain

    path = tmp_path / "chain.jsonl"
    [appended] = write_chain(path, 40_000, seed=15, appended=1)
    live = make_app(path, watch=False)
    async with live.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.pause()
        named = live.query_one(TopBar).last_text.plain, live.query_one(BreakdownTitle).last_text.plain
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(appended)
        live.post_message(FileChanged("modified"))
        await wait_plan(pilot, 2)
        await pilot.pause()
        shown = screen_strips(live)
        renamed = live.query_one(TopBar).last_text.plain, live.query_one(BreakdownTitle).last_text.plain
        refreshed: list[str] = []
        for kind in (TopBar, BreakdownTitle, SectionHeader):
            widget = live.query_one(kind)
            refresh = widget.refresh
            widget.refresh = lambda *a, refresh=refresh, name=kind.__name__, **k: (refreshed.append(name), refresh(*a, **k))[1]
        live.post_message(FileChanged("modified"))  # read again, unchanged
        await wait_plan(pilot, 3)
        await pilot.pause()
    fresh = make_app(path, watch=False)
    async with fresh.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.pause()
        expected = screen_strips(fresh)
    status = SIZE[1] - 2  # the status line (the footer is below it)
    assert shown[:status] == expected[:status]
    assert all(old != new for old, new in zip(named, renamed, strict=True)), (named, renamed)
    assert refreshed == []
