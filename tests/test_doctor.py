"""``tokenbox doctor``: where tokenbox looks for each agent's sessions (and what chose each place), what it
found there and why a folder was skipped — plain text, names escaped, exit 0 — with a fake home of several
agents (the sessions are real files of ``tests/importers/fixtures``; what the doctor reads of them is their
place, time and project)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tokenbox.core.commands.cli import main
from tokenbox.core.commands.doctor import report

FIXTURES = Path(__file__).resolve().parent / "importers" / "fixtures"
NOW = 1_767_348_000.0
HOSTILE = "evil\x1b[31mred\x07"  # a folder name with an escape sequence and a bell


def _touch(path: Path, seconds_ago: float) -> None:
    stamp = int((NOW - seconds_ago) * 1e9)
    os.utime(path, ns=(stamp, stamp))


def fake_home(tmp_path: Path) -> tuple[dict[str, str], dict[str, Path]]:
    home = tmp_path / "home"
    claude = tmp_path / "claude-config" / "projects"
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"), "XDG_CONFIG_HOME": str(home / "cfg"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state")}
    paths = {}
    for name, ago in (("a1.jsonl", 120), ("a2.jsonl", 60)):
        folder = claude / "-work-shop"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps({"type": "user", "cwd": "/work/shop", "message": {"role": "user", "content": "hi"}}) + "\n")
        _touch(folder / name, ago)
    paths["claude"] = claude / "-work-shop" / "a2.jsonl"
    rollouts = home / ".codex" / "sessions" / "2026" / "01" / "02"
    rollouts.mkdir(parents=True)
    paths["codex"] = rollouts / "rollout-2026-01-02T09-00-00-x.jsonl"
    shutil.copyfile(FIXTURES / "codex_rollout_v0.135_exec.jsonl", paths["codex"])
    _touch(paths["codex"], 300)
    (rollouts / "rollout-2026-01-02T08-00-00-y.jsonl").write_text('{"type": "event_msg"}\n')  # no session_meta: skipped
    state = home / ".copilot" / "session-state"
    shutil.copytree(FIXTURES / "copilot_home" / "session-state", state)
    (state / "empty-session").mkdir()
    (state / HOSTILE).mkdir()  # skipped too: its name is printed
    tasks = home / "cfg" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    (tasks / "1769000000000").mkdir(parents=True)  # a task folder without its files
    captures = home / "state" / "tokenbox" / "captures"
    captures.mkdir(parents=True)
    paths["capture"] = captures / "capture-20260102-090000-1.jsonl"
    paths["capture"].write_text("")
    _touch(paths["capture"], 30)
    return env, paths


def test_doctor_says_where_it_looked_what_chose_it_what_it_found_and_skipped(tmp_path):
    env, paths = fake_home(tmp_path)
    text = report(env, str(tmp_path), NOW)
    lines = text.splitlines()
    claude = next(line for line in lines if line.startswith(f"  {tmp_path}/claude-config/projects"))
    # two in /work/shop; the newest is a2 (a minute ago), with its project
    expected_time = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW - 60))
    assert claude == (f"  {tmp_path}/claude-config/projects  [$CLAUDE_CONFIG_DIR]  2 sessions; newest {expected_time} "
                      f"(1 min ago): {paths['claude']}, project /work/shop")
    codex = next(line for line in lines if "/.codex/sessions" in line)
    assert "[default]  1 session; newest" in codex and "(5 min ago)" in codex and str(paths["codex"]) in codex
    assert any("/.codex/archived_sessions  [default]  not there" in line for line in lines)
    assert any("/state/tokenbox/captures  [$XDG_STATE_HOME]  1 session;" in line for line in lines)
    assert any("/cfg/Code/User/globalStorage/saoudrizwan.claude-dev/tasks  [$XDG_CONFIG_HOME]  no sessions" in line
               for line in lines)
    skipped = lines[lines.index("Skipped") + 1:]
    assert any("no session_meta line with its cwd" in line and "rollout-2026-01-02T08-00-00-y.jsonl" in line for line in skipped)
    assert any(line.startswith("  copilot ") and "empty-session: no events.jsonl" in line for line in skipped)
    assert any(line.startswith("  cline ") and "1769000000000: a task folder without" in line for line in skipped)
    assert lines[-1].startswith("5 sessions found in all;")  # 2 Claude, 1 Codex, 1 Copilot, 1 capture
    # untrusted names are data: the folder's escape and bell are shown, never sent
    assert "\x1b" not in text and "\x07" not in text and "evil\\x1b[31mred\\x07" in text


def test_missing_places_are_counted_in_one_line_unless_verbose(tmp_path):
    """Cline looks in a dozen editors' folders: the ones that do not exist are one line; ``--verbose`` lists each."""
    env, _ = fake_home(tmp_path)
    short, full = report(env, str(tmp_path), NOW).splitlines(), report(env, str(tmp_path), NOW, verbose=True).splitlines()

    def block(lines: list[str], title: str) -> list[str]:
        start = lines.index(title) + 1
        return lines[start:lines.index("", start)]

    cline_full, cline_short = block(full, "Cline (cline)"), block(short, "Cline (cline)")
    missing = [line for line in cline_full if line.endswith("  not there")]
    there = [line for line in cline_full if not line.endswith("  not there")]
    assert len(missing) >= 2 and len(there) == 1  # the fake home has VS Code's folder only
    first = missing[0].removesuffix("  not there")
    assert cline_short == [*there, f"  {len(missing)} other places not there, e.g. {first.strip()}  "
                                   "(tokenbox doctor --verbose lists each)"]
    roo = block(short, "Roo Code (roo)")  # none of its places exists: no "other"
    assert len(roo) == 1 and roo[0].startswith(f"  {len(block(full, 'Roo Code (roo)'))} places not there, e.g. ")
    # an agent with one missing place keeps its line as it is
    assert block(short, "Codex CLI (codex)") == block(full, "Codex CLI (codex)")


def test_tokenbox_doctor_exits_0_with_plain_text(tmp_path, monkeypatch, capsys):
    env, _ = fake_home(tmp_path)
    for name in ("CODEX_HOME", "CLINE_DIR", "AIDER_CHAT_HISTORY_FILE", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["doctor"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("tokenbox doctor: where tokenbox looks for agents' sessions")
    assert "Claude Code (claude)" in out and "tokenbox record (record)" in out and "aider (aider)" in out
    assert f"this directory's project ({tmp_path})  no chat history" in out
    assert main(["doctor", "--verbose"]) == 0 and "not there" in capsys.readouterr().out
    assert main(["doctor", "--frobnicate"]) == 2  # a usage error: the one line, exit 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("tokenbox: error: ") and err.count("\n") == 1
