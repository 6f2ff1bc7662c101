"""SVG snapshots of the inspector (pytest-textual-snapshot), taken once the plan is on screen.

Deterministic: fixed size, frozen clock (no times on screen), watcher off, samples copied into
tmp_path under fixed names (only base names are shown), toasts that do not expire.
Update with ``pytest tests/tui --snapshot-update`` after looking at every changed SVG.
"""

from __future__ import annotations

import json

from tokenbox.tui.messages import FileChanged

from tests.tui.helpers import SIZE, copy_sample, make_app, sample_text, screen_lines, wait_for, wait_idle, wait_plan
from tests.tui.hostile import write_hostile

MARKUP = "[bold]not bold[/] [link=x]not a link[/link] [@click=app.quit]click[/] [red on blue]x[/]"
ANSI = "\x1b[31mred?\x1b[0m \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ bell\x07 cr\rret tab\tend \u202eevil"


def test_default_sample(snap_compare, tmp_path):
    app = make_app(copy_sample("passepartout_turn.yaml", tmp_path), watch=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_plan)


def test_pressure_mid_trace(snap_compare, tmp_path):
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        await pilot.press("home", "right", "right", "down", "down")
        assert pilot.app.step == 2

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_critical_overflow(snap_compare, tmp_path):
    app = make_app(copy_sample("overflow.yaml", tmp_path), watch=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_plan)


def test_broken_file_keeps_last_good_plan(snap_compare, tmp_path):
    path = copy_sample("facet_layout.yaml", tmp_path, "session.yaml")
    app = make_app(path, watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        path.write_text(sample_text("facet_layout.yaml").replace("  max_ctx: 530", "  max_ctx: [530"))
        pilot.app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: pilot.app.file_error is not None, what="the reload error")
        await wait_idle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_jsonl_timeline(snap_compare, tmp_path):
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pilot.app.plan.session.turn == 5, what="turn 5")
        await wait_idle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_markup_and_escapes_are_data(snap_compare, tmp_path):
    session = {
        "tokenbox": 1,
        "name": "[bold red]name[/] \x1b[5mblink",
        "tokenizer": "o200k_base",
        "budget": {"max_ctx": 2000},
        "sections": [
            {"id": "untrusted", "text": "\n".join(
                [MARKUP, "[/]", "[b]" * 5, "[link=x]", "[@click=app.quit]", ANSI, "after \x1b[2J\x1b[H cleared?"]
            )},
            {"id": "ansi", "text": ANSI},
            {"id": "user", "kind": "user", "text": "[bold]is this bold?[/bold]"},
        ],
    }
    path = tmp_path / "markup.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    app = make_app(path, watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        assert pilot.app.return_code is None  # [@click=app.quit] did not quit

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_hostile_text_is_inert(snap_compare, tmp_path):
    """Beyond markup and CSI: OSC titles and links, C1, DEL, CJK and emoji, zero-width and bidi characters,
    in the top bar, the trace's demote notes (behaviour names) and the detail; all literal or escaped."""
    app = make_app(write_hostile(tmp_path / "hostile.json"), watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        await pilot.press("home", "right", "right", "right", "right", "right", "right")  # step 6 selects rules
        assert pilot.app.step == 6 and pilot.app.plan.sections[pilot.app.selected].id == "rules"
        assert pilot.app.return_code is None

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _default(tmp_path):
    return make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)


def test_size_80x24(snap_compare, tmp_path):
    """Below 100 columns the sidebar hides (``s`` shows it); ids, numbers and actions stay whole."""
    assert snap_compare(_default(tmp_path), terminal_size=(80, 24), run_before=wait_plan)


def test_size_140x42(snap_compare, tmp_path):
    assert snap_compare(_default(tmp_path), terminal_size=(140, 42), run_before=wait_plan)


def test_size_200x60_log(snap_compare, tmp_path):
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    assert snap_compare(app, terminal_size=(200, 60), run_before=wait_plan)


def _themed(theme: str, *keys: str):
    """``run_before`` that switches to ``theme`` once the plan is shown (and presses ``keys``)."""

    async def run_before(pilot):
        await wait_plan(pilot)
        if keys:
            await pilot.press(*keys)
        pilot.app.theme = theme
        await wait_idle(pilot)

    return run_before


def test_light_theme(snap_compare, tmp_path):
    assert snap_compare(_default(tmp_path), terminal_size=(140, 42), run_before=_themed("textual-light"))


def test_light_theme_mid_trace_log(snap_compare, tmp_path):
    """The light theme on a log: timeline, trimmed bars, the trace cursor, a dropped section's detail."""
    app = make_app(copy_sample("agent_log.jsonl", tmp_path), watch=False)
    assert snap_compare(app, terminal_size=(140, 42), run_before=_themed("textual-light", "home", "right"))  # its one step


def test_nord_theme(snap_compare, tmp_path):
    assert snap_compare(_default(tmp_path), terminal_size=(140, 42), run_before=_themed("nord"))


def test_gruvbox_theme_overflow(snap_compare, tmp_path):
    app = make_app(copy_sample("overflow.yaml", tmp_path), watch=False)
    assert snap_compare(app, terminal_size=(140, 42), run_before=_themed("gruvbox"))


def test_notification_leaves_the_status_visible(snap_compare, tmp_path):
    """A toast sits at the top right, over the section table, never over the status or error line."""
    path = copy_sample("facet_layout.yaml", tmp_path, "session.yaml")
    app = make_app(path, watch=False)

    async def run_before(pilot):
        await wait_plan(pilot)
        path.write_text(sample_text("facet_layout.yaml").replace("  max_ctx: 530", "  max_ctx: [530"))
        pilot.app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: pilot.app.file_error is not None, what="the reload error")
        pilot.app.notify("context usage reached 90%", title="budget pressure", severity="warning", markup=False)
        await wait_idle(pilot)
        # the toast is mounted by a later refresh of the screen: wait until it is laid out and shown
        await wait_for(pilot, lambda: _toast_shown(pilot.app), what="the toast on screen")

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def _toast_shown(app) -> bool:
    """A toast is mounted, laid out with a size and painted on the screen."""
    from textual.widgets._toast import Toast

    toasts = app.screen.query(Toast)
    return any(toast.region.area for toast in toasts) and any("budget pressure" in line for line in screen_lines(app))


def test_trace_step_moves_the_selection(snap_compare, tmp_path):
    app = _default(tmp_path)

    async def run_before(pilot):
        await wait_plan(pilot)
        await pilot.press("home", "right", "right", "right")
        assert pilot.app.plan.sections[pilot.app.selected].id == pilot.app.plan.steps[2].section

    assert snap_compare(app, terminal_size=(140, 42), run_before=run_before)
