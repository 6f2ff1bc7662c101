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
    # one user line and no request yet: the typical hidden part plus that line, predicted (≈), never an overflow
    assert status({"transcript_path": str(huge)}, "--no-color").startswith("ctx ≈")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("BAD LINE\n" * 5 + TRANSCRIPTS[0].read_text(encoding="utf-8"), encoding="utf-8")
    assert "8%" in status({"transcript_path": str(bad)}, "--no-color")


def test_the_status_line_loads_no_tokenizer_tables_or_yaml():
    """Nor the argument parser, typing, the price table (only a {cost} placeholder needs it), the image reader,
    the JSON document parser, or dataclasses and the inspect it imports (the chain's classes are
    ``model.records``')."""
    payload = json.dumps({"transcript_path": str(TRANSCRIPTS[0])})
    code = (
        "import io, os, sys; from tokenbox.core.commands.statusline import run; "
        f"run([], io.StringIO({payload!r}), io.StringIO(), {{}}); "
        "print(sorted(m for m in ('yaml', 'tiktoken', 'textual', 'tokenbox.core.planning.engine', 'tokenbox.core.tokens.bpe', "
        "'argparse', 'typing', 'tokenbox.core.model.prices', 'tokenbox.core.sources.readers.images', 'tokenbox.core.parse.nodes', "
        "'dataclasses', 'inspect') "
        "if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_stdin_that_is_never_closed_does_not_hang_the_status_line():
    """Claude Code closes stdin after its JSON; a caller that does not must not block the line forever."""
    import os

    from tokenbox.core.commands.statusline import read_stdin

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "r", closefd=False) as stdin:
            assert read_stdin(stdin, timeout=0.05) == ""  # nothing ever written: the timeout ends it
            os.write(write_end, b'{"transcript_path": ')
            assert read_stdin(stdin, timeout=0.05) == '{"transcript_path": '  # half an object: the timeout again
            payload = json.dumps({"transcript_path": str(TRANSCRIPTS[1])}).encode()
            os.write(write_end, payload)
            # a whole object and the pipe still open: no wait for a timeout (an hour would fail the suite)
            assert read_stdin(stdin, timeout=3600) == payload.decode()
            os.write(write_end, payload)
            out = io.StringIO()
            assert run(["--no-color"], stdin, out, {}) == 0
            assert out.getvalue().startswith("ctx 13%")
    finally:
        os.close(read_end)
        os.close(write_end)


def test_escape_sequences_in_a_tool_name_a_model_or_the_template_never_reach_the_terminal(tmp_path):
    evil = "\x1b]0;pwned\x07\x1b[2J"
    lines = TRANSCRIPTS[1].read_text(encoding="utf-8").splitlines()
    renamed = []
    for line in lines:  # every tool the transcript calls gets a hostile name
        record = json.loads(line)
        content = (record.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    block["name"] = evil + block["name"]
        renamed.append(json.dumps(record))
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(renamed) + "\n", encoding="utf-8")
    payload = {"transcript_path": str(path), "model": {"id": "claude-sonnet-4", "display_name": "Son\x1b[31mnet"}}
    line = status(payload, "--no-color", "--format", "\x1b[5m{biggest} {model} {thread}\x9b2J")
    assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line
    assert "\\x1b" in line and "Son\\x1b[31mnet" in line
    coloured = status(payload, "--format", "{biggest}\x1b[0m")
    assert coloured.count("\x1b") == 2 and coloured.startswith("\x1b[3") and coloured.endswith("\x1b[0m")  # ours only


def _chained_user_lines(path: Path, count: int) -> None:
    parent = None
    with path.open("w", encoding="utf-8") as handle:
        for number in range(count):
            uuid = f"00000000-0000-0000-0000-{number + 1:012d}"
            handle.write(json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s", "cwd": "/w",
                                     "message": {"role": "user", "content": f"line {number}: more input"}}) + "\n")
            parent = uuid


def test_chained_user_lines_without_a_request_cost_memory_linear_in_their_number(tmp_path):
    """One user message made of n lines (no request yet) was n copies of a growing block list: n² / 2."""
    import gc
    import tracemalloc

    from tokenbox.core.commands.statusline import headline

    # what a first read makes once (imports, caches) and what earlier tests left to collect are not the file's:
    # a short chain read first, and a collection before each measured read (a ratio seen at 2.6+ in one order)
    _chained_user_lines(tmp_path / "warm.jsonl", 50)
    headline(str(tmp_path / "warm.jsonl"), "claude-sonnet-4", {}, None)
    peaks = []
    for count in (1500, 3000):
        path = tmp_path / f"chain{count}.jsonl"
        _chained_user_lines(path, count)
        gc.collect()
        tracemalloc.start()
        try:
            line = headline(str(path), "claude-sonnet-4", {}, None)  # no request yet: a prediction, every line read
            assert line is not None and line.pending
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] / peaks[0] < 2.6, peaks  # twice the lines, about twice the memory


def test_cost_placeholders_price_the_newest_request_and_pass_claude_codes_total():
    # the short transcript's last request: claude-sonnet-4, 5 input + 129 cache write + 17 303 cache read,
    # 72 output, at Anthropic's published prices (3, 3.75, 0.30, 15 USD per million tokens)
    expected = (5 * 3 + 129 * 3.75 + 17_303 * 0.30 + 72 * 15) / 1e6
    payload = {"transcript_path": str(TRANSCRIPTS[0]), "cost": {"total_cost_usd": 8.342332}}
    assert status(payload, "--no-color", "--format", "{cost} of {session_cost}") == f"${expected:.4f} of $8.34"  # under a cent: four decimals
    odd = {"transcript_path": str(TRANSCRIPTS[0]), "cost": {"total_cost_usd": "lots"}}
    assert status(odd, "--no-color", "--format", "{session_cost}") == "–"


def test_the_status_line_has_its_help_and_is_listed(capsys):
    out = io.StringIO()
    assert run(["--help"], io.StringIO(""), out, {}) == 0  # never waits for stdin
    text = out.getvalue()
    assert text.startswith("usage: tokenbox statusline") and "{cost}" in text and "--compact-buffer" in text
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--help"])
    assert exit_info.value.code == 0
    assert re.search(r"^\s+statusline\s*$|^\s+statusline\s+\S", capsys.readouterr().out, re.MULTILINE)
