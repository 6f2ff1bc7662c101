"""The headless ``tokenbox`` command: exit codes, output, one-line errors.

Runs are in-process (``tokenbox.core.commands.cli.main``); one test runs the installed console script end to end.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.helpers import count
from tests.inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_sessions"


def tokenbox(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_main(args, environ={**os.environ, **(env or {})})


def test_the_console_script_runs_end_to_end():
    """The one subprocess sample: the installed ``tokenbox`` script plans and fails like ``main``."""
    script = Path(sys.executable).parent / "tokenbox"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tokenbox.core.commands.cli"]
    path = str(SAMPLES / "facet_layout.yaml")
    done = subprocess.run([*command, "plan", path, "--json"], capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stderr == b""
    assert json.loads(done.stdout) == json.loads(tokenbox("plan", path, "--json").stdout)
    bad = subprocess.run([*command, "plan", path, "--tokenizer", "nope"], capture_output=True, timeout=120)
    assert_one_line_error(bad, "unknown tokenizer 'nope'")
    if os.path.exists("/dev/full"):  # a full disk is the system's refusal, not a bug: one line, no "internal error"
        with open("/dev/full", "wb") as full:
            refused = subprocess.run([*command, "plan", path], stdout=full, stderr=subprocess.PIPE, timeout=120)
        err = assert_one_line_error(refused, "the output: No space left on device")
        assert "internal error" not in err


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], *fragments: str) -> str:
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.startswith("tokenbox: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".json", ".jsonl")))
def test_every_sample_plans_and_renders_exactly(name):
    path = str(SAMPLES / name)
    result = tokenbox("plan", path, "--json")
    plan = json.loads(result.stdout)
    assert result.returncode == (0 if plan["ok"] else 1)
    assert set(plan) >= {"schema", "ok", "error", "tokenizer", "budget", "tokens", "usage_percent", "fingerprint", "caches", "sections", "steps"}
    assert plan["schema"] == "tokenbox.plan/1"
    rendered = tokenbox("render", path)
    if plan["ok"]:
        assert rendered.returncode == 0
        assert plan["fingerprint"] == "sha256:" + hashlib.sha256(rendered.stdout).hexdigest()
        assert plan["tokens"]["after"] == count(rendered.stdout.decode(), plan["tokenizer"]["name"])
        assert plan["tokens"]["after"] <= plan["budget"]["available"]
    else:
        assert rendered.returncode == 1 and rendered.stdout == b""
        assert plan["error"]["kind"] == "ContextCriticalOverflow"
    table = tokenbox("plan", path)
    assert table.returncode == result.returncode
    assert b"fingerprint sha256:" in table.stdout


def test_plan_json_field_by_field():
    plan = json.loads(tokenbox("plan", str(SAMPLES / "passepartout_turn.yaml"), "--json").stdout)
    assert plan["tokenizer"]["name"] == "o200k_base" and plan["tokenizer"]["exact"] is True
    assert plan["budget"] == {"max_ctx": 16384, "reserve_out": 1024, "headroom": 0.05, "available": 14540}
    assert plan["caches"] == {"prefix": "miss", "context": "rebuilt"}
    section = plan["sections"][0]
    assert list(section) == ["id", "kind", "critical", "priority", "shrink", "grow", "min", "tokens_before",
                             "tokens_after", "allotment", "action", "lenses"]
    assert section["critical"] is True and section["kind"] == "prefix"


def test_steps_in_plan_json():
    plan = json.loads(tokenbox("plan", str(SAMPLES / "facet_layout.yaml"), "--json").stdout)
    assert plan["steps"]
    assert list(plan["steps"][0]) == ["index", "section", "op", "detail", "tokens_before", "tokens_after", "deficit_after"]
    assert [s["index"] for s in plan["steps"]] == list(range(1, len(plan["steps"]) + 1))


def test_overflow_exit_code_and_message():
    result = tokenbox("plan", str(SAMPLES / "overflow.yaml"))
    assert result.returncode == 1
    assert b"ContextCriticalOverflow" in result.stderr and b"Traceback" not in result.stderr


def test_budget_and_tokenizer_flags():
    path = str(SAMPLES / "passepartout_turn.yaml")
    plan = json.loads(tokenbox("plan", path, "--json", "--budget", "1400", "--tokenizer", "cl100k_base").stdout)
    assert plan["budget"]["max_ctx"] == 1400 and plan["tokenizer"]["name"] == "cl100k_base"
    assert plan["steps"]


def test_turns_of_a_jsonl_log():
    path = str(SAMPLES / "agent_log.jsonl")
    first = json.loads(tokenbox("plan", path, "--json", "--turn", "1").stdout)
    newest = json.loads(tokenbox("plan", path, "--json", "--turn", "-1").stdout)
    default = json.loads(tokenbox("plan", path, "--json").stdout)
    assert newest == default
    assert first["caches"] == {"prefix": "miss", "context": "rebuilt"}
    third = json.loads(tokenbox("plan", path, "--json", "--turn", "3").stdout)
    assert third["caches"]["context"] == "skipped"
    assert_one_line_error(tokenbox("plan", path, "--turn", "99"), "agent_log.jsonl", "turn 99 is out of range")


def test_check_gate():
    path = str(SAMPLES / "passepartout_turn.yaml")
    ok = tokenbox("check", path)
    assert ok.returncode == 0 and ok.stdout.startswith(b"ok: ")
    over = tokenbox("check", path, "--budget", "300", "--reserve-out", "0")
    assert over.returncode == 1
    assert over.stderr.count(b"\n") == 1 and b"over context" in over.stderr
    allowed = tokenbox("check", path, "--budget", "300", "--reserve-out", "0", "--allow-over-context")
    assert allowed.returncode == 0 and b"warning" in allowed.stderr


def test_tokenizers_command_lists_exact_and_approximate():
    result = tokenbox("tokenizers")
    out = result.stdout.decode()
    assert result.returncode == 0
    for line in ("o200k_base", "cl100k_base", "heuristic", "floop-estimate"):
        assert line in out
    assert "approximate" in out and "exact" in out


def test_bad_input_is_one_line_with_position(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tokenbox: 1\nsections:\n  - id: a\n    text: hi\n    priorty: 3\n")
    err = assert_one_line_error(tokenbox("plan", str(path)), f"{path}:5:5: unknown key 'priorty'", "did you mean 'priority'")
    assert err.rstrip().endswith(")")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["plan"], "the following arguments are required"),
        (["plan", "x.yaml", "--budget", "0"], "--budget"),
        (["plan", "x.yaml", "--budget", "abc"], "--budget"),
        (["plan", "x.yaml", "--turn", "0"], "--turn"),
        (["plan", "x.yaml", "--bogus"], "unrecognized arguments"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_flags_are_one_line_errors(args, fragment):
    assert_one_line_error(tokenbox(*args), fragment)


def test_missing_file_and_directory(tmp_path):
    assert_one_line_error(tokenbox("plan", str(tmp_path / "nope.yaml")), "nope.yaml: no such file")
    assert_one_line_error(tokenbox("render", str(tmp_path)), "is a directory")


def test_unknown_tokenizer_flag():
    assert_one_line_error(tokenbox("plan", str(SAMPLES / "facet_layout.yaml"), "--tokenizer", "nope"), "unknown tokenizer 'nope'")


def test_environment_budget(tmp_path):
    plan = json.loads(tokenbox("plan", str(SAMPLES / "facet_layout.yaml"), "--json", env={"TOKENBOX_MAX_CTX": "2000"}).stdout)
    assert plan["budget"]["max_ctx"] == 2000
    assert_one_line_error(tokenbox("plan", str(SAMPLES / "facet_layout.yaml"), env={"TOKENBOX_MAX_CTX": "lots"}), "TOKENBOX_MAX_CTX")


@pytest.mark.parametrize("source", [
    ROOT / "tests" / "fixtures" / "real_sessions" / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    ROOT / "tests" / "importers" / "fixtures" / "codex_rollout_v0.135_exec.jsonl",
])
def test_a_log_torn_inside_a_character_plans_as_the_log_before_the_torn_line(tmp_path, source):
    """An agent's write caught half-way can end inside a multi-byte character (``é`` is C3 A9): the unfinished
    line is not read yet, never a decoding error; the plan is the plan of the log without it."""
    whole = source.read_bytes()
    torn = tmp_path / f"torn{source.suffix}"
    torn.write_bytes(whole + '{"type":"user","message":{"role":"user","content":"café'.encode()[:-1])
    before = tmp_path / f"before{source.suffix}"
    before.write_bytes(whole)
    planned = tokenbox("plan", str(torn), "--json")
    assert planned.returncode in (0, 1) and planned.stderr == b""
    expected = json.loads(tokenbox("plan", str(before), "--json").stdout)
    got = json.loads(planned.stdout)
    assert {k: v for k, v in got.items() if k != "source"} == {k: v for k, v in expected.items() if k != "source"}
