"""Nothing lost, nothing leaked: tokenbox reads the session, writes only stdout and stderr, stays offline.

Each CLI run happens in a child with an audit hook (``sys.addaudithook``) installed before tokenbox is
imported. The hook records every ``open`` with a write flag, every file-system change (mkdir, rename,
remove, chmod, ...), every process spawn, and refuses every socket operation, so a tokenizer that
tried to download its data would fail the plan. HOME, the XDG folders and TMPDIR point at empty
folders that must stay empty; the session file must keep its bytes and its modification time.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session
from tokenbox.core.planning.config import Settings
from tokenbox.core.tokens.tokenizers import TokenizerRegistry

from tests.hardening.support import TIMEOUT, isolated_env

_AUDITED = r"""
import atexit, json, os, runpy, sys

log = open(sys.argv[1], "w", encoding="utf-8")  # opened before the hook: the report, not tokenbox's
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
CHANGES = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.truncate",
           "os.chmod", "os.chown", "os.utime", "os.chflags", "shutil.copyfile", "shutil.move",
           "shutil.rmtree", "shutil.make_archive", "tempfile.mkstemp", "tempfile.mkdtemp"}
SPAWNS = {"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "pty.spawn"}
events = []

def hook(event, args):
    if event == "open":
        path, mode, flags = args
        if (mode is not None and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
            events.append(["write", str(path), mode, flags])
    elif event in CHANGES:
        events.append(["change", event, repr(args)[:200]])
    elif event in SPAWNS:
        events.append(["spawn", event, repr(args)[:200]])
    elif event.startswith(("socket.", "urllib.", "http.", "ftplib.", "smtplib.", "webbrowser.")):
        events.append(["network", event, repr(args)[:200]])
        raise OSError("network access is disabled in this test")

atexit.register(lambda: (json.dump(events, log), log.close()))
sys.addaudithook(hook)
sys.argv = ["tokenbox", *sys.argv[2:]]
runpy.run_module("tokenbox.core.commands.cli", run_name="__main__")
"""

SESSION = """\
tokenbox: 1
name: read-only check
tokenizer: {tokenizer}
budget: {{max_ctx: 300, reserve_out: 20}}
sections:
  - id: prefix
    kind: prefix
    assistant_name: Passepartout
    tools: "read_file(path): return a file"
  - id: awareness
    kind: context
    foveal_focus: task-42
    memory: [user prefers pytest, repo uses uv]
  - id: logs
    kind: logs
    text: "{logs}"
  - id: user
    kind: user
    text: Fix the failing test. Déjà vu, 日本語, 🙂.
"""
LOG = "\\n".join(f"step {i}: compiled module {i} without warnings" for i in range(60))


def audited_run(*args: str, sandbox: Path) -> tuple[subprocess.CompletedProcess[bytes], list]:
    """``tokenbox ARGS`` under the audit hook; HOME, XDG folders and TMPDIR inside ``sandbox``."""
    report = sandbox.parent / f"{sandbox.name}-audit.json"
    tmp = sandbox / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-c", _AUDITED, str(report), *args],
        env=isolated_env(sandbox, {"TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp)}),
        input=b"",
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    events = json.loads(report.read_text(encoding="utf-8"))
    report.unlink()
    return result, events


def files_under(folder: Path) -> list[str]:
    """Everything in ``folder`` except the empty tmp folder the sandbox starts with."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p != folder / "tmp")


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    path = tmp_path / "sandbox"
    path.mkdir()
    return path


# Every command with one tokenizer (what a command writes), and the other tokenizer once (what loading
# its BPE table might write or fetch): each run is a fresh process, ~0.5 s of CPU.
RUNS = [
    *((command, "o200k_base") for command in (["plan"], ["plan", "--json"], ["render"], ["check"])),
    (["plan", "--json"], "cl100k_base"),
]


@pytest.mark.parametrize(("command", "tokenizer"), RUNS, ids=[f"{' '.join(c)}-{t}" for c, t in RUNS])
def test_commands_write_nothing_and_stay_offline(tmp_path, sandbox, tokenizer, command):
    session = tmp_path / "session.yaml"
    session.write_text(SESSION.format(tokenizer=tokenizer, logs=LOG), encoding="utf-8")
    before = (session.read_bytes(), session.stat().st_mtime_ns, session.stat().st_mode)
    result, events = audited_run(*command, str(session), sandbox=sandbox)
    assert result.returncode in (0, 1), result.stderr  # check may find the session over its context
    assert b"Traceback" not in result.stderr
    assert events == []
    assert files_under(sandbox) == []
    assert (session.read_bytes(), session.stat().st_mtime_ns, session.stat().st_mode) == before
    if command == ["plan", "--json"]:
        plan = json.loads(result.stdout)
        assert plan["tokenizer"] == {**plan["tokenizer"], "name": tokenizer, "exact": True}
        assert plan["ok"] and plan["steps"], "the budget should make the layout trim"


def test_a_log_and_a_bad_file_write_nothing_either(tmp_path, sandbox):
    line = json.dumps({"tokenbox": 1, "tokenizer": "o200k_base", "sections": [{"id": "u", "kind": "user", "text": "hi"}]})
    log = tmp_path / "turns.jsonl"
    log.write_text(f"{line}\n{line}\n{line[:30]}", encoding="utf-8")
    result, events = audited_run("plan", str(log), "--turn", "1", sandbox=sandbox)
    assert result.returncode == 0 and events == [], (result.stderr, events)
    bad = tmp_path / "bad.yaml"
    bad.write_text("tokenbox: 1\nname: !!python/object/apply:os.system [touch pwned]\nsections: []\n")
    result, events = audited_run("render", str(bad), sandbox=sandbox)
    assert result.returncode == 2 and events == [], (result.stderr, events)
    assert files_under(sandbox) == [] and not (tmp_path / "pwned").exists()


def test_the_hook_sees_writes_and_network(tmp_path, sandbox):
    """The audit hook is not blind: a child that writes a file and opens a socket is caught."""
    code = (
        "import socket, pathlib, sys; pathlib.Path(sys.argv[1]).write_text('x')\n"
        "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\nexcept OSError:\n    pass\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(code)
    report = tmp_path / "audit.json"
    launcher = _AUDITED.replace('runpy.run_module("tokenbox.core.commands.cli", run_name="__main__")', "runpy.run_path(sys.argv[1])")
    target = sandbox / "written.txt"
    subprocess.run([sys.executable, "-c", launcher, str(report), str(probe), str(target)], timeout=TIMEOUT, check=True)
    kinds = {event[0] for event in json.loads(report.read_text())}
    assert {"write", "network"} <= kinds


def test_api_opens_every_file_read_only(tmp_path, monkeypatch):
    """In process: loading, tokenizer data, planning and rendering open files only for reading."""
    session = tmp_path / "session.yaml"
    session.write_text(SESSION.format(tokenizer="o200k_base", logs=LOG), encoding="utf-8")
    opened: list[tuple[str, object]] = []
    real_open, real_os_open = builtins.open, os.open

    def recording_open(file, mode="r", *args, **kwargs):
        opened.append((str(file), mode))
        return real_open(file, mode, *args, **kwargs)

    def recording_os_open(path, flags, *args, **kwargs):
        opened.append((str(path), flags))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(os, "open", recording_os_open)
    engine = Engine(TokenizerRegistry(plugins=False), Settings())  # a fresh registry loads the BPE data again
    plan = engine.plan(load_session(session))
    plan.render()
    plan.to_dict()
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    assert any(path == str(session) for path, _ in opened)
    for path, mode in opened:
        if isinstance(mode, int):
            assert not mode & write_flags, (path, mode)
        else:
            assert not set(str(mode)) & set("wax+"), (path, mode)
