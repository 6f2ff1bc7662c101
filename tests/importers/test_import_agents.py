"""Codex CLI rollouts, Gemini CLI chats and OpenAI Responses bodies, read from real files.

Per turn: the sections are there, nothing the request held is lost (every tool call has its output in
the next turn), the recorded usage is read exactly, the window comes from the file, and counts are
exact ``o200k_base`` for Codex (checked against an independent tiktoken) and ``≈`` for Gemini.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenbox.core import Engine, UnsupportedFormat, load_session, load_turns
from tokenbox.core.commands.cli import main
from tokenbox.core.planning.config import Settings

from tests.importers.support import HERE, independent_encoding

FIXTURES = HERE / "fixtures"
CODEX_EXEC = FIXTURES / "codex_rollout_v0.135_exec.jsonl"
CODEX_START = FIXTURES / "codex_rollout_v0.77_session-start.jsonl"
CODEX_COMPACTED = FIXTURES / "codex_rollout_v0.77_compacted.jsonl"
GEMINI_JSON = FIXTURES / "gemini_chat_session.json"
GEMINI_JSONL = FIXTURES / "gemini_chat_tool-calls.jsonl"
GEMINI_LONG_OUTPUT = FIXTURES / "gemini-cli_M-Gemini_b92a939b_long-shell-output.json"
RESPONSES = FIXTURES / "openai_responses_request_tool-call.json"


def _line(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload})


def _usage(inp: int, cached: int, out: int, reasoning: int = 0) -> dict:
    return {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": reasoning, "total_tokens": inp + out}


def _token_count(last: dict, total: dict) -> str:
    return _line("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                                               "model_context_window": 258400}})


def _message(role: str, text: str) -> str:
    part = "output_text" if role == "assistant" else "input_text"
    return _line("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]})


@pytest.fixture
def multi_request(tmp_path: Path) -> Path:
    """Three requests in the shapes of the real rollouts: parallel calls, encrypted reasoning, a
    repeated token_count (same totals), then a user message not yet sent (a pending turn)."""
    first, second = _usage(9000, 0, 120, 64), _usage(9400, 8960, 40)
    total2 = _usage(18400, 8960, 160)
    lines = [
        _line("session_meta", {"id": "s-1", "cwd": "/work/proj", "cli_version": "0.80.0",
                               "base_instructions": {"text": "You are Codex, a coding agent."}}),
        _line("turn_context", {"cwd": "/work/proj", "model": "gpt-5-codex"}),
        _message("user", "List the files and show the README."),
        _line("event_msg", {"type": "user_message", "message": "List the files and show the README."}),
        _line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Listing files**"}],
                                "content": None, "encrypted_content": "gAAAAAB" + "x" * 300}),
        _line("response_item", {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
                                "call_id": "call_a"}),
        _line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch",
                                "call_id": "call_b"}),
        _token_count(first, first),
        _line("response_item", {"type": "function_call_output", "call_id": "call_a",
                                "output": "{\"output\":\"README.md\\nsrc\\n\",\"metadata\":{\"exit_code\":0}}"}),
        _line("response_item", {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Done!"}),
        _message("assistant", "There is a README.md and a src folder."),
        _token_count(second, total2),
        _token_count(second, total2),  # Codex repeats the event when rate limits change
        _message("user", "Thanks, now run the tests."),
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-s-1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _visible(session):
    """The sections the file holds (not the ``inferred`` part the engine sizes from the recorded total)."""
    return [s for s in session.sections if s.kind != "inferred"]


def _ids(session, key: str) -> set[str]:
    return {s.meta[key] for s in session.sections if isinstance(s.meta.get(key), str)}


def _calls_answered_in_next_turn(turns) -> None:
    """Every tool call of a turn's context has its output there or in the next turn's context."""
    for index, turn in enumerate(turns[:-1]):
        calls = {s.meta["tool_use_id"] for s in turn.sections
                 if s.meta.get("tool_use_id") and "call" in s.meta["block"].lower() and "output" not in s.meta["block"]
                 and s.kind != "inferred"}
        following = turns[index + 1]
        outputs = {s.meta["tool_use_id"] for s in following.sections
                   if s.meta.get("tool_use_id") and s.meta.get("category") in ("tool_result", "latest")
                   and ("output" in s.meta["block"] or "Response" in s.meta["block"])}
        assert calls <= outputs, (index, calls - outputs)


# ---------------------------------------------------------------- Codex


def test_codex_real_exec_rollout_one_request_with_its_recorded_context():
    turns = load_turns(CODEX_EXEC)
    assert len(turns) == 1
    turn = turns[0]
    assert turn.recorded.context_tokens == 22539
    assert turn.recorded.cache_read_input_tokens == 20864
    assert turn.recorded.output_tokens == 10
    assert turn.budget.max_ctx == 258400
    assert turn.meta["thread"] == "main" and turn.meta["pending"] is False
    assert turn.sections[0].kind == "inferred" and turn.context_tokens == 22539
    texts = [s.text for s in _visible(turn)]
    assert texts[0] == "[REDACTED_BASE_INSTRUCTIONS]"  # base_instructions: the system prompt
    assert "[REDACTED_DEVELOPER_CONTEXT]" in texts and "[REDACTED_PROMPT]" in texts
    assert "[REDACTED_ASSISTANT_TEXT]" not in texts  # the reply is the request's output, not its context
    plan = Engine(settings=Settings()).plan(turn)
    assert plan.tokenizer.name == "o200k_base"
    assert plan.tokens_after == 22539  # the headline is the recorded context; the parts add up to it
    assert sum(r.tokens_after for r in plan.sections) + plan.joins == 22539


def test_codex_counts_are_exact_o200k(multi_request):
    session = load_session(multi_request, turn=2)
    plan = Engine(settings=Settings()).plan(session)
    encoding = independent_encoding("o200k_base")
    assert plan.tokens_after == 9400
    for result, section in zip(plan.sections, session.sections, strict=True):
        if section.kind != "inferred" and section.tokens is None:  # encrypted reasoning has its recorded size
            assert result.tokens_after == len(encoding.encode(section.text, disallowed_special=()))


def test_codex_session_start_is_a_pending_turn_without_duplicated_instructions():
    turns = load_turns(CODEX_START)
    assert len(turns) == 1
    turn = turns[0]
    assert turn.meta["pending"] is True and turn.recorded is None
    # session_meta.instructions is the AGENTS.md text the first user message already carries: once only.
    agents = [s for s in turn.sections if "AGENTS.md instructions" in (s.text or "")]
    assert len(agents) == 1 and not any(s.meta.get("category") == "system" for s in turn.sections)
    # no window in the file yet: the model table's (CONTRACT §11), said to come from there
    assert turn.model == "gpt-5.2-codex" and turn.budget.max_ctx == 400_000 and turn.window.source == "model"
    plan = Engine(settings=Settings()).plan(turn)
    assert plan.budget.max_ctx == 400_000 and plan.tokenizer.exact


def test_codex_multi_request_turns_context_and_recorded_usage(multi_request):
    turns = load_turns(multi_request)
    assert len(turns) == 3  # the repeated token_count is not a request
    first, second, pending = turns
    assert [t.recorded.context_tokens if t.recorded else None for t in turns] == [9000, 9400, None]
    assert second.recorded.cache_read_input_tokens == 8960 and second.recorded.output_tokens == 40
    assert [t.meta["pending"] for t in turns] == [False, False, True]
    assert all(t.budget.max_ctx == 258400 and t.meta["thread"] == "main" for t in turns)
    # Request 1 held the user message only: its own reasoning and calls are its output.
    assert [s.text for s in _visible(first)] == ["You are Codex, a coding agent.", "List the files and show the README."]
    # The pending turn is predicted: the last recorded context plus the exact count of what came since, less
    # request 1's reasoning (64 recorded): read back inside its tool loop (request 2), dropped at the new user message.
    added = len(independent_encoding("o200k_base").encode("There is a README.md and a src folder.\n\nThanks, now run the tests."))
    assert [t.context_tokens for t in turns] == [9000, 9400, 9400 + added - 64] and pending.pending and not first.pending
    assert any(w.startswith("pending: predicted as the last recorded context (9400)") and "64 of reasoning left" in w
               for w in pending.warnings)
    assert Engine(settings=Settings()).plan(pending).tokens_after == 9400 + added - 64
    assert not any(s.meta.get("block") == "reasoning" for s in pending.sections if s.meta["category"] != "reply")
    # Request 2 held both parallel calls and both outputs, the outputs critical (the latest input).
    assert _ids(second, "tool_use_id") == {"call_a", "call_b"}
    latest = [s for s in second.sections if s.meta["category"] == "latest"]
    assert {s.meta["tool_use_id"] for s in latest} == {"call_a", "call_b"} and all(s.critical for s in latest)
    assert {s.meta.get("tool") for s in latest} == {"shell", "apply_patch"}
    reasoning = next(s for s in second.sections if s.meta.get("block") == "reasoning")
    assert reasoning.tokens == 64 and reasoning.meta["sized_from"] == "recorded reasoning_output_tokens"
    assert reasoning.meta["encrypted_chars"] == 307 and "approximate" not in reasoning.meta
    # The pending turn: the reply of request 2 and the new user message.
    assert pending.sections[-1].text == "Thanks, now run the tests." and pending.sections[-1].critical
    assert "There is a README.md and a src folder." in [s.text for s in pending.sections]
    _calls_answered_in_next_turn(turns)


def test_codex_compaction_keeps_the_summary_and_warns():
    turns = load_turns(CODEX_COMPACTED)
    assert len(turns) == 1
    turn = turns[0]
    assert turn.recorded.context_tokens == 2000 and turn.budget.max_ctx == 128000
    summary = _visible(turn)[0]
    assert summary.meta["block"] == "compaction_summary"
    assert "Add authentication middleware" in summary.text
    assert any("compacted" in w for w in turn.warnings)
    assert any("compacted" in w and "line 13" in w for w in turn.meta["warnings"])
    assert _ids(turn, "tool_use_id") == {"call_compact_002"}
    assert "Authentication middleware is now in place." not in [s.text for s in turn.sections]


def test_codex_unplaceable_lines_are_warnings_not_errors(multi_request):
    text = multi_request.read_text(encoding="utf-8")
    lines = text.splitlines()
    lines.insert(3, json.dumps({"timestamp": "t", "type": "future_record", "payload": {}}))
    multi_request.write_text("\n".join(lines) + "\n", encoding="utf-8")
    turns = load_turns(multi_request)
    assert len(turns) == 3
    assert any(w.startswith("line 4: not a rollout record") for w in turns[-1].meta["warnings"])


def test_codex_plan_through_the_cli_shows_the_recorded_context(capsys):
    assert main(["plan", str(CODEX_EXEC), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["recorded"]["context_tokens"] == 22539
    assert plan["budget"]["max_ctx"] == 258400


# ---------------------------------------------------------------- Gemini


def test_gemini_json_chat_one_reply_recorded():
    turns = load_turns(GEMINI_JSON)
    assert len(turns) == 1
    turn = turns[0]
    assert turn.recorded.context_tokens == 4383 and turn.recorded.output_tokens == 8
    assert [s.text for s in _visible(turn)] == ["[REDACTED_PROMPT]"]
    assert Engine(settings=Settings()).plan(turn).tokens_after == 4383
    assert turn.model == "gemini-2.5-flash" and turn.tokenizer == "heuristic"
    plan = Engine(settings=Settings()).plan(turn)
    assert plan.tokenizer.name == "heuristic" and not plan.tokenizer.exact and plan.budget.max_ctx == 1_048_576


def test_gemini_headline_is_the_recorded_context_when_the_heuristic_counts_more():
    """A real chat whose third request carries a ≈109 000-character shell output: ``ceil(chars / 4 × 1.15)``
    counts its visible parts above what the request recorded (32 463 against 30 404). The headline of every
    request is still its recorded ``tokens.input``, the parts add up to it, and the hidden part the earlier
    requests implied stays (the system prompt and tools do not shrink); a warning says the counts were
    scaled. Before: the hidden part was shown as 0 and the headline was the heuristic's 32 463."""
    raw = json.loads(GEMINI_LONG_OUTPUT.read_text(encoding="utf-8"))
    recorded = [m["tokens"]["input"] for m in raw["messages"] if m.get("tokens")]
    engine = Engine(settings=Settings())
    turns = load_turns(GEMINI_LONG_OUTPUT)
    assert len(turns) == len(recorded) == 8
    hidden = []
    for turn, expected in zip(turns, recorded, strict=True):
        plan = engine.plan(turn)
        assert plan.tokens_after == expected
        assert sum(r.tokens_after for r in plan.sections) + plan.joins == expected
        hidden.append(next(r.tokens_after for r in plan.sections if r.id == "inferred"))
    # the second request's hidden part (what it recorded less its visible parts) is kept by the later ones
    assert all(abs(h - hidden[1]) <= 16 for h in hidden[2:]) and hidden[1] > 8_000
    assert any("scaled" in w for w in turns[2].warnings) and not any("scaled" in w for w in turns[1].warnings)


@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_a_long_gemini_chat_fits_only_the_turn_it_reads(tmp_path, monkeypatch, layout):
    """The real chat's messages written four times over (every recorded request after its long shell output
    needs its parts fitted to what it recorded), as one JSON document and as Gemini CLI's JSON lines (a
    header line, then a message a line): reading the newest turn fits that one turn, not every earlier one,
    and the facts the timeline reads without building a turn are the built turn's."""
    from tokenbox.core.sources.readers import gemini

    raw = json.loads(GEMINI_LONG_OUTPUT.read_text(encoding="utf-8"))
    messages = [dict(m, id=f"{m['id']}-{copy}") for copy in range(4) for m in raw["messages"]]
    path = tmp_path / f"long.{layout}"
    header = {key: value for key, value in raw.items() if key != "messages"}
    if layout == "json":
        path.write_text(json.dumps({**header, "messages": messages}), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(line) + "\n" for line in [header, *messages]), encoding="utf-8")
    fitted = []
    fit = gemini.fitted_to_recorded
    monkeypatch.setattr(gemini, "fitted_to_recorded", lambda *args: fitted.append(args[1]) or fit(*args))

    newest = load_session(path)
    last_recorded = [m["tokens"]["input"] for m in messages if m.get("tokens")][-1]
    assert newest.recorded.context_tokens == last_recorded == Engine().plan(newest).tokens_after
    assert fitted == [last_recorded]  # the one turn read (it was every recorded turn: 32 fits)

    turns = load_turns(path)
    assert len(turns) == 32
    for index in (0, 5, 17, 31):
        facts, turn = turns.info(index), turns[index]
        assert (facts["recorded"], facts["model"], facts["pending"]) == (turn.recorded, turn.model_name, turn.pending)
        assert (turn.turn, turn.turn_count) == (index + 1, 32)


def test_gemini_jsonl_chat_turn_per_reply_with_tool_results():
    turns = load_turns(GEMINI_JSONL)
    assert [t.recorded.context_tokens for t in turns] == [100, 150, 200, 250, 280]
    assert [t.recorded.cache_read_input_tokens for t in turns] == [0, 20, 50, 60, 80]
    assert all(t.meta["thread"] == "main" and t.meta["pending"] is False for t in turns)
    _calls_answered_in_next_turn(turns)
    # Turn 4 (msg-ge7) follows a reply with a tool call: its result is the latest, critical input.
    latest = [s for s in turns[3].sections if s.meta["category"] == "latest"]
    assert [s.meta["tool_use_id"] for s in latest] == ["read_file-001"]
    errors = [s for s in turns[2].sections if s.meta.get("is_error")]
    assert errors and errors[0].text == "Failed to edit, 0 occurrences found for old_string"


def test_gemini_jsonl_rewritten_message_last_copy_wins_and_set_updates(tmp_path):
    lines = GEMINI_JSONL.read_text(encoding="utf-8").splitlines()
    first_reply = json.loads(lines[2])
    first_reply["content"] = "rewritten once the tool finished"
    extra = [json.dumps({"$set": {"lastUpdated": "2025-12-06T15:09:00.000Z"}}), json.dumps(first_reply),
             json.dumps({"id": "u-new", "timestamp": "t", "type": "user", "content": [{"text": "one more thing"}]})]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines + extra) + "\n", encoding="utf-8")
    turns = load_turns(path)
    assert len(turns) == 6 and turns[-1].meta["pending"] is True and turns[-1].recorded is None
    texts = [s.text for s in turns[-1].sections]
    assert "rewritten once the tool finished" in texts and "I'll update the port in the config file." not in texts
    assert texts[-1] == "one more thing"


# ---------------------------------------------------------------- OpenAI Responses


def test_responses_real_body_tool_and_input():
    session = load_session(RESPONSES)
    assert session.source_format == "openai-responses"
    # the message and tool framing first, as the Chat API counts it (the same models, the same rule)
    assert [s.id for s in session.sections] == ["inferred", "tool.get_capital", "m00.user"]
    assert session.sections[2].text == "What is the capital of PotatoLand?" and session.sections[2].critical
    assert session.sections[1].text.endswith("strict: true")
    plan = Engine(settings=Settings()).plan(session)
    assert plan.tokenizer.name == "o200k_base"


def test_responses_items_calls_outputs_reasoning(tmp_path):
    body = {
        "model": "gpt-5", "instructions": "Be brief.", "max_output_tokens": 2000,
        "input": [
            {"role": "developer", "content": "Project rules."},
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"},
                                         {"type": "input_image", "image_url": "https://x/y.png"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" + "z" * 95},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "18C, sunny"},
        ],
        "tools": [{"type": "function", "name": "weather", "description": "Weather by city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
                  {"type": "web_search"}],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    session = load_session(path)
    by_block = {s.meta.get("block", s.meta["category"]): s for s in session.sections}
    assert by_block["instructions"].text == "Be brief." and by_block["instructions"].critical
    assert by_block["input_image"].text == "[image: https://x/y.png]"
    assert by_block["function_call"].text == "[tool_call weather]\n{\"city\":\"Paris\"}"
    assert by_block["function_call_output"].text == "18C, sunny"
    assert by_block["function_call_output"].meta["tool"] == "weather"
    assert by_block["reasoning"].meta["encrypted_chars"] == 100
    assert by_block["web_search_call"].meta["category"] == "other"
    assert {s.meta.get("tool") for s in session.sections if s.meta["category"] == "tool"} == {"weather", "web_search"}
    assert session.budget.reserve_out == 2000


# ---------------------------------------------------------------- refusals


BAD = Path(__file__).resolve().parent.parent / "bad_inputs"


@pytest.mark.parametrize("name", sorted(p.name for p in BAD.glob("foreign_*")))
def test_foreign_formats_refused_in_one_line_exit_2(name, capsys):
    assert main(["plan", str(BAD / name)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"tokenbox: error: {BAD / name}:1:1: this looks like ")
    # the list of what tokenbox reads is never cut by the field limit
    assert "tokenbox reads its own sessions and captures; Claude Code, Codex, Gemini CLI" in lines[0]
    assert lines[0].endswith("Anthropic, OpenAI and Gemini request bodies)")
    with pytest.raises(UnsupportedFormat):
        load_session(BAD / name)


def test_a_tokenbox_session_is_never_taken_for_a_foreign_format(tmp_path):
    """A session whose text starts like an aider history is still a session."""
    path = tmp_path / "s.yaml"
    path.write_text("# aider chat started at 2025-01-01\ntokenbox: 1\nsections:\n  - {id: a, text: hi}\n")
    assert [s.id for s in load_session(path).sections] == ["a"]


def test_codex_rollout_is_no_longer_refused_as_a_broken_session(capsys):
    assert main(["plan", str(CODEX_START)]) == 0
    assert "unknown key" not in capsys.readouterr().err
