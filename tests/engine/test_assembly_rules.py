"""passepartout token economics (seed 004) and floop behaviour tiers (seed 003), rule by rule."""

from __future__ import annotations

import pytest
from tokenbox.core.model.session import Behavior
from tokenbox.core.planning import behaviors
from tokenbox.core.planning.assembly import context_text, prefix_text

from tests.engine.helpers import count, engine, lines, session, turns

PREFIX = {"id": "prefix", "kind": "prefix", "assistant_name": "Bot", "identity": "\n### Mode: concise", "feedback": "", "tools": "run(cmd)"}
CONTEXT = {"id": "ctx", "kind": "context", "foveal_focus": "task-1", "scope": "repo", "memory": ["a", "b"]}
USER = {"id": "user", "kind": "user", "text": "go"}


def test_prefix_text_layout():
    s = session([PREFIX])
    assert prefix_text(s.sections[0]) == "IDENTITY: Bot\n### Mode: concise\n\nTOOLS:\nrun(cmd)"


def test_prefix_and_user_are_critical_presets():
    s = session([PREFIX, USER])
    assert all(sec.critical for sec in s.sections)


@pytest.mark.parametrize(
    ("kind", "priority", "strategy", "keep"),
    [("logs", 1, ("tail_lines:5",), "tail"), ("mandates", 2, ("drop",), "head"), ("context", 3, ("summary",), "head"),
     ("behaviors", 4, ("demote",), "head"), ("text", 0, (), "head")],
)
def test_kind_presets(kind, priority, strategy, keep):
    body = {"id": "x", "kind": kind}
    if kind in ("logs", "mandates", "text"):
        body["text"] = "t"
    sec = session([body]).sections[0]
    assert (sec.priority, sec.strategy, sec.keep, sec.shrink) == (priority, strategy, keep, 1)


def test_presets_can_be_overridden():
    sec = session([{"id": "l", "kind": "logs", "text": "x", "priority": 9, "strategy": ["head_lines:2"], "keep": "head"}]).sections[0]
    assert (sec.priority, sec.strategy, sec.keep) == (9, ("head_lines:2",), "head")


def test_prefix_cache_hits_while_inputs_are_unchanged_and_misses_on_change():
    first = {"sections": [PREFIX, USER]}
    changed = {"sections": [dict(PREFIX, tools="run(cmd)\nedit(path)"), USER]}
    e = engine()
    assert e.plan(turns([first])).prefix_cache == "miss"
    assert e.plan(turns([first, first])).prefix_cache == "hit"
    assert e.plan(turns([first, first, changed])).prefix_cache == "miss"
    assert e.plan(turns([first, changed, changed])).prefix_cache == "hit"
    assert e.plan(session([USER])).prefix_cache == "none"


@pytest.mark.parametrize("sensor", ["heartbeat", "delegation"])
def test_context_is_skipped_on_heartbeat_and_delegation(sensor):
    p = engine().plan(turns([{"sections": [CONTEXT, USER], "sensor": sensor}]))
    assert p.context_cache == "skipped"
    assert p.section("ctx").action == "skipped"
    assert p.render() == "go"


def test_context_is_reused_while_focus_scope_and_memory_content_are_unchanged():
    base = {"sections": [CONTEXT, USER]}
    same_count_new_content = {"sections": [dict(CONTEXT, memory=["a", "c"]), USER]}
    e = engine()
    assert e.plan(turns([base])).context_cache == "rebuilt"
    assert e.plan(turns([base, base])).context_cache == "reused"
    assert e.plan(turns([base, {"sensor": "heartbeat", **base}, base])).context_cache == "reused"
    assert e.plan(turns([base, same_count_new_content])).context_cache == "rebuilt"
    assert e.plan(turns([base, {"sections": [dict(CONTEXT, scope="other"), USER]}])).context_cache == "rebuilt"


def test_context_rendering_and_summary_lens():
    sec = session([CONTEXT]).sections[0]
    assert context_text(sec) == "FOCUS: task-1\nSCOPE: repo\nMEMORY:\n- a\n- b"
    p = engine().plan(session([dict(CONTEXT, memory=[f"memory item {i} " * 5 for i in range(20)]), {"id": "q", "kind": "user", "text": "q"}]), budget=40)
    assert p.section("ctx").text_after == "[Context trimmed: 23 items]"


def test_l1_l2_l3_progressive_trimming_like_passepartout():
    sections = [
        PREFIX,
        {"id": "mandates", "kind": "mandates", "text": lines(3, "mandate")},
        dict(CONTEXT, memory=[lines(1, f"m{i}") for i in range(5)]),
        {"id": "logs", "kind": "logs", "text": lines(40, "log")},
        USER,
    ]
    e = engine()
    full = e.plan(session(sections), budget=100_000)
    fixed = count(prefix_text(session([PREFIX]).sections[0]) + "\n\ngo")
    p = e.plan(session(sections, trimming="progressive"), budget=fixed + 40)
    details = [(s.section, s.detail) for s in p.steps]
    assert details[:3] == [("logs", "tail_lines:5"), ("mandates", "drop"), ("ctx", "summary")]
    assert p.section("mandates").action == "dropped"
    assert p.tokens_after <= p.budget.available < full.tokens_after


# ---------------------------------------------------------------- floop tiers


def b(name, activation, kind="directive", **kw):
    return Behavior(name=name, kind=kind, activation=activation, content=kw.get("content", f"{name} content"),
                    summary=kw.get("summary"), tags=tuple(kw.get("tags", ())))


@pytest.mark.parametrize(
    ("activation", "tier"),
    [(1.0, "FULL"), (0.7, "FULL"), (0.69, "SUMMARY"), (0.3, "SUMMARY"), (0.29, "NAME_ONLY"), (0.1, "NAME_ONLY"), (0.09, "OMITTED"), (0, "OMITTED")],
)
def test_tier_thresholds(activation, tier):
    assert behaviors.tier_for(b("x", activation)) == behaviors.Tier[tier]


def test_constraints_never_below_summary():
    assert behaviors.tier_for(b("c", 0.0, "constraint")) == behaviors.Tier.SUMMARY
    assert behaviors.tier_for(b("c", 0.9, "constraint")) == behaviors.Tier.FULL


def test_name_only_format():
    assert behaviors.name_only(b("no-push", 0.2, tags=["git", "safety"])) == "`no-push` [directive] #git #safety"


def test_budget_demotion_lowest_activation_first_and_skips_constraints():
    items = [b("high", 0.9, summary="h"), b("low", 0.75, summary="l"), b("guard", 0.8, "constraint")]
    tiers, demotions = behaviors.fit_budget(items, 0, lambda text: len(text))
    assert demotions == 6  # both directives all the way down, the constraint never
    assert tiers == [behaviors.Tier.OMITTED, behaviors.Tier.OMITTED, behaviors.Tier.FULL]
    tiers, _ = behaviors.fit_budget(items, len(behaviors.render(items, [behaviors.Tier.FULL, behaviors.Tier.SUMMARY, behaviors.Tier.FULL])), len)
    assert tiers[1] == behaviors.Tier.SUMMARY and tiers[0] == behaviors.Tier.FULL


def test_render_groups_constraints_directives_procedures():
    items = [b("p", 0.9, "procedure"), b("d", 0.9), b("c", 0.9, "constraint"), b("gone", 0.01)]
    text = behaviors.render(items, [behaviors.tier_for(i) for i in items])
    assert text == "## Constraints\n- c content\n\n## Directives\n- d content\n\n## Procedures\n- p content"


def test_summary_falls_back_to_truncated_content():
    long = b("x", 0.5, content="word " * 100)
    assert behaviors.summary_of(long).endswith("…") and len(behaviors.summary_of(long)) == behaviors.SUMMARY_CHARS


def test_demote_lens_in_layout_one_step_per_demotion():
    items = [{"name": f"b{i}", "activation": 0.9 - i * 0.05, "content": lines(1, f"b{i}")} for i in range(6)]
    s = session([{"id": "beh", "kind": "behaviors", "items": items}, {"id": "q", "kind": "user", "text": "q"}])
    e = engine()
    full = e.plan(s, budget=100_000)
    p = e.plan(s, budget=full.tokens_after - 30)
    demotes = [st for st in p.steps if st.detail == "demote"]
    assert demotes and all(st.tokens_after < st.tokens_before for st in demotes)
    assert "b5" in demotes[0].note  # lowest activation first
    assert p.section("beh").lenses == ("demote",)


def test_demote_steps_rebuild_their_text_exactly():
    """Long demote traces keep a recipe, not every block: each rebuilt text is the one that was counted."""
    items = [{"name": f"b{i}", "kind": ("directive", "procedure", "constraint")[i % 3], "activation": 0.05 + (i % 19) / 20,
              "content": f"behaviour {i}: " + "do it well " * (i % 4 + 1), "summary": f"short {i}"} for i in range(60)]
    s = session([{"id": "beh", "kind": "behaviors", "items": items}, {"id": "q", "kind": "user", "text": "q"}])
    e = engine()
    full = e.plan(s, budget=100_000)
    p = e.plan(s, budget=full.tokens_after // 3)
    demotes = [st for st in p.steps if st.detail == "demote"]
    assert len(demotes) > 10
    for k, step in enumerate(p.steps, start=1):
        assert count(step.text_after) == step.tokens_after
        state = p.state_at(k)
        assert state.total == count("\n\n".join(x.text for x in state.sections if x.text))
    last = p.state_at(len(p.steps))
    assert [x.text for x in last.sections] == [r.text_after for r in p.sections]
