"""``render --format anthropic|openai``: the packed request, whole, against bodies written out here by hand
from CONTRACT §10's rules (thinking left out, calls and results in pairs, same-role neighbours merged, a
note standing in for a dropped opening message, the last four cache marks kept, tools converted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.inprocess import run_main

EPHEMERAL = {"type": "ephemeral"}
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
RESULT = "# Title\nThe project README, quite long."
PATH = "docs/RÉSUMÉ.md"  # tool arguments as the provider sent them: not escaped to ASCII
REQUEST = {
    "model": "claude-sonnet-4-5", "max_tokens": 1000, "temperature": 0.2,
    "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": EPHEMERAL}],
    "tools": [{"name": "read", "description": "Read a file", "input_schema": SCHEMA}],
    "messages": [
        {"role": "user", "content": "Open the README."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                          {"type": "text", "text": "Reading it."},
                                          {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": PATH}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": RESULT}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It has a title."}]},
        {"role": "user", "content": [{"type": "text", "text": "Summarise it.", "cache_control": EPHEMERAL}]},
    ],
}
SETTINGS = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "temperature": 0.2}


def _text(text: str, **extra) -> dict:
    return {"type": "text", "text": text, **extra}


def _pack(tmp_path: Path, request: dict, fmt: str, *args: str) -> dict:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    result = run_main(["render", str(path), "--format", fmt, *args])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_untrimmed_anthropic_request_packs_as_sent_without_thinking(tmp_path):
    assert _pack(tmp_path, REQUEST, "anthropic") == {
        **SETTINGS,
        "system": [_text("You are a coding agent.", cache_control=EPHEMERAL)],
        "tools": [{"name": "read", "description": "Read a file", "input_schema": SCHEMA}],
        "messages": [
            {"role": "user", "content": [_text("Open the README.")]},
            {"role": "assistant", "content": [_text("Reading it."),
                                              {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": PATH}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": RESULT}]},
            {"role": "assistant", "content": [_text("It has a title.")]},
            {"role": "user", "content": [_text("Summarise it.", cache_control=EPHEMERAL)]},
        ],
    }


def test_an_anthropic_request_packs_as_openai_chat(tmp_path):
    assert _pack(tmp_path, REQUEST, "openai") == {
        **SETTINGS,
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Open the README."},
            {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path": "docs/RÉSUMÉ.md"}'}}]},
            {"role": "tool", "tool_call_id": "t1", "content": RESULT},
            {"role": "assistant", "content": "It has a title."},
            {"role": "user", "content": "Summarise it."},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": SCHEMA}}],
    }


def test_dropping_the_opening_turns_drops_the_orphaned_result_and_a_note_opens(tmp_path):
    """At this budget the layout drops the first user message, the assistant's text and its tool call
    (lowest priorities first); the call's result then has no call, so it goes too, and the request would
    open with the assistant: a one-line user note stands in."""
    plan = run_main(["plan", str(_write(tmp_path)), "--budget", "1552", "--json"])
    actions = {s["id"]: s["action"] for s in json.loads(plan.stdout)["sections"]}
    assert [actions[k] for k in ("m00.user", "m01.assistant", "m01.call.read", "m02.result.read", "m03.assistant")] == [
        "dropped", "dropped", "dropped", "kept", "kept"]
    note = _text("[earlier conversation trimmed]")
    assert _pack(tmp_path, REQUEST, "anthropic", "--budget", "1552")["messages"] == [
        {"role": "user", "content": [note]},
        {"role": "assistant", "content": [_text("It has a title.")]},
        {"role": "user", "content": [_text("Summarise it.", cache_control=EPHEMERAL)]},
    ]
    assert _pack(tmp_path, REQUEST, "openai", "--budget", "1552")["messages"] == [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "[earlier conversation trimmed]"},
        {"role": "assistant", "content": "It has a title."},
        {"role": "user", "content": "Summarise it."},
    ]


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST), encoding="utf-8")
    return path


def test_only_the_last_four_cache_marks_stay(tmp_path):
    request = {
        "model": "claude-sonnet-4-5", "max_tokens": 100,
        "system": [_text("one", cache_control=EPHEMERAL), _text("two", cache_control=EPHEMERAL)],
        "messages": [
            {"role": "user", "content": [_text("three", cache_control=EPHEMERAL), _text("four", cache_control=EPHEMERAL)]},
            {"role": "assistant", "content": [_text("five", cache_control=EPHEMERAL)]},
            {"role": "user", "content": [_text("six", cache_control=EPHEMERAL), _text("seven")]},
        ],
    }
    body = _pack(tmp_path, request, "anthropic")
    assert body["system"] == [_text("one"), _text("two")]  # the two earliest marks go
    assert body["messages"] == [
        {"role": "user", "content": [_text("three", cache_control=EPHEMERAL), _text("four", cache_control=EPHEMERAL)]},
        {"role": "assistant", "content": [_text("five", cache_control=EPHEMERAL)]},
        {"role": "user", "content": [_text("six", cache_control=EPHEMERAL), _text("seven")]},
    ]


def test_an_openai_request_packs_as_anthropic_with_its_tools_converted(tmp_path):
    request = {
        "model": "gpt-4o", "max_tokens": 300,
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": SCHEMA}}],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Open it."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
            {"role": "user", "content": "And?"},
        ],
    }
    body = _pack(tmp_path, request, "anthropic")
    assert body["tools"] == [{"name": "read", "description": "Read a file", "input_schema": SCHEMA}]
    assert body["system"] == [_text("Be brief.")]
    assert body["messages"] == [
        {"role": "user", "content": [_text("Open it.")]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "alpha"}, _text("And?")]},
    ]
    assert (body["model"], body["max_tokens"]) == ("gpt-4o", 300)


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_a_tokenbox_session_packs_as_its_critical_system_and_one_user_message(tmp_path, fmt):
    session = {"tokenbox": 1, "tokenizer": "o200k_base", "model": "gpt-4o", "budget": {"max_ctx": 4000, "reserve_out": 321},
               "sections": [{"id": "rules", "text": "Be exact.", "shrink": 0}, {"id": "doc", "text": "Some notes."},
                            {"id": "more", "text": "More notes."}, {"id": "ask", "kind": "user", "text": "Go."}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    body = json.loads(run_main(["render", str(path), "--format", fmt]).stdout)
    if fmt == "anthropic":
        assert body == {"model": "gpt-4o", "system": "Be exact.", "max_tokens": 321,
                        "messages": [{"role": "user", "content": "Some notes.\n\nMore notes.\n\nGo."}]}
    else:
        assert body == {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be exact."},
                                                        {"role": "user", "content": "Some notes.\n\nMore notes.\n\nGo."}]}


def test_an_untrimmed_openai_request_packs_as_openai_unchanged(tmp_path):
    request = {
        "model": "gpt-4o", "max_tokens": 300,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Open it."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": json.dumps({"path": "a.txt"})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
            {"role": "assistant", "content": "It says alpha."},
            {"role": "user", "content": "And?"},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": SCHEMA}}],
    }
    assert _pack(tmp_path, request, "openai") == request


def test_a_failed_tool_result_stays_marked_as_an_error(tmp_path):
    request = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": [
        {"role": "user", "content": "Run it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t9", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "exit 1", "is_error": True},
                                     _text("Why?")]},
    ]}
    assert _pack(tmp_path, request, "anthropic")["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t9", "content": "exit 1", "is_error": True}, _text("Why?")]}


def test_a_responses_request_packs_as_anthropic_with_its_flat_tools_converted(tmp_path):
    request = {"model": "gpt-4o", "instructions": "Be brief.", "input": "Open it.",
               "tools": [{"type": "function", "name": "read", "description": "Read a file", "parameters": SCHEMA}]}
    body = _pack(tmp_path, request, "anthropic")
    assert body["tools"] == [{"name": "read", "description": "Read a file", "input_schema": SCHEMA}]
    assert body["system"] == [_text("Be brief.")] and body["messages"] == [{"role": "user", "content": [_text("Open it.")]}]
    chat = _pack(tmp_path, request, "openai")  # Chat Completions nests a function tool under "function"
    assert chat["tools"] == [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": SCHEMA}}]
    assert chat["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Open it."}]


def test_a_transcript_packs_with_its_model(tmp_path):
    base = {"isSidechain": False, "sessionId": "s1", "version": "2.1.0"}
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, **base, "message": {"role": "user", "content": "hello"}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", **base,
              "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [_text("hi")],
                          "usage": {"input_tokens": 3, "output_tokens": 1}}},
             {"type": "user", "uuid": "u2", "parentUuid": "a1", **base, "message": {"role": "user", "content": "more"}}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    body = json.loads(run_main(["render", str(path), "--format", "anthropic"]).stdout)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["messages"] == [{"role": "user", "content": [_text("hello")]}, {"role": "assistant", "content": [_text("hi")]},
                                {"role": "user", "content": [_text("more")]}]


def test_a_tokenbox_session_without_reserve_out_asks_for_1024_tokens(tmp_path):
    session = {"tokenbox": 1, "tokenizer": "o200k_base", "sections": [{"id": "ask", "kind": "user", "text": "Go."}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    assert json.loads(run_main(["render", str(path), "--format", "anthropic"]).stdout) == {
        "max_tokens": 1024, "messages": [{"role": "user", "content": "Go."}]}
