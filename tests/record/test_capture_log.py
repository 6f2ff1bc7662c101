"""The capture log without a proxy: delta encoding, credential redaction, the reader, the flags."""

from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenbox.core.commands.cli import main
from tokenbox.core.record.capture import CaptureWriter, Deltas, safe_body
from tokenbox.core.record.run import is_loopback
from tokenbox.core.sources.loader import load_session, load_turns
from tokenbox.core.sources.readers import capture as reader
from tokenbox.core.sources.readers.capture_format import rebuild

MEMORY = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\n"
    "Codebase and user instructions are shown below.\n\n"
    "Contents of /home/me/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nAlways be terse.\n\n"
    "Contents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\nRun make test.\n"
    "# currentDate\nToday's date is 2026-11-23.\n</system-reminder>\n"
)


def _body(messages: list, **extra) -> dict:
    return {"model": "claude-sonnet-4", "max_tokens": 100, "system": [{"type": "text", "text": "You are Claude Code."}],
            "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}},
                      {"name": "mcp__github__create_issue", "description": "issue", "input_schema": {"type": "object"}}],
            "messages": messages, **extra}


def _usage(inp: int) -> dict:
    return {"input_tokens": inp, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 9}


def _write(path: str, requests: list[tuple[str, dict, dict | None]]) -> None:
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    for api, body, usage in requests:
        route = {"anthropic-messages": "/v1/messages", "openai-chat": "/v1/chat/completions",
                 "openai-responses": "/v1/responses"}[api]
        record_id = writer.request("POST", route, api, {"anthropic-version": "2023-06-01"}, body, len(json.dumps(body)))
        if usage is not None:
            writer.response(record_id, status=200, model=body.get("model"), stream=True, usage=usage, error=None)
    writer.close()


bodies = st.fixed_dictionaries(
    {"messages": st.lists(st.sampled_from([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                           {"role": "user", "content": [{"type": "text", "text": "c"}]}]), max_size=6)},
    optional={"system": st.sampled_from(["s1", "s2"]), "model": st.sampled_from(["m1", "m2"]), "stream": st.booleans()},
)


@given(st.lists(bodies, min_size=1, max_size=12))
def test_every_body_is_rebuilt_exactly(sequence: list[dict]) -> None:
    deltas = Deltas()
    stored: dict[int, dict] = {}
    for number, body in enumerate(sequence, start=1):
        encoded = json.loads(json.dumps(deltas.encode(number, "anthropic-messages", body)))  # as written and read back
        if "body" in encoded:
            stored[number] = encoded["body"]
        else:
            delta = encoded["delta"]
            assert delta["base"] < number
            stored[number] = rebuild(stored[delta["base"]], delta, "messages")
        assert stored[number] == body


def test_responses_input_may_be_a_string_or_a_list() -> None:
    deltas = Deltas()
    sequence = [{"model": "m", "input": "hi"}, {"model": "m", "input": [{"role": "user", "content": "x"}]},
                {"model": "m", "input": "again"}, {"model": "m"}]
    stored: dict[int, dict] = {}
    for number, body in enumerate(sequence, start=1):
        encoded = deltas.encode(number, "openai-responses", body)
        stored[number] = encoded["body"] if "body" in encoded else rebuild(stored[encoded["delta"]["base"]], encoded["delta"], "input")
        assert stored[number] == body


def test_credentials_in_the_body_are_redacted_but_messages_kept() -> None:
    body = {"model": "gpt-4o", "tools": [{"type": "mcp", "server_url": "https://x", "headers": {"Authorization": "Bearer T"},
                                          "authorization": "T2"}],
            "mcp_servers": [{"name": "gh", "authorization_token": "T3"}], "input": [{"role": "user", "content": "my api_key"}]}
    kept = safe_body("openai-responses", body)
    text = json.dumps(kept)
    assert "T2" not in text and "T3" not in text and "Bearer" not in text
    assert kept["tools"][0]["server_url"] == "https://x" and kept["input"] == body["input"]


def test_capture_modes_and_refusing_an_existing_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    from tokenbox.core.model.errors import ConfigError
    from tokenbox.core.record.capture import new_capture_path

    path = new_capture_path()
    _write(path, [("anthropic-messages", _body([{"role": "user", "content": "hi"}]), _usage(10))])
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(ConfigError):
        CaptureWriter(path)


def test_reminders_memory_files_and_mcp_servers_are_parts(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    first = [{"role": "user", "content": [{"type": "text", "text": MEMORY}, {"type": "text", "text": "Fix the bug."}]}]
    second = [*first, {"role": "assistant", "content": "ok"},
              {"role": "user", "content": "again <system-reminder>todo list is empty</system-reminder> please"}]
    _write(path, [("anthropic-messages", _body(first), _usage(1000)), ("anthropic-messages", _body(second), _usage(1200))])
    session = load_session(path)
    assert session.recorded is not None and session.recorded.context_tokens == 1305
    assert session.turn == session.turn_count == 2 and load_turns(path)[0].recorded.context_tokens == 1105
    from tokenbox.core.planning.engine import Engine

    plan = Engine().plan(session)  # CONTRACT §7: the headline is the recorded context, the parts add up to it
    assert plan.tokens_after == 1305 and plan.headline_kind == "recorded"
    assert sum(s.tokens_after for s in plan.sections) + plan.joins == 1305
    inferred = next(s for s in plan.sections if s.section.kind == "inferred")
    assert inferred.tokens_after <= len(plan.sections)  # only rounding is left over: the capture holds it all
    by_id = {s.id: s for s in session.sections}
    memories = [s for s in session.sections if s.meta.get("block") == "memory"]
    assert [m.meta["memory_file"] for m in memories] == ["/home/me/.claude/CLAUDE.md", "/repo/CLAUDE.md"]
    assert "Always be terse." in memories[0].text and "currentDate" not in memories[1].text
    reminders = [s for s in session.sections if s.meta.get("system_reminder")]
    assert any("currentDate" in r.text for r in reminders) and any("todo list is empty" in r.text for r in reminders)
    assert by_id["tool.mcp__github__create_issue"].meta["mcp_server"] == "github"
    assert "mcp_server" not in by_id["tool.Read"].meta
    assert by_id["system"].text == "You are Claude Code."
    latest = [s for s in session.sections if s.meta.get("message") == 2]
    assert [s.text for s in latest] == ["again ", "<system-reminder>todo list is empty</system-reminder>", " please"]
    assert session.meta["source"]["format"] == "tokenbox-capture"
    assert session.meta["capture"]["request"] == 2 and session.meta["capture"]["status"] == 200


def test_pending_and_unreadable_requests(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "c.jsonl")
    chat = {"model": "gpt-4o", "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "x"}]}
    usage = {"prompt_tokens": 500, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 200}}
    _write(path, [("openai-chat", chat, usage), ("anthropic-messages", _body([{"role": "user", "content": "x"}]), None)])
    with open(path, "a", encoding="utf-8") as handle:  # a request whose base is not in the file
        handle.write(json.dumps({"tokenbox_capture": 1, "kind": "request", "id": 9, "api": "anthropic-messages",
                                 "path": "/v1/messages", "delta": {"base": 77, "keep": 0, "append": []}}) + "\n")
    turns = load_turns(path)
    assert len(turns) == 2
    recorded = turns[0].recorded
    assert (recorded.context_tokens, recorded.input_tokens, recorded.cache_read_input_tokens) == (500, 300, 200)
    assert turns[1].recorded is None and turns[1].meta["capture"]["pending"] is True
    assert turns[1].meta["capture"]["skipped"][0]["id"] == 9
    assert main(["plan", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recorded"] is None


def test_a_capture_without_requests_is_one_line_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "c.jsonl")
    _write(path, [])
    assert main(["plan", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no captured request yet" in err


def test_responses_requests_wait_for_their_importer(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    usage = {"input_tokens": 700, "input_tokens_details": {"cached_tokens": 100}, "output_tokens": 5}
    _write(path, [("openai-responses", {"model": "gpt-4o", "instructions": "be brief", "input": "hello"}, usage),
                  ("anthropic-messages", _body([{"role": "user", "content": "x"}]), _usage(10))])
    turns = load_turns(path)
    if reader.responses_importer() is None:
        assert len(turns) == 1 and turns[0].meta["capture"]["skipped"][0]["id"] == 1
    else:
        assert len(turns) == 2 and turns[0].recorded.context_tokens == 700


def test_record_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["record", "--listen", "nowhere"], ["record", "--listen", "127.0.0.1:99999"],
                 ["record", "--upstream", "ftp://example.com"], ["record", "--upstream", "https://x?key=1"], ["record", "--bogus"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("tokenbox: error:") and err.count("\n") == 1
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")


def test_tui_record_flags() -> None:
    from tokenbox.core.commands.cliargs import UsageError
    from tokenbox.tui.cli import parse_args

    options = parse_args(["--record", "--listen", "127.0.0.1:9999", "--upstream", "https://api.openai.com"])
    assert options.record and options.listen == ("127.0.0.1", 9999) and options.upstream == "https://api.openai.com"
    for argv in (["--listen", "127.0.0.1:1"], ["--record", "x.jsonl"], ["--record", "--claude"]):
        with pytest.raises(UsageError):
            parse_args(argv)


def test_record_for_tui_starts_and_stops_a_quiet_proxy(tmp_path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    from tokenbox.core.record.run import record_for_tui

    with record_for_tui(("127.0.0.1", 0), "http://127.0.0.1:9") as path:
        with open(path, encoding="utf-8") as handle:
            first = json.loads(handle.readline())
        assert first["kind"] == "start" and first["listen"].startswith("127.0.0.1:")
    assert capsys.readouterr().out == ""


def test_a_body_too_deep_to_store_is_noted_not_fatal(tmp_path) -> None:
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    path = str(tmp_path / "c.jsonl")
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    writer.request("POST", "/v1/messages", "anthropic-messages", {}, {"model": "m", "messages": [], "metadata": deep}, 20000)
    ok = writer.request("POST", "/v1/messages", "anthropic-messages", {}, _body([{"role": "user", "content": "x"}]), 10)
    writer.close()
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert records[1]["body_error"] and "body" not in records[1] and records[2]["id"] == ok
    assert len(load_turns(path)) == 1


def test_listening_beyond_this_machine_warns(tmp_path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The warning path (the test still binds 127.0.0.1 only; the check is told it is another address)."""
    from tokenbox.core.record import run

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(run, "is_loopback", lambda host: False)
    with run.record_for_tui(("127.0.0.1", 0), "http://127.0.0.1:9"):
        pass
    err = capsys.readouterr().err
    assert "tokenbox: warning: listening on 127.0.0.1, not on this machine only" in err
    assert "the capture is in" in err


def test_side_requests_and_sub_agents_are_threads_of_their_own(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    one = [{"role": "user", "content": "build it"}]
    two = [*one, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and test it"}]
    side = {"model": "claude-haiku-4", "max_tokens": 5, "system": "Name the topic of this conversation.", "messages": one}
    three = [*two, {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    _write(path, [("anthropic-messages", _body(one), _usage(10)), ("anthropic-messages", side, _usage(5)),
                  ("anthropic-messages", _body(two), _usage(20)), ("anthropic-messages", _body(three), _usage(30))])
    turns = load_turns(path)
    assert [t.thread for t in turns] == ["main", "request-2", "main", "main"]
