"""What one more request costs the app must not grow with the session: a followed transcript's earlier
turns are not built again for the timeline, and the section table builds only the rows it draws.

Counted with spies set by the tests (monkeypatch), never with counters in the app.
"""

from __future__ import annotations

from tokenbox.core import Engine
from tokenbox.core.sources import turns
from tokenbox.tui import sections
from tokenbox.tui.planner import Planner, PlanRequest

from benchmarks.transcripts import Transcript, main_requests_of, turns_of
from tests.tui.helpers import make_app, rows, wait_plan


def _built_turns(monkeypatch) -> list[int]:
    """The indexes of transcript turns built from now on (a spy on the lazy sequence's builds)."""
    built: list[int] = []
    original = turns.LazyTurns.__init__

    def spying(self, count, build, infos=None):
        def counted(index):
            built.append(index)
            return build(index)

        original(self, count, counted, infos)

    monkeypatch.setattr(turns.LazyTurns, "__init__", spying)
    return built


def test_one_more_request_builds_no_earlier_turn(tmp_path, monkeypatch):
    transcript = Transcript(compact=True, seed=3).grow_to(400_000)
    path = tmp_path / "cc.jsonl"
    transcript.write(str(path))
    more = list(turns_of(transcript, 3))
    built = _built_turns(monkeypatch)
    planner = Planner()
    seq = 0

    def follow() -> int:
        nonlocal seq
        seq += 1
        outcome = planner.run(PlanRequest(path=str(path), reload=True, seq=seq))
        filled = planner.fill_timeline(outcome) or outcome
        assert filled.plan is not None and all(p.estimated for p in filled.timeline)
        return len(filled.timeline)

    shown = follow()
    assert shown > 30  # a long transcript: the timeline has many turns, each estimated once
    for text in more:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
        del built[:]
        assert follow() >= shown
        # the newest turn, the one before it (no longer the newest, now estimated for good) and maybe a
        # turn the append completed: a handful, however long the transcript is
        assert len(set(built)) <= 4, sorted(set(built))


async def test_the_section_table_builds_the_rows_it_draws(tmp_path, monkeypatch):
    lines = ["tokenbox: 1", "tokenizer: o200k_base", "budget:", "  max_ctx: 100000", "sections:"]
    for i in range(400):
        lines += [f"  - id: s{i:03d}", "    kind: context", f"    text: section number {i} " + "word " * 20]
    path = tmp_path / "many.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    drawn: list[int] = []
    original = sections.row_text

    def spying(view, index, *args, **kwargs):
        drawn.append(index)
        return original(view, index, *args, **kwargs)

    monkeypatch.setattr(sections, "row_text", spying)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await pilot.pause()
        assert 0 < len(set(drawn)) < 80  # the rows on screen (and a few around), not all 400
        assert len(rows(app)) == 400 and rows(app)[-1].lstrip(" ◀▌").startswith("s399")  # every row on demand


def test_a_newer_request_settles_the_newest_turn_without_planning_it_again(tmp_path, monkeypatch):
    transcript = Transcript(compact=False, seed=5).grow_to(150_000)
    list(main_requests_of(transcript, 1))  # the newest request has its reply (not a pending one)
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    (text,) = main_requests_of(transcript, 1)
    planner = Planner()
    first = planner.run(PlanRequest(path=str(path), reload=True, seq=1))
    planner.fill_timeline(first)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    built = _built_turns(monkeypatch)
    after = planner.run(PlanRequest(path=str(path), reload=True, seq=2))
    # the turn that was the newest was planned then: a newer request settled it, nothing is left to fill
    assert len(after.timeline) == len(first.timeline) + 1
    assert after.timeline_complete and planner.fill_timeline(after) is None
    assert len(set(built)) <= 2, sorted(set(built))  # the newest turn (and the one it follows, at most)
    fresh = Planner()
    cold = fresh.run(PlanRequest(path=str(path), reload=True, seq=1))
    cold = fresh.fill_timeline(cold) or cold
    assert after.timeline == cold.timeline  # the same points as planned from scratch


def test_a_change_seen_by_the_watcher_stops_the_fill_before_its_next_turn(tmp_path, monkeypatch):
    transcript = Transcript(compact=False, seed=6).grow_to(150_000)
    list(main_requests_of(transcript, 1))
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    planner = Planner()
    outcome = planner.run(PlanRequest(path=str(path), reload=True, seq=1))
    assert not outcome.timeline_complete
    original = Engine.plan

    def planning(self, *args, **kwargs):  # the watcher sees the file change while a past turn is planned
        planner.yield_fill()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "plan", planning)
    assert planner.fill_timeline(outcome) is None and planner.fill_plans == 1  # that turn, and no other
    monkeypatch.undo()
    again = planner.run(PlanRequest(path=str(path), reload=True, seq=2))
    filled = planner.fill_timeline(again)  # the request's own fill goes on
    assert filled is not None and filled.timeline_complete and planner.fill_plans > 1
