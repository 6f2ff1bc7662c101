"""A turn of a growing agent's session that fits its room is planned from figures kept as the session
grows (issue 27): what one more request costs the engine does not grow with the chain, and the plan is
the one a full layout makes, byte for byte.

The work is counted through spies set by the tests (section results made, sections asked whether they
are critical: what a pass over every part does), never timed. The full layout the plans are compared with
is the engine's own with the shortcut turned off (``engine.untrimmed`` answering "lay it out in full").
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, load_turns
from tokenbox.core.analysis.breakdown import context_use
from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.model.plan import (
    SectionResult,
    SectionResults,
    allotments_of,
    counts_of,
    sections_of,
    texts_differ,
    texts_of,
)
from tokenbox.core.model.session import Calibration, Section, Session
from tokenbox.core.planning import engine as engine_module
from tokenbox.core.sources.readers.common import inferred_section

from benchmarks.transcripts import Transcript, write_chain


def _full(monkeypatch) -> None:
    monkeypatch.setattr(engine_module, "untrimmed", lambda *args, **kwargs: None)


def _same(plan, full) -> None:
    # what a reader of every part takes without making the results (the screen, at each append): read first,
    # then compared with the results the full layout made
    sections, counts = sections_of(plan.sections), counts_of(plan.sections)
    allotments, texts = allotments_of(plan.sections, counts), texts_of(plan.sections, 0, len(plan.sections))
    assert sections == [r.section for r in full.sections] and counts == [r.tokens_before for r in full.sections]
    assert allotments == [r.allotment for r in full.sections] and texts == [r.text_before for r in full.sections]
    assert plan.to_dict() == full.to_dict()
    assert plan.render() == full.render() and plan.fingerprint == full.fingerprint
    assert plan.state_at(0) == full.state_at(0)
    assert plan.kind_tokens("inferred") == full.kind_tokens("inferred")
    assert plan.warnings == full.warnings and plan.joins == full.joins
    assert context_use(plan, 200_000, 160_000) == context_use(full, 200_000, 160_000)  # its rows, kept as it grew
    assert plan == full  # the results made when read compare as the tuple of them
    assert pickle.loads(pickle.dumps(plan)).to_dict() == full.to_dict()


def test_every_turn_of_a_chain_is_the_plan_a_full_layout_makes(tmp_path, monkeypatch):
    transcript = Transcript(compact=True, seed=5).grow_to(300_000)  # compactions, sub-agents, a pending end
    path = tmp_path / "cc.jsonl"
    transcript.write(str(path))
    turns = load_turns(path)
    assert len(turns) > 20
    engine = Engine()
    options = [{}, {"what_if": -2}, {"budget": 4_000}, {"reserve_out": 0}]
    plans = [engine.plan(turn, **options[i % len(options)]) for i, turn in enumerate(turns)]
    plans.append(engine.plan(turns[-1], tokenizer=ESTIMATE))  # the plain estimate, at scale 1
    with monkeypatch.context() as patch:
        _full(patch)
        full_engine = Engine()
        fulls = [full_engine.plan(turn, **options[i % len(options)]) for i, turn in enumerate(turns)]
        fulls.append(full_engine.plan(turns[-1], tokenizer=ESTIMATE))
    for plan, full in zip(plans, fulls, strict=True):
        _same(plan, full)
    # two plans' texts where their sections are equal (the screen's "what changed" at each append): as the full
    # layouts' results say, whether trimmed (a lens may cut a text) or not (the text is the section's)
    differ: list[bool] = []
    pairs = list(zip(zip(plans[:-1], fulls[:-1], strict=True), zip(plans[1:], fulls[1:], strict=True), strict=True))
    squeezed = engine.plan(turns[-2], budget=2_000)  # the same turn cut to a small budget: its lenses cut texts
    pairs.append(((plans[-3], fulls[-3]), (squeezed, squeezed)))
    for (plan, full), (after, after_full) in pairs:
        olds, news = [r.section for r in full.sections], [r.section for r in after_full.sections]
        end = next((i for i, (a, b) in enumerate(zip(olds, news, strict=False)) if a != b), min(len(olds), len(news)))
        expected = [r.text_before for r in full.sections[:end]] != [r.text_before for r in after_full.sections[:end]]
        assert texts_differ(plan.sections, after.sections, 0, end) == expected
        differ.append(isinstance(plan.sections, SectionResults) and isinstance(after.sections, SectionResults))
    assert any(differ) and not all(differ)  # pairs of untrimmed plans (not read) and pairs with a trimmed one (compared)
    assert any(p.steps for p in plans)  # trimmed turns too (laid out in full)
    assert sum(isinstance(p.sections, SectionResults) for p in plans) > len(plans) // 2  # most are made when read


# what readers put in a section's meta (its row of /context), and a section no reader made
_METAS = [{}, {"category": "history", "part": "text"}, {"category": "tool_result", "part": "result"},
          {"category": "latest", "part": "call"}, {"category": "history", "part": "thinking"},
          {"category": "tool", "tool": "mcp__files__read"}, {"category": "tool", "tool": "Bash"}, {"category": "system"},
          {"category": "inferred", "label": "another hidden part"}, {"category": "reply"}]
_texts = st.one_of(st.none(), st.just(""), st.just("  \n"), st.text(min_size=1, max_size=40))


@settings(max_examples=80, deadline=None)
@given(
    parts=st.lists(st.tuples(_texts, st.one_of(st.none(), st.integers(0, 50)), st.sampled_from([0, 1, 0.5]),
                             st.sampled_from(_METAS)), max_size=30),
    hidden=st.one_of(st.none(), st.integers(0, 200)),
    target=st.one_of(st.none(), st.integers(0, 2_000)),
    scale=st.sampled_from([0.4, 1.0, 1.3, 2.2]),
    budget=st.one_of(st.none(), st.integers(1, 3_000)),
    kept=st.integers(0, 30),
)
def test_a_session_of_text_parts_plans_as_a_full_layout_whatever_came_before(parts, hidden, target, scale, budget, kept):
    sections = [Section(id=f"s{i}", kind="text", text=text, tokens=tokens, shrink=shrink, meta=dict(meta))
                for i, (text, tokens, shrink, meta) in enumerate(parts)]
    if hidden is not None:
        sections.insert(0, inferred_section(hidden, "hidden"))
    calibration = Calibration("test", scale, hidden, (), "")
    session = Session(tuple(sections), tokenizer=ESTIMATE, context_tokens=target, calibration=calibration,
                      source_format="claude-code")
    engine = Engine()
    earlier = Session(tuple(sections[:kept][::-1]), tokenizer=ESTIMATE, calibration=calibration)
    engine.plan(earlier)  # another turn planned before, at the same scale
    plan = engine.plan(session, budget=budget)
    with pytest.MonkeyPatch.context() as patch:
        _full(patch)
        full = Engine().plan(session, budget=budget)
    _same(plan, full)


def _work(monkeypatch) -> list[int]:
    """[section results made, sections asked whether they are critical] from now on: what a pass over
    every part of a turn does (spies on the two classes)."""
    counts = [0, 0]
    make, critical = SectionResult.__init__, Section.critical

    def made(self, *args, **kwargs):
        counts[0] += 1
        make(self, *args, **kwargs)

    def asked(self):
        counts[1] += 1
        return critical.fget(self)

    monkeypatch.setattr(SectionResult, "__init__", made)
    monkeypatch.setattr(Section, "critical", property(asked))
    return counts


def test_one_more_request_costs_the_engine_what_it_added_not_the_chain(tmp_path, monkeypatch):
    costs = {}
    for size in (150_000, 2_000_000):  # the same requests appended to a chain 10 x longer
        path = tmp_path / f"chain-{size}.jsonl"
        appended = write_chain(path, size, seed=9, appended=3)
        engine = Engine()
        turns = load_turns(path)
        engine.plan(turns[-1])
        work = _work(monkeypatch)
        spent = []
        for text in appended:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
            turn = load_turns(path)[-1]  # built before the count: the reader's work is not the engine's
            before = list(work)
            plan = engine.plan(turn)
            assert not plan.steps
            assert plan.kind_tokens("inferred") and plan.sections.made == 1  # the hidden part's result only
            spent.append(sum(work) - sum(before))
        monkeypatch.undo()
        costs[size] = (len(turn.sections), max(spent))
    (small_parts, small), (big_parts, big) = costs.values()
    assert big_parts > 8 * small_parts, costs
    assert big <= small + 30, costs  # the parts of one request, not the chain's
