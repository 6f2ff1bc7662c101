"""Packing a trimmed plan into a provider request body (CONTRACT §10, seed 002's ``pack``)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session
from tokenbox.core.analysis.pack import pack
from tokenbox.core.commands.cli import main as cli

REAL = Path(__file__).resolve().parent / "fixtures" / "real_sessions"
ANTHROPIC = REAL / "anthropic_messages_request_claude-code-1.0.6.json"
TRANSCRIPT = REAL / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
OPENAI = Path(__file__).resolve().parent / "importers" / "fixtures" / "openai_chat_request_gpt-4o_tools.json"


def _check_anthropic(body: dict) -> None:
    messages = body["messages"]
    assert messages and messages[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))
    calls = {b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in messages for b in m["content"] if b["type"] == "tool_result"}
    assert calls == results
    for before, after in itertools.pairwise(messages):  # each call answered in the next message
        asked = {b["id"] for b in before["content"] if b["type"] == "tool_use"}
        answered = {b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"}
        assert asked <= answered
    marks = sum("cache_control" in b for b in body.get("system", [])) + sum(
        "cache_control" in b for m in messages for b in m["content"])
    assert marks <= 4
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming, MessageCreateParamsStreaming
    from pydantic import TypeAdapter

    TypeAdapter(MessageCreateParamsStreaming if body.get("stream") else MessageCreateParamsNonStreaming).validate_python(body)


@pytest.mark.parametrize("budget", [None, 47_000, 46_000])  # untrimmed; truncated; with dropped parts
def test_a_trimmed_anthropic_request_is_a_valid_body(budget):
    plan = Engine().plan(load_session(ANTHROPIC), budget=budget)
    assert plan.ok
    body = pack(plan, "anthropic")
    _check_anthropic(body)
    original = json.loads(ANTHROPIC.read_text(encoding="utf-8"))
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in original["tools"]]
    assert [b["text"] for b in body["system"]] == [b["text"] for b in original["system"]]


def test_a_transcript_packs_as_the_request_it_rebuilt():
    plan = Engine().plan(load_session(TRANSCRIPT), budget=30_000)
    body = pack(plan, "anthropic")
    _check_anthropic(body | {"max_tokens": 1024, "model": "claude-sonnet-4-20250514"})
    text = json.dumps(body, ensure_ascii=False)
    assert "system prompt + tools" not in text  # the inferred part is never sent
    assert body["messages"][-1]["role"] == "user"


def test_openai_packing_keeps_tool_messages_after_their_calls(capsys):
    for path in (OPENAI, ANTHROPIC, TRANSCRIPT):
        assert cli(["render", str(path), "--format", "openai"]) == 0
        body = json.loads(capsys.readouterr().out)
        seen: set[str] = set()
        for message in body["messages"]:
            for call in message.get("tool_calls") or ():
                seen.add(call["id"])
            if message["role"] == "tool":
                assert message["tool_call_id"] in seen
        from openai.types.chat import CompletionCreateParams  # noqa: F401  (the SDK's request type exists)


def test_a_tokenbox_session_packs_as_system_and_user(capsys):
    sample = Path(__file__).resolve().parents[1] / "sample_sessions" / "passepartout_turn.yaml"
    assert cli(["render", str(sample), "--format", "anthropic"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["messages"][0]["role"] == "user" and "system" in body
    assert cli(["render", str(sample)]) == 0  # text stays the default
    assert not capsys.readouterr().out.startswith("{")
