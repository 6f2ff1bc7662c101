"""What the screen works out of a request's parts for one more request must not grow with the session: an
uncompacted chain's parts are looked at once, not by every widget on every draw (``tui/figures.py``), and
the figures the widgets draw are the ones core's functions give.

Work is counted with spies set by the tests (monkeypatch), never with counters in the app. Expected figures
come from core (``part_kind``, ``context_use``, ``Plan.state_at``) or from the plain loops written here.
"""

from __future__ import annotations

import random
import sys
import threading
from dataclasses import replace

from tokenbox.core import Engine, load_session
from tokenbox.core.analysis import breakdown
from tokenbox.core.model import plan as plan_module
from tokenbox.tui import trace
from tokenbox.tui.gauge import agent_cells
from tokenbox.tui.messages import FileChanged
from tokenbox.tui.planner import Planner, PlanRequest
from tokenbox.tui.view import View, describe_changes

from benchmarks.transcripts import write_chain
from tests.tui.helpers import copy_sample, make_app, wait_for, wait_idle, wait_plan


def _spy_everywhere(monkeypatch, name: str, original, calls: list) -> None:
    """``original`` counted under ``name`` in every module of tokenbox that holds it (its own module too),
    when called on the screen's thread (the planner's worker keeps figures of its own as the session grows:
    ``tests/engine/test_untrimmed_plans.py`` and ``tests/tui/test_planner_costs.py`` count those)."""
    screen = threading.main_thread()

    def spy(*args, **kwargs):
        if threading.current_thread() is screen:
            calls.append(1)
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if (getattr(module, "__name__", "") or "").startswith("tokenbox.") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, spy)


async def _work_per_append(tmp_path, monkeypatch, size: int) -> tuple[int, int, int, int]:
    """Parts, and the parts looked at (``part_kind``), layout states made and trim traces laid out
    (``trace_lines``: the categories hide it) on the screen's thread while the app draws one more request of a
    chain of about ``size`` bytes (the planner's worker is not counted)."""
    path = tmp_path / f"chain-{size}.jsonl"
    (text,) = write_chain(path, size, seed=5, appended=1)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        await pilot.pause()
        kinds: list[int] = []
        states: list[int] = []
        traces: list[int] = []
        _spy_everywhere(monkeypatch, "part_kind", breakdown.part_kind, kinds)
        _spy_everywhere(monkeypatch, "trace_lines", trace.trace_lines, traces)
        _spy_everywhere(monkeypatch, "SectionState", plan_module.SectionState, states)
        shown = app.plans_shown
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
        app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: app.plans_shown > shown, what="the appended request shown")
        await wait_idle(pilot)
        await pilot.pause()
        monkeypatch.undo()
        assert not app.query_one(trace.TraceView).display
        return len(app.plan.sections), len(kinds), len(states), len(traces)


async def test_one_more_request_costs_the_screen_its_new_parts_not_the_chain(tmp_path, monkeypatch):
    small = await _work_per_append(tmp_path, monkeypatch, 60_000)
    big = await _work_per_append(tmp_path, monkeypatch, 600_000)
    assert big[0] > 5 * small[0] > 50  # ten times the file: several times the parts
    # the parts looked at: the new request's and the hidden part's, not every part of the chain (the
    # widgets looked at each part three or four times a draw); the states: the rows on screen
    for parts, looked_at, made, _ in (small, big):
        assert looked_at <= 40, (parts, looked_at)
        assert made <= 60, (parts, made)
    assert big[1] <= small[1] + 10 and big[2] <= small[2] + 10, (small, big)
    assert small[3] == big[3] == 0  # the trace is hidden behind the categories: not laid out


def _cells(view: View, width: int, compact_at: int | None) -> list[tuple[str, str]]:
    """The agent gauge's cells as a plain walk over the parts draws them (each part from where the ones
    before it end, one cell at least, the last part drawn on a cell colours it)."""
    window = max(1, view.window or view.plan.budget.max_ctx)

    def cell_of(tokens: int) -> int:
        return min(width, (tokens * width + window // 2) // window)

    cells = [("free", "gauge--free")] * width
    if compact_at is not None:
        for i in range(cell_of(compact_at), width):
            cells[i] = ("buffer", "gauge--buffer")
    used = 0
    for index, state in enumerate(view.state.sections):
        if not state.tokens:
            continue
        start, used = cell_of(used), used + state.tokens
        end = max(cell_of(used), start + 1 if start < width else start)
        kind = breakdown.part_kind(view.plan.sections[index].section) or "other"
        base = "other" if kind == "reply" or kind not in breakdown.CONTEXT_LABELS else kind
        colour = f"part--{base.replace('_', '-')}"
        for i in range(start, min(end, width)):
            cells[i] = ("section", colour)
    if view.total - used > 0:
        for i in range(cell_of(used), min(width, cell_of(view.total))):
            cells[i] = ("section", "part--framing")
    if compact_at is not None and 0 < cell_of(compact_at) <= width:
        cells[min(width - 1, cell_of(compact_at))] = ("threshold", "gauge--crit" if view.total >= compact_at else "gauge--threshold")
    if view.total > window and width:
        cells[-1] = ("over", "gauge--over")
    return cells


def _changes(old, new) -> str:
    """``describe_changes``' sections part as a comparison of every section of both plans words it."""
    before = {s.id: s for s in old.sections}
    after = {s.id: s for s in new.sections}
    parts = []
    if [i for i in before if i in after] != [i for i in after if i in before]:
        parts.append("sections reordered")
    edited = [i for i in after if i in before and (before[i].section != after[i].section
                                                  or before[i].text_before != after[i].text_before)]
    for label, ids in (("added", [i for i in after if i not in before]), ("removed", [i for i in before if i not in after]),
                       ("edited", edited)):
        if ids:
            parts.append(f"{label} {', '.join(ids[:4])}" + (f" +{len(ids) - 4}" if len(ids) > 4 else ""))
    return "; ".join(parts) if parts else "no change"


def test_the_figures_of_a_followed_chain_are_cores(tmp_path):
    path = tmp_path / "chain.jsonl"
    texts = write_chain(path, 150_000, seed=5, appended=3)
    planner = Planner()
    outcome = planner.run(PlanRequest(path=str(path), reload=True, seq=1))
    views = [View.at(outcome.plan, 0)]
    facts = [outcome.agent]
    for seq, text in enumerate(texts, start=2):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
        outcome = planner.run(PlanRequest(path=str(path), reload=True, seq=seq))
        views.append(View.at(outcome.plan, 0, before=views[-1]))  # as the app draws it: from the view before
        facts.append(outcome.agent)
    for before, view, fact in zip(views, views[1:], facts[1:], strict=False):
        plan = view.plan
        counts = [r.tokens_before for r in plan.sections]
        assert tuple(view.state.sections) == plan.state_at(0).sections and view.state.total == plan.state_at(0).total
        assert view.joins == plan.tokens_before - sum(counts)
        assert view.figures.kinds.kinds == [breakdown.part_kind(r.section) for r in plan.sections]
        for compact_at in (None, fact.compact_at):
            window = plan.budget.max_ctx
            assert view.figures.context_use(window, compact_at, view.total) == \
                breakdown.context_use(plan, window, compact_at, counts, plan.tokens_before)
            for width in (10, 23, 36, 57, 80):
                assert agent_cells(view, width, compact_at) == _cells(view, width, compact_at), width
        changes = describe_changes(before.plan, plan).split("; ")
        assert "; ".join(c for c in changes if not c.startswith(("turn ", "request "))) == _changes(before.plan, plan)


def test_parts_without_tokens_and_moved_sections(tmp_path):
    """A part of no tokens takes no cell of the gauge; a section moved from before the ones two plans share
    to after them (or back) is a reorder."""
    plan = Engine().plan(load_session(copy_sample("facet_layout.yaml", tmp_path)))
    rng = random.Random(7)
    sections = list(plan.sections)
    for _ in range(30):
        shuffled = sections[:]
        i, j = rng.randrange(len(shuffled)), rng.randrange(len(shuffled))
        shuffled.insert(j, shuffled.pop(i))
        if rng.random() < 0.5:
            shuffled.pop(rng.randrange(len(shuffled)))
        moved = replace(plan, sections=tuple(shuffled))
        assert describe_changes(plan, moved) == _changes(plan, moved)
    zeroed = replace(plan, sections=tuple(replace(s, tokens_before=0) if k % 3 == 1 else s
                                          for k, s in enumerate(plan.sections)))
    view = View.at(zeroed, 0)
    for width in (7, 10, 40):
        assert agent_cells(view, width, None) == _cells(view, width, None)
