"""The Token Box Model (seed 000) and the trimming policies, rule by rule."""

from __future__ import annotations

import pytest
from tokenbox.core import ContextCriticalOverflow

from tests.engine.helpers import count, engine, independent, lines, session


def plan(sections, budget, **top):
    return engine().plan(session(sections, **top), budget=budget)


def text(sid, body, **attrs):
    return {"id": sid, "text": body, **attrs}


def test_nothing_is_compressed_when_everything_fits():
    p = plan([text("a", lines(3)), text("b", lines(2))], budget=10_000)
    assert p.ok and not p.steps
    assert [s.action for s in p.sections] == ["kept", "kept"]
    assert p.tokens_before == p.tokens_after == count(p.render())


def test_critical_overflow_is_a_typed_error_with_the_numbers():
    p = plan([text("sys", lines(20), shrink=0), text("doc", lines(5))], budget=100)
    assert not p.ok
    assert p.error["kind"] == "ContextCriticalOverflow"
    assert "critical sections need" in p.error["message"] and "100" in p.error["message"]
    assert not p.steps
    assert all(s.tokens_after == s.tokens_before and s.action == "kept" for s in p.sections)
    assert p.fixed_load == count(lines(20))


def test_fixed_load_counts_the_separators_between_critical_sections():
    a, b = "alpha", "beta"
    both = count(a + "\n\n" + b)
    ok = plan([text("a", a, shrink=0), text("b", b, shrink=0)], budget=both)
    over = plan([text("a", a, shrink=0), text("b", b, shrink=0)], budget=both - 1)
    assert ok.ok and not over.ok


def test_available_subtracts_headroom_and_reserve():
    s = session([text("a", "hi")], budget={"max_ctx": 16384, "reserve_out": 1024, "headroom": 0.05})
    p = engine().plan(s)
    assert p.budget.available == 14540


def test_headroom_is_the_decimal_written():
    s = session([text("a", "hi")], budget={"max_ctx": 100, "headroom": 0.1})
    assert engine().plan(s).budget.available == 90


def test_compression_order_is_priority_then_shrink_desc_then_file_order():
    sections = [
        text("p1_s1_first", lines(8, "a"), priority=1, shrink=1),
        text("p1_s3", lines(8, "b"), priority=1, shrink=3),
        text("p0", lines(8, "c"), priority=0),
        text("p1_s1_second", lines(8, "d"), priority=1, shrink=1),
        text("keep", "question?", shrink=0),
    ]
    p = plan(sections, budget=count("question?") + 5)
    order = []
    for step in p.steps:
        if step.section not in order:
            order.append(step.section)
    assert order == ["p0", "p1_s3", "p1_s1_first", "p1_s1_second"]


def test_tokenbox_policy_lenses_then_truncate_then_drop_per_section():
    big = lines(30, "log")
    p = plan([text("logs", big, strategy=["tail_lines:5"], keep="tail"), text("q", "why?", shrink=0)], budget=40)
    ops = [(s.section, s.op) for s in p.steps]
    assert ops[0] == ("logs", "lens")
    assert p.steps[0].detail == "tail_lines:5"
    assert ("logs", "truncate") in ops
    assert p.section("logs").action == "truncated"
    assert p.tokens_after <= p.budget.available


def test_trace_stops_at_the_first_step_that_clears_the_deficit():
    sections = [text(f"s{i}", lines(4, f"s{i}"), priority=i) for i in range(6)] + [text("q", "ok", shrink=0)]
    full = plan(sections, budget=100_000).tokens_after
    p = plan(sections, budget=full - 10)
    assert p.steps[-1].deficit_after <= 0
    assert all(step.deficit_after > 0 for step in p.steps[:-1])
    assert len(p.steps) == 1  # truncating the first section by ~10 tokens is enough


def test_a_lens_that_does_not_shrink_is_no_step():
    p = plan([text("short", "one line only", strategy=["tail_lines:5", "dedupe_lines"]), text("q", lines(3), shrink=0)],
             budget=count(lines(3)) + 2)
    assert all(step.op != "lens" for step in p.steps)


def test_truncation_respects_min_then_drops():
    body = lines(20)
    q = "question"
    sections = [text("doc", body, min=50), text("q", q, shrink=0)]
    # Enough room for the question and about 60 tokens of the doc: truncated, not below min.
    budget = count(q) + 62
    p = plan(sections, budget=budget)
    available = p.budget.available
    assert available == budget  # no headroom, no reserve_out in this session
    deficit = count(body + "\n\n" + q) - available
    doc = p.section("doc")
    assert doc.action == "truncated"
    # CONTRACT §2: truncate to max(min, size - deficit) tokens; when the cut moves the join's tokens (the
    # body ends in a newline, the cut does not), the same step cuts on until the deficit is cleared
    encoding = independent("o200k_base")
    tokens = encoding.encode(body)
    target = max(50, count(body) - deficit)
    while count(encoding.decode(tokens[:target]) + "\n\n" + q) > available:
        target -= 1
    assert target > 50 and doc.tokens_after == target
    assert doc.text_after == encoding.decode(tokens[:target])
    assert p.tokens_after == available or count(encoding.decode(tokens[: target + 1]) + "\n\n" + q) > available
    # with min at exactly that cut, the join-moved cut still reaches it (min is a floor, not a stop short of it)
    at_min = plan([text("doc", body, min=target), text("q", q, shrink=0)], budget=budget).section("doc")
    assert (at_min.action, at_min.tokens_after) == ("truncated", target)
    # Not enough room for min: cut to exactly min, still over, then dropped; never cut below min.
    p = plan(sections, budget=count(q) + 30)
    assert [(s.section, s.op, s.tokens_after) for s in p.steps] == [("doc", "truncate", 50), ("doc", "drop", 0)]
    assert p.section("doc").action == "dropped"
    assert p.section("doc").tokens_after == 0


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_truncation_keeps_the_right_end_and_never_splits_a_character(keep):
    body = "".join(f"{i:04d} 日本語🙂é\n" for i in range(200))
    p = plan([text("doc", body, keep=keep), text("q", "?", shrink=0)], budget=120)
    doc = p.section("doc")
    assert doc.action == "truncated"
    after = doc.text_after
    assert after.encode("utf-8").decode("utf-8") == after
    if keep == "head":
        assert body.startswith(after) and after
        assert doc.cut == body[len(after):]
    else:
        assert body.endswith(after) and after
        assert doc.cut == body[: len(body) - len(after)]
    assert p.tokens_after == count(p.render()) <= p.budget.available


def test_expansion_is_reported_as_allotment_never_invented():
    sections = [text("a", "alpha", grow=1), text("b", "beta", grow=3), text("c", "gamma")]
    p = plan(sections, budget=1000)
    slack = p.budget.available - p.tokens_after
    a, b, c = p.sections
    assert a.allotment == a.tokens_after + slack * 1 // 4
    assert b.allotment == b.tokens_after + slack * 3 // 4
    assert c.allotment == c.tokens_after
    assert p.render() == "alpha\n\nbeta\n\ngamma"


def test_progressive_runs_every_lens_before_any_truncation():
    sections = [
        text("logs", lines(30, "log"), kind="logs"),
        text("docs", lines(30, "doc"), strategy=["head_lines:3"], priority=1),
        text("q", "question", shrink=0),
    ]
    for policy in ("tokenbox", "progressive"):
        p = plan(sections, budget=110, trimming=policy)
        ops = [s.op for s in p.steps]
        if policy == "progressive":
            first_cut = next(i for i, op in enumerate(ops) if op != "lens")
            assert all(op == "lens" for op in ops[:first_cut])
            assert ops[:2] == ["lens", "lens"]
        else:
            # section by section: everything done to logs comes before anything done to docs
            sections_in_order = [s.section for s in p.steps]
            assert sections_in_order == sorted(sections_in_order, key=["logs", "docs"].index)
            assert ops[:2] in (["lens", "truncate"], ["lens", "drop"])
        assert p.tokens_after <= p.budget.available


def test_state_at_replays_the_trace():
    sections = [text(f"s{i}", lines(6, f"s{i}"), priority=i, strategy=["head_lines:2"]) for i in range(4)]
    p = plan([*sections, text("q", "?", shrink=0)], budget=150)
    assert p.steps
    zero = p.state_at(0)
    assert zero.total == p.tokens_before
    assert all(s.action == "kept" for s in zero.sections)
    last = p.state_at(len(p.steps))
    assert last.total == p.tokens_after
    assert [s.text for s in last.sections] == [s.text_after for s in p.sections]
    for k in range(1, len(p.steps) + 1):
        state = p.state_at(k)
        rendered = "\n\n".join(s.text for s in state.sections if s.text)
        assert state.total == count(rendered)


def test_joins_make_the_parts_add_up():
    p = plan([text("a", "x\n"), text("b", "\ny"), text("c", "z")], budget=100)
    assert p.tokens_after == sum(s.tokens_after for s in p.sections) + p.joins
    assert p.tokens_after == count("x\n\n\n\ny\n\nz")


def test_usage_percent_floor_and_null_without_sections():
    p = plan([text("a", lines(10))], budget=1000)
    assert p.usage_percent == (100 * p.tokens_after) // 1000
    empty = engine().plan(session([]))
    assert empty.usage_percent is None and empty.render() == ""


def test_empty_sections_leave_no_trace():
    p = plan([text("a", "one"), text("empty", ""), text("b", "two")], budget=100)
    assert p.render() == "one\n\ntwo"


def test_overflow_is_reported_not_raised_and_the_exception_type_exists():
    assert issubclass(ContextCriticalOverflow, Exception)
    p = plan([text("sys", lines(3), shrink=0)], budget=5)
    assert p.to_dict()["error"]["kind"] == "ContextCriticalOverflow"
