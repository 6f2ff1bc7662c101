"""The truth at every moment (issue 26, CONTRACT §11): the window resolved honestly, a prediction that is
not an overflow, each moment of a session predicted, every part of a request counted, and the status
line from Claude Code's own figures; with Codex's and Gemini CLI's newer records (issue 30, item 7).

Expected figures are what the providers recorded (the fixtures' README gives each), or CONTRACT §11's
rules; a prediction is held to the issue's targets against the request the file records next.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, load_session, load_threads, load_turns
from tokenbox.core.commands import statusline
from tokenbox.core.model.llms import WindowSource, lookup_model, resolve_window
from tokenbox.core.planning.config import Settings

from tests.importers.support import HERE
from tests.inprocess import run_main

TRUTH = HERE / "fixtures" / "truth"
COMPACTION = TRUTH / "claude-code_2.1.39_autocompact_8463c716.spliced.jsonl"
LARGE_FILE_COMPACTION = TRUTH / "claude-code_2.1.39_autocompact_fa812bfe.spliced.jsonl"
SCREENSHOT = TRUTH / "claude-code_2.1.6_mcp-screenshot_43391f62.prefix20.jsonl"
SUMMARIZED_THINKING = TRUTH / "claude-code_2.1.39_summarized-thinking_8463c716.spliced.jsonl"
STDIN = TRUTH / "statusline-stdin_cc-2.1.7.json"


def plan(session):
    return Engine(settings=Settings()).plan(session)


def cut(path: Path, lines: int, into: Path) -> Path:
    """The first ``lines`` lines of a log, alone in a folder (no sibling session to borrow from)."""
    into.mkdir(parents=True, exist_ok=True)
    target = into / path.name
    target.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]), encoding="utf-8")
    return target


def within(predicted: int, recorded: int, percent: float) -> bool:
    return abs(predicted - recorded) <= recorded * percent / 100


# ---------------------------------------------------------------- 1. the window


@pytest.mark.parametrize(("model", "window", "source"), [
    ("claude-opus-4-7", 1_000_000, "model"),  # Anthropic's model pages, 2026
    ("claude-sonnet-5", 1_000_000, "model"),
    ("claude-opus-4-5-20251101", 200_000, "model"),
    ("claude-opus-6-1", 1_000_000, "family"),  # not listed: the claude-* rule
    ("claude-3-9-haiku", 200_000, "family"),
    ("gpt-5.5", 1_050_000, "model"),
    ("aide-gpt-5", 400_000, "family"),  # the Codex rollout: a gpt-5* name, not 16384
    ("gemini-3.1-pro-preview", 1_048_576, "model"),  # the Gemini chat
    ("gemini-9-ultra", 1_048_576, "family"),
    ("claude-sonnet-4-5[1m]", 1_000_000, "recorded"),
    ("claude_4_5_opus", 200_000, "model"),  # a gateway's alias, as a real Cline task records it
    ("claude_opus_4_6", 1_000_000, "model"),
    ("claude-3-5-sonnet-20241022", 200_000, "model"),
])
def test_the_window_comes_from_the_table_or_the_family(model, window, source):
    resolved = resolve_window(model)
    assert (resolved.tokens, resolved.source) == (window, source)


def test_an_unknown_model_has_an_unknown_window_said_so_and_gpt55_is_exact():
    assert resolve_window("llama-local-7b").tokens is None and "window unknown" in resolve_window("llama-local-7b").note
    assert resolve_window("gpt-5.5", recorded=258_400).source == WindowSource.RECORDED  # a rollout's own figure wins
    assert lookup_model("gpt-5.5").tokenizer == "o200k_base"


def _rollout(model: str, window: int | None, recorded: int) -> str:
    info = {"last_token_usage": {"input_tokens": recorded, "cached_input_tokens": 0, "output_tokens": 5},
            "total_token_usage": {"input_tokens": recorded, "output_tokens": 5}}
    if window:
        info["model_context_window"] = window
    lines = [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/p", "cli_version": "0.150.0"}},
        {"type": "turn_context", "payload": {"cwd": "/p", "model": model}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "hello " * 400}]}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": info}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_recorded_context_is_never_trimmed_to_a_window(tmp_path):
    """A recorded context above the window shows the window is wrong: raised, with a warning; an unknown
    model's window is unknown, not tokenbox's 16384, and nothing is trimmed."""
    small = tmp_path / "small" / "rollout.jsonl"
    small.parent.mkdir()
    small.write_text(_rollout("gpt-5.3-codex", 16_000, 22_279), encoding="utf-8")
    result = plan(load_session(small))
    assert result.ok and result.tokens_after == 22_279 and not result.steps
    assert result.window.source == "raised" and result.window.tokens >= 22_279
    assert any("larger than the window 16000" in w for w in result.warnings)
    unknown = tmp_path / "unknown" / "rollout.jsonl"
    unknown.parent.mkdir()
    unknown.write_text(_rollout("my-local-model", None, 22_279), encoding="utf-8")
    result = plan(load_session(unknown))
    assert result.ok and result.tokens_after == 22_279 and not result.steps and result.window.tokens is None
    assert any("window unknown" in w for w in result.warnings) and result.to_dict()["window"]["percent"] is None
    assert run_main(["check", str(unknown)]).returncode == 0  # nothing to gate against, said on stderr


# ---------------------------------------------------------------- 2. a prediction is not an overflow


def test_a_pending_prediction_above_the_window_is_not_an_overflow_and_the_four_views_agree(tmp_path):
    """The same file through plan, check and the status line (the TUI's gauge: tests/tui/test_truth_gauge.py)."""
    lines = SCREENSHOT.read_text(encoding="utf-8").splitlines(keepends=True)[:18]
    huge = {"type": "user", "uuid": "big", "parentUuid": json.loads(lines[-1])["uuid"], "sessionId": "s",
            "message": {"role": "user", "content": "lorem ipsum dolor sit amet " * 50_000}}
    path = tmp_path / "project" / "s.jsonl"
    path.parent.mkdir()
    path.write_text("".join(lines) + json.dumps(huge) + "\n", encoding="utf-8")
    result = plan(load_session(path))
    assert result.pending and result.ok and result.error is None  # never ContextCriticalOverflow
    assert result.tokens_after > 200_000 and result.window.tokens == 200_000 and not result.steps
    assert any("would exceed the window 200000" in w and "compact first" in w for w in result.warnings)
    data = json.loads(run_main(["plan", str(path), "--json"]).stdout)
    assert data["ok"] and data["window"]["percent"] == result.window_percent > 100
    check = run_main(["check", str(path)])
    assert check.returncode == 1 and b"the agent will compact first" in check.stderr
    line = _status({"transcript_path": str(path), "model": {"id": "claude-opus-4-5"}}, "{pending}{pct}")
    assert line == f"≈{result.window_percent}"


def test_a_new_session_shows_a_prediction_never_an_overflow(tmp_path):
    """The issue's first moment: the first user line written, no reply yet, no sibling session."""
    path = cut(COMPACTION, 6, tmp_path / "new")
    result = plan(load_session(path))
    assert result.pending and result.ok and result.window.tokens == 200_000
    assert within(result.tokens_after, 25_897, 5)  # request 1 then recorded 25 897; Claude Code 2.x's typical part
    assert result.headline_kind.approximate and any("typical hidden part" in w for w in result.warnings)
    assert run_main(["check", str(path)]).returncode == 0
    assert _status({"transcript_path": str(path)}, "{pending}{tokens}/{window}") == "≈25k/200k"


# ---------------------------------------------------------------- 3. every moment predicted


def test_the_first_request_after_a_compaction_is_predicted(tmp_path):
    """Summary, the hidden part, and the files, plan and todos Claude Code attaches again: 42 603 recorded.

    ``session_live.ex`` (21 432 characters, over 5 000 tokens) is attached as a one-line note, not cut to
    5 000 tokens (see the next test); about 4k tokens of this request are content the transcript does not
    show (the file sizes alone cannot place it: a 17 892-character file was left out in fa812bfe's
    sibling 4d5611e5), hence the wider margin."""
    lines = len(COMPACTION.read_text(encoding="utf-8").splitlines())
    pending = plan(load_session(cut(COMPACTION, lines - 1, tmp_path / "pending")))
    assert pending.pending and within(pending.tokens_after, 42_603, 12), pending.tokens_after
    assert "attaches again (4 files, 1 named only (over 5000 tokens), the plan" in pending.calibration.method
    recorded = plan(load_session(COMPACTION))
    assert recorded.tokens_after == 42_603 and recorded.calibration.residual == 42_603 - pending.tokens_after


def test_a_file_over_the_restore_limit_is_named_not_attached_after_a_compaction(tmp_path):
    """Claude Code restores a file whose content is over 5 000 tokens as a one-line note naming it
    (``compact_file_reference``), not as its first 5 000 tokens: fa812bfe's last file before the
    compaction, ``session_live.ex`` (27 134 characters), adds a note, and the request records 32 015
    (counting it as 5 000 tokens predicted 35 889, +12 %)."""
    lines = LARGE_FILE_COMPACTION.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if '"isCompactSummary":true' in line) + 1
    while '"type":"assistant"' not in lines[first]:
        first += 1
    pending = plan(load_session(cut(LARGE_FILE_COMPACTION, first, tmp_path / "pending")))
    assert pending.pending and within(pending.tokens_after, 32_015, 5), pending.tokens_after
    assert "attaches again (0 files, 1 named only (over 5000 tokens)" in pending.calibration.method
    assert plan(load_session(LARGE_FILE_COMPACTION)).tokens_after == 32_015


def test_thinking_the_transcript_holds_only_a_summary_of_counts_as_its_recorded_output(tmp_path):
    """A Claude 4 model returns a summary of its thinking and bills the whole of it; the next request of the
    turn counts the whole. 8463c716's reply at lines 1328–1330 shows 3 311 characters of thinking, 155 of
    text and a 572-character Edit, and records 2 301 output tokens; the request after its tool result records
    120 163 (= 1 + 2 314 + 117 848). Counting the thinking as shown predicted 119 294 (−0.72 %)."""
    lines = len(SUMMARIZED_THINKING.read_text(encoding="utf-8").splitlines())
    pending = plan(load_session(cut(SUMMARIZED_THINKING, lines - 1, tmp_path / "pending")))
    assert pending.pending and within(pending.tokens_after, 120_163, 0.3), pending.tokens_after
    assert "of its reply's thinking the transcript leaves out" in pending.calibration.method
    assert plan(load_session(SUMMARIZED_THINKING)).tokens_after == 120_163


def _with_output(output: int, into: Path) -> int:
    """The pending prediction of SUMMARIZED_THINKING's last request with its reply's recorded output set to ``output``."""
    lines = SUMMARIZED_THINKING.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]
    reply = json.loads(lines[26])  # line 1330 of the original: the reply's last line, which records its output
    reply["message"]["usage"]["output_tokens"] = output
    lines[26] = json.dumps(reply) + "\n"
    into.mkdir(parents=True, exist_ok=True)
    path = into / SUMMARIZED_THINKING.name
    path.write_text("".join(lines), encoding="utf-8")
    return plan(load_session(path)).tokens_after


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 6_000), st.integers(0, 6_000))
@example(1_500, 2_301)  # the reply shows ≈1 377 tokens at the thread's scale: 1 500 is within the estimate's error
@example(1_577, 1_578)  # a gap of 200, then 201
def test_a_reply_s_recorded_output_adds_nothing_or_more_than_the_estimate_s_error(tmp_path_factory, low, high):
    """Whatever a reply with its thinking shown records as output: the prediction never falls as the output
    grows, adds at most the output itself, and adds nothing or more than ``SUMMARY_GAP`` (200) tokens
    (within it, the gap is the estimate's own error)."""
    low, high = sorted((low, high))
    folder = tmp_path_factory.mktemp("output")
    shown = _with_output(0, folder / "none")
    at_low, at_high = _with_output(low, folder / "low"), _with_output(high, folder / "high")
    assert shown <= at_low <= at_high
    for output, predicted in ((low, at_low), (high, at_high)):
        assert predicted - shown == 0 or 200 < predicted - shown <= output


def test_an_image_inside_a_tool_result_is_counted_and_the_next_request_predicted(tmp_path):
    pending = load_session(cut(SCREENSHOT, 19, tmp_path / "pending"))
    image = next(s for s in pending.sections if s.meta.get("block") == "image")
    assert (image.meta["width"], image.meta["height"], image.tokens) == (958, 1003, 1282)  # ceil(958 × 1003 / 750)
    # the redacted payload's head still decodes; otherwise the "958x1003" beside it would say the same
    assert image.meta["size_from"] in ("read from the image", "as the text beside it says") and image.meta["tool_use_id"]
    assert within(plan(pending).tokens_after, 27_967, 1)
    assert plan(load_session(SCREENSHOT)).tokens_after == 27_967


def test_gemini_pending_requests_are_predicted_with_their_hidden_part(tmp_path):
    """Each reply of a real chat, predicted from the chat cut just before it (the issue: −36 % and −48 %)."""
    document = json.loads((TRUTH / "gemini-cli_legacy_293ddfb1.json").read_text(encoding="utf-8"))
    errors = []
    for index, message in enumerate(document["messages"]):
        recorded = (message.get("tokens") or {}).get("input")
        if message.get("type") != "gemini" or not recorded or index < 3:
            continue
        path = tmp_path / f"m{index}" / "chat.json"
        path.parent.mkdir()
        path.write_text(json.dumps({**document, "messages": document["messages"][:index]}), encoding="utf-8")
        session = load_session(path)
        if session.pending:
            errors.append(abs(plan(session).tokens_after - recorded) / recorded)
    assert len(errors) >= 10 and sorted(errors)[len(errors) // 2] <= 0.05 and max(errors) <= 0.15


def test_gemini_all_zero_tokens_are_not_a_recorded_zero():
    turns = load_turns(TRUTH / "gemini-cli_legacy_4eb0784d.first6.json")
    assert [t.recorded.context_tokens if t.recorded else None for t in turns][:3] == [6732, None, 6942]
    zero = turns[1]
    assert zero.context_tokens is not None and zero.context_tokens >= 6732 and not zero.pending
    assert any("all zero" in w for w in zero.warnings)


def test_codex_reasoning_is_sized_from_its_recorded_tokens_and_token_counts_are_deduplicated():
    turns = load_turns(TRUTH / "codex_0.104_gpt-5.3-codex_reasoning_localpush.jsonl")
    assert [t.recorded.context_tokens for t in turns if t.recorded] == [42772, 44218, 48969, 49326, 49647, 63441]
    assert all(plan(t).tokens_after == t.recorded.context_tokens for t in turns if t.recorded)
    sized = [s for t in turns for s in t.sections if s.meta.get("block") == "reasoning" and s.tokens]
    assert sized and all(s.meta["sized_from"] == "recorded reasoning_output_tokens" for s in sized)
    assert all(t.window.tokens == 258_400 and t.window.source == "recorded" for t in turns)


# ---------------------------------------------------------------- 4. every part counted


@pytest.mark.parametrize(("name", "recorded", "percent"), [
    ("anthropic_output-config-schema.request.json", 222, 10),
    ("anthropic_output-config-schema-with-tools.request.json", 957, 10),
    ("responses_thinking_req2-encrypted-reasoning.request.json", 314, 3),  # earlier reasoning left out
    ("responses_reasoning-tools_req2-encrypted-reasoning.request.json", 2087, 15),  # read back in the tool loop
])
def test_request_bodies_count_schemas_framing_and_reasoning(name, recorded, percent):
    result = plan(load_session(TRUTH / name))
    assert within(result.tokens_after, recorded, percent), result.tokens_after
    if "tool-loop" in name or "reasoning-tools" in name:
        assert any("encrypted reasoning" in w for w in result.warnings)


def test_what_a_body_cannot_show_is_warned():
    image = load_session(TRUTH / "anthropic_image-by-url.request.json")
    assert any("its size cannot be read" in w for w in image.warnings)
    assert next(s for s in image.sections if s.meta.get("block") == "image").tokens == 320  # a typical 600 × 400
    search = load_session(TRUTH / "anthropic_web-search-tool_req1.request.json")
    assert any("server tools (web_search_20250305) run inside the request" in w for w in search.warnings)


def test_openai_chat_bodies_without_tools_are_exact(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."},
                                                                {"role": "user", "content": "Hello there"}]}))
    result = plan(load_session(path))
    assert result.headline_kind == "counted" and not result.headline_kind.approximate and not result.warnings
    from tokenbox.tui.view import View  # the TUI marks neither the headline nor the exactly counted parts ≈

    view = View.at(result, 0)
    assert view.headline_approx == "" and view.approx == ""
    # 3 per message + role + content, 3 priming the reply (o200k: "system" 1, "Be brief." 3, "user" 1, "Hello there" 2)
    assert result.tokens_after == (3 + 1 + 3) + (3 + 1 + 2) + 3


# ---------------------------------------------------------------- 5. the status line


def _status(payload: dict, template: str) -> str:
    out = io.StringIO()
    assert statusline.run(["--no-color", "--format", template], io.StringIO(json.dumps(payload)), out, {}) == 0
    return out.getvalue().strip()


def test_the_status_line_prints_claude_codes_current_usage():
    data = json.loads(STDIN.read_text(encoding="utf-8"))
    data["transcript_path"] = str(SCREENSHOT)  # the transcript only splits the figure into parts
    assert _status(data, "{pending}{tokens}/{window} {pct}%") == "90k/200k 45%"  # 10 + 76 444 + 14 391
    data["context_window"]["context_window_size"] = 1_000_000
    assert _status(data, "{tokens}/{window}") == "90k/1M"
    data["transcript_path"] = "/no/such/file.jsonl"  # no transcript: still Claude Code's own figure
    assert _status(data, "{tokens}/{window}") == "90k/1M"
    data["context_window"]["current_usage"] = None  # before the first reply: the transcript's
    data["transcript_path"] = str(SCREENSHOT)
    assert _status(data, "{tokens}") == "27k"


# ---------------------------------------------------------------- issue 30, item 7


def _write_lines(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_gemini_rewinds_replacements_and_sub_agent_chats(tmp_path):
    chats = tmp_path / "chats"
    header = {"sessionId": "abc-123", "projectHash": "h", "startTime": "t", "lastUpdated": "t", "kind": "main"}

    def reply(ident: str, text: str, tokens: int) -> dict:
        return {"id": ident, "type": "gemini", "content": text, "model": "gemini-3-pro-preview",
                "tokens": {"input": tokens, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": tokens + 5}}

    main = _write_lines(chats / "session-2026-01-01T00-00-abc12345.jsonl", [
        header, {"id": "u1", "type": "user", "content": "first question"}, reply("g1", "first answer", 9000),
        {"id": "u2", "type": "user", "content": "taken back"}, reply("g2", "taken back too", 9100),
        {"$rewindTo": "u2"}, {"id": "u3", "type": "user", "content": "second question"},
    ])
    texts = [s.text for s in load_session(main).sections if s.text]
    assert texts == ["first question", "first answer", "second question"]  # the rewound turn is gone
    _write_lines(chats / "abc-123" / "sub-777.jsonl", [
        {**header, "sessionId": "sub-777", "kind": "subagent"}, {"id": "s1", "type": "user", "content": "look"},
        reply("s2", "found it", 5000)])
    threads = load_threads(main)
    assert list(threads) == ["main", "subagent-sub-777"] and threads["subagent-sub-777"][0].recorded.context_tokens == 5000
    replaced = _write_lines(tmp_path / "other" / "chat.jsonl", [
        header, {"id": "u1", "type": "user", "content": "long history"}, reply("g1", "long answer", 9000),
        {"$set": {"messages": [{"id": "c1", "type": "user", "content": "a compressed history"}]}},
        {"id": "u9", "type": "user", "content": "and now"}])
    assert [s.text for s in load_session(replaced).sections if s.text] == ["a compressed history", "and now"]


def test_codex_newer_records_are_read(tmp_path):
    usage = {"input_tokens": 12000, "cached_input_tokens": 0, "output_tokens": 9, "reasoning_output_tokens": 0}
    path = _write_lines(tmp_path / "rollout.jsonl", [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/p", "cli_version": "0.146.0",
                                             "dynamic_tools": {"type": "dynamic", "name": "grp", "tools": [
                                                 {"type": "function", "name": "lookup", "description": "Find a thing",
                                                  "inputSchema": {"type": "object", "properties": {}}}]}}},
        {"type": "world_state", "payload": {"full": True, "state": {"agents_md": {"text": "Use uv."}, "model": "gpt-5.5"}}},
        {"type": "world_state", "payload": {"full": False, "state": {"environments": {"current_date": "2026-08-03"}}}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "hello"}]}},
        {"type": "response_item", "payload": {"type": "ghost_snapshot", "ghost_commit": {"id": "x"}}},
        {"type": "token_usage_record", "payload": {"thread_id": "s", "last_token_usage": usage,
                                                   "total_token_usage": usage, "model_context_window": 258400}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {
            "input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0},
            "total_token_usage": {"input_tokens": 0}}}},  # all zero: not a request
    ])
    turns = load_turns(path)
    assert [t.recorded.context_tokens for t in turns] == [12000] and turns[0].model == "gpt-5.5"
    sections = {s.id: s for s in turns[0].sections}
    assert "tool.lookup" in sections and "Find a thing" in sections["tool.lookup"].text
    world = next(s for s in turns[0].sections if s.meta.get("block") == "world_state")
    assert "Use uv." in world.text and "2026-08-03" in world.text
    assert not any("ghost" in (s.text or "") for s in turns[0].sections)
    assert not any("not a rollout record" in w for w in turns[0].warnings)
