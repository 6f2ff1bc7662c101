"""Untrusted text in CLI output: escaped and one line in tables and errors, byte-exact in ``render``.

Session names, values, behaviour names and file names may hold markup (``[bold]``), ANSI escapes,
control characters, a megabyte on one line, wide CJK, emoji, zero-width and right-to-left marks.
Error lines and the ``plan`` table escape what could move the cursor or restyle a terminal
(``textsafe.printable``) and stay one line; ``render`` writes the context exactly as it is.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from tokenbox.core import Engine, SessionError, load_session
from tokenbox.core.model.errors import BadInput
from tokenbox.core.model.textsafe import printable
from tokenbox.core.planning.config import Settings

from tests.hardening.support import one_line_error, run_cli

HOSTILE = (
    "[bold red]markup[/] [link=file:///etc/passwd]x[/link] "
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x9b31m \x7f \x85 "  # ANSI CSI and OSC, C1 CSI, DEL, NEL
    "cr\r lf\n tab\t nul\x00 "
    "\u202eevil.exe\u202c \u2066iso\u2069 \u200f rtl "  # bidi overrides and isolates
    "zw\u200b\u200d\ufeff\u00ad \u2028\u2029 "  # zero-width, soft hyphen, line/paragraph separators
    "中文字 👩\u200d👩\u200d👧 🇯🇵 e\u0301 \U000e0041"  # wide CJK, ZWJ emoji, flags, combining, tag char
)
MEGABYTE = "x" * 1_000_000
UNSAFE_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")


def unsafe_characters(text: str) -> list[str]:
    """Characters that could act on a terminal (a newline is fine only as a line end)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in UNSAFE_CATEGORIES]


def write_session(path: Path, **top) -> Path:
    doc = {"tokenbox": 1, "tokenizer": "o200k_base", "budget": {"max_ctx": 400_000}}
    doc.update(top)
    doc.setdefault("sections", [{"id": "user", "kind": "user", "text": "hello"}])
    path.write_text(json.dumps(doc, ensure_ascii=True), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# ---------------------------------------------------------------- printable itself


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain [bold]markup[/] stays", "plain [bold]markup[/] stays"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\nb\r\tc", "a\\x0ab\\x0d\\x09c"),
        ("\x9b\x85\x7f", "\\x9b\\x85\\x7f"),
        ("\u202eabc\u200b\ufeff\u2028", "\\u202eabc\\u200b\\ufeff\\u2028"),
        ("\U000e0041", "\\U000e0041"),
        ("中文 😀 e\u0301", "中文 😀 e\u0301"),
    ],
)
def test_printable_escapes_what_acts_on_a_terminal(text, expected):
    assert printable(text) == expected


def test_printable_shortens_a_megabyte():
    # one field limit for the CLI and the TUI: 300 characters (it was 200 in the CLI, 300 on screen)
    shown = printable(MEGABYTE + "\x1b")
    assert shown == "x" * 300 + "…"
    assert len(printable("\x1b" * 1_000_000)) == 300 * 4 + 1


def test_bad_input_str_is_one_line_whatever_it_holds():
    error = SessionError(HOSTILE + MEGABYTE, HOSTILE, HOSTILE, 3, 4)
    text = str(error)
    assert "\n" not in text and not unsafe_characters(text)
    assert len(text) < 3000


# ---------------------------------------------------------------- the plan table


def test_plan_table_escapes_a_hostile_name_and_keeps_its_shape(tmp_path, home):
    benign = run_cli("plan", str(write_session(tmp_path / "benign.json", name="benign")), home=home)
    hostile = run_cli("plan", str(write_session(tmp_path / "hostile.json", name=HOSTILE + MEGABYTE)), home=home)
    assert benign.returncode == hostile.returncode == 0, hostile.stderr
    out = hostile.stdout.decode("utf-8")
    assert not unsafe_characters(out)
    assert out.count("\n") == benign.stdout.decode().count("\n")
    title = out.split("\n", 1)[0]
    assert title.startswith(printable(HOSTILE, 80)[:40]) and len(title) < 1000
    assert "[bold red]markup[/]" in title  # plain text, not interpreted


def test_plan_table_keeps_wide_characters(tmp_path, home):
    result = run_cli("plan", str(write_session(tmp_path / "s.json", name="中文 😀 مرحبا")), home=home)
    assert result.stdout.decode().split("\n", 1)[0] == "中文 😀 مرحبا"


def test_plan_table_escapes_behaviour_names_in_the_trace(tmp_path, home):
    items = [{"name": f"b{i} \x1b[2J\u202e{HOSTILE}", "content": "do the thing " * 20, "activation": 0.5} for i in range(6)]
    path = write_session(
        tmp_path / "b.json",
        budget={"max_ctx": 60},
        sections=[{"id": "rules", "kind": "behaviors", "items": items}],
    )
    result = run_cli("plan", str(path), home=home)
    out = result.stdout.decode("utf-8")
    assert result.returncode == 0, result.stderr
    assert "steps:" in out and "demote" in out
    assert not unsafe_characters(out)


def test_plan_json_is_valid_and_carries_no_raw_controls(tmp_path, home):
    path = write_session(tmp_path / "s.json", name=HOSTILE, sections=[{"id": "a", "text": HOSTILE}])
    result = run_cli("plan", str(path), "--json", home=home)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["ok"] is True
    assert not [c for c in result.stdout.decode() if c != "\n" and unicodedata.category(c) == "Cc"]


# ---------------------------------------------------------------- render is byte-exact


def test_render_writes_hostile_text_byte_exact(tmp_path, home):
    texts = [HOSTILE, MEGABYTE, "", "tail \x1b[0m"]
    sections = [{"id": f"s{i}", "text": text} for i, text in enumerate(texts)]
    path = write_session(tmp_path / "s.json", sections=sections, budget={"max_ctx": 1_000_000})
    result = run_cli("render", str(path), home=home)
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert result.stdout == "\n\n".join(t for t in texts if t).encode("utf-8")
    plan = Engine(settings=Settings()).plan(load_session(path))
    assert result.stdout == plan.render().encode("utf-8")


def test_render_is_byte_exact_even_when_stdout_cannot_encode(tmp_path, home):
    path = write_session(tmp_path / "s.json", sections=[{"id": "a", "text": HOSTILE}])
    result = run_cli("render", str(path), home=home, env={"PYTHONIOENCODING": "ascii"})
    assert result.stdout == HOSTILE.encode("utf-8")
    table = run_cli("plan", str(path), home=home, env={"PYTHONIOENCODING": "ascii"})
    assert table.returncode == 0 and b"Traceback" not in table.stderr
    table.stdout.decode("ascii")


# ---------------------------------------------------------------- error lines


def test_error_with_an_ansi_value_is_exact_and_escaped(tmp_path, home):
    path = write_session(tmp_path / "s.json", sensor="\x1b[31mcron")
    col = path.read_text().index('"\\u001b[31mcron"') + 1
    assert one_line_error(run_cli("plan", str(path), home=home)) == (
        f"{path}:1:{col}: unknown sensor '\\x1b[31mcron' (use one of: user-input, tool-output, heartbeat, delegation)"
    )


@pytest.mark.parametrize("field", ["sensor", "model", "tokenizer", "trimming"])
def test_errors_quoting_hostile_values_stay_one_short_line(tmp_path, home, field):
    # an unknown model is only an error when it must supply the window (it is a label otherwise)
    extra = {"budget": {}} if field == "model" else {}
    path = write_session(tmp_path / "s.json", **{field: HOSTILE + MEGABYTE}, **extra)
    message = one_line_error(run_cli("plan", str(path), home=home))
    assert message.startswith(f"{path}:1:")
    assert not unsafe_characters(message) and len(message) < 1500


def test_error_in_an_unknown_key_made_of_escapes(tmp_path, home):
    path = tmp_path / "s.json"
    path.write_text('{"tokenbox": 1, "\\u001b]0;pwned\\u0007": 1, "sections": []}')
    assert one_line_error(run_cli("plan", str(path), home=home)) == (
        f"{path}:1:17: unknown key '\\x1b]0;pwned\\x07' in the session (known keys: tokenbox, name, meta, model, "
        "tokenizer, budget, sensor, trimming, context_tokens, calibration, sections; free-form data goes under meta)"
    )


def test_hostile_file_names_are_escaped(tmp_path, home):
    path = tmp_path / "evil\x1b[31m\n\u202e.yaml"
    path.write_text("tokenbox: 2\nsections: []\n")
    shown = printable(str(path))
    assert one_line_error(run_cli("plan", str(path), home=home)) == (
        f"{shown}:1:11: unsupported schema version 2 (this tokenbox reads `tokenbox: 1`)"
    )
    missing = tmp_path / "gone\r\x1b[2K.yaml"
    assert one_line_error(run_cli("render", str(missing), home=home)) == f"{printable(str(missing))}: no such file (check the path)"


def test_check_escapes_the_path(tmp_path, home):
    path = write_session(tmp_path / "ok\x1b[1m.json")
    result = run_cli("check", str(path), home=home)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert out.startswith(f"ok: {printable(str(path))}: ") and out.count("\n") == 1 and not unsafe_characters(out)


def test_overflow_report_is_one_escaped_line(tmp_path, home):
    sections = [{"id": "user", "kind": "user", "text": HOSTILE * 50}]
    path = write_session(tmp_path / "o\x1b.json", sections=sections, budget={"max_ctx": 50})
    result = run_cli("render", str(path), home=home)
    err = result.stderr.decode()
    assert result.returncode == 1 and result.stdout == b""
    assert err.count("\n") == 1 and "ContextCriticalOverflow" in err and not unsafe_characters(err)


def test_api_errors_keep_the_raw_value_for_callers():
    """Escaping is for display: the exception's fields hold what the file said, ``str()`` is safe."""
    error = BadInput("unknown sensor '\x1b'", "fix \x1b", "a\x1b.yaml", 1, 2)
    assert error.path == "a\x1b.yaml"
    assert str(error) == "a\\x1b.yaml:1:2: unknown sensor '\\x1b' (fix \\x1b)"
