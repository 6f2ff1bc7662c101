"""``tokenbox statusline`` (CONTRACT §9): the §7 headline in one line, exit 0 whatever the input."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session
from tokenbox.core.commands.cli import main as cli_main
from tokenbox.core.commands.statusline import MARKER, run
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS, compact_buffer, warn_levels
from tokenbox.core.model.compaction import compact_threshold, window_for
from tokenbox.core.model.errors import ConfigError

REAL = Path(__file__).resolve().parent / "fixtures" / "real_sessions"
TRANSCRIPTS = [REAL / "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
               REAL / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"]


def status(payload: object, *args: str, environ: dict | None = None) -> str:
    out = io.StringIO()
    stdin = io.StringIO(payload if isinstance(payload, str) else json.dumps(payload))
    assert run(list(args), stdin, out, environ or {}) == 0
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    return text[:-1]


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:24])
def test_the_percentage_is_the_plans(tmp_path, path):
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for cut in range(3, len(lines) + 1, 4):
        part = tmp_path / "cut.jsonl"
        part.write_text("".join(lines[:cut]), encoding="utf-8")
        plan = Engine().plan(load_session(part))
        line = status({"transcript_path": str(part), "model": {"id": "claude-sonnet-4", "display_name": "Sonnet"}}, "--no-color")
        percent = int(re.search(r"ctx ≈?(\d+)%", line).group(1))
        assert percent == plan.usage_percent, (cut, line)
        assert ("≈" in line) == plan.pending


def test_colour_follows_the_warning_levels(tmp_path):
    payload = {"transcript_path": str(TRANSCRIPTS[1])}
    assert status(payload).startswith("\x1b[32m")  # 13 %: below the first level
    assert status(payload, "--warn-levels", "5,10,100").startswith("\x1b[31m")
    assert "\x1b" not in status(payload, environ={"NO_COLOR": "1"})
    custom = status(payload, "--no-color", "--format", "{tokens}/{window} {model}|{pending}")
    assert custom == "26k/200k |"


def test_room_before_auto_compact():
    assert window_for("claude-opus-4-7[1m]") == 1_000_000 and window_for("claude-sonnet-4") == 200_000
    assert compact_threshold(200_000, {}) == 167_000  # 200k - 20k reply reserve - 13k
    assert compact_threshold(200_000, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}) == 90_000
    assert compact_threshold(200_000, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "95"}) == 167_000  # only lowers it
    assert compact_threshold(200_000, {"DISABLE_AUTO_COMPACT": "1"}) is None
    assert compact_threshold(200_000, {}, buffer=40_000) == 160_000
    line = status({"transcript_path": str(TRANSCRIPTS[1])}, "--no-color")
    assert "140k to compact" in line  # 167000 - 26080
    assert "no auto-compact" in status({"transcript_path": str(TRANSCRIPTS[1])}, "--no-color", environ={"DISABLE_AUTO_COMPACT": "1"})


def test_thresholds_come_from_flags_environment_and_config(tmp_path):
    assert warn_levels(None, {}) == DEFAULT_WARN_LEVELS
    assert warn_levels("70,85,100", {}) == (70, 85, 100)
    assert warn_levels(None, {"TOKENBOX_WARN_LEVELS": "60,80,95"}) == (60, 80, 95)
    config = tmp_path / "tokenbox" / "config.yaml"
    config.parent.mkdir()
    config.write_text("warn_levels: [50, 70, 90]\ncompact_buffer: 30000\n", encoding="utf-8")
    environ = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert warn_levels(None, environ) == (50, 70, 90) and compact_buffer(None, environ) == 30_000
    for bad in ("90,80,100", "a,b,c", "75,90"):
        with pytest.raises(ConfigError):
            warn_levels(bad, {})
    with pytest.raises(ConfigError):
        compact_buffer("-5", {})


def test_the_engine_accepts_a_config_file_with_thresholds(tmp_path, monkeypatch, capsys):
    """warn_levels and compact_buffer sit in the same config file as max_ctx; the plan reads it."""
    config = tmp_path / "tokenbox" / "config.yaml"
    config.parent.mkdir()
    config.write_text("max_ctx: 4000\nwarn_levels: [50, 70, 90]\ncompact_buffer: 30000\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert cli_main(["plan", str(TRANSCRIPTS[0]), "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["ok"] is True


@pytest.mark.parametrize(
    "payload",
    ["", "not json", "[1, 2]", "{}", '{"transcript_path": 5}', '{"transcript_path": "/nonexistent/x.jsonl"}', "\x00\xff" * 10],
)
def test_bad_input_prints_a_marker_and_exits_0(payload):
    assert status(payload).startswith(MARKER)


def test_unreadable_or_odd_transcripts_print_a_marker(tmp_path):
    assert status({"transcript_path": str(tmp_path)}).startswith(MARKER)  # a directory
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10)
    assert status({"transcript_path": str(binary)}).startswith(MARKER)
    huge = tmp_path / "h.jsonl"
    huge.write_text('{"type": "user", "uuid": "u", "message": {"role": "user", "content": "' + "x" * 3_000_000 + '"}}\n')
    assert status({"transcript_path": str(huge)}).startswith(MARKER)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("BAD LINE\n" * 5 + TRANSCRIPTS[0].read_text(encoding="utf-8"), encoding="utf-8")
    assert "8%" in status({"transcript_path": str(bad)}, "--no-color")


def test_the_status_line_loads_no_tokenizer_tables_or_yaml():
    payload = json.dumps({"transcript_path": str(TRANSCRIPTS[0])})
    code = (
        "import io, os, sys; from tokenbox.core.commands.statusline import run; "
        f"run([], io.StringIO({payload!r}), io.StringIO(), {{}}); "
        "print(sorted(m for m in ('yaml', 'tiktoken', 'textual', 'tokenbox.core.planning.engine', 'tokenbox.core.tokens.bpe') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
