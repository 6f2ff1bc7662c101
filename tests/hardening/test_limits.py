"""The size limit, files that are not files, and every kind of CLI misuse: one line, exit 2.

The size limit (``--max-file-size``, ``TOKENBOX_MAX_FILE_SIZE`` or the config file's ``max_file_size``;
by default 64 MiB for a file read whole, 512 MiB for a Claude Code transcript, read a block at a time) is
checked against ``stat`` before a byte is read. Tests use tiny limits; the one test of the default limit
uses a sparse file, which costs no disk, and the test of the two defaults scales them down.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tokenbox.core import Engine, FileTooLarge, SessionError, load_session
from tokenbox.core.planning.config import Settings
from tokenbox.core.sources import files
from tokenbox.core.sources.files import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_STREAMED_BYTES

from tests.hardening.support import one_line_error, run_cli

VALID = "tokenbox: 1\ntokenizer: o200k_base\nsections:\n  - {id: user, kind: user, text: hello}\n"
LIMIT_REMEDY = "(raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE)"
LOG_LINE = '{"tokenbox": 1, "tokenizer": "o200k_base", "sections": [{"id": "u", "kind": "user", "text": "hi"}]}\n'


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def valid(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(VALID, encoding="utf-8")
    return path


# ---------------------------------------------------------------- the size limit


def test_default_limits_are_64_and_512_mib():
    assert DEFAULT_MAX_FILE_BYTES == 64 * 1024 * 1024
    assert DEFAULT_MAX_STREAMED_BYTES == 512 * 1024 * 1024
    assert Settings().max_file_size is None  # none set: each read has its default


TRANSCRIPT = Path(__file__).parents[1] / "fixtures" / "real_sessions" / "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def test_a_transcript_is_read_past_the_whole_read_default_and_other_logs_are_not(tmp_path, home, monkeypatch):
    """Issue 27: a long Claude Code session (1M-token windows, compacted a few times) passes 64 MiB; it is read a
    block at a time, so with no limit given it is read up to the larger default, while a log read whole (a
    tokenbox log here) keeps the smaller one. A limit given is the limit of both. The defaults are scaled down
    (the module's constants are what a read without a limit looks up)."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(TRANSCRIPT.read_bytes())
    size = transcript.stat().st_size
    log = tmp_path / "log.jsonl"
    log.write_text(LOG_LINE * (size // len(LOG_LINE) + 1), encoding="utf-8")
    log_size = log.stat().st_size
    expected = run_cli("plan", str(transcript), "--max-file-size", "1M", home=home)
    assert expected.returncode == 0, expected.stderr
    monkeypatch.setattr(files, "DEFAULT_MAX_FILE_BYTES", size // 2)
    monkeypatch.setattr(files, "DEFAULT_MAX_STREAMED_BYTES", size * 2)
    read = run_cli("plan", str(transcript), home=home)
    assert read.returncode == 0, read.stderr
    assert read.stdout == expected.stdout
    assert one_line_error(run_cli("plan", str(log), home=home)) == (
        f"{log}: file is {log_size} bytes, over the {size // 2}-byte limit {LIMIT_REMEDY}"
    )
    assert one_line_error(run_cli("plan", str(transcript), "--max-file-size", str(size - 1), home=home)) == (
        f"{transcript}: file is {size} bytes, over the {size - 1}-byte limit {LIMIT_REMEDY}"
    )
    monkeypatch.setattr(files, "DEFAULT_MAX_STREAMED_BYTES", size - 1)
    assert one_line_error(run_cli("plan", str(transcript), home=home)) == (
        f"{transcript}: file is {size} bytes, over the {size - 1}-byte limit {LIMIT_REMEDY}"
    )


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--max-file-size", "{limit}"], {}),
        ([], {"TOKENBOX_MAX_FILE_SIZE": "{limit}"}),
    ],
    ids=["flag", "environment"],
)
def test_a_file_one_byte_over_the_limit_is_refused(valid, home, args, env):
    size = valid.stat().st_size
    fill = {"limit": str(size - 1)}
    result = run_cli(
        "plan", str(valid), *(a.format(**fill) for a in args), home=home, env={k: v.format(**fill) for k, v in env.items()}
    )
    assert one_line_error(result) == f"{valid}: file is {size} bytes, over the {size - 1}-byte limit {LIMIT_REMEDY}"
    at_limit = run_cli(
        "plan", str(valid), *(a.format(limit=size) for a in args), home=home, env={k: v.format(limit=size) for k, v in env.items()}
    )
    assert at_limit.returncode == 0, at_limit.stderr


def test_the_config_file_sets_the_limit_and_the_flag_wins(valid, home):
    size = valid.stat().st_size
    (home / ".config" / "tokenbox").mkdir(parents=True)
    (home / ".config" / "tokenbox" / "config.yaml").write_text(f"max_file_size: {size - 1}\n")
    assert one_line_error(run_cli("plan", str(valid), home=home)).startswith(f"{valid}: file is {size} bytes")
    assert run_cli("plan", str(valid), "--max-file-size", "1K", home=home).returncode == 0


def test_the_limit_is_checked_before_reading(valid, monkeypatch):
    """Nothing is opened or read when ``stat`` already shows the file is too big."""

    def forbidden(*args, **kwargs):
        raise AssertionError("the file was opened")

    monkeypatch.setattr(os, "open", forbidden)
    monkeypatch.setattr(os, "read", forbidden)
    with pytest.raises(FileTooLarge) as info:
        load_session(valid, max_bytes=10)
    assert (info.value.path, info.value.line, info.value.col) == (str(valid), None, None)


def test_the_default_limit_on_a_sparse_file(tmp_path, home):
    """64 MiB + 1 byte is refused at once, from its size alone; exactly 64 MiB is read (and is binary)."""
    over = tmp_path / "huge.yaml"
    with open(over, "wb") as handle:
        handle.truncate(DEFAULT_MAX_FILE_BYTES + 1)  # sparse: no blocks are written
    assert over.stat().st_blocks * 512 < 1024 * 1024
    with pytest.raises(FileTooLarge):
        load_session(over)
    result = run_cli("plan", str(over), home=home)
    assert one_line_error(result) == (
        f"{over}: file is {DEFAULT_MAX_FILE_BYTES + 1} bytes, over the {DEFAULT_MAX_FILE_BYTES}-byte limit {LIMIT_REMEDY}"
    )
    exact = tmp_path / "exact.yaml"
    with open(exact, "wb") as handle:
        handle.truncate(DEFAULT_MAX_FILE_BYTES)
    assert one_line_error(run_cli("plan", str(exact), home=home)) == (
        f"{exact}:1:1: binary data (a NUL byte) (a session file is UTF-8 text)"
    )


def test_an_endless_device_stops_at_the_limit(home):
    result = run_cli("plan", "/dev/zero", "--max-file-size", "64K", home=home)
    assert one_line_error(result) == f"/dev/zero: more than 65536 bytes {LIMIT_REMEDY}"


def test_a_high_limit_costs_nothing_on_a_small_file(valid, home):
    """The read buffer follows the file, not the limit (1T would not fit the 2 GiB address space)."""
    assert run_cli("plan", str(valid), "--max-file-size", "1T", home=home).returncode == 0


DEEP_YAML = {
    "flow": ("meta: " + "[" * 200_000 + "]" * 200_000 + "\n", "1:71"),
    "mappings": ("meta: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n", "1:260"),
    "block": ("meta:\n  " + "- " * 100_000 + "x\n", "2:131"),
}


@pytest.mark.parametrize("shape", sorted(DEEP_YAML))
def test_very_deep_yaml_is_refused_not_a_crash(tmp_path, home, shape):
    """libyaml's composer recurses in C: before the event-stream check this was a segfault (exit 139)."""
    body, at = DEEP_YAML[shape]
    path = tmp_path / f"{shape}.yaml"
    path.write_text(body)
    result = run_cli("plan", str(path), home=home)
    assert one_line_error(result) == f"{path}:{at}: nesting deeper than 64 levels (flatten the document)"


def test_an_alias_bomb_is_refused_from_its_size(home):
    """Billion laughs: refused while reading the event stream, without expanding the aliases."""
    bomb = Path(__file__).resolve().parents[1] / "bad_inputs" / "yaml_alias_bomb.yaml"
    started = time.process_time()
    with pytest.raises(SessionError, match="more than 2000000 values"):
        load_session(bomb)
    assert time.process_time() - started < 20  # generous: it takes milliseconds


# ---------------------------------------------------------------- paths that are not session files


def test_missing_file(tmp_path, home):
    path = tmp_path / "nope.yaml"
    assert one_line_error(run_cli("plan", str(path), home=home)) == f"{path}: no such file (check the path)"


def test_empty_path(home):
    assert one_line_error(run_cli("plan", "", home=home)) == "the session path is empty or holds a NUL character (pass the file's path)"


def test_directory(tmp_path, home):
    assert one_line_error(run_cli("render", str(tmp_path), home=home)) == (
        f"{tmp_path}: is a directory (name a session file inside it)"
    )


def test_path_under_a_file(valid, home):
    path = valid / "inner.yaml"
    assert one_line_error(run_cli("plan", str(path), home=home)) == (
        f"{path}: cannot read: Not a directory (check the path and permissions)"
    )


def test_dangling_and_looping_symlinks(tmp_path, home):
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone.yaml")
    assert one_line_error(run_cli("plan", str(dangling), home=home)) == f"{dangling}: no such file (check the path)"
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    assert one_line_error(run_cli("plan", str(loop), home=home)) == (
        f"{loop}: cannot read: Too many levels of symbolic links (check the path and permissions)"
    )


def test_unreadable_file(valid, home):
    """chmod 000: refused with the OS's reason. Root reads it anyway, so there it must simply work."""
    valid.chmod(0)
    try:
        result = run_cli("plan", str(valid), home=home)
        if os.geteuid() == 0:
            assert result.returncode == 0, result.stderr
        else:
            assert one_line_error(result) == f"{valid}: cannot read: Permission denied (check the path and permissions)"
    finally:
        valid.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_unopenable_file_is_refused_in_process(valid, monkeypatch):
    """What chmod 000 does for other users, simulated for root: open() fails with EACCES."""

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(SessionError) as info:
        load_session(valid)
    assert str(info.value) == f"{valid}: cannot read: Permission denied (check the path and permissions)"


def test_a_named_pipe_without_a_writer_does_not_hang(tmp_path, home):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = run_cli("plan", str(fifo), home=home)
    assert one_line_error(result) == f"{fifo}: nothing to read (not a regular file) (pass the path of a session file)"
    assert time.monotonic() - started < 30  # a hang guard; run_cli itself gives up after 60 s


def test_a_pipe_with_a_writer_is_read(home):
    """`tokenbox plan /dev/stdin` (and process substitution) still work."""
    result = run_cli("plan", "/dev/stdin", "--json", home=home, stdin=VALID.encode())
    assert result.returncode == 0, result.stderr


PIPED_JSON = '{"tokenbox": 1, "tokenizer": "o200k_base", "sections": [\n{"id": "a", "kind": "text", "text": "x"},\n{"id": "b", "kind": "user", "text": "y"}\n]}\n'


def test_json_from_a_pipe_is_json_even_with_lines_starting_with_a_brace(home, tmp_path):
    """No extension to go by: a text that parses as one JSON document is JSON, not a JSONL log."""
    result = run_cli("plan", "/dev/stdin", "--json", home=home, stdin=PIPED_JSON.encode())
    assert result.returncode == 0, result.stderr
    assert [s["id"] for s in json.loads(result.stdout)["sections"]] == ["a", "b"]
    path = tmp_path / "noext"
    path.write_text(PIPED_JSON, encoding="utf-8")
    assert [s.id for s in load_session(str(path)).sections] == ["a", "b"]
    path.write_text(LOG_LINE * 3, encoding="utf-8")  # a real log without extension is still a log
    assert load_session(str(path)).turn_count == 3


# ---------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "{s}", "--budget", "0"], "argument --budget: '0' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "abc"], "argument --budget: 'abc' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "1e999"], "argument --budget: '1e999' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "-5"], "argument --budget: '-5' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "1.5"], "argument --budget: '1.5' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "99999999999"], "argument --budget: '99999999999' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget", "１０"], "argument --budget: '１０' is not a whole number from 1 to 1000000000"),
        (["plan", "{s}", "--budget"], "argument --budget: expected one argument"),
        (["plan", "{s}", "--turn", "0"], "argument --turn: '0' is not a turn number (1-based; negative counts from the end)"),
        (["plan", "{s}", "--turn", "abc"], "argument --turn: 'abc' is not a turn number (1-based; negative counts from the end)"),
        (["plan", "{s}", "--turn", "1.5"], "argument --turn: '1.5' is not a turn number (1-based; negative counts from the end)"),
        (["plan", "{s}", "--tokenizer", ""], "argument --tokenizer: an empty name is no tokenizer; `tokenbox tokenizers` lists them"),
        (["plan", "{s}", "--max-file-size", "0"], "argument --max-file-size: '0' is not a size from 1 byte to 1T (e.g. 64M)"),
        (["plan", "{s}", "--max-file-size", "lots"], "argument --max-file-size: 'lots' is not a size from 1 byte to 1T (e.g. 64M)"),
        (
            ["plan", "{s}", "--max-file-size", "99999999999999999999999G"],
            "argument --max-file-size: '99999999999999999999999G' is not a size from 1 byte to 1T (e.g. 64M)",
        ),
        (["plan", "{s}", "--trimming", "harsh"], "argument --trimming: invalid choice: 'harsh' (choose from 'tokenbox', 'progressive')"),
        (["check", "{s}", "--reserve-out", "-1"], "argument --reserve-out: '-1' is not a whole number from 0 to 1000000000"),
        (["plan", "{s}", "--bogus"], "unrecognized arguments: --bogus"),
        (["render", "{s}", "--json"], "unrecognized arguments: --json"),
        (["plan"], "the following arguments are required: FILE"),
        ([], "no command given"),
    ],
)
def test_bad_flags(valid, home, args, message):
    result = run_cli(*(a.format(s=valid) for a in args), home=home)
    assert one_line_error(result) == f"{message} (see `tokenbox --help`)"
    assert result.stdout == b""


def test_unknown_command(home):
    message = one_line_error(run_cli("frobnicate", home=home))
    assert message.startswith("argument COMMAND: invalid choice: 'frobnicate' (choose from ")
    assert message.endswith(") (see `tokenbox --help`)")


def test_unknown_tokenizer_flag(valid, home):
    assert one_line_error(run_cli("plan", str(valid), "--tokenizer", "nope", home=home)) == (
        "unknown tokenizer 'nope' (known tokenizers: o200k_base, cl100k_base, heuristic, floop-estimate, claude-estimate)"
    )


@pytest.mark.parametrize("turn", ["4", "-4", "99"])
def test_turn_out_of_range_in_a_log(tmp_path, home, turn):
    log = tmp_path / "log.jsonl"
    log.write_text(LOG_LINE * 3)
    assert one_line_error(run_cli("plan", str(log), "--turn", turn, home=home)) == (
        f"{log}: turn {turn} is out of range: the file has 3 turn(s) (use --turn 1..3 or -1..-3)"
    )
    assert run_cli("plan", str(log), "--turn", "-3", home=home).returncode == 0


def test_turn_out_of_range_in_a_single_session(valid, home):
    assert one_line_error(run_cli("render", str(valid), "--turn", "2", home=home)) == (
        f"{valid}: turn 2 is out of range: the file has 1 turn(s) (use --turn 1..1 or -1..-1)"
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TOKENBOX_MAX_CTX": "lots"}, "TOKENBOX_MAX_CTX='lots' is not a whole number from 1 to 1000000000 (unset TOKENBOX_MAX_CTX or fix its value)"),
        ({"CONTEXT_MAX_TOKENS": "-1"}, "CONTEXT_MAX_TOKENS='-1' is not a whole number from 1 to 1000000000 (unset CONTEXT_MAX_TOKENS or fix its value)"),
        ({"TOKENBOX_MAX_FILE_SIZE": "64M"}, "TOKENBOX_MAX_FILE_SIZE='64M' is not a whole number from 1 to 1000000000 (unset TOKENBOX_MAX_FILE_SIZE or fix its value)"),
        ({"TOKENBOX_TOKENIZER": "nope"}, "unknown tokenizer 'nope' (from TOKENBOX_TOKENIZER) (known tokenizers: o200k_base, cl100k_base, heuristic, floop-estimate, claude-estimate)"),
    ],
)
def test_bad_environment(valid, home, env, message):
    assert one_line_error(run_cli("plan", str(valid), home=home, env=env)) == message


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("max_ctx: lots\n", "1:10: max_ctx must be a whole number, not a string ('lots') (use a number from 1 to 1000000000)"),
        ("max_ctx: 1000\nbogus: 1\n", "2:1: unknown key 'bogus' in the config file (known keys: max_ctx, reserve_out, headroom, tokenizer, max_file_size, warn_levels, compact_buffer, prices)"),
        ("- a\n", "1:1: the config file must be a mapping, not a list (write `key: value` pairs)"),
        ("max_ctx: [\n", "2:1: YAML syntax: did not find expected node content while parsing a flow node that starts at line 2, column 1 (fix the syntax)"),
    ],
)
def test_bad_config_file(valid, home, config, message):
    path = home / ".config" / "tokenbox" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(config)
    assert one_line_error(run_cli("plan", str(valid), home=home)) == f"{path}:{message}"


def test_empty_config_file_sets_nothing(valid, home):
    path = home / ".config" / "tokenbox" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("# nothing here yet\n\n")
    assert run_cli("plan", str(valid), home=home).returncode == 0


def test_interrupted_output_is_not_an_error(tmp_path, home):
    """`tokenbox render big | head -c 1`: a closed pipe ends quietly, without a traceback."""
    path = tmp_path / "big.json"
    path.write_text('{"tokenbox": 1, "tokenizer": "heuristic", "sections": [{"id": "a", "text": "' + "x" * 2_000_000 + '"}]}')
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    writer = subprocess.run(
        [sys.executable, "-m", "tokenbox.core.commands.cli", "render", str(path), "--budget", "1000000"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )
    reader.stdin.close()
    reader.wait(timeout=60)
    assert b"Traceback" not in writer.stderr and writer.returncode == 0, writer.stderr


def test_api_raises_for_files_the_cli_refuses(tmp_path):
    """The same typed errors through the API, for callers that are not the CLI."""
    with pytest.raises(SessionError, match="no such file"):
        load_session(tmp_path / "nope.yaml")
    with pytest.raises(SessionError, match="is a directory"):
        load_session(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(VALID)
    assert Engine(settings=Settings()).plan(load_session(path)).ok
