"""The view state alone (``tui/state.py``): transitions keep it consistent, and the app redraws only the
widgets whose inputs changed."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.tui.gauge import Gauge
from tokenbox.tui.planner import Planner, PlanRequest
from tokenbox.tui.sections import SectionBars
from tokenbox.tui.state import HIDDEN, MAX_WHAT_IF, MIN_WHAT_IF, ViewState, inputs_differ, same_input

from tests.tui.helpers import copy_sample, make_app, wait_plan

SAMPLE_DIR = {}


def _outcome(tmp_path_factory, name: str, **request):
    """A real outcome of a sample (planned once per sample and request)."""
    key = (name, tuple(sorted(request.items())))
    if key not in SAMPLE_DIR:
        path = copy_sample(name, tmp_path_factory.mktemp("state"))
        SAMPLE_DIR[key] = Planner().run(PlanRequest(path=str(path), reload=True, seq=1, **request))
    return SAMPLE_DIR[key]


@st.composite
def key_presses(draw):
    return draw(st.lists(st.sampled_from(["step+", "step-", "home", "end", "up", "down", "pgdn", "pgup"]), max_size=40))


def _press(state: ViewState, key: str) -> ViewState:
    return {
        "step+": lambda: state.stepped_by(1),
        "step-": lambda: state.stepped_by(-1),
        "home": lambda: state.stepped_to(0),
        "end": lambda: state.stepped_to(-1),
        "up": lambda: state.selected_by(-1),
        "down": lambda: state.selected_by(1),
        "pgdn": lambda: state.selected_by(10),
        "pgup": lambda: state.selected_by(-10),
    }[key]()


@settings(max_examples=100, deadline=None)
@given(keys=key_presses())
def test_any_keys_keep_step_and_selection_in_range(tmp_path_factory, keys):
    outcome = _outcome(tmp_path_factory, "facet_layout.yaml")
    state = ViewState().with_outcome(outcome)
    plan = state.plan
    assert plan is not None and plan.steps  # the sample trims: the trace has steps to walk
    for key in keys:
        before = state
        state = _press(state, key)
        assert 0 <= state.step <= len(plan.steps)
        assert 0 <= state.selected < len(plan.sections)
        assert state.at_end == (state.step == len(plan.steps))
        assert before.plan is state.plan  # keys never change the plan itself
        if key in ("step+", "step-", "end") and state.step != before.step and state.step >= 1:
            # a step shown selects the section it changed (the one marked ◀)
            assert plan.sections[state.selected].id == plan.steps[state.step - 1].section


def test_a_new_plan_keeps_the_selected_section_and_a_pinned_step(tmp_path_factory):
    first = _outcome(tmp_path_factory, "facet_layout.yaml")
    state = ViewState().with_outcome(first)
    assert state.step == len(state.plan.steps) and state.at_end and state.plans_shown == 1
    state = state.stepped_to(1).selected_by(3)
    chosen = state.plan.sections[state.selected].id
    again = state.with_outcome(_outcome(tmp_path_factory, "facet_layout.yaml", what_if=-2))
    assert again.plan.sections[again.selected].id == chosen
    assert again.step == min(1, len(again.plan.steps)) and not again.at_end
    assert again.plans_shown == 2


def test_what_if_turns_and_sessions(tmp_path_factory):
    state = ViewState()
    for _ in range(100):
        state = state.with_what_if(-1)
    assert state.what_if == MIN_WHAT_IF
    for _ in range(400):
        state = state.with_what_if(+1)
    assert state.what_if == MAX_WHAT_IF and state.with_what_if(0).what_if == 0
    log = ViewState().with_outcome(_outcome(tmp_path_factory, "agent_log.jsonl"))
    assert log.turn_count > 3 and log.following
    pinned = log.with_turn(-1).with_turn(-1).with_turn(-1)  # a burst: three turns from the newest
    assert pinned.turn == log.plan.session.turn - 3 and not pinned.following
    fresh = pinned.with_what_if(2).for_new_session()
    assert fresh.plan is None and fresh.following and fresh.what_if == 2 and fresh.turn_count == 0


async def test_a_key_redraws_only_what_it_changes(tmp_path):
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        gauge, bars = app.query_one(Gauge), app.query_one(SectionBars)
        drawn_rows = bars.view
        drawn_gauge = gauge.last_text
        await pilot.press("down")  # the selection moves: the rows redraw, the gauge does not
        assert gauge.last_text is drawn_gauge
        assert bars.view is not drawn_rows  # the rows were drawn again, with the new selection
        await pilot.press("home")  # another step: the gauge shows the layout at step 0
        assert gauge.last_text is not drawn_gauge
        assert app.step == 0


async def test_esc_in_the_detail_posts_left_and_the_sections_take_the_focus(tmp_path):
    from tokenbox.tui.detail import DetailView

    seen: list[type] = []
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(140, 42), message_hook=lambda message: seen.append(type(message))) as pilot:
        await wait_plan(pilot)
        await pilot.press("enter")
        assert isinstance(app.focused, DetailView)
        await pilot.press("escape")
        await pilot.pause()
        assert DetailView.Left in seen
        assert isinstance(app.focused, SectionBars)


async def test_a_plan_that_arrives_under_the_help_screen_is_drawn(tmp_path):
    """The help screen covers the view; a plan arriving meanwhile is drawn beneath it, so closing the
    help shows the current state (the redraw used to wait for the next change)."""
    from tokenbox.tui.help import HelpScreen
    from tokenbox.tui.messages import FileChanged

    path = copy_sample("facet_layout.yaml", tmp_path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        path.write_text(path.read_text().replace("max_ctx: 530", "max_ctx: 600"))
        app.post_message(FileChanged("modified"))
        await wait_plan(pilot, 2)
        assert isinstance(app.screen, HelpScreen)
        assert "/ 600" in app.query_one(Gauge).last_text.plain


def test_status_says_loaded_then_reloaded_and_a_failed_reload_keeps_the_time(tmp_path_factory, tmp_path):
    from tokenbox.tui.status import Status, status_text

    good = _outcome(tmp_path_factory, "facet_layout.yaml")
    first = ViewState().with_outcome(good, reloaded="10:00:00")
    assert (first.reloaded, first.first_load) == ("10:00:00", True)
    again = first.with_outcome(good, reloaded="10:00:05")
    assert (again.reloaded, again.first_load) == ("10:00:05", False)
    missing = Planner().run(PlanRequest(path=str(tmp_path / "gone.yaml"), reload=True, seq=2))
    assert missing.plan is None and missing.file_error
    failed = again.with_outcome(missing, reloaded="10:00:09")
    assert failed.reloaded == "10:00:05" and failed.plan is again.plan and failed.file_error
    line = status_text(Status("f.yaml", first.reloaded, first.changes, first=first.first_load)).plain
    assert "loaded 10:00:00" in line and "reloaded" not in line
    assert "reloaded 10:00:05" in status_text(Status("f.yaml", again.reloaded, first=again.first_load)).plain


def test_a_long_file_name_gives_way_to_the_reload_time():
    """At 80 columns a long transcript name is cut in its middle; the time and the extension stay whole."""
    from tokenbox.tui.status import Status, status_text

    name = "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    line = status_text(Status(name, "16:21:31", "first plan", 12.0, first=True), width=80).plain
    assert "loaded 16:21:31" in line and ".jsonl  loaded" in line and "…" in line.split("loaded")[0]
    assert status_text(Status("f.yaml", "16:21:31"), width=80).plain.startswith(" f.yaml  reloaded 16:21:31")


def test_every_plan_request_is_made_from_the_state_and_carries_the_flags(tmp_path_factory):
    """The flags' budget and reserve live in the state with what-if, tokenizer, policy and the pinned
    turn; ``request`` is the one way to a request, and a new session keeps them."""
    state = ViewState(budget=900, reserve_out=50, tokenizer="heuristic", trimming="progressive").with_what_if(2)
    request = state.request("/x.yaml", reload=True, reason="start", seq=7)
    assert request == PlanRequest(path="/x.yaml", reload=True, budget=900, what_if=2, tokenizer="heuristic",
                                  trimming="progressive", reason="start", seq=7, reserve_out=50)
    fresh = state.for_new_session()
    assert fresh.request("/y.yaml", reload=False, reason="r") == PlanRequest(
        path="/y.yaml", reload=False, budget=900, what_if=2, tokenizer="heuristic", trimming="progressive",
        reason="r", reserve_out=50)


def test_what_a_part_reads_decides_its_redraw(tmp_path_factory):
    """Plain values are compared by value, tuples item by item, plans and outcomes by identity."""
    plan = ViewState().with_outcome(_outcome(tmp_path_factory, "facet_layout.yaml"))
    def gauge(s):
        return (s.plan, s.step, s.warn_levels)
    assert not inputs_differ(gauge, plan, plan.selected_by(1))  # the selection is not read
    assert inputs_differ(gauge, plan, plan.stepped_to(0))
    assert inputs_differ(gauge, plan, replace(plan, warn_levels=(10, 20, 30)))
    assert not inputs_differ(gauge, plan, replace(plan, warn_levels=(75, 90, 100)))  # an equal tuple
    again = plan.with_outcome(plan.outcome)  # the same outcome, accepted again: its plan object is the same
    assert not inputs_differ(gauge, plan, again)
    assert inputs_differ(gauge, None, plan)  # no old state: everything draws
    assert same_input((1, "a", None), (1, "a", None)) and not same_input((1,), (True,))


def test_the_sidebar_shows_by_width_unless_toggled():
    assert ViewState(width=HIDDEN).sidebar_visible and not ViewState(width=HIDDEN - 1).sidebar_visible
    assert ViewState(width=80, sidebar_shown=True).sidebar_visible
    assert not ViewState(width=200, sidebar_shown=False).sidebar_visible
