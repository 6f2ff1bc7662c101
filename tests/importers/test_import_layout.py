"""Layout rules of imported sessions: critical prefix, per-tool sections, history priority by recency,
compressible tool results, the critical latest message, cache marks, ids, and parts that add up."""

from __future__ import annotations

import itertools
import json

import pytest
from tokenbox.core import Engine, load_session, load_turns
from tokenbox.core.analysis.breakdown import (
    cache_breakpoints,
    cached_prefix_tokens,
    category,
    category_totals,
    tool_totals,
    turn_usages,
)
from tokenbox.core.parse.schema import ID_PATTERN
from tokenbox.core.sources.readers.common import CATEGORIES

from tests.importers.support import ALL_FIXTURES, ANTHROPIC, OPENAI, TRANSCRIPT_A, TRANSCRIPTS, count

HISTORY = ("history", "tool_result", "other")


def _all_turns():
    for path in ALL_FIXTURES:
        for session in load_turns(path):
            yield pytest.param(session, id=f"{path.name[:24]}-turn{session.turn}")


@pytest.mark.parametrize("session", _all_turns())
def test_history_priority_rises_with_recency(session):
    history = [s for s in session.sections if category(s) in HISTORY]
    latest = [s for s in session.sections if category(s) == "latest"]
    assert latest and all(s.critical for s in latest)
    if not history:  # a first request: nothing before the latest message
        assert session.turn == 1 or session.meta.get("sidechain")
        return
    messages = [s.meta["message"] for s in history]
    assert messages == sorted(messages)
    for older, newer in itertools.pairwise(history):
        if newer.meta["message"] > older.meta["message"]:
            assert newer.priority > older.priority
        else:
            assert newer.priority == older.priority
    assert all(not s.critical for s in history)
    assert max(s.priority for s in history) < min(s.priority for s in latest)


@pytest.mark.parametrize("session", _all_turns())
def test_ids_are_valid_unique_and_every_section_says_where_it_came_from(session):
    ids = [s.id for s in session.sections]
    assert len(ids) == len(set(ids))
    assert all(ID_PATTERN.fullmatch(i) for i in ids)
    for section in session.sections:
        if section.kind == "inferred":
            assert section.meta["category"] == "inferred" and section.critical
            continue
        assert section.kind == "text"
        assert section.meta["category"] in CATEGORIES
        assert section.meta.get("source", session.source_format) == session.source_format
        assert "role" in section.meta
    assert session.trimming == "progressive"


@pytest.mark.parametrize("session", _all_turns())
def test_a_turns_sections_add_up(session):
    plan = Engine().plan(session)
    texts = [s.text for s in session.sections if s.text]
    assert plan.render() == "\n\n".join(texts)
    assert [r.text_after for r in plan.sections] == [s.text or "" for s in session.sections]
    assert plan.tokens_after == sum(r.tokens_after for r in plan.sections) + plan.joins
    # Heuristic: ceil(chars / 4 * 1.15) of the whole render.
    if plan.tokenizer.name == "heuristic":
        assert plan.tokens_before == (len(plan.render()) * 115 + 399) // 400
        assert abs(plan.joins) <= len(texts)
    totals = category_totals(plan)
    assert sum(t.tokens_before for t in totals) == sum(r.tokens_before for r in plan.sections)
    assert sum(t.sections for t in totals) == len(plan.sections)


def test_openai_sections_count_exactly_with_o200k():
    plan = Engine().plan(load_session(OPENAI))
    assert plan.tokenizer.name == "o200k_base"
    assert plan.budget.max_ctx == 128_000 and plan.budget.reserve_out == 4096
    for result in plan.sections[1:]:
        assert result.tokens_before == count("o200k_base", result.text_before), result.id
    # CONTRACT §7: the headline is the prompt as the API counts it, framing included (the first part);
    # the text parts keep their exact counts, so the plan says its total is no longer a count of the render.
    framing = plan.sections[0]
    assert framing.section.kind == "inferred" and framing.tokens_after > 0
    assert plan.tokens_after == count("o200k_base", plan.render()) + framing.tokens_after
    assert plan.headline_kind == "counted" and not plan.tokenizer.exact


def test_openai_mapping_of_tool_calls_and_tool_messages():
    session = load_session(OPENAI)
    ids = [s.id for s in session.sections]
    assert ids == [
        "inferred",
        "system",
        "tool.read_file",
        "tool.run_tests",
        "tool.search_code",
        "m01.user",
        "m02.call.read_file",
        "m02.call.run_tests",
        "m03.result.read_file",
        "m04.result.run_tests",
        "m05.assistant",
        "m06.user",
        "m06.image_url",
    ]
    by_id = {s.id: s for s in session.sections}
    call = by_id["m02.call.read_file"]
    assert call.meta["tool_use_id"] == "call_Qm3xk2VdE8pL0rTz"
    assert call.text == '[tool_call read_file]\n{"path": "buildtool/parser.py"}'
    result = by_id["m03.result.read_file"]
    assert result.meta["tool_use_id"] == "call_Qm3xk2VdE8pL0rTz"
    assert result.strategy == ("head_lines:40", "head_lines:10") and result.keep == "head"
    tests = by_id["m04.result.run_tests"]
    assert tests.strategy == ("tail_lines:40", "tail_lines:10") and tests.keep == "tail"  # test output keeps its end
    assert by_id["m06.image_url"].text == "[image: https://ci.example.com/buildtool/runs/4812/screenshot.png, detail low]"
    assert session.sensor == "user-input"


def test_tool_results_are_compressed_before_any_turn_is_cut():
    session = load_session(OPENAI)
    plan = Engine().plan(session, budget=4096 + 750)
    assert plan.ok and plan.tokens_after <= plan.budget.available
    ops = [(step.section, step.op) for step in plan.steps]
    lens_steps = [i for i, (_, op) in enumerate(ops) if op == "lens"]
    cut_steps = [i for i, (_, op) in enumerate(ops) if op != "lens"]
    assert lens_steps and cut_steps
    assert max(lens_steps) < min(cut_steps)
    assert {section for section, op in ops if op == "lens"} <= {
        "m03.result.read_file",
        "m04.result.run_tests",
    }
    first_cut = ops[min(cut_steps)][0]
    assert first_cut == "m01.user"  # the oldest history goes first
    for result in plan.sections:
        if result.critical:
            assert result.action == "kept"


def test_anthropic_prefix_tools_system_and_cache_marks():
    session = load_session(ANTHROPIC)
    raw = json.loads(ANTHROPIC.read_text(encoding="utf-8"))
    tools = [s for s in session.sections if category(s) == "tool"]
    assert [s.meta["tool"] for s in tools] == [t["name"] for t in raw["tools"]]
    assert all(s.critical for s in tools)
    assert [s.id for s in session.sections[: len(tools)]] == [s.id for s in tools]  # tools, system, messages
    system = [s for s in session.sections if category(s) == "system"]
    assert [s.id for s in system] == ["tool_use_system_prompt", "system.1.cache", "system.2.cache"]
    assert system[0].tokens == 313 and system[0].text == ""  # Anthropic's published size (Sonnet 4, tool_choice auto)
    system = system[1:]
    assert [s.text for s in system] == [b["text"] for b in raw["system"]]
    assert all(s.critical and s.meta["cache_control"] == {"type": "ephemeral"} for s in system)
    marks = ("system.1.cache", "system.2.cache", "m05.call.Bash.cache", "m06.result.Bash.cache")
    assert cache_breakpoints(session) == marks
    assert session.meta["cache_breakpoints"] == list(marks)
    latest = [s.id for s in session.sections if category(s) == "latest"]
    assert latest == ["m06.framing", "m06.result.Bash.cache"]  # the result's id and structure (≈), then its text
    assert session.sensor == "tool-output"
    plan = Engine().plan(session)
    assert cached_prefix_tokens(plan) == sum(r.tokens_before for r in plan.sections)
    per_tool = {t.key: t.tokens_before for t in tool_totals(plan)}
    assert list(per_tool) == [t["name"] for t in raw["tools"]]
    assert per_tool["Bash"] > per_tool["LS"]


def test_category_totals_follow_prompt_order():
    plan = Engine().plan(load_session(ANTHROPIC))
    keys = [t.key for t in category_totals(plan)]
    assert keys == ["tool", "system", "history", "tool_result", "latest"]
    assert category(plan.sections[0].section) == "tool"


def test_native_sessions_have_no_category(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("tokenbox: 1\ntokenizer: o200k_base\nsections:\n  - id: a\n    text: hello\n", encoding="utf-8")
    session = load_session(path)
    assert category(session.sections[0]) is None
    assert cache_breakpoints(session) == ()
    assert cached_prefix_tokens(Engine().plan(session)) is None


def test_turn_usages_pair_estimates_with_recorded_usage():
    usages = turn_usages(load_turns(TRANSCRIPT_A))
    assert [u.turn for u in usages] == list(range(1, 8))
    assert all(u.tokenizer == "claude-estimate" and not u.exact for u in usages)
    assert usages[0].recorded.context_tokens == 15553
    # CONTRACT §7: the headline of a recorded request is the recorded context; nothing is unaccounted.
    assert all(u.estimated == u.recorded.context_tokens and u.unaccounted == 0 for u in usages)


def test_thinking_and_images_in_a_transcript(tmp_path):
    lines = [
        {"type": "summary", "summary": "Fix the flaky test", "leafUuid": "u4"},
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this screenshot?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 100}},
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "u2",
            "parentUuid": "u1",
            "sessionId": "s",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-opus-4-1-20250805",
                "content": [{"type": "thinking", "thinking": "The user wants a description.", "signature": "sig"}],
                "usage": {"input_tokens": 1500, "output_tokens": 10},
            },
        },
        {
            "type": "assistant",
            "uuid": "u3",
            "parentUuid": "u2",
            "sessionId": "s",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-opus-4-1-20250805",
                "content": [{"type": "text", "text": "A failing CI job."}],
                "usage": {"input_tokens": 1500, "output_tokens": 42},
            },
        },
        {"type": "user", "uuid": "u4", "parentUuid": "u3", "sessionId": "s", "message": {"role": "user", "content": "Why?"}},
        {
            "type": "assistant",
            "uuid": "u5",
            "parentUuid": "u4",
            "sessionId": "s",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-opus-4-1-20250805",
                "content": [{"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}],
                "usage": {"input_tokens": 20, "cache_read_input_tokens": 1510, "output_tokens": 5},
            },
        },
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    turns = load_turns(path)
    assert len(turns) == 2
    assert turns[0].recorded.output_tokens == 42 and turns[0].recorded.context_tokens == 1500
    assert turns[1].recorded.context_tokens == 1530
    assert turns[1].name == "Fix the flaky test"
    by_block = {s.meta.get("block"): s for s in turns[1].sections}
    # an image whose payload does not decode: a typical image's cost, said so (README, "Real agents")
    assert by_block["image"].tokens == 320 and by_block["image"].meta["size_from"] == "typical, not read"
    assert any("its size cannot be read" in w for w in turns[1].warnings)
    # The thinking of the first reply comes before the user's "Why?": the API strips it, so it is no
    # part of the second request's context.
    assert "thinking" not in by_block and turns[1].meta["stripped_thinking"] == 1
    assert by_block["redacted_thinking"].meta["category"] == "reply"
    assert Engine().plan(turns[1]).budget.max_ctx == 200_000


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:24])
def test_tool_results_carry_the_name_of_their_call(path):
    for session in load_turns(path):
        for section in session.sections:
            if section.meta.get("block") == "tool_result":
                assert section.meta.get("tool"), section.id
                assert f".result.{section.meta['tool']}" in section.id
