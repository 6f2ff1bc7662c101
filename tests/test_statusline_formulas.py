"""``tokenbox statusline`` against figures computed here from the recorded usage and Claude Code's formula.

A small transcript records one request whose context is a chosen number ``C`` (input + cache creation
+ cache read). Everything the line shows follows from ``C`` and CONTRACT §9/§11 and the compaction
formula (``window - min(20 000, window // 10) - 13 000``), none of it from the importer: the ``[1m]``
window, the colour exactly at a warning level, ``--compact-buffer``, ``TOKENBOX_COMPACT_BUFFER``,
``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` and the ``{biggest}``/``{compact_at}``/``{thread}`` placeholders.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tokenbox.core.commands.statusline import run

GREEN, YELLOW, RED, RESET = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[0m"
FIELDS = "{tokens}|{window}|{pct}|{compact_at}|{to_compact}|{thread}|{biggest}"


def _line(kind: str, uuid: str, parent: str | None, message: dict) -> dict:
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s1",
            "version": "2.1.0", "message": message}


def _usage(context: int) -> dict:
    return {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": context - 103, "output_tokens": 5}


def transcript(path: Path, context: int, tool: str | None = None, result: str = "", first: str = "look at the project",
               after: str | None = None) -> Path:
    """A user message and one recorded request of ``context`` tokens; with ``tool``, a first request that
    called it, its result (then the user's ``after``, when given), and the recorded request after it."""
    lines = [_line("user", "u1", None, {"role": "user", "content": first})]
    parent = "u1"
    if tool is not None:
        call = {"type": "tool_use", "id": "t1", "name": tool, "input": {"path": "src"}}
        lines.append(_line("assistant", "a0", "u1", {"id": "m0", "role": "assistant", "model": "claude-sonnet-4-5",
                                                     "content": [call], "usage": _usage(context // 2)}))
        lines.append(_line("user", "r1", "a0", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": result}]}))
        parent = "r1"
        if after is not None:
            lines.append(_line("user", "u2", "r1", {"role": "user", "content": after}))
            parent = "u2"
    lines.append(_line("assistant", "a1", parent, {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                                                   "content": [{"type": "text", "text": "done"}], "usage": _usage(context)}))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def status(path: Path, *args: str, model: str = "claude-sonnet-4-5", environ: dict | None = None) -> str:
    out = io.StringIO()
    payload = json.dumps({"transcript_path": str(path), "model": {"id": model, "display_name": "Sonnet"}})
    assert run(list(args), io.StringIO(payload), out, environ or {}) == 0
    return out.getvalue().removesuffix("\n")


def short(tokens: int) -> str:
    """The status line's short count, written out again here: 950, 1.2k, 41k, 1.2M, 1M (issue 26: a
    1 000 000 window prints 1M)."""
    if tokens >= 1_000_000:
        text = f"{tokens / 1_000_000:.1f}"
        return (text[:-2] if text.endswith(".0") else text) + "M"
    if tokens >= 10_000:
        return f"{tokens // 1000}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k"
    return str(tokens)


def claude_code_threshold(window: int) -> int:
    return window - min(20_000, window // 10) - 13_000


@pytest.mark.parametrize(("model", "window"), [("claude-sonnet-4-5", 200_000), ("claude-sonnet-4-5[1m]", 1_000_000),
                                               ("claude-opus-4-7[1M]", 1_000_000)])
def test_every_figure_follows_from_the_recorded_context(tmp_path, model, window):
    context = 150_000
    path = transcript(tmp_path / "t.jsonl", context)
    compact_at = claude_code_threshold(window)
    expected = [short(context), short(window), str(100 * context // window), short(compact_at),
                short(compact_at - context), "main", "system+tools"]
    assert status(path, "--no-color", "--format", FIELDS, model=model).split("|") == expected


@pytest.mark.parametrize(("context", "colour"), [(149_999, GREEN), (150_000, YELLOW), (179_999, YELLOW), (180_000, RED),
                                                 (199_999, RED)])
def test_the_colour_changes_exactly_at_each_level(tmp_path, context, colour):
    """75 % and 90 % of 200 000 are 150 000 and 180 000: the level's own figure takes the level's colour."""
    path = transcript(tmp_path / "t.jsonl", context)
    line = status(path, "--format", "{pct}")
    assert line == f"{colour}{100 * context // 200_000}{RESET}"


def test_custom_levels_colour_exactly_at_their_figures(tmp_path):
    path = transcript(tmp_path / "t.jsonl", 100_000)  # 50 %
    assert status(path, "--warn-levels", "50,60,100", "--format", "{pct}") == f"{YELLOW}50{RESET}"
    assert status(path, "--warn-levels", "51,60,100", "--format", "{pct}") == f"{GREEN}50{RESET}"
    assert status(path, "--format", "{pct}", environ={"TOKENBOX_WARN_LEVELS": "40,50,100"}) == f"{RED}50{RESET}"


def test_compact_buffer_from_the_flag_the_environment_and_their_order(tmp_path):
    context = 150_000
    path = transcript(tmp_path / "t.jsonl", context)
    fields = "{compact_at} {to_compact}"
    assert status(path, "--no-color", "--compact-buffer", "40000", "--format", fields) == f"{short(160_000)} {short(10_000)}"
    assert status(path, "--no-color", "--compact-buffer=25000", "--format", fields) == f"{short(175_000)} {short(25_000)}"
    env = {"TOKENBOX_COMPACT_BUFFER": "30000"}
    assert status(path, "--no-color", "--format", fields, environ=env) == f"{short(170_000)} {short(20_000)}"
    # the flag wins over the environment
    assert status(path, "--no-color", "--compact-buffer", "40000", "--format", fields, environ=env) == f"{short(160_000)} {short(10_000)}"
    # past the threshold: nothing left, not a negative room
    assert status(path, "--no-color", "--compact-buffer", "60000", "--format", fields) == f"{short(140_000)} 0"


@pytest.mark.parametrize(("cap", "window_used"), [("100000", 100_000), ("150000", 150_000), ("300000", 200_000), ("", 200_000)])
def test_claude_code_auto_compact_window_caps_the_window(tmp_path, cap, window_used):
    context = 50_000
    path = transcript(tmp_path / "t.jsonl", context)
    compact_at = claude_code_threshold(window_used)
    line = status(path, "--no-color", "--format", "{compact_at} {to_compact} {window}",
                  environ={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": cap})
    assert line == f"{short(compact_at)} {short(compact_at - context)} {short(200_000)}"  # the window shown stays the model's


def test_biggest_names_the_largest_part(tmp_path):
    """A tool result far larger than what the request holds besides it is the biggest part, named by its
    tool (an MCP tool by its server); with a tiny transcript the hidden system prompt and tools are."""
    big = "\n".join(f"row {i}: the quick brown fox jumps over the lazy dog" for i in range(4000))  # ~50k tokens
    mcp = transcript(tmp_path / "mcp.jsonl", 60_000, tool="mcp__files__read_file", result=big)
    assert status(mcp, "--no-color", "--format", "{biggest}") == "mcp:files"
    bash = transcript(tmp_path / "bash.jsonl", 60_000, tool="Bash", result=big)
    assert status(bash, "--no-color", "--format", "{biggest}") == "Bash"
    small = transcript(tmp_path / "small.jsonl", 60_000)
    assert status(small, "--no-color", "--format", "{biggest}") == "system+tools"


def test_the_default_line(tmp_path):
    context = 150_000
    path = transcript(tmp_path / "t.jsonl", context)
    line = status(path, "--no-color")
    assert line.startswith(f"ctx 75% · {short(claude_code_threshold(200_000) - context)} to compact · system+tools ")


@pytest.mark.parametrize(("context", "shown"), [(999, "999"), (1000, "1.0k"), (1049, "1.0k"), (9999, "10.0k"), (10_000, "10k"),
                                                (999_999, "999k"), (1_000_000, "1M"), (1_250_000, "1.2M")])
def test_short_counts_at_their_boundaries(tmp_path, context, shown):
    path = transcript(tmp_path / "t.jsonl", context)
    assert status(path, "--no-color", "--format", "{tokens}", model="claude-sonnet-4-5[1m]") == shown


@pytest.mark.parametrize(("context", "model", "pct"), [(1000, "claude-sonnet-4-5", "0"), (1_200_000, "claude-sonnet-4-5[1m]", "100")])
def test_the_percent_is_clamped_to_0_and_100(tmp_path, context, model, pct):
    path = transcript(tmp_path / "t.jsonl", context)
    assert status(path, "--no-color", "--format", "{pct}", model=model) == pct


@pytest.mark.parametrize(("environ", "compact_at"), [
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "0"}, 167_000),  # not a window: ignored
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "1"}, 0),  # a one-token window: nothing before compaction
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "inf"}, 167_000),  # not a number: ignored
    ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "nan"}, 167_000),
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "0"}, 167_000),  # no override
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "0.5"}, 90_000),  # a fraction: half the effective window (180 000)
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "1"}, 167_000),  # the fraction 1: no lower than the default
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}, 90_000),  # a percentage
    ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "250"}, 167_000),  # past 100 %: ignored
])
def test_claude_codes_compaction_variables(tmp_path, environ, compact_at):
    path = transcript(tmp_path / "t.jsonl", 50_000)
    line = status(path, "--no-color", "--format", "{compact_at}|{to_compact}", environ=environ)
    assert line == f"{short(compact_at)}|{short(max(0, compact_at - 50_000))}"


def test_a_buffer_past_the_window_leaves_nothing(tmp_path):
    path = transcript(tmp_path / "t.jsonl", 50_000)
    assert status(path, "--no-color", "--compact-buffer", "300000", "--format", "{compact_at}|{to_compact}") == "0|0"


def test_without_auto_compaction_the_line_says_so_once(tmp_path):
    path = transcript(tmp_path / "t.jsonl", 150_000)
    line = status(path, "--no-color", environ={"DISABLE_AUTO_COMPACT": "1"})
    assert line.startswith("ctx 75% · no auto-compact · system+tools ") and "to compact" not in line
    assert status(path, "--no-color", "--format", "{compact_at}", environ={"DISABLE_COMPACT": "true"}) == "-"


def test_a_transcript_without_a_request_says_so(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps(_line("user", "u1", None, {"role": "user", "content": "hello"})) + "\n", encoding="utf-8")
    # no request recorded: predicted with Claude Code's typical hidden part (≈), never an overflow (issue 26)
    assert status(path, "--no-color", "--format", "{pending}{tokens}") == "≈25k"
    path.write_text("", encoding="utf-8")
    assert status(path, "--no-color") == "ctx – (no request yet)"


def test_an_mcp_like_name_without_a_server_part_is_kept_whole(tmp_path):
    big = "\n".join(f"row {i}: the quick brown fox jumps over the lazy dog" for i in range(4000))
    path = transcript(tmp_path / "solo.jsonl", 60_000, tool="mcp__solo", result=big)
    assert status(path, "--no-color", "--format", "{biggest}") == "mcp__solo"


def test_a_request_further_back_than_the_tail_is_found(tmp_path):
    """The last recorded request lies before a line longer than the 256 KiB tail: the tail grows until it
    holds it, and the line shows what a full read of the file plans."""
    from tokenbox.core import Engine, load_session

    path = transcript(tmp_path / "t.jsonl", 150_000)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(_line("user", "u2", "a1", {"role": "user", "content": "z " * 200_000})) + "\n")
    plan = Engine().plan(load_session(path))
    line = status(path, "--no-color", "--format", "{pending}{pct}|{tokens}")
    # the percent of the window, not clamped for a prediction (the plan's window.percent; usage_percent stops at 100)
    assert line == f"≈{plan.window_percent}|{short(plan.tokens_after)}" and plan.pending


def test_the_statusline_command_passes_its_options(tmp_path):
    import subprocess
    import sys

    path = transcript(tmp_path / "t.jsonl", 150_000)
    payload = json.dumps({"transcript_path": str(path), "model": {"id": "claude-sonnet-4-5"}})
    code = "import sys; from tokenbox.core.commands.statusline import main; sys.exit(main())"
    args = ["statusline", "--no-color", "--format", "{pct}|{thread}"]
    result = subprocess.run([sys.executable, "-c", code, *args], input=payload, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "75|main\n")


def test_a_tool_result_before_the_latest_message_is_still_named_by_its_tool(tmp_path):
    big = "\n".join(f"row {i}: the quick brown fox jumps over the lazy dog" for i in range(4000))
    path = transcript(tmp_path / "t.jsonl", 60_000, tool="Bash", result=big, after="thanks, now summarise")
    assert status(path, "--no-color", "--format", "{biggest}") == "Bash"


def test_the_first_line_of_a_short_transcript_is_read(tmp_path):
    """A transcript shorter than the tail is read whole, its first line included: here the first message
    is the biggest part of the request."""
    from tokenbox.core import Engine, load_session

    first = "\n".join(f"note {i}: the quick brown fox jumps over the lazy dog" for i in range(3000))  # ~150 KB
    path = transcript(tmp_path / "t.jsonl", 60_000, first=first)
    assert path.stat().st_size < 256 * 1024
    plan = Engine().plan(load_session(path))
    assert status(path, "--no-color", "--format", "{biggest}|{pct}") == f"history|{plan.usage_percent}"
