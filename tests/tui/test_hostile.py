"""Untrusted text on every screen: markup, escape sequences, controls, wide and invisible characters.

A hostile session (tests/tui/hostile.py: every free-text field holds markup, CSI/OSC/C1 escapes,
control characters, CJK and emoji, zero-width and bidi characters) is loaded and every view is
visited. On each, the strips the compositor would send to the terminal are checked: no raw
control or format character in any segment, no hyperlink or click action in any style; and the
markup is seen literally, the escapes as visible ``\\xNN`` text. Then the same for file names and
error messages (status line, detail banner, toasts), and a megabyte-long line and name.
"""

from __future__ import annotations

import json
import time

from rich.cells import cell_len
from tokenbox.tui.detail import FIRST_ROWS, DetailView
from tokenbox.tui.help import HelpScreen
from tokenbox.tui.messages import FileChanged
from tokenbox.tui.trace import TraceView

from tests.tui.helpers import (
    SIZE,
    assert_responsive,
    detail_text,
    make_app,
    screen_lines,
    screen_problems,
    screen_strips,
    status_text,
    wait_for,
    wait_idle,
    wait_plan,
)
from tests.tui.hostile import ESCAPED, ESCAPES, HOSTILE, INVISIBLE, LITERAL, MARKUP, hostile_session, write_hostile

HOSTILE_NAME = "[@click=app.quit]q [bold]x \x1b]0;pwn\x07\x1b[31m\u202e\x9b 漢字.json"  # no "/" nor NUL: any other byte goes
HOSTILE_NAME_SHOWN = "[@click=app.quit]q [bold]x \\x1b]0;pwn\\x07\\x1b[31m\\u202e\\x9b 漢字.json"
HOSTILE_DIR = "dir [b]x \x1b]0;pwn\x07"


class Screens:
    """Checks every screen shown and remembers all the text seen."""

    def __init__(self, app) -> None:
        self.app = app
        self.seen: list[str] = []
        self.looks = 0

    def look(self, where: str) -> str:
        strips = screen_strips(self.app)
        problems = screen_problems(self.app, strips)
        assert not problems, f"{where}: {problems[:5]}"
        assert self.app.is_running and self.app.return_code is None, f"{where}: the app stopped"
        text = "\n".join(screen_lines(self.app, strips))
        self.seen.append(text)
        self.looks += 1
        return text

    @property
    def text(self) -> str:
        return "\n".join(self.seen)


async def test_hostile_session_on_every_view(tmp_path):
    path = write_hostile(tmp_path / "hostile.json")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_plan(pilot)
        await pilot.pause()
        screens = Screens(app)
        top = screens.look("start").splitlines()[0]
        # the session name, inert, in the top bar (cut where the step needs its room)
        assert "name [bold]B[/]" in top and "[link=https://x]L[/link]" in top and "step 13/13" in top
        count, steps = len(app.plan.sections), len(app.plan.steps)
        assert steps >= 10
        for step_key in ("end", "home"):  # every section, final and untrimmed
            await pilot.press(step_key)
            for index in range(count):
                assert app.selected == index
                screens.look(f"{step_key}, section {app.plan.sections[index].id}")
                await pilot.press("down")
            await pilot.press("pageup")  # back to the first section (ten rows up)
            assert app.selected == 0
        await pilot.press("home")
        for step in range(1, steps + 1):  # every step of the trace, with the doc section selected
            await pilot.press("right")
            assert app.step == step
            screens.look(f"step {step}")
        trace = "\n".join(app.query_one(TraceView).plain_lines())
        assert "Full → Summary  b0 [bold]B[/] [/] [link=https://x]" in trace  # demote notes quote names, inert
        assert "b4 zw\\u200bsp bom\\ufeff rlo\\u202e" in trace
        await pilot.press("v")  # the sidebar's token breakdown (by section kind here)
        assert app.query_one("#breakdown").display
        screens.look("breakdown")
        await pilot.press("v")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        screens.look("help")
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.press(*"[bold]x[/]")  # markup typed into the command palette
        await pilot.pause(0.2)
        screens.look("command palette")
        await pilot.press("escape")
        await pilot.pause()
        assert "budget pressure" in screens.look("toasts")
        for literal in LITERAL:
            assert literal in screens.text, literal
        for escaped in ESCAPED:
            assert escaped in screens.text, escaped
        # click where "[@click=app.quit]" is drawn: it is text, not an action
        await pilot.press("end")
        for y, row in enumerate(screen_lines(app)):
            if "[@click=app.quit]" in row and y > 0:
                x = cell_len(row[: row.index("[@click=app.quit]")]) + 2
                await pilot.click(offset=(x, y))
                await pilot.pause()
                break
        else:
            raise AssertionError("[@click=app.quit] is not on screen")
        screens.look("after the click")
        await pilot.press("escape")  # the click focused the detail; back to the sections
        await assert_responsive(pilot)
    assert app.return_code is None or app.return_code == 0


async def test_hostile_file_name_and_error_messages(tmp_path):
    """File names and errors that quote user values: status line, detail banner and toasts stay inert."""
    folder = tmp_path / HOSTILE_DIR
    folder.mkdir()
    path = write_hostile(folder / HOSTILE_NAME, max_ctx=8000)
    good = json.dumps(hostile_session(max_ctx=8000))
    broken: list[tuple[str, bytes]] = [
        ("unknown key", json.dumps({**hostile_session(), "[@click=app.quit]\x1b]0;k\x07\u202ekey": 1}).encode()),
        ("bad value", json.dumps({**hostile_session(), "budget": {"max_ctx": "[red]x\x1b[0m\u202e"}}).encode()),
        ("unknown kind", json.dumps({**hostile_session(), "sections": [{"id": "a", "kind": "[b]k\x1b[31m\u2067"}]}).encode()),
        ("raw escapes", b'{"tokenbox": 1, "name": "\x1b]0;pwn\x07\x1b[2J' + MARKUP.encode()),
        ("binary", b'{"tokenbox": 1, "name": "a\x00b"}'),
    ]
    app = make_app(path, watch=False)
    statuses: list[str] = []
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_plan(pilot)
        screens = Screens(app)
        assert HOSTILE_NAME_SHOWN in screens.look("start")
        for what, content in broken:
            before = app.file_error
            path.write_bytes(content)
            app.post_message(FileChanged("modified"))
            await wait_for(pilot, lambda before=before: app.file_error not in (None, before), what=what)
            await wait_idle(pilot)
            text = screens.look(what)
            statuses.append(status_text(app))
            banner = app.query_one(DetailView).message or ""
            assert "reload failed" in text, what
            assert banner == "", what  # one place per error: the status line, not the detail too
            assert HOSTILE_NAME_SHOWN in status_text(app), what  # the status line names the file, escaped
            for shown in (text, status_text(app)):
                assert "dir [b]x" not in shown, what  # errors name the file only, not its folder
            await assert_responsive(pilot)
        path.write_text(good)
        app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: app.file_error is None, what="mended")
        await wait_idle(pilot)
        screens.look("mended")
        shown = "\n".join(statuses)  # the status line holds each error whole (the screen may cut it)
        assert "[@click=app.quit]\\x1b]0;k\\x07\\u202ekey" in shown  # the unknown key, quoted inert
        assert "\x1b" not in shown and "\u202e" not in shown
        await assert_responsive(pilot)


async def test_hostile_file_that_never_loaded(tmp_path):
    """No plan yet: the detail banner says which file cannot be shown, by its (escaped) name."""
    path = tmp_path / HOSTILE_NAME
    path.write_text('{"tokenbox": 1, "name": "\x1b]0;pwn\x07", "oops": ' + json.dumps(MARKUP) + "}")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.file_error is not None, what="the start error")
        await wait_idle(pilot)
        text = Screens(app).look("never loaded")
        assert (app.query_one(DetailView).message or "").startswith(f"cannot show {HOSTILE_NAME_SHOWN}:\n")
        assert f"tokenbox · {HOSTILE_NAME_SHOWN}" in text  # the top bar
        assert "invalid control character" in status_text(app)  # the error, once, in the status line
        await assert_responsive(pilot)


async def test_hostile_imported_request(tmp_path):
    """An API request (importer): hostile tool names reach the breakdown's "Tools by cost" and the section ids."""
    tool = "[@click=app.quit]t\x1b]0;x\x07\u202e"
    request = {
        "model": "claude-3-5-sonnet-20241022", "max_tokens": 1024, "system": HOSTILE,
        "tools": [{"name": tool, "description": HOSTILE, "input_schema": {"type": "object", "properties": {}}}],
        "messages": [
            {"role": "user", "content": HOSTILE},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"q": MARKUP}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": HOSTILE}]},
        ],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_plan(pilot)
        screens = Screens(app)
        assert app.query_one("#breakdown").display  # imported: the breakdown is the sidebar
        for index in range(len(app.plan.sections)):
            assert app.selected == index
            screens.look(f"section {index}")
            await pilot.press("down")
        listed = "\n".join(app.query_one("#breakdown").plain_lines())
        assert "Tool definitions by cost (1)\n■ [@click=app.quit]" in listed  # inert, whole over two rows
        assert "]0;x\\x07\\u202e" in listed  # the rest of the name on the next row, escaped
        assert "[@click=app.quit]Q[/]" in screens.text
        await assert_responsive(pilot)


async def test_every_toast_is_inert(tmp_path):
    """Toasts from any caller (a subclass too) are escaped: Textual's toasts pass ESC through, even without markup."""
    app = make_app(write_hostile(tmp_path / "hostile.json", max_ctx=8000), watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_plan(pilot)
        app.notify(MARKUP + "\n" + ESCAPES + " " + INVISIBLE, title="[b]t\x1b]0;x\x07")  # markup=True asked for
        await pilot.pause()
        text = Screens(app).look("toast")
        assert "[bold]B[/]" in text and "[b]t\\x1b]0;x\\x07" in text
        await assert_responsive(pilot)


async def test_megabyte_line_and_name_stay_responsive(tmp_path):
    """A 1 MB single line is escaped and wrapped lazily; a 1 MB name is cut. Timings are printed, not asserted."""
    line = ("abc [bold]x[/] 漢字😀 \x1b[31m\u202e " * 40_000)[:1_000_000]
    session = {
        "tokenbox": 1, "name": "N" * 1_000_000 + "\x1b]0;pwn\x07", "tokenizer": "heuristic",
        "budget": {"max_ctx": 2_000_000},
        "sections": [{"id": "small", "text": "small"}, {"id": "huge", "text": line}, {"id": "user", "kind": "user", "text": "q"}],
    }
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(session))
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        detail = app.query_one(DetailView)
        top = screen_lines(app)[0]
        assert top.rstrip().endswith("…") and cell_len(top) == SIZE[0]  # the name is cut, the bar one row
        started = time.perf_counter()
        app.action_select(1)  # what ↓ does (opens the huge section), timed without Pilot's waiting for idle
        opened = time.perf_counter() - started
        await pilot.pause()
        assert app.selected == 1
        assert not detail.complete and detail.line_count <= FIRST_ROWS + SIZE[1]  # built lazily
        assert not screen_problems(app)
        assert "[bold]x[/]" in "\n".join(screen_lines(app))
        frames = 10
        started = time.perf_counter()
        for _ in range(frames):  # every visible row of the detail drawn from scratch (no cached strips)
            detail._strips.clear()
            for y in range(detail.scrollable_content_region.height):
                detail.render_line(y)
        frame = (time.perf_counter() - started) / frames
        await pilot.press("enter")
        rows_before = detail.line_count
        for _ in range(15):  # a page is 27 rows: past the first 300, more are built
            await pilot.press("pagedown")
        assert detail.line_count > rows_before  # scrolling built more rows
        await pilot.press("escape")
        await pilot.press("up", "down", "up")
        assert app.selected == 0
        print(f"\n1 MB line: opened in {opened * 1000:.0f} ms, the detail drawn from scratch in {frame * 1000:.1f} ms, "
              f"{rows_before} rows built at first")
        await pilot.press("down")
        whole = detail_text(app)  # builds every row
        assert "more characters not shown" in whole  # 1 MB is over the per-block cap: said, not silently lost
        await assert_responsive(pilot)
