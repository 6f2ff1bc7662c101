"""A home folder with sessions of three agents, for the board's tests and snapshots (``tokenbox-tui --all``).

Real files, copied: a Claude Code transcript (``tests/fixtures/real_sessions``, ccviewer 5c0375b4; its
recorded project directory, anonymised by its source, replaced by ours), a second one with its last request's recorded usage raised to 160 000 tokens (near Claude Code's
auto-compact point: constructed from the same file, said so), a Codex CLI rollout
(``tests/importers/fixtures/codex_rollout_v0.135_exec.jsonl``) and a Gemini CLI chat
(``tests/importers/fixtures/gemini_chat_session.json``), with ``projects.json`` naming its project. Every
file's time is set against ``NOW`` (a fixed clock): the board's "last activity" is the same in every run.
``append_request`` adds one Claude Code request (a prompt and a reply that recorded its usage).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
CODEX = ROOT / "importers" / "fixtures" / "codex_rollout_v0.135_exec.jsonl"
GEMINI = ROOT / "importers" / "fixtures" / "gemini_chat_session.json"
RECORDED_CWD = "/path/to/Demo"  # the project the transcript recorded (anonymised by its source): set to ours
NOW = 1_767_348_000.0  # 2026-01-02 10:00 UTC: the board's fixed clock
NEAR = 160_000  # the constructed transcript's last recorded context: past 90 % of 167 000 (Claude Code's threshold)


def clock() -> float:
    return NOW


def touch(path: Path, seconds_ago: float) -> None:
    stamp = int((NOW - seconds_ago) * 1e9)
    os.utime(path, ns=(stamp, stamp))


def environ(home: Path) -> dict[str, str]:
    """The environment of a user whose home is ``home`` (nothing of the real one leaks in)."""
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state")}


def claude_folder(home: Path, project: str) -> Path:
    folder = home / ".claude" / "projects" / project.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def raised(text: str, context: int) -> str:
    """``text`` (a transcript) with its last recorded usage raised to ``context`` tokens."""
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        value = json.loads(lines[index])
        usage = value.get("message", {}).get("usage") if isinstance(value.get("message"), dict) else None
        if usage:
            usage["cache_read_input_tokens"] = context - usage["input_tokens"] - usage["cache_creation_input_tokens"]
            lines[index] = json.dumps(value, ensure_ascii=False)
            break
    return "\n".join(lines) + "\n"


def make_home(home: Path) -> dict[str, Path]:
    """The three agents' sessions under ``home``; their paths by name."""
    paths = {}
    text = CLAUDE.read_text(encoding="utf-8")
    paths["claude"] = claude_folder(home, "/home/dev/src/shop") / "5c0375b4.jsonl"
    paths["claude"].write_text(text.replace(RECORDED_CWD, "/home/dev/src/shop"), encoding="utf-8")
    paths["near"] = claude_folder(home, "/home/dev/src/tokenbox") / "7d1e0f22.jsonl"
    paths["near"].write_text(raised(text.replace(RECORDED_CWD, "/home/dev/src/tokenbox"), NEAR), encoding="utf-8")
    rollouts = home / ".codex" / "sessions" / "2026" / "01" / "02"
    rollouts.mkdir(parents=True)
    paths["codex"] = rollouts / "rollout-2026-01-02T09-40-00-019b.jsonl"
    shutil.copyfile(CODEX, paths["codex"])
    project = "/home/dev/src/api"
    chats = home / ".gemini" / "tmp" / hashlib.sha256(project.encode()).hexdigest() / "chats"
    chats.mkdir(parents=True)
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {project: "api"}}))
    paths["gemini"] = chats / "session-2026-01-02T09-00-abcd.json"
    shutil.copyfile(GEMINI, paths["gemini"])
    for name, ago in (("near", 20), ("claude", 3), ("codex", 700), ("gemini", 3000)):
        touch(paths[name], ago)
    return paths


def append_request(path: Path, context: int, number: int) -> None:
    """Append one Claude Code request to the transcript at ``path``: a prompt, and a reply whose recorded
    usage makes its context ``context`` tokens."""
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    prompt_id, reply_id = str(uuid.UUID(int=2 * number)), str(uuid.UUID(int=2 * number + 1))
    common = {"isSidechain": False, "userType": "external", "cwd": last.get("cwd"), "sessionId": last.get("sessionId"),
              "version": last.get("version"), "timestamp": f"2026-01-02T10:{number % 60:02d}:00.000Z"}
    prompt = {**common, "parentUuid": last["uuid"], "type": "user", "uuid": prompt_id,
              "message": {"role": "user", "content": f"step {number}: go on"}}
    reply = {**common, "parentUuid": prompt_id, "type": "assistant", "uuid": reply_id, "requestId": f"req_{number}",
             "message": {"id": f"msg_{number:08d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                         "content": [{"type": "text", "text": f"done {number}"}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 6, "cache_creation_input_tokens": 100,
                                   "cache_read_input_tokens": context - 106, "output_tokens": 9}}}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(prompt) + "\n" + json.dumps(reply) + "\n")
