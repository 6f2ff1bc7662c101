"""What the planner's worker does for one more request of a session that never compacts (issue 27): the
plan's section results are made when read, and the planner reads none of them but the hidden part's.

Counted through the plan the planner hands out (``SectionResults.made``), never timed.
"""

from __future__ import annotations

from tokenbox.core.model.plan import SectionResults
from tokenbox.tui.planner import Planner, PlanRequest

from benchmarks.transcripts import Transcript, main_requests_of


def test_one_more_request_makes_the_hidden_parts_result_only(tmp_path):
    for size in (100_000, 1_000_000):
        transcript = Transcript(compact=False, seed=4).grow_to(size)
        list(main_requests_of(transcript, 1))
        path = tmp_path / f"chain-{size}.jsonl"
        transcript.write(str(path))
        planner = Planner()
        assert planner.run(PlanRequest(path=str(path), seq=0)).plan is not None
        for seq, text in enumerate(main_requests_of(transcript, 2), 1):
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
            outcome = planner.run(PlanRequest(path=str(path), seq=seq))
            plan = outcome.plan
            assert plan is not None and isinstance(plan.sections, SectionResults)
            assert len(plan.sections) > size // 10_000  # the whole chain's parts
            assert plan.sections.made == 1  # the hidden part, for the timeline's point
            assert outcome.timeline[-1].hidden == plan.sections[0].tokens_before
