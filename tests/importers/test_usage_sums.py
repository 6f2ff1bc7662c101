"""The recorded context of one request, per agent, from figures chosen here (CONTRACT §7's headline).

Anthropic (Claude Code, captures): input + cache creation + cache read. OpenAI and Codex: input tokens,
the cached ones already inside them. Gemini: ``tokens.input``. The numbers are distinct primes, so a
sum that drops or doubles a term, or takes the wrong one, cannot land on the expected figure; a
malformed number makes the request unrecorded rather than wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session, load_turns
from tokenbox.core.record.usage import context_tokens

INPUT, WRITE, READ, OUTPUT = 1009, 20011, 300007, 53


def _claude(path: Path, usage: dict) -> Path:
    base = {"isSidechain": False, "sessionId": "s1", "version": "2.1.0"}
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, **base, "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", **base,
         "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "hi"}],
                     "usage": usage}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("usage", "context"),
    [
        ({"input_tokens": INPUT, "cache_creation_input_tokens": WRITE, "cache_read_input_tokens": READ, "output_tokens": OUTPUT},
         INPUT + WRITE + READ),
        ({"input_tokens": INPUT, "cache_read_input_tokens": READ, "output_tokens": OUTPUT}, INPUT + READ),  # no cache write
        ({"input_tokens": INPUT, "cache_creation_input_tokens": None, "output_tokens": OUTPUT}, INPUT),  # null is none
        ({"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": READ}, READ),
    ],
)
def test_claude_code_context_is_input_plus_both_cache_parts(tmp_path, usage, context):
    session = load_session(_claude(tmp_path / "t.jsonl", usage))
    recorded = session.recorded
    assert recorded is not None
    assert recorded.context_tokens == context
    plan = Engine().plan(session)  # the headline is the recorded context; the inferred part makes the sum
    assert plan.tokens_after == context == sum(s.tokens_after for s in plan.sections) + plan.joins
    window = 1_000_000 if context > 200_000 else 200_000  # a request past 200k ran with the 1M window
    assert plan.budget.available == window and plan.ok and not plan.steps
    inferred = next(s for s in plan.sections if s.section.kind == "inferred")
    assert inferred.section.critical and plan.fixed_load >= inferred.tokens_after  # the critical load counts it
    assert (recorded.input_tokens, recorded.cache_creation_input_tokens, recorded.cache_read_input_tokens) == (
        usage["input_tokens"], usage.get("cache_creation_input_tokens") or 0, usage.get("cache_read_input_tokens") or 0)


@pytest.mark.parametrize("bad", [{"cache_read_input_tokens": -1}, {"cache_read_input_tokens": True}, {"input_tokens": "5"},
                                 {"cache_creation_input_tokens": 1.5}, {"input_tokens": None}])
def test_a_malformed_claude_code_usage_is_not_a_recorded_context(tmp_path, bad):
    usage = {"input_tokens": INPUT, "cache_creation_input_tokens": WRITE, "cache_read_input_tokens": READ, **bad}
    if bad.get("input_tokens", 0) is None:
        del usage["input_tokens"]
    session = load_session(_claude(tmp_path / "t.jsonl", usage))
    assert session.recorded is None


def _codex(path: Path, last: dict) -> Path:
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload})

    lines = [
        line("session_meta", {"id": "s-1", "cwd": "/p", "cli_version": "0.80.0", "base_instructions": {"text": "You are Codex."}}),
        line("turn_context", {"cwd": "/p", "model": "gpt-5-codex"}),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
        line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}),
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last,
                                                           "model_context_window": 400000}}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_codex_context_is_input_tokens_with_the_cached_ones_inside(tmp_path):
    last = {"input_tokens": READ, "cached_input_tokens": WRITE, "output_tokens": OUTPUT, "reasoning_output_tokens": 0,
            "total_tokens": READ + OUTPUT}
    recorded = load_session(_codex(tmp_path / "rollout-2026-01-01T00-00-00-s-1.jsonl", last)).recorded
    assert recorded is not None
    assert (recorded.context_tokens, recorded.input_tokens, recorded.cache_read_input_tokens, recorded.output_tokens) == (
        READ, READ, WRITE, OUTPUT)
    assert recorded.cache_creation_input_tokens == 0


def test_codex_usage_without_cached_or_output_counts_them_as_zero(tmp_path):
    recorded = load_session(_codex(tmp_path / "rollout-2026-01-01T00-00-00-s-2.jsonl", {"input_tokens": INPUT})).recorded
    assert recorded is not None
    assert (recorded.context_tokens, recorded.cache_read_input_tokens, recorded.output_tokens) == (INPUT, 0, 0)


def _gemini(path: Path, tokens: dict) -> Path:
    doc = {"sessionId": "g-1", "projectHash": "h", "startTime": "2026-06-05T04:59:39.932Z", "lastUpdated": "2026-06-05T04:59:44.839Z",
           "messages": [
               {"id": "m1", "timestamp": "2026-06-05T04:59:42.197Z", "type": "user", "content": [{"text": "hello"}]},
               {"id": "m2", "timestamp": "2026-06-05T04:59:44.839Z", "type": "gemini", "content": "hi", "tokens": tokens,
                "model": "gemini-2.5-flash"},
           ], "kind": "main"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_gemini_context_is_tokens_input(tmp_path):
    tokens = {"input": READ, "output": OUTPUT, "cached": WRITE, "thoughts": 28, "tool": 7, "total": READ + OUTPUT + 28}
    recorded = load_session(_gemini(tmp_path / "session-2026-06-05T04-59-g1.json", tokens)).recorded
    assert recorded is not None
    assert (recorded.context_tokens, recorded.input_tokens, recorded.cache_read_input_tokens, recorded.output_tokens) == (
        READ, READ, WRITE, OUTPUT)
    assert recorded.cache_creation_input_tokens == 0  # Gemini records no cache writes


@pytest.mark.parametrize(("tokens", "expected"), [
    ({"input": INPUT}, (INPUT, 0, 0)),  # output and cached missing: none
    ({"output": OUTPUT, "cached": 0}, None),  # no input: not a recorded request
    ({"input": INPUT, "output": "many"}, None),  # a number that is not one
])
def test_gemini_usage_with_parts_missing(tmp_path, tokens, expected):
    recorded = load_session(_gemini(tmp_path / "session-2026-06-05T04-59-g2.json", tokens)).recorded
    if expected is None:
        assert recorded is None
    else:
        assert (recorded.context_tokens, recorded.cache_read_input_tokens, recorded.output_tokens) == expected


def test_a_gemini_reply_without_tokens_and_a_codex_count_without_info_are_unrecorded(tmp_path):
    doc = json.loads(_gemini(tmp_path / "g.json", {"input": 1}).read_text(encoding="utf-8"))
    del doc["messages"][1]["tokens"]
    path = tmp_path / "session-2026-06-05T04-59-g3.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_session(path).recorded is None
    rollout = _codex(tmp_path / "rollout-2026-01-01T00-00-00-s-3.jsonl", {"input_tokens": INPUT})
    lines = rollout.read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    for info in (None, "not usage", [1, 2]):
        last["payload"]["info"] = info
        rollout.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n", encoding="utf-8")
        assert all(turn.recorded is None for turn in load_turns(rollout)), info
        last["payload"]["info"] = {"total_token_usage": info, "last_token_usage": info, "model_context_window": 400000}
        rollout.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n", encoding="utf-8")
        assert all(turn.recorded is None for turn in load_turns(rollout)), info


def test_claude_code_usage_at_its_largest_accepted_number(tmp_path):
    from tokenbox.core.sources.readers.claude_code import _USAGE_MAX

    at_max = {"input_tokens": _USAGE_MAX, "output_tokens": 1}
    assert load_session(_claude(tmp_path / "max.jsonl", at_max)).recorded.context_tokens == _USAGE_MAX
    past = {"input_tokens": _USAGE_MAX + 1, "output_tokens": 1}
    assert load_session(_claude(tmp_path / "past.jsonl", past)).recorded is None


def test_capture_context_per_api():
    anthropic = {"input_tokens": INPUT, "cache_creation_input_tokens": WRITE, "cache_read_input_tokens": READ, "output_tokens": OUTPUT}
    assert context_tokens("anthropic-messages", anthropic) == INPUT + WRITE + READ
    assert context_tokens("anthropic-messages", {"input_tokens": INPUT, "cache_read_input_tokens": READ}) == INPUT + READ
    assert context_tokens("anthropic-messages", {"cache_read_input_tokens": READ}) is None  # no input: not a usage
    assert context_tokens("openai-chat", {"prompt_tokens": READ, "prompt_tokens_details": {"cached_tokens": WRITE}}) == READ
    assert context_tokens("openai-responses", {"input_tokens": READ, "input_tokens_details": {"cached_tokens": WRITE}}) == READ
    assert context_tokens("openai-chat", {"completion_tokens": 5}) is None
    assert context_tokens("openai-chat", None) is None and context_tokens("anthropic-messages", {}) is None
