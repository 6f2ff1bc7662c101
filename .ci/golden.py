#!/usr/bin/env python3
"""A golden set of the ``tokenbox`` command's output, to prove a refactor changes no behaviour.

    .venv/bin/python .ci/golden.py record DIR    # write the set into DIR
    .venv/bin/python .ci/golden.py compare DIR   # record again into a temporary folder; exit 1 on any difference

For every session, log, transcript and request body in ``sample_sessions/``, ``tests/fixtures/``,
``tests/importers/fixtures/``, ``tests/bad_inputs/`` (plan only: they are bad by design) and
``/work/shared/real_sessions`` (when present) it runs, through the installed ``tokenbox`` console
script's entry point (in-process, one worker process per half of the files, a clean environment):

* ``plan --json`` and ``plan`` (the table); ``plan --json --turn K`` for every turn of the main thread,
  ``plan --json --thread T --turn K`` for every turn of every other thread, and ``--thread main``;
* ``render``, ``render --format anthropic`` and ``render --format openai``; ``check``;
* ``import`` (and ``import --thread T`` for every thread);
* ``tokenizers``, ``models`` and three bad command lines, once;
* ``tokenbox statusline`` with a status-line JSON naming each Claude Code transcript (three variants).

Each case keeps its exit code, stdout and stderr, byte for byte, in one file per input.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared/real_sessions")
SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
WORKERS = 2


def inputs() -> list[tuple[str, bool]]:
    """(path as passed to the command, bad by design) for every input file, sorted."""
    found: list[tuple[str, bool]] = []
    for folder in ("sample_sessions", "tests/fixtures", "tests/importers/fixtures"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                found.append((str(path.relative_to(ROOT)), False))
    for path in sorted((ROOT / "tests/bad_inputs").glob("*")):
        if path.is_file() and path.suffix in (*SUFFIXES, ".md", ".txt") and path.name != "expected.yaml":
            found.append((str(path.relative_to(ROOT)), True))
    if SHARED.is_dir():
        for path in sorted(SHARED.rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                found.append((str(path), False))
    return found


def clean_environment(home: str) -> None:
    """No user configuration, no colour switches, no tokenbox settings from the caller's shell."""
    for name in list(os.environ):
        if name.startswith(("TOKENBOX_", "CLAUDE_", "DISABLE_")) or name in ("NO_COLOR", "COLUMNS", "LINES"):
            del os.environ[name]
    os.environ.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"), XDG_STATE_HOME=os.path.join(home, "state"),
                      XDG_CACHE_HOME=os.path.join(home, "cache"), LC_ALL="C.UTF-8")


def run_case(argv: list[str], stdin: bytes = b"") -> bytes:
    """One run of the console script's entry point, as a process would run it; its outcome as bytes."""
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="console_scripts") if e.name == "tokenbox"]
    main = entry.load()
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.argv, sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["tokenbox", *argv]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    code: object = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if exc.code is not None else 0
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
    shown = stdin.decode().replace(str(ROOT), "<root>")  # the same set whichever checkout records it
    head = f"=== tokenbox {' '.join(argv)}{' <stdin ' + shown if stdin else ''}\n--- exit {code}\n"
    return (head + f"--- stdout {len(stdout)}\n").encode() + stdout + f"\n--- stderr {len(stderr)}\n".encode() + stderr + b"\n"


def threads_of(path: str) -> dict[str, int]:
    """Thread name -> turn count, as the library reads the file ({} when it cannot)."""
    from tokenbox.core import load_threads

    try:
        return {name: len(turns) for name, turns in load_threads(path).items()}
    except Exception:
        return {}


def is_claude_transcript(path: str) -> bool:
    if not path.endswith(".jsonl"):
        return False
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    return '"sessionId"' in head and ('"type":"user"' in head.replace(" ", "") or '"type":"assistant"' in head.replace(" ", "")
                                      or '"type":"summary"' in head.replace(" ", ""))


def cases(path: str, bad: bool) -> list[tuple[list[str], bytes]]:
    result: list[tuple[list[str], bytes]] = [(["plan", path, "--json"], b"")]
    if bad:
        return result
    result += [(["plan", path], b""), (["render", path], b""), (["render", path, "--format", "anthropic"], b""),
               (["render", path, "--format", "openai"], b""), (["check", path], b""), (["import", path], b"")]
    threads = threads_of(path)
    for name, count in threads.items():
        if name == "main":
            result += [(["plan", path, "--json", "--turn", str(k)], b"") for k in range(1, count + 1)]
        else:
            result += [(["plan", path, "--json", "--thread", name, "--turn", str(k)], b"") for k in range(1, count + 1)]
            result.append((["import", path, "--thread", name], b""))
        result.append((["plan", path, "--json", "--thread", name], b""))
    if is_claude_transcript(path):
        absolute = os.path.abspath(path)
        plain = json.dumps({"transcript_path": absolute, "model": {"id": "claude-sonnet-4-5-20250929", "display_name": "Sonnet 4.5"},
                            "session_id": "golden"}).encode()
        long = json.dumps({"transcript_path": absolute, "model": {"id": "claude-opus-4-7[1m]", "display_name": "Opus"}}).encode()
        template = "{pct}|{tokens}|{window}|{to_compact}|{compact_at}|{biggest}|{biggest_tokens}|{model}|{pending}|{thread}"
        result += [(["statusline"], plain), (["statusline", "--no-color", "--format", template], long),
                   (["statusline", "--compact-buffer", "40000", "--warn-levels", "10,20,30"], plain)]
    return result


def work(out_dir: str, items: list[str]) -> None:
    """Worker: every case of each input (``path|bad``), one output file per input."""
    os.chdir(ROOT)
    home = tempfile.mkdtemp(prefix="golden-home-")
    clean_environment(home)
    try:
        _work_items(out_dir, items)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # the worker's empty home: nothing of it is kept


def _work_items(out_dir: str, items: list[str]) -> None:
    for item in items:
        if item == "<commands>":  # the commands that read no file
            blob = b"".join(run_case(argv) for argv in (["tokenizers"], ["models"], [], ["plan"], ["--bogus"]))
            Path(out_dir, "commands.golden").write_bytes(blob)
            continue
        path, _, bad = item.rpartition("|")
        blob = b"".join(run_case(argv, stdin) for argv, stdin in cases(path, bad == "1"))
        name = path.replace("/", "__").lstrip("_")
        Path(out_dir, name + ".golden").write_bytes(blob)


def record(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for old in Path(out_dir).glob("*.golden"):
        old.unlink()
    items = ["<commands>"] + [f"{path}|{int(bad)}" for path, bad in inputs()]
    env = dict(os.environ, PYTHONHASHSEED="0")
    workers = [
        subprocess.Popen([sys.executable, __file__, "_work", out_dir, *items[index::WORKERS]], env=env, cwd=ROOT)
        for index in range(WORKERS)
    ]
    codes = [worker.wait() for worker in workers]
    if any(codes):
        sys.exit(f"golden: a worker failed ({codes})")
    print(f"golden: {len(items)} inputs recorded in {out_dir}")


def compare(golden_dir: str) -> int:
    fresh = tempfile.mkdtemp(prefix="golden-")
    try:
        record(fresh)
        expected = {p.name for p in Path(golden_dir).glob("*.golden")}
        got = {p.name for p in Path(fresh).glob("*.golden")}
        differences = sorted(expected ^ got)
        for name in sorted(expected & got):
            if Path(golden_dir, name).read_bytes() != Path(fresh, name).read_bytes():
                differences.append(name)
        for name in differences:
            print(f"golden: DIFFERS: {name}")
            if name in expected and name in got:
                subprocess.run(["diff", "-a", "-u", str(Path(golden_dir, name)), str(Path(fresh, name))], check=False)
        print(f"golden: {len(expected & got)} inputs compared, {len(differences)} differ")
        return 1 if differences else 0
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "_work":
        work(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "record":
        record(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2]))
    else:
        sys.exit(__doc__)
