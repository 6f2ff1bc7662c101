"""The worked example of ARCHITECTURE.md: a reader for a made-up format is one module and one table row,
and every entry point reads it (load, follow, threads, plan, the command line)."""

from __future__ import annotations

import json

from tokenbox.core import Engine, load_session, load_threads, load_turns
from tokenbox.core.sources.loader import Loader

from tests.inprocess import run_main

LINES = [
    {"parrot": 1, "role": "user", "text": "hello"},
    {"parrot": 1, "role": "parrot", "text": "hello hello"},
    {"parrot": 1, "role": "user", "text": "say cracker"},
]


def write(path, lines) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_parrot_log_loads_plans_and_follows(tmp_path):
    path = tmp_path / "talk.jsonl"
    write(path, LINES)
    turns = load_turns(path)
    assert [t.source_format for t in turns] == ["parrot-log", "parrot-log"]  # one turn per user line
    newest = load_session(path)
    plan = Engine().plan(newest)
    assert plan.ok and plan.render() == "hello\n\nhello hello\n\nsay cracker"
    assert list(load_threads(path)) == ["main"]
    loader = Loader()
    assert len(loader.load_turns(path)) == 2
    write(path, [*LINES, {"parrot": 1, "role": "user", "text": "again"}])
    assert len(loader.load_turns(path)) == 3  # the followed log, one line later


def test_the_command_line_reads_a_parrot_log(tmp_path):
    path = tmp_path / "talk.jsonl"
    write(path, LINES)
    result = run_main(["plan", str(path), "--json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tokenizer"]["name"] == "heuristic"
