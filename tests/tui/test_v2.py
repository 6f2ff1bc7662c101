"""tokenbox-tui v2 behaviour through public state and posted messages: key bursts, the directory
argument, config recovery, a bad log line, scheduling (a finished load is always shown), the
responsive layout, the trace selecting what it changed, and exiting when the terminal vanishes."""

from __future__ import annotations

import os
import threading

from textual.widgets._footer import FooterKey
from tokenbox.tui import app as app_module
from tokenbox.tui.messages import FileChanged, PlanComputed
from tokenbox.tui.planner import Planner

from tests.tui.helpers import (
    SIZE,
    Recorder,
    copy_sample,
    detail_text,
    make_app,
    screen_lines,
    status_text,
    wait_for,
    wait_idle,
    wait_plan,
)


async def test_key_burst_counts_every_key(tmp_path):
    """``[[[`` pressed in one burst moves three turns, not one."""
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        newest = app.plan.session.turn
        assert newest >= 4
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        await wait_idle(pilot)
        assert app.plan.session.turn == newest - 3
        await pilot.press("right_square_bracket", "right_square_bracket")
        await wait_idle(pilot)
        assert app.plan.session.turn == newest - 1


def test_directory_as_file_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    """A directory is refused before any screen opens."""
    monkeypatch.setattr(app_module.TokenboxApp, "run", lambda self: (_ for _ in ()).throw(AssertionError("opened")))
    code = app_module.main([str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("tokenbox: error: ") and "is a directory" in err


async def test_broken_config_file_recovers(tmp_path, monkeypatch):
    """A broken config file is an error on screen; once fixed, the next reload plans again."""
    config = tmp_path / "config" / "tokenbox" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("max_ctx: [oops\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    session = copy_sample("facet_layout.yaml", tmp_path)
    app = make_app(session, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.settings_error is not None, what="the config error")
        assert app.plan is None and "config.yaml" in status_text(app)
        config.write_text("max_ctx: 9000\n")
        app.post_message(FileChanged("modified"))
        await wait_plan(pilot)
        assert app.settings_error is None and app.plan.budget.max_ctx == 530  # the file's budget wins


async def test_bad_line_in_the_middle_of_a_log_keeps_later_turns(tmp_path):
    """One broken line in a .jsonl log: the turns after it still show, the line is named."""
    lines = copy_sample("agent_log.jsonl", tmp_path).read_text().splitlines(keepends=True)
    path = tmp_path / "log.jsonl"
    path.write_text("".join(lines[:2]) + "{not json\n" + "".join(lines[2:]))
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.outcome is not None, what="a first outcome")
        await wait_idle(pilot)
        assert app.plan is not None, status_text(app)
        assert app.plan.session.turn_count == len(lines)
        assert ":3:" in status_text(app) or any(":3:" in w for w in getattr(app.plan, "warnings", ()))


class GatedPlanner(Planner):
    """Blocks its second run until released, so that newer requests arrive while it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def run(self, request):
        self.calls += 1
        if self.calls == 2:
            self.started.set()
            self.release.wait(30)
        return super().run(request)


async def test_a_finished_load_is_shown_when_newer_requests_arrive(tmp_path):
    """Requests made while a load runs never cancel it: it is shown, then the newest follow-up only."""
    session = copy_sample("facet_layout.yaml", tmp_path)
    planner = GatedPlanner()
    app = make_app(session, watch=False, planner=planner)
    seen = Recorder()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await wait_plan(pilot)
        session.write_text(session.read_text().replace("max_ctx: 530", "max_ctx: 600"))
        app.post_message(FileChanged("modified"))
        await wait_for(pilot, planner.started.is_set, what="the slow load started")
        for _ in range(5):  # five newer requests while it runs: one follow-up, the newest
            await pilot.press("plus")
        planner.release.set()
        await wait_idle(pilot)
        outcomes = [m.outcome for m in seen.of(PlanComputed)]
        shown = [o.plan.budget.max_ctx for o in outcomes if o.plan is not None]
        assert shown[1] == 600  # the slow load reached the screen
        assert len(outcomes) == 3  # start, the slow load, ONE follow-up for five key presses
        assert app.plan.budget.max_ctx == 600 * 125 // 100 and app.plan.what_if == 5


async def test_narrow_terminal_hides_the_sidebar_and_keeps_numbers(tmp_path):
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        sidebar = app.query_one("#sidebar")
        assert not sidebar.display
        text = "\n".join(screen_lines(app))
        for result in app.plan.sections:
            assert f"{result.tokens_before}" in text  # no number cut
        await pilot.press("s")
        assert sidebar.display
        await pilot.press("s")
        assert not sidebar.display


async def test_footer_shows_turn_keys_only_for_logs_and_is_rebuilt_only_when_its_keys_change(tmp_path):
    """One turn: no turn keys. Back from the help or the palette, the footer keeps its key widgets
    (the same keys: Textual's footer rebuilt them on every bindings refresh). A second turn: the turn
    keys show."""
    lines = copy_sample("agent_log.jsonl", tmp_path).read_text().splitlines(keepends=True)
    path = tmp_path / "one-turn.jsonl"
    path.write_text(lines[0])
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await pilot.pause()
        assert "[ ] turn" not in screen_lines(app)[-1]
        keys = list(app.query(FooterKey))
        for opened in ("question_mark", "ctrl+p"):  # the help, the command palette: back to the same keys
            await pilot.press(opened)
            await pilot.pause()
            assert app.screen is not app.screen_stack[0]
            await pilot.press("escape")
            await pilot.pause()
            await pilot.pause()
        assert len(keys) > 5 and all(a is b for a, b in zip(app.screen.query(FooterKey), keys, strict=True))
        with path.open("a") as handle:
            handle.write(lines[1])
        app.post_message(FileChanged("modified"))
        await wait_plan(pilot, 2)
        await pilot.pause()
        assert "[ ] turn" in screen_lines(app)[-1]


async def test_trace_steps_and_page_keys_select_sections(tmp_path):
    """Each trace step selects the section it changed; page keys move the selection ten rows; stepping
    back selects the section the shown step changed (the table's ◀)."""
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("home")
        for step in app.plan.steps:
            await pilot.press("right")
            assert app.plan.sections[app.selected].id == step.section
        count = len(app.plan.sections)
        await pilot.press("pageup")
        assert app.selected == 0
        await pilot.press("pagedown")
        assert app.selected == min(10, count - 1)
        await pilot.press("pageup")
        assert app.selected == 0
        await pilot.press("end")
        for _ in range(len(app.plan.steps) - 1):
            await pilot.press("left")  # the table's ◀ marks the section the shown step changed: selected
            assert app.plan.sections[app.selected].id == app.plan.steps[app.step - 1].section


# Parts run one after another on one app of the log sample (an app start costs more than a part),
# each at its own terminal size.


async def footer_at_80_columns_keeps_help_and_ends_with_the_palette(pilot) -> None:
    """Key pairs share a label, so the keys people need first fit 80 columns; what the width clips
    ends under the palette key, with no stray letter after it."""
    await pilot.resize_terminal(80, 24)
    await pilot.pause()
    footer = screen_lines(pilot.app)[-1].rstrip()
    for shown in ("← → step", "+ - budget", "[ ] turn", "f follow", "v breakdown", "? help"):
        assert shown in footer, footer
    assert footer.endswith("^p palette"), footer


async def headline_moves_to_the_top_bar_while_the_sidebar_is_hidden(pilot) -> None:
    """At 80 columns the sidebar (and its gauge) is hidden: the top bar carries the context headline,
    and gives it back when ``s`` shows the sidebar."""
    app = pilot.app
    await pilot.resize_terminal(80, 24)
    await pilot.pause()
    top = screen_lines(app)[0]
    assert f"context {app.plan.usage_percent}%" in top and "turn 6/6" in top, top
    await pilot.press("s")
    await pilot.pause()
    assert app.query_one("#sidebar").display
    top = screen_lines(app)[0]
    assert "context" not in top and "turn 6/6" in top, top  # (the sidebar stays shown: as at 100 columns)


async def footer_clipped_at_any_width_ends_with_the_palette(pilot) -> None:
    """Wherever the width cuts the keys, the palette key covers the last column: the keys scrolled
    beneath it never show a stray letter after "^p palette"."""
    for width in (60, 64, 70, 75):
        await pilot.resize_terminal(width, 24)
        await pilot.pause()
        footer = screen_lines(pilot.app)[-1].rstrip()
        assert len(screen_lines(pilot.app)[-1]) == width and footer.endswith("^p palette"), (width, footer)


async def top_bar_fits_beside_the_keys_panel(pilot) -> None:
    """The palette's "Keys" panel narrows the screen without a resize: the top bar refits its fields
    to its own width (whole fields, never one cut in the middle)."""
    app = pilot.app
    await pilot.resize_terminal(100, 24)
    await pilot.pause()
    app.action_show_help_panel()
    await pilot.pause()
    await pilot.pause()
    bar = app.query_one("#topbar").region
    top = screen_lines(app)[0][bar.x : bar.right].strip()
    fields = top.removesuffix(" · …").split(" · ")
    assert fields[0] == "tokenbox" and "(…" not in top and "step 1/1 final" in top, top


NARROW_PARTS = (
    footer_at_80_columns_keeps_help_and_ends_with_the_palette,
    headline_moves_to_the_top_bar_while_the_sidebar_is_hidden,
    footer_clipped_at_any_width_ends_with_the_palette,
    top_bar_fits_beside_the_keys_panel,
)


async def test_the_log_sample_at_narrow_widths(tmp_path):
    """``NARROW_PARTS`` in turn, on one app."""
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        for part in NARROW_PARTS:
            await part(pilot)


async def test_a_narrow_sidebar_keeps_every_gauge_count_whole(tmp_path):
    """At 100 columns (the narrow sidebar) the overflow count and a what-if's base budget go on under
    their rows instead of being cut ("CRITICAL OVERFLOW…", "max_ctx +10% of 2…")."""
    app = make_app(copy_sample("overflow.yaml", tmp_path), watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_plan(pilot)
        await pilot.press("plus", "plus")
        await wait_idle(pilot)
        box = app.query_one("#sidebar").region
        sidebar = [line[box.x : box.right].strip(" ▕") for line in screen_lines(app)[box.y : box.bottom]]
        gauge = sidebar[: next(i for i, row in enumerate(sidebar) if row.startswith("fingerprint")) + 1]
        assert not [row for row in gauge if "…" in row], gauge
        overflow = next(index for index, row in enumerate(gauge) if row.startswith("overflow"))
        assert gauge[overflow + 1].strip() == f"+{app.plan.fixed_load - app.plan.budget.available}", gauge
        what_if = next(index for index, row in enumerate(gauge) if row.startswith("what-if"))
        assert gauge[what_if + 1].strip() == "of 300", gauge


def test_app_exits_when_its_terminal_vanishes(tmp_path):
    """Under a pty whose other end closes (no SIGHUP reaches it): the app exits instead of spinning.

    Textual draws on stderr, so the child's stderr is the pty too; the window size is set so that the
    first frame has a size to draw at.
    """
    import fcntl
    import pty
    import select
    import signal
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    session = copy_sample("facet_layout.yaml", tmp_path)
    env = dict(os.environ, TERM="xterm-256color", TOKENBOX_TUI_FROZEN="1")
    proc = subprocess.Popen([sys.executable, "-m", "tokenbox.tui", str(session)], stdin=slave, stdout=slave,
                            stderr=slave, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    os.close(slave)
    try:
        drawn = b""
        for _ in range(600):  # up to 60 s for the first frame (a bound, not a timing assertion)
            if b"Detail" in drawn:
                break
            if select.select([master], [], [], 0.1)[0]:
                drawn += os.read(master, 65536)
        assert b"Detail" in drawn, "the app never drew its first frame"
        os.close(master)  # the terminal disappears; SIGHUP is ignored, so only the driver can notice
        assert proc.wait(timeout=30) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_fixed_config_file_is_planned_without_touching_the_session(tmp_path, monkeypatch):
    """The config file is watched: fixing it plans again by itself; meanwhile the detail blames the
    settings, not the session file."""
    config = tmp_path / "config" / "tokenbox" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("max_ctx: [oops\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.settings_error is not None, what="the config error")
        assert "with these settings" in detail_text(app) and "cannot show" not in detail_text(app)
        config.write_text("max_ctx: 9000\n")  # no file event on the session: the config watcher alone
        await wait_plan(pilot)
        assert app.settings_error is None


async def test_one_toast_at_a_time(tmp_path):
    app = make_app(copy_sample("overflow.yaml", tmp_path), watch=False, toast_seconds=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        for _ in range(4):
            await pilot.press("p")  # each says the policy in a toast
            await wait_idle(pilot)
        await pilot.pause()
        assert len(app._notifications) == 1  # Textual keeps the live toasts there
