"""``tokenbox-tui --codex``: the newest rollout started in this directory, ``$CODEX_HOME`` honoured."""

from __future__ import annotations

import json
import os

import pytest
from tokenbox.core.commands.cliargs import UsageError
from tokenbox.tui.claude import DiscoveryError
from tokenbox.tui.cli import parse_args
from tokenbox.tui.codex import codex_home, discover


def _rollout(home, day: str, name: str, cwd: str, mtime: int) -> str:
    folder = home / "sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{name}.jsonl"
    meta = {"timestamp": "t", "type": "session_meta", "payload": {"id": name, "cwd": cwd, "instructions": "x" * 5000}}
    path.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    os.utime(path, ns=(mtime, mtime))
    return str(path)


def test_newest_rollout_of_this_directory(tmp_path):
    home = tmp_path / "codex"
    project, other = str(tmp_path / "proj"), str(tmp_path / "other")
    old = _rollout(home, "2026/01/01", "a", project, 1_000)
    new = _rollout(home, "2026/01/02", "b", project, 2_000)
    _rollout(home, "2026/01/03", "c", other, 3_000)  # newer, but another directory
    env = {"CODEX_HOME": str(home)}
    assert discover(project, environ=env).path == new != old
    assert discover(other, environ=env).path.endswith("rollout-c.jsonl")


def test_codex_home_default_and_errors(tmp_path):
    assert codex_home({"HOME": str(tmp_path)}) == str(tmp_path / ".codex")
    with pytest.raises(DiscoveryError, match="no Codex sessions"):
        discover(str(tmp_path), environ={"HOME": str(tmp_path)})
    home = tmp_path / "codex"
    _rollout(home, "2026/01/01", "a", "/elsewhere", 1_000)
    with pytest.raises(DiscoveryError, match="no Codex rollout started in"):
        discover(str(tmp_path), environ={"CODEX_HOME": str(home)})


def test_the_flag():
    assert parse_args(["--codex"]).codex is True
    with pytest.raises(UsageError):
        parse_args(["--codex", "file.jsonl"])
