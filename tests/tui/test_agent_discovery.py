"""``tokenbox-tui --agent NAME`` and the agents' table (``tokenbox.core.sources.discovery``): every agent's
sessions under a fake home, the environment overrides, the folders skipped with a reason, the newest
session of this directory's project, and the inspector following a Cline task folder and an OpenCode
database session found that way."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from tokenbox.core.commands.cliargs import UsageError
from tokenbox.core.sources.discovery import NAMES, DiscoveryError, newest, scan
from tokenbox.tui import app as app_module
from tokenbox.tui.cli import parse_args
from tokenbox.tui.filestamp import stamp
from tokenbox.tui.messages import FileChanged

from tests.importers.opencode_store import add
from tests.tui.helpers import SIZE, make_app, wait_for, wait_plan

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
CLINE = FIXTURES / "cline_task_1769053680585_first-6-requests"
COPILOT = FIXTURES / "copilot_home"
OPENCODE = FIXTURES / "opencode_issuepit-901.db"
SESSION = "ses_2cd622e85ffez1k2rGGvSSppSf"


def _touch(path: Path, ns: int) -> None:
    os.utime(path, ns=(ns, ns))


@pytest.fixture
def world(tmp_path):
    """A home with a session of every agent for the project ``proj`` (and one of another project)."""
    home, project, other = tmp_path / "home", tmp_path / "proj", tmp_path / "other"
    for folder in (home, project, other):
        folder.mkdir()
    (project / ".git").mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "cfg"), "XDG_DATA_HOME": str(home / "data"),
           "CLAUDE_CONFIG_DIR": str(home / "claude-cfg"), "CODEX_HOME": str(home / "codex")}
    claude = home / "claude-cfg" / "projects" / str(project).replace("/", "-").replace("_", "-")
    claude.mkdir(parents=True)
    (claude / "abc.jsonl").write_text(json.dumps({"type": "user", "cwd": str(project), "message": {"role": "user",
                                                  "content": "hi"}}) + "\n")
    rollout = home / "codex" / "sessions" / "2026" / "01" / "02" / "rollout-2026-01-02T00-00-00-x.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"type": "session_meta", "payload": {"id": "x", "cwd": str(project)}}) + "\n")
    chats = home / ".gemini" / "tmp" / hashlib.sha256(str(project).encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-02T00-00-abcd.json").write_text(json.dumps({"sessionId": "s", "projectHash": "h", "messages": []}))
    state = home / ".copilot" / "session-state"
    shutil.copytree(COPILOT / "session-state", state)
    journal = next(state.glob("*/events.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    start = json.loads(lines[0])
    start["data"]["context"]["cwd"] = str(project)
    journal.write_text(json.dumps(start) + "\n" + "".join(lines[1:]))
    (state / "empty-session").mkdir()  # skipped, with its reason
    tasks = home / "cfg" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    shutil.copytree(CLINE, tasks / "1769053680585")
    api = tasks / "1769053680585" / "api_conversation_history.json"  # the task ran in our project
    api.write_text(api.read_text().replace("/workspaces/Online-Card-Architecture", str(project)), encoding="utf-8")
    (tasks / "1769000000000").mkdir()  # a task folder without its files: skipped
    roo = home / "cfg" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks" / "r-1"
    roo.mkdir(parents=True)
    (roo / "ui_messages.json").write_text("[]")
    (roo / "history_item.json").write_text(json.dumps({"id": "r-1", "workspace": str(other)}))
    for folder, name in (("opencode", "opencode.db"), ("kilo", "kilo.db")):  # Kilo 5.x keeps OpenCode's database
        (home / "data" / folder).mkdir(parents=True)
        shutil.copyfile(OPENCODE, home / "data" / folder / name)
        with closing(sqlite3.connect(home / "data" / folder / name)) as db, db:
            db.execute("UPDATE session SET directory = ?", (str(project),))
    (project / ".aider.chat.history.md").write_text("# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n")
    return {"env": env, "project": project, "other": other, "home": home, "tasks": tasks}


def test_scan_lists_every_agent_with_its_project_and_says_what_it_skipped(world, monkeypatch):
    monkeypatch.chdir(world["project"])
    found = scan(environ=world["env"])
    agents = {f.agent for f in found.found}
    assert agents == set(NAMES)
    by_agent = {f.agent: f for f in found.found}
    assert by_agent["opencode"].path.endswith(f"opencode.db#{SESSION}")
    assert by_agent["roo"].project == str(world["other"])
    assert by_agent["cline"].project == str(world["project"])
    reasons = {Path(s.path).name: s.reason for s in found.skipped}
    assert "without ui_messages.json" in reasons["1769000000000"] and "no events.jsonl" in reasons["empty-session"]
    assert ("claude", str(world["home"] / "claude-cfg" / "projects"), "$CLAUDE_CONFIG_DIR") in found.looked
    assert found.found == sorted(found.found, key=lambda f: (-f.mtime_ns, f.agent, f.path))


def test_newest_session_of_this_project_per_agent(world):
    project = str(world["project"])
    for name in NAMES:
        if name == "roo":
            with pytest.raises(DiscoveryError, match="no Roo Code session for"):
                newest(name, project, environ=world["env"])
            continue
        found = newest(name, project, environ=world["env"])
        assert found.agent == name, name
    assert newest("roo", str(world["other"]), environ=world["env"]).path.endswith("r-1")
    assert newest("aider", project, environ=world["env"]).path == str(world["project"] / ".aider.chat.history.md")
    with pytest.raises(DiscoveryError, match="unknown agent"):
        newest("cursor", project, environ=world["env"])


def test_the_agent_flag_and_its_shorthands():
    assert parse_args(["--agent", "opencode"]).agent == "opencode"
    assert parse_args(["--agent", "claude"]).claude is True and parse_args(["--agent", "claude"]).agent is None
    assert parse_args(["--agent", "codex"]).codex is True
    for bad in (["--agent", "cline", "file.json"], ["--agent", "cline", "--codex"]):
        with pytest.raises(UsageError):
            parse_args(bad)


def test_cli_agent_opens_the_discovered_session_and_errors_are_one_line(world, monkeypatch, capsys):
    monkeypatch.chdir(world["project"])
    for key, value in world["env"].items():
        monkeypatch.setenv(key, value)
    seen = {}
    monkeypatch.setattr(app_module.TokenboxApp, "run", lambda self: seen.update(path=self.path))
    assert app_module.main(["--agent", "cline"]) == 0
    assert seen["path"] == str(world["tasks"] / "1769053680585")
    monkeypatch.chdir(world["other"])
    assert app_module.main(["--agent", "copilot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenbox: error: no GitHub Copilot CLI session for ") and err.count("\n") == 1


def test_a_storage_stamp_changes_when_the_agent_writes(tmp_path):
    db = tmp_path / "opencode.db"
    shutil.copyfile(OPENCODE, db)
    with closing(sqlite3.connect(db)) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
    locator = f"{db}#{SESSION}"
    before = stamp(locator)
    writer = sqlite3.connect(db)
    add(writer, {"parts": [{"id": "prt_zz", "messageID": "m", "sessionID": SESSION, "type": "text", "text": "x", "_time": 1}]})
    assert stamp(locator) != before  # the write landed in the WAL file: the watcher sees it
    writer.close()
    folder = tmp_path / "task"
    shutil.copytree(CLINE, folder)
    before = stamp(str(folder))
    (folder / "ui_messages.json").write_text("[]")
    assert stamp(str(folder)) != before


async def test_the_inspector_follows_a_cline_task_folder_and_an_opencode_session(tmp_path):
    folder = tmp_path / "1769053680585"
    shutil.copytree(CLINE, folder)
    ui = json.loads((folder / "ui_messages.json").read_text())
    contexts = [sum(json.loads(m["text"])[k] for k in ("tokensIn", "cacheWrites", "cacheReads"))
                for m in ui if m.get("say") == "api_req_started"]
    app = make_app(folder, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.tokens_after == contexts[-1] and not app.plan.pending
        api = json.loads((folder / "api_conversation_history.json").read_text())
        api.append({"role": "user", "content": [{"type": "text", "text": "Now write the tests."}]})
        (folder / "api_conversation_history.json").write_text(json.dumps(api))
        app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: app.plan is not None and app.plan.pending, what="the pending request")
        assert app.plan.tokens_after > contexts[-1]
        app.follow_file(f"{OPENCODE}#{SESSION}", "another agent")
        await wait_for(pilot, lambda: app.plan is not None and app.plan.session.source_format == "opencode",
                       what="the OpenCode session")
        assert app.plan.tokens_after == 18427 and app.display_name.endswith(SESSION)
