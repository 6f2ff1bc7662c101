"""The newer agents' sessions (issue 30): Cline/Roo/Kilo task folders, OpenCode, GitHub Copilot CLI, aider,
Gemini API bodies, claude-trace and context-lens captures, read through the public entry points.

For every recorded request the headline is what the agent recorded — the expected figures are read
here from the files with the standard library (``json``, ``sqlite3``, a regular expression), never
from the reader — and the parts add up to it. Followed storages cost what changed; bad files are
one-line errors. Fixtures and their provenance: ``fixtures/README.md`` (the OpenCode, Copilot and
context-lens ones are constructed around real fragments, and say so).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from tokenbox.core import Engine, Loader, SessionError, load_session, load_threads, load_turns
from tokenbox.core.sources import database

from tests.importers.opencode_store import add, write_db
from tests.importers.support import HERE, count, run_cli

FIXTURES = HERE / "fixtures"
CLINE = FIXTURES / "cline_task_1769053680585_first-6-requests"
OPENCODE_RECORDS = FIXTURES / "opencode_issuepit-901_records.json"
OPENCODE_DB = FIXTURES / "opencode_issuepit-901.db"
OPENCODE_TREE = FIXTURES / "opencode_issuepit-901_storage"
COPILOT_HOME = FIXTURES / "copilot_home"
COPILOT = COPILOT_HOME / "session-state" / "381474ec-066a-4e9b-8a13-14b602e419dd" / "events.jsonl"
AIDER = FIXTURES / "aider-0.86.1_gpt-4o-mini.chat.history.md"
AIDER_COMMANDS = FIXTURES / "aider-0.86.1_commands-only_zen-mcp-server.chat.history.md"
TRACE = FIXTURES / "claude-trace_cc-1.0.6_lines-1-8.jsonl"
LHAR = FIXTURES / "context-lens_constructed_4-entries.lhar"
GEMINI = FIXTURES / "gemini_api"
ENGINE = Engine()


def plan(session):
    return ENGINE.plan(session).to_dict()


def assert_headline_is_recorded(turns, expected: list[int]) -> None:
    """Every turn's plan: ``tokens.after`` is the recorded figure, and the parts add up to it."""
    recorded = [t for t in turns if t.recorded is not None]
    assert [t.recorded.context_tokens for t in recorded] == expected
    for turn in recorded:
        data = plan(turn)
        assert data["ok"] and data["tokens"]["after"] == turn.recorded.context_tokens
        assert sum(s["tokens_after"] for s in data["sections"]) + data["tokens"]["joins"] == data["tokens"]["after"]
        assert data["sections"][0]["kind"] == "inferred" and data["sections"][0]["critical"]


# ---------------------------------------------------------------- Cline


def cline_contexts(folder: Path) -> list[int]:
    """tokensIn + cacheWrites + cacheReads of each api_req_started (Cline's recorded context)."""
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    started = [json.loads(m["text"]) for m in ui if m.get("say") == "api_req_started"]
    return [s["tokensIn"] + s["cacheWrites"] + s["cacheReads"] for s in started]


def test_cline_task_folder_headlines_are_what_each_request_recorded():
    turns = load_turns(CLINE)
    assert len(turns) == 6 and not turns[-1].pending
    assert_headline_is_recorded(turns, cline_contexts(CLINE))
    last = turns[-1]
    assert last.source_format == "cline-task" and last.model == "claude-sonnet-4-5-20250929"
    kinds = {s.meta.get("block") for s in last.sections if s.meta.get("category") != "reply"}
    assert "thinking" not in kinds  # the API drops earlier turns' thinking (the request's own reply keeps it, at 0)
    assert any(s.meta.get("category") == "reply" and s.tokens == 0 for s in last.sections)
    assert last.calibration is not None and last.calibration.turns  # fitted on the thread's growth


def test_cline_either_file_reads_the_same_task(tmp_path):
    folder_heads = [t.context_tokens for t in load_turns(CLINE)]
    assert [t.context_tokens for t in load_turns(CLINE / "api_conversation_history.json")] == folder_heads
    assert [t.context_tokens for t in load_turns(CLINE / "ui_messages.json")] == folder_heads
    alone = tmp_path / "ui_messages.json"  # a ui_messages.json alone: the panel's messages, same headlines
    shutil.copyfile(CLINE / "ui_messages.json", alone)
    turns = load_turns(alone)
    assert [t.context_tokens for t in turns] == folder_heads
    assert any("no api_conversation_history.json" in w for w in turns[-1].warnings)


CLINE_RETRIED = FIXTURES / "cline_ui-only_1767644899093_first-22-requests" / "ui_messages.json"


def _sent(turn) -> list[str]:
    """The texts a turn's context is made of, oldest first (everything but the inferred hidden part)."""
    return [s.text for s in turn.sections if s.kind != "inferred"]


def test_cline_ui_alone_a_retried_request_replaces_the_unanswered_one(tmp_path):
    """A real ui_messages.json alone (Cline 3.x, grok-code-fast-1 then claude-sonnet-4.5): requests 20 and 21
    failed (tokensIn 0, streaming_failed) and each retry's ``request`` text starts with the unanswered
    one's (Cline merges them into one user turn). Request 22 recorded 50 868 tokens; what it sent is
    what the same file shows without the failed attempts, and the typed feedback, which the request text
    holds in <feedback>, is counted once. Before: the two failed turns were counted again beside the
    merged one, and each feedback twice."""
    ui = json.loads(CLINE_RETRIED.read_text(encoding="utf-8"))
    started = [i for i, m in enumerate(ui) if m.get("say") == "api_req_started"]
    failed = [i for i in started if json.loads(ui[i]["text"]).get("cancelReason") == "streaming_failed"]
    assert len(started) == 22 and failed == started[19:21]
    texts = [json.loads(ui[i]["text"])["request"] for i in started[19:]]
    assert texts[1].startswith(texts[0]) and texts[2].startswith(texts[1])  # what makes them one turn
    turns = load_turns(CLINE_RETRIED)
    assert turns[-1].recorded.context_tokens == 50868 == plan(turns[-1])["tokens"]["after"]
    without = tmp_path / "without-failed" / "ui_messages.json"
    without.parent.mkdir()
    without.write_text(json.dumps([m for i, m in enumerate(ui) if i not in failed]), encoding="utf-8")
    assert _sent(load_turns(without)[-1]) == _sent(turns[-1])
    feedback = [i for i, m in enumerate(ui) if m.get("say") == "user_feedback" and not m.get("images")]
    quiet = tmp_path / "without-feedback" / "ui_messages.json"  # the panel's copy of what the requests hold
    quiet.parent.mkdir()
    quiet.write_text(json.dumps([m for i, m in enumerate(ui) if i not in feedback]), encoding="utf-8")
    assert [_sent(t) for t in load_turns(quiet)] == [_sent(t) for t in turns]


def test_cline_followed_task_reuses_what_did_not_change_and_predicts_the_pending_request(tmp_path):
    api = json.loads((CLINE / "api_conversation_history.json").read_text(encoding="utf-8"))
    ui = json.loads((CLINE / "ui_messages.json").read_text(encoding="utf-8"))
    cut = [i for i, m in enumerate(ui) if m.get("say") == "api_req_started"][4]
    folder = tmp_path / "1769053680585"
    folder.mkdir()
    (folder / "api_conversation_history.json").write_text(json.dumps(api[:8]), encoding="utf-8")
    (folder / "ui_messages.json").write_text(json.dumps(ui[:cut]), encoding="utf-8")
    loader = Loader()
    first = loader.load_turns(folder)
    assert len(first) == 4
    kept = {s.id: s for s in first[-1].sections if s.meta.get("message") == 2}
    (folder / "api_conversation_history.json").write_text(json.dumps(api[:11]), encoding="utf-8")  # ends with user input
    (folder / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    second = loader.load_turns(folder)
    assert len(second) == 6 and second[-1].pending and second[-1].recorded is None
    again = {s.id: s for s in second[-1].sections if s.meta.get("message") == 2}
    assert all(again[k] is kept[k] for k in kept)  # the unchanged message's sections, not built again
    last_recorded = second[-2].recorded.context_tokens
    assert plan(second[-1])["tokens"]["after"] > last_recorded  # the reply and the new input come on top
    assert plan(second[-1])["pending"] is True


def test_roo_condensed_history_and_subtasks_are_threads(tmp_path):
    tasks = tmp_path / "tasks"
    parent, child = tasks / "aaaa-parent", tasks / "bbbbbbbb-child"
    for folder in (parent, child):
        folder.mkdir(parents=True)
    big = "x " * 3000
    api = [
        {"role": "user", "content": [{"type": "text", "text": "<task>refactor</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "reading " + big}], "condenseParent": "s1"},
        {"role": "user", "content": [{"type": "text", "text": "result " + big}], "condenseParent": "s1"},
        {"role": "assistant", "content": [{"type": "text", "text": "Summary of the work so far."}], "isSummary": True},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    ui = [{"ts": 1, "type": "say", "say": "api_req_started", "conversationHistoryIndex": -1,
           "text": json.dumps({"tokensIn": 9000, "tokensOut": 10, "cacheWrites": 0, "cacheReads": 0})},
          {"ts": 2, "type": "say", "say": "api_req_started", "conversationHistoryIndex": 3,
           "text": json.dumps({"tokensIn": 7100, "tokensOut": 5, "cacheWrites": 0, "cacheReads": 0})}]
    (parent / "api_conversation_history.json").write_text(json.dumps(api), encoding="utf-8")
    (parent / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    (parent / "history_item.json").write_text(json.dumps({"id": "aaaa-parent", "childIds": ["bbbbbbbb-child"]}))
    (child / "api_conversation_history.json").write_text(json.dumps(api[:1] + api[5:]), encoding="utf-8")
    (child / "ui_messages.json").write_text(json.dumps(ui[:1]), encoding="utf-8")
    threads = load_threads(parent)
    assert list(threads) == ["main", "subtask-bbbbbbbb"]
    after = threads["main"][-1]
    assert after.context_tokens == 7100
    texts = [s.text for s in after.sections if s.text]
    assert not any(t.startswith("reading") or t.startswith("result") for t in texts)  # condensed away
    assert any("Summary of the work" in t for t in texts)


def test_cline_truncation_is_inferred_from_the_recorded_drop(tmp_path):
    """Cline keeps the range it truncated outside the task folder: a recorded context that falls while
    the history grows leaves out the oldest exchanges after the first, fitted to the recorded figure."""
    filler = "word " * 2000
    api: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "<task>build it</task>"}]}]
    recorded = [5000, 8000, 11000, 14000, 8200]
    for number, context in enumerate(recorded):
        api.append({"role": "assistant", "content": [{"type": "text", "text": f"step {number} " + filler}],
                    "metrics": {"tokens": {"prompt": context, "completion": 9, "cached": 0}},
                    "modelInfo": {"modelId": "claude-sonnet-4-5", "mode": "act"}})
        api.append({"role": "user", "content": [{"type": "text", "text": f"result {number} " + filler}]})
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(api[:-1]), encoding="utf-8")
    turns = load_turns(path)
    assert [t.context_tokens for t in turns] == recorded
    last = turns[-1]
    assert any("Cline truncated the conversation" in w for w in last.warnings)
    assert len([s for s in last.sections if s.meta.get("role") == "assistant"]) < len(turns) - 1
    assert not any("more than the" in w for w in last.warnings)  # no scaling down to fit: the range fits


def test_cline_cli_session_shows_its_system_prompt(tmp_path):
    """The Cline CLI's session file (codeburn's description of it; constructed here) is read, not taken for
    an Anthropic request body: its replies' metrics are the headlines, its system prompt a visible part."""
    session = {"version": 1, "agent": "cline", "sessionId": "s-1", "system_prompt": "You are Cline. " * 40,
               "messages": [{"role": "user", "content": [{"type": "text", "text": "add a README"}]},
                            {"role": "assistant", "content": [{"type": "text", "text": "Done."}],
                             "metrics": {"inputTokens": 900, "outputTokens": 3, "cacheReadTokens": 0, "cacheWriteTokens": 4100},
                             "modelInfo": {"modelId": "claude-sonnet-4-5"}},
                            {"role": "user", "content": [{"type": "text", "text": "thanks"}]}]}
    path = tmp_path / "s-1.messages.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    turns = load_turns(path)
    assert_headline_is_recorded(turns, [5000])
    assert turns[-1].pending and turns[0].sections[1].meta["role"] == "system"


def test_a_broken_task_file_is_one_line(tmp_path, capsys):
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "api_conversation_history.json").write_text('[{"role": "user", "content": "hi"}, {"role"', encoding="utf-8")
    result = run_cli("plan", str(folder))
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenbox: error: ") and "not valid JSON" in lines[0]


# ---------------------------------------------------------------- OpenCode


def opencode_contexts() -> list[int]:
    records = json.loads(OPENCODE_RECORDS.read_text(encoding="utf-8"))
    steps = [p["tokens"] for p in records["parts"] if p["type"] == "step-finish"]
    return [t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in steps]


def test_opencode_database_tree_and_session_paths_read_the_same_steps():
    expected = opencode_contexts()
    session = "ses_2cd622e85ffez1k2rGGvSSppSf"
    for path in (OPENCODE_DB, f"{OPENCODE_DB}#{session}", OPENCODE_TREE, OPENCODE_TREE / "message" / session,
                 OPENCODE_TREE / "session" / "prj_constructed" / f"{session}.json"):
        turns = load_turns(path)
        assert_headline_is_recorded(turns, expected)
        assert turns[-1].source_format == "opencode"
    calls = [s.meta.get("tool") for s in load_turns(OPENCODE_DB)[-1].sections if s.meta.get("role") == "assistant"]
    assert calls.count("bash") == 2 and "read" in calls


def _constructed(session: str, parent: str | None, updated: int) -> dict:
    return {"id": session, "projectID": "p", "parentID": parent, "directory": "/work/p", "title": session, "version": "1.2.0",
            "time": {"created": updated, "updated": updated}}


def _exchange(session: str, n: int, context: int, text: str) -> dict:
    user, reply = f"msg_{n:03d}u", f"msg_{n:03d}a"
    return {"messages": [{"id": user, "sessionID": session, "role": "user", "time": {"created": n * 10}},
                         {"id": reply, "sessionID": session, "role": "assistant", "parentID": user, "modelID": "gpt-4o",
                          "providerID": "openai", "time": {"created": n * 10 + 1, "completed": n * 10 + 2},
                          "tokens": {"input": context - 100, "output": 5, "reasoning": 0, "cache": {"read": 100, "write": 0}}}],
            "parts": [{"id": f"prt_{n:03d}a", "messageID": user, "sessionID": session, "type": "text", "text": text, "_time": n * 10},
                      {"id": f"prt_{n:03d}b", "messageID": reply, "sessionID": session, "type": "step-start", "_time": n * 10 + 1},
                      {"id": f"prt_{n:03d}c", "messageID": reply, "sessionID": session, "type": "text", "text": "ok " + text,
                       "_time": n * 10 + 2},
                      {"id": f"prt_{n:03d}d", "messageID": reply, "sessionID": session, "type": "step-finish", "_time": n * 10 + 2,
                       "tokens": {"input": context - 100, "output": 5, "reasoning": 0, "cache": {"read": 100, "write": 0}}}]}


def test_opencode_followed_database_reads_new_rows_sub_agents_and_never_locks_the_agent(tmp_path):
    db = tmp_path / "opencode.db"
    first = _exchange("ses_root", 1, 4000, "list the files")
    write_db(db, {"sessions": [_constructed("ses_root", None, 10)], **first}, wal=True)
    loader = Loader()
    assert [t.context_tokens for t in loader.load_turns(db)] == [4000]
    writer = sqlite3.connect(db, timeout=0)  # the agent, writing while tokenbox reads
    add(writer, {"sessions": [_constructed("ses_child", "ses_root", 30)], **_exchange("ses_child", 2, 2500, "explore")})
    add(writer, _exchange("ses_root", 3, 4600, "now fix it"))
    writer.execute("BEGIN IMMEDIATE")  # an open write transaction: readers go on with the committed state
    writer.execute("INSERT INTO part VALUES ('prt_999', 'msg_003a', 'ses_root', 99, 99, '{\"type\":\"text\",\"text\":\"x\"}')")
    threads = loader.load_threads(db)
    writer.commit()  # the reader left no lock behind (timeout=0 would fail at once)
    writer.close()
    assert list(threads) == ["main", "subagent-child"]
    assert [t.context_tokens for t in threads["main"]] == [4000, 4600]
    assert [t.context_tokens for t in threads["subagent-child"]] == [2500]


def test_opencode_pending_user_message_and_a_busy_database(tmp_path, monkeypatch):
    db = tmp_path / "opencode.db"
    records = {"sessions": [_constructed("ses_root", None, 10)], **_exchange("ses_root", 1, 4000, "hello")}
    records["messages"].append({"id": "msg_900u", "sessionID": "ses_root", "role": "user", "time": {"created": 900}})
    records["parts"].append({"id": "prt_900", "messageID": "msg_900u", "sessionID": "ses_root", "type": "text",
                             "text": "and now the tests", "_time": 900})
    write_db(db, records)
    turns = load_turns(db)
    assert turns[-1].pending and plan(turns[-1])["tokens"]["after"] > 4000
    monkeypatch.setattr(database, "BUSY_WAIT", 0.001)  # the retries, without waiting for them
    locker = sqlite3.connect(db, timeout=0, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")  # a rollback-journal writer holding the file
    try:
        with pytest.raises(SessionError) as caught:
            Loader().load_turns(f"{db}#ses_root")
        assert "read it again" in caught.value.remedy
    finally:
        locker.rollback()
        locker.close()


def test_opencode_pending_request_takes_the_model_its_user_message_names(tmp_path):
    """OpenCode answers a user message with the model the message records (``model.modelID``): a pending
    request after a switch is planned for that model's window, not the previous reply's (before: gpt-4o,
    128 000)."""
    db = tmp_path / "opencode.db"
    records = {"sessions": [_constructed("ses_root", None, 10)], **_exchange("ses_root", 1, 4000, "hello")}
    records["messages"].append({"id": "msg_900u", "sessionID": "ses_root", "role": "user", "time": {"created": 900},
                                "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})
    records["parts"].append({"id": "prt_900", "messageID": "msg_900u", "sessionID": "ses_root", "type": "text",
                             "text": "and now the tests", "_time": 900})
    write_db(db, records)
    turns = load_turns(db)
    assert turns[0].model == "gpt-4o" and turns[-1].pending
    assert turns[-1].model == "claude-sonnet-4-5" and plan(turns[-1])["window"]["tokens"] == 200000


# ---------------------------------------------------------------- Copilot CLI


def copilot_store_contexts() -> list[int]:
    with closing(sqlite3.connect(f"file:{COPILOT_HOME / 'session-store.db'}?mode=ro", uri=True)) as store:
        return [r[0] for r in store.execute("SELECT input_tokens FROM assistant_usage_events ORDER BY rowid")]


def test_copilot_requests_take_the_session_stores_usage_and_sub_agents_are_threads():
    threads = load_threads(COPILOT)
    assert list(threads) == ["main", "subagent-explore"]
    store = copilot_store_contexts()  # in file order: main 1, main 2, the sub-agent's 2, main 3
    assert_headline_is_recorded(threads["main"], [store[0], store[1], store[4]])
    assert_headline_is_recorded(threads["subagent-explore"], store[2:4])
    sub = threads["subagent-explore"][0]
    assert sub.model == "claude-haiku-4.5" and "Find every caller" in sub.sections[1].text
    pending = threads["main"][-1]
    assert pending.pending and plan(pending)["tokens"]["after"] > store[4]
    assert load_session(COPILOT).pending  # the default turn: the newest of the main thread


def test_copilot_without_its_store_predicts_from_the_shutdown_record(tmp_path):
    journal = tmp_path / "events.jsonl"
    shutil.copyfile(COPILOT, journal)
    turns = load_turns(journal)
    assert all(t.recorded is None for t in turns)
    shutdown = json.loads(COPILOT.read_text().splitlines()[17])["data"]
    last = turns[-2]  # the request just before the shutdown: its context is close to what the shutdown recorded
    assert last.sections[0].kind == "inferred" and "shutdown" in last.calibration.method
    assert last.calibration.hidden > shutdown["toolDefinitionsTokens"]  # the tools, and the system tokens beyond its text
    assert abs(plan(last)["tokens"]["after"] - shutdown["currentTokens"]) < 0.05 * shutdown["currentTokens"]


def test_an_exact_count_is_claimed_only_when_the_render_is_what_was_counted(tmp_path):
    """A request's own reply is rendered with its turn at 0 tokens: with no recorded usage (a journal without
    its store) the headline is the tokenizer's count of the context only, so it is not the exact count of the
    render (the plan said ``exact`` and counted 126 for a render of 152 tokens)."""
    journal = tmp_path / "events.jsonl"
    journal.write_text("".join(COPILOT.read_text(encoding="utf-8").splitlines(keepends=True)[:6]), encoding="utf-8")
    result = Engine().plan(load_session(journal))
    assert not result.pending and any(s.id.startswith("reply.") for s in result.sections)
    if result.tokenizer.exact:
        assert count(result.tokenizer.name, result.render()) == result.tokens_after
    assert not result.tokenizer.exact


def test_copilot_without_its_store_an_exact_tokenizer_means_the_render_is_what_was_counted(tmp_path):
    """The contract's check (CONTRACT.md: with ``tokenizer.exact`` true, ``tokens.after`` is the tokenizer's
    count of ``tokenbox render``), on each request of the journal without its store (o200k_base, gpt-5.4):
    a request's own reply is rendered with it at 0 tokens, so such a plan is not exact. Before: exact, with
    126 counted for a render of 152 tokens (request 1)."""
    from tests.engine.helpers import count

    lines = COPILOT.read_text(encoding="utf-8").splitlines(keepends=True)
    journal = tmp_path / "events.jsonl"
    checked = 0
    for end in range(4, len(lines) + 1):
        journal.write_text("".join(lines[:end]), encoding="utf-8")
        data = ENGINE.plan(load_session(journal))
        replied = any(s.meta.get("category") == "reply" and s.text for s in data.session.sections)
        if data.tokenizer.exact:
            assert data.tokens_after == count(data.render()), end
        else:
            checked += replied
    assert checked  # the cuts that end on a reply were planned, not exact


def test_copilot_followed_journal_costs_the_appended_lines(tmp_path):
    lines = COPILOT.read_text(encoding="utf-8").splitlines(keepends=True)
    journal = tmp_path / "events.jsonl"
    journal.write_text("".join(lines[:8]), encoding="utf-8")
    loader = Loader()
    assert len(loader.load_turns(journal)) == 2  # one request, then the tool result waiting: pending
    with journal.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines[8:]))
    assert len(loader.load_turns(journal)) == 4


# ---------------------------------------------------------------- aider


def test_aider_headline_is_the_printed_figure_with_its_rounding():
    printed = re.findall(r"^> Tokens: ([\d.]+k?) sent", AIDER.read_text(encoding="utf-8"), re.M)
    expected = [round(float(p[:-1]) * 1000) if p.endswith("k") else int(p) for p in printed]
    turns = load_turns(AIDER)
    assert_headline_is_recorded(turns, expected)
    assert turns[0].model == "gpt-4o-mini" and turns[0].tokenizer == "o200k_base"
    assert "between 2350 and 2449 tokens" in turns[0].warnings[-1]
    assert "between 10000 and 10499 tokens" in turns[-1].warnings[-1]


def test_aider_commands_are_not_messages_a_history_of_commands_has_no_request(tmp_path):
    """A real chat history (zen-mcp-server, aider 0.86.1) of in-chat commands only (``/add`` four times,
    ``/copy-context`` four times) and no ``Tokens:`` line: aider sent nothing. Before: the 7 commands after
    the last start were a pending request of ≈1056 tokens, exit 0."""
    text = AIDER_COMMANDS.read_text(encoding="utf-8")
    assert "> Tokens:" not in text and len(re.findall(r"^#### /(?:add|copy-context) ", text, re.M)) == 8
    with pytest.raises(SessionError, match="no model request yet"):
        load_turns(AIDER_COMMANDS)
    result = run_cli("plan", str(AIDER_COMMANDS))
    err = result.stderr.decode()
    assert result.returncode == 2 and "has no model request yet" in err and err.count("\n") == 1


def test_aider_sends_neither_commands_nor_blank_input_nor_group_answers_and_clear_restarts(tmp_path):
    """What aider 0.86 writes as ``####`` but never sends (``Commands.is_command``; ``/ask q`` writes ``q`` again
    as the message ``_generic_chat_command`` sends; ``io.user_input`` writes ``<blank>``; ``confirm_ask``
    echoes a group answer, as in a real history of 0202alcc/luvatrix); ``/clear`` empties the history."""
    chat = tmp_path / ".aider.chat.history.md"
    answer = "Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: skip"
    chat.write_text("# aider chat started at 2025-01-01 10:00:00\n\n> Model: gpt-4o with diff edit format\n\n"
                    "#### /add a.py  \n####   b.py  \n\n#### /ask what does a.py do?  \n\n#### what does a.py do?  \n\n"
                    "It adds.\n\n> Tokens: 900 sent, 3 received.\n\n"
                    f"#### <blank>  \n\n#### {answer}  \n\n#### !ls  \n\n#### and b.py?  \n\nIt also adds.\n\n"
                    "> Tokens: 950 sent, 4 received.\n\n#### /clear  \n\n#### hello  \n\nHi.\n\n"
                    "> Tokens: 870 sent, 2 received.\n\n#### /drop b.py  \n", encoding="utf-8")

    def said(turn):
        return [s.text for s in turn.sections if s.meta.get("role") == "user"]

    turns = load_turns(chat)
    assert [t.context_tokens for t in turns] == [900, 950, 870] and not any(t.pending for t in turns)
    assert [said(t) for t in turns] == [["what does a.py do?"], ["what does a.py do?", "and b.py?"], ["hello"]]
    with chat.open("a", encoding="utf-8") as handle:
        handle.write("\n#### /reset  \n")
    assert [said(t) for t in load_turns(chat)][-1] == ["hello"]  # a command last: still no pending request


def test_aider_llm_history_is_counted_whole_and_paired_with_the_chat_history(tmp_path):
    chat = tmp_path / ".aider.chat.history.md"
    chat.write_text("# aider chat started at 2025-01-01 10:00:00\n\n> Model: gpt-4o with diff edit format\n\n"
                    "#### hello  \n\nHi there.\n\n> Tokens: 60 sent, 3 received.\n", encoding="utf-8")
    history = tmp_path / "llm.txt"
    history.write_text("TO LLM 2025-01-01T10:00:01\n-------\nSYSTEM You are a helpful coder.\nSYSTEM Be brief.\n"
                       "-------\nUSER hello\nLLM RESPONSE 2025-01-01T10:00:02\nASSISTANT Hi there.\n"
                       "TO LLM 2025-01-01T10:01:00\n-------\nSYSTEM You are a helpful coder.\nSYSTEM Be brief.\n"
                       "-------\nUSER hello\n-------\nASSISTANT Hi there.\n-------\nUSER more\n", encoding="utf-8")
    turns = load_turns(history)
    assert [t.pending for t in turns] == [False, True]
    assert turns[0].context_tokens == 60 and turns[0].recorded is not None  # paired with the Tokens: line
    system = [s for s in turns[1].sections if s.meta.get("role") == "system"]
    assert system and system[0].text == "You are a helpful coder.\nBe brief."


# ---------------------------------------------------------------- Gemini API, captures


def gemini_pairs(tmp_path: Path) -> list[tuple[Path, int]]:
    """Each real request with its real response, as a ``{request, response}`` document, and the context
    the response recorded (promptTokenCount + toolUsePromptTokenCount, of the last chunk of a stream)."""
    out = []
    for line in (GEMINI / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        name = Path(entry["file"]).name
        body = json.loads((GEMINI / name).read_text())
        response_path = GEMINI / Path(entry["response"]).name
        if response_path.suffix == ".txt":
            response = {"body_raw": response_path.read_text()}
            usage = json.loads(response["body_raw"].strip().split("data: ")[-1])["usageMetadata"]
        else:
            response = {"body": json.loads(response_path.read_text())}
            usage = response["body"]["usageMetadata"]
        doc = tmp_path / name.replace(".request.json", ".pair.json")
        doc.write_text(json.dumps({"request": {"url": entry["uri"], "body": body}, "response": response}))
        out.append((doc, usage["promptTokenCount"] + usage.get("toolUsePromptTokenCount", 0)))
    return out


def test_gemini_cli_saved_chats_are_read_as_contents_not_as_a_cline_task(tmp_path, capsys):
    """``/chat save <tag>`` writes ``checkpoint-<tag>.json``: a JSON array of ``{role, parts}`` (older
    Gemini CLI) or ``{history, authType}``; ``--checkpointing`` writes a restore point whose
    ``clientHistory`` is what was sent. CONSTRUCTED in that schema (gemini-cli ``core/logger.ts``
    ``Checkpoint``, ``ToolCallData``; no real saved chat is public). Before: the array was taken for a
    Cline task (``[{"role": …``) and planned as 0 tokens, exit 0; the other two were an unknown-key
    error."""
    contents = [{"role": "user", "parts": [{"text": "Summarise README.md for me, please."}]},
                {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "README.md"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "read_file",
                                                                 "response": {"output": "# demo\nA tiny demo."}}}]},
                {"role": "model", "parts": [{"text": "It is a tiny demo."}]}]
    shapes = {"checkpoint-old.json": contents, "checkpoint-new.json": {"history": contents, "authType": "oauth-personal"},
              "restore.json": {"history": [{"type": "user", "text": "ui item"}], "clientHistory": contents,
                               "toolCall": {"name": "write_file", "args": {}}, "commitHash": "0" * 40}}
    heads = set()
    for name, value in shapes.items():
        path = tmp_path / name
        path.write_text(json.dumps(value, indent=2), encoding="utf-8")
        turn = load_session(path)
        texts = [s.text for s in turn.sections]
        assert turn.name.startswith("Gemini CLI saved chat") and turn.source_format != "cline-task", name
        assert any("Summarise README.md" in t for t in texts) and any("tiny demo" in t for t in texts), name
        assert any("system prompt and tool definitions" in w for w in turn.warnings), name
        heads.add(plan(turn)["tokens"]["after"])
        assert run_cli("plan", str(path)).returncode == 0
    assert len(heads) == 1 and heads.pop() > 0  # the same contents, however saved


def test_gemini_api_bodies_alone_and_with_their_recorded_usage(tmp_path):
    pairs = gemini_pairs(tmp_path)
    assert len(pairs) == 9
    for doc, context in pairs:
        session = load_session(doc)
        assert_headline_is_recorded([session], [context])
    image = load_session(tmp_path / "gemini-2.0-flash_inline-image.pair.json")
    assert [s.tokens for s in image.sections if s.meta.get("block") == "media"] == [1806]  # promptTokensDetails IMAGE
    body = load_session(GEMINI / "gemini-2.5-pro_google-search-tool.request.json")
    assert body.source_format == "gemini-generate-content" and body.recorded is None
    assert {s.meta.get("tool") for s in body.sections if s.meta.get("category") == "tool"} == {"googleSearch"}


def trace_contexts() -> list[int]:
    contexts = []
    for line in TRACE.read_text(encoding="utf-8").splitlines():
        response = json.loads(line)["response"]
        if isinstance(response.get("body"), dict):
            usage = response["body"]["usage"]
        else:
            start = next(json.loads(d[5:]) for d in response["body_raw"].split("\n") if '"message_start"' in d)
            usage = start["message"]["usage"]
        contexts.append(usage["input_tokens"] + usage.get("cache_creation_input_tokens", 0)
                        + usage.get("cache_read_input_tokens", 0))
    return contexts


def test_claude_trace_and_context_lens_captures_read_like_a_capture_log(tmp_path):
    turns = load_turns(TRACE)
    assert_headline_is_recorded(turns, trace_contexts())
    assert turns[-1].meta["source"]["format"] == "claude-trace"
    entries = [json.loads(line) for line in LHAR.read_text().splitlines()][1:]
    expected = [e["gen_ai"]["usage"]["input_tokens"] + e["usage_ext"]["cache_read_tokens"] + e["usage_ext"]["cache_write_tokens"]
                for e in entries]
    lens = load_turns(LHAR)
    assert_headline_is_recorded(lens, expected)
    document = tmp_path / "trace.lhar.json"  # the other packaging: one document
    document.write_text(json.dumps({"lhar": {"version": "0.1", "sessions": [], "entries": entries}}), encoding="utf-8")
    assert [t.context_tokens for t in load_turns(document)] == expected
    parts = {s.id: s.tokens for s in lens[-1].sections if s.id.startswith("lens.")}
    assert parts == {f"lens.{c['category']}": c["tokens"] for c in entries[-1]["context_lens"]["composition"]}


def test_plan_json_of_each_new_format(tmp_path):
    for path in (CLINE, OPENCODE_DB, COPILOT, AIDER, TRACE, LHAR):
        result = run_cli("plan", str(path), "--json")
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["ok"] and isinstance(data["calibration"], (dict, type(None)))
        if data["recorded"] is not None and not data["pending"]:
            assert data["tokens"]["after"] == data["recorded"]["context_tokens"]


def test_database_and_folder_errors_are_one_line(tmp_path):
    broken = tmp_path / "opencode.db"
    broken.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    for path in (broken, f"{OPENCODE_DB}#ses_missing"):
        result = run_cli("plan", str(path))
        assert result.returncode == 2
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tokenbox: error: "), lines


@pytest.mark.parametrize(("record", "what"), [
    # real files of the storage fixture, copied alone
    ((OPENCODE_TREE / "message" / "ses_2cd622e85ffez1k2rGGvSSppSf" / "msg_d329e2af0001vkcztvJ8BsWPlz.json"), "message"),
    ((OPENCODE_TREE / "part" / "msg_d329e2af0001vkcztvJ8BsWPlz" / "prt_d329e3bfa001TfzIntktRt5mVl.json"), "part"),
    # the shapes of jazzyalex/agent-sessions' OpenCode fixtures (constructed there: ids without OpenCode's
    # prefixes, an older part without its session's id)
    ({"id": "m_user_small", "sessionID": "s_stage0_small", "role": "user", "time": {"created": 1730000001000},
      "agent": "opencode", "model": {"providerID": "openai", "modelID": "gpt-4o-mini"}}, "message"),
    ({"id": "p_tool_large_1", "sessionID": "s_stage0_large", "messageID": "m_assistant_large_1", "type": "tool",
      "callID": "call_large_1", "tool": "bash", "state": {"status": "completed", "input": {"command": "ls"}}}, "part"),
    ({"messageID": "m_assistant_drift", "id": "prt_text_1", "type": "text", "text": "Read README."}, "part"),
])
def test_an_opencode_record_file_alone_is_named(tmp_path, record, what):
    """One message or part file of OpenCode's storage, opened alone, is named as such (exit 2, one line), not
    read as a tokenbox session with unknown keys."""
    from tests.inprocess import run_main

    path = tmp_path / "record.json"
    if isinstance(record, Path):
        shutil.copyfile(record, path)
    else:
        path.write_text(json.dumps(record), encoding="utf-8")
    result = run_main(["plan", str(path)])
    assert result.returncode == 2 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tokenbox: error: {path}:1:")
    assert f"one {what} of an OpenCode session on its own" in lines[0]


@pytest.mark.parametrize("meta", [
    {"agentType": "general-purpose", "spawnDepth": 1},
    {"agentType": "general-purpose", "spawnDepth": 0, "taskKind": "in_process_teammate"},
    {"agentType": "Explore", "spawnDepth": 2, "parentAgentId": "a1", "model": "claude-haiku-4-5"},
])
def test_a_claude_code_sub_agents_meta_file_is_named(tmp_path, meta):
    """``subagents/agent-<id>.meta.json`` (what Claude Code writes beside a sub-agent's transcript: its type and
    depth; the shapes viewers' tests write, e.g. jazzyalex/agent-sessions) is named, with what to open instead."""
    from tests.inprocess import run_main

    folder = tmp_path / "subagents"
    folder.mkdir()
    path = folder / "agent-a0ad4f44468bdf20d.meta.json"
    path.write_text(json.dumps(meta), encoding="utf-8")
    result = run_main(["plan", str(path)])
    assert result.returncode == 2 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tokenbox: error: {path}:1:")
    assert "a Claude Code sub-agent's metadata" in lines[0] and "open the agent-*.jsonl beside it" in lines[0]
