"""Formats chosen by content; unknown blocks and newer transcript fields survive; malformed input ends
in a ``SessionError`` with ``file:line:col`` (and exit 2 with one line, never a traceback, on the CLI)."""

from __future__ import annotations

import json

import pytest
import yaml
from tokenbox.core import Engine, SessionError, load_session, load_turns
from tokenbox.core.analysis.breakdown import category

from tests.importers.support import ANTHROPIC, OPENAI, TRANSCRIPT_A, raw_lines, run_cli


def _write_jsonl(path, lines):
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------- chosen by content


def test_formats_are_chosen_by_content_not_extension(tmp_path):
    transcript = tmp_path / "transcript.log"  # unknown extension: sniffed as JSON lines
    transcript.write_bytes(TRANSCRIPT_A.read_bytes())
    assert len(load_turns(transcript)) == 7
    assert load_session(transcript).source_format == "claude-code"
    as_yaml = tmp_path / "request.yaml"  # the Anthropic request written as YAML
    as_yaml.write_text(
        yaml.safe_dump(json.loads(ANTHROPIC.read_text(encoding="utf-8")), allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    from_yaml, from_json = load_session(as_yaml), load_session(ANTHROPIC)
    assert from_yaml.source_format == "anthropic-messages"
    assert Engine().plan(from_yaml).fingerprint == Engine().plan(from_json).fingerprint
    renamed = tmp_path / "body.txt"
    renamed.write_bytes(OPENAI.read_bytes())
    assert load_session(renamed).source_format == "openai-chat"


def test_native_sessions_are_not_taken_for_foreign_formats():
    from tests.importers.support import REPO

    for path in sorted((REPO / "sample_sessions").glob("*.*")):
        if path.suffix in (".yaml", ".jsonl"):
            assert all(t.source_format == "tokenbox" for t in load_turns(path)), path.name


def test_a_claude_request_without_distinguishing_signs_is_anthropic(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps({"model": "claude-3-5-haiku-20241022", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]})
    )
    session = load_session(path)
    assert session.source_format == "anthropic-messages" and session.tokenizer == "claude-estimate"
    path.write_text(json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}))
    session = load_session(path)
    assert session.source_format == "openai-chat" and session.tokenizer is None
    assert Engine().plan(session).tokenizer.name == "o200k_base"


def test_an_unknown_model_gets_the_named_approximation(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"model": "llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}))
    session = load_session(path)
    assert session.model is None and session.tokenizer == "heuristic"
    assert session.meta["model"] == "llama-3.3-70b"
    assert Engine().plan(session).ok


# ---------------------------------------------------------------- unknown blocks survive


def test_unknown_anthropic_block_types_survive(tmp_path):
    body = json.loads(ANTHROPIC.read_text(encoding="utf-8"))
    body["messages"][1]["content"].append({"type": "hologram", "frames": [1, 2, 3], "cache_control": {"type": "ephemeral"}})
    body["messages"][-1]["content"].append({"type": "future_block", "payload": {"x": "ü"}})
    body["tools"].append({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    session = load_session(path)
    by_block = {s.meta["block"]: s for s in session.sections if "block" in s.meta}
    hologram = by_block["hologram"]
    assert category(hologram) == "other" and hologram.meta["unknown"] is True
    assert hologram.text == '{"type":"hologram","frames":[1,2,3]}'
    assert hologram.id == "m01.hologram.cache" and hologram.meta["cache_breakpoint"] is True
    future = by_block["future_block"]
    assert category(future) == "latest" and future.critical and future.text == '{"type":"future_block","payload":{"x":"ü"}}'
    web = next(s for s in session.sections if s.id == "tool.web_search")
    assert web.text == 'web_search\ntype: "web_search_20250305"\nmax_uses: 5'
    plan = Engine().plan(session)
    assert plan.ok and '"frames":[1,2,3]' in plan.render()


def test_newer_transcript_fields_and_unknown_lines_survive(tmp_path):
    lines = raw_lines(TRANSCRIPT_A)
    lines.insert(0, {"type": "file-history-snapshot", "messageId": "x", "snapshot": {"files": {}}, "isSnapshotUpdate": False})
    lines[3]["newFieldFromAFutureVersion"] = {"nested": True}
    lines[3]["message"]["content"].append({"type": "server_side_magic", "data": "abc"})
    lines.insert(
        5,
        {
            "type": "system",
            "subtype": "informational",
            "content": "hook ran",
            "uuid": "sys-1",
            "parentUuid": lines[4]["uuid"],
            "isSidechain": False,
        },
    )
    lines[6]["parentUuid"] = "sys-1"  # the chain runs through the system line
    path = _write_jsonl(tmp_path / "t.jsonl", lines)
    turns = load_turns(path)
    assert len(turns) == 7
    assert turns[0].meta["other_records"] == {"file-history-snapshot": 1, "system": 1}
    # Line 4 belongs to turn 1's own request, so the block is part of the context from turn 2 on.
    magic = [s for s in turns[1].sections if s.meta.get("block") == "server_side_magic"]
    assert len(magic) == 1 and magic[0].meta["unknown"] is True and '"data":"abc"' in magic[0].text
    # The chain still reaches the first lines through the system line.
    assert {s.meta.get("line") for s in turns[1].sections} >= {2, 3, 4, 5}
    assert Engine().plan(turns[-1]).ok


def test_unknown_openai_parts_survive(tmp_path):
    body = json.loads(OPENAI.read_text(encoding="utf-8"))
    body["messages"][1]["content"] = [{"type": "text", "text": "see"}, {"type": "video_url", "video_url": {"url": "v.mp4"}}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    session = load_session(path)
    video = next(s for s in session.sections if s.meta.get("block") == "video_url")
    assert category(video) == "other" and video.meta["unknown"] is True and "v.mp4" in video.text


# ---------------------------------------------------------------- malformed input

MALFORMED = [
    (
        "messages.json",
        '{"model": "claude-3-5-haiku", "max_tokens": 5, "system": "x",\n "messages": "nope"}',
        2,
        14,
        "messages must be a list",
    ),
    (
        "block.json",
        '{"model": "claude-3-5-haiku", "system": "x", "messages": [\n  {"role": "user", "content": [{"text": "hi"}]}]}',
        2,
        32,
        "no `type`",
    ),
    (
        "text.json",
        '{"system": "x", "messages": [{"role": "user",\n "content": [{"type": "text", "text": 5}]}]}',
        2,
        39,
        "must be a string",
    ),
    ("role.json", '{"model": "gpt-4o", "messages": [\n  {"content": "hi"}]}', 2, 3, "has no `role`"),
    (
        "call.json",
        '{"model": "gpt-4o", "messages": [{"role": "assistant",\n "tool_calls": [{"id": "c", "function": "x"}]}]}',
        2,
        17,
        "has no function",
    ),
    (
        "tool.json",
        '{"model": "gpt-4o", "messages": [], "tools": [\n {"type": "function", "function": {"description": "d"}}]}',
        2,
        2,
        "has no name",
    ),
    ("broken.json", '{"model": "gpt-4o", "messages": [\n  {"role": "user", "content": "hi"]}', 2, 35, "expected `,` or `}`"),
]


@pytest.mark.parametrize(("name", "text", "line", "col", "problem"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_requests_fail_with_a_position(tmp_path, name, text, line, col, problem):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SessionError) as info:
        load_session(path)
    assert (info.value.line, info.value.col) == (line, col)
    assert problem in info.value.problem
    result = run_cli("plan", str(path))
    assert result.returncode == 2
    stderr = result.stderr.decode()
    assert stderr.startswith(f"tokenbox: error: {path}:{line}:{col}: ")
    assert stderr.count("\n") == 1 and "Traceback" not in stderr


def test_malformed_transcript_lines_are_warnings_and_later_turns_still_load(tmp_path):
    # CONTRACT §7 / issue 11: a bad line in the middle of a log is a warning naming it; later turns show.
    lines = TRANSCRIPT_A.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "".join(lines[:3]) + '{"type": "assistant", "uuid": "x", "message": 7}\n' + "".join(lines[3:]), encoding="utf-8"
    )
    turns = load_turns(bad)
    assert len(turns) == 7
    assert any(w.startswith("bad.jsonl:4: ") for w in turns[-1].warnings)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:5]) + '{"type": "user", oops}\n' + "".join(lines[5:]), encoding="utf-8")
    result = run_cli("plan", str(broken), "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert any(w.startswith("broken.jsonl:6: not a JSON object") for w in plan["warnings"])
    assert plan["tokens"]["after"] == 17437  # the last request's recorded context all the same
    content = tmp_path / "content.jsonl"
    content.write_text(
        "".join(lines[:4]) + '{"type": "user", "uuid": "y", "message": {"role": "user", "content": 3}}\n', encoding="utf-8"
    )
    turns = load_turns(content)
    assert any("content.jsonl:5: message.content" in w for w in turns[-1].warnings)


def test_a_transcript_without_a_recorded_request_is_a_pending_one(tmp_path):
    lines = TRANSCRIPT_A.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "early.jsonl"
    path.write_text("".join(lines[:2]), encoding="utf-8")
    session = load_session(path)
    # no request recorded yet and no other session of the project: Claude Code's typical hidden part, said so
    assert session.pending and session.recorded is None and session.context_tokens is not None
    assert session.calibration.hidden == 15_100  # a 1.x main thread (README, "Real agents")
    assert any("typical hidden part" in w for w in session.warnings)
    result = run_cli("render", str(path))
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type": "summary", "summary": "x", "leafUuid": "u"}\n', encoding="utf-8")
    with pytest.raises(SessionError, match="no message yet"):
        load_session(empty)


def test_a_partial_last_transcript_line_is_ignored(tmp_path):
    text = TRANSCRIPT_A.read_text(encoding="utf-8")
    path = tmp_path / "live.jsonl"
    path.write_text(text + '{"type": "assistant", "message": {"id": "msg_next", "content": [{"ty', encoding="utf-8")
    assert len(load_turns(path)) == 7


def test_turn_out_of_range_is_bad_input():
    result = run_cli("plan", str(TRANSCRIPT_A), "--turn", "8")
    assert result.returncode == 2
    assert b"turn 8 is out of range: the file has 7 turn(s)" in result.stderr


def test_input_files_are_never_written(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(TRANSCRIPT_A.read_bytes())
    before = path.stat().st_mtime_ns, path.read_bytes()
    for command in (("plan", "--json"), ("render",), ("check",), ("import",)):
        assert run_cli(command[0], str(path), *command[1:]).returncode == 0
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
