"""The bad-input corpus: every file fails with its exact error class, position and one-line message.

``tests/bad_inputs/expected.yaml`` is the table. Through the API (``load_session`` + ``Engine.plan``)
each file raises exactly the listed class with the listed line and column; through the CLI
(``tokenbox plan FILE``, every run in one child limited to 2 GiB of address space) it prints exactly the
listed line on stderr, exits 2 and prints nothing on stdout. ``render`` and ``check`` say the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tokenbox.core import BadInput, Engine, load_session
from tokenbox.core.model import errors as error_classes
from tokenbox.core.planning.config import Settings

from tests.hardening.support import CORPUS, corpus_files, load_table, one_line_error, run_batch

# one child runs every CLI job of the module (the cli_runs fixture): keep the module on one worker,
# or each parallel worker would run the whole batch again
pytestmark = pytest.mark.xdist_group("hardening_corpus")
TABLE = load_table()
FILES = corpus_files()
BAD = [name for name in FILES if TABLE.get(name, {}).get("error")]
ACCEPTED = [name for name in FILES if name in TABLE and not TABLE[name]["error"]]
# render and check on a spread of the corpus plus every error that only planning finds.
ENGINE_LEVEL = [name for name in BAD if TABLE[name]["error"] in ("TokenizerError", "ConfigError")]
OTHER_COMMANDS = sorted(set(BAD[::16]) | set(ENGINE_LEVEL))


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], object]]:
    """Every CLI run this module checks, done up front in one child limited to 2 GiB of address space."""
    home = tmp_path_factory.mktemp("home")
    jobs = [("plan", name) for name in FILES]
    jobs += [(command, name) for command in ("render", "check") for name in OTHER_COMMANDS]
    results = run_batch([list(job) for job in jobs], home=home, cwd=CORPUS)
    yield dict(zip(jobs, results, strict=True))


def test_the_corpus_is_complete_and_covers_every_format():
    """Every file has a row and every row a file; at least 60 bad files in each of YAML, JSON, JSONL."""
    assert sorted(TABLE) == FILES
    assert len(BAD) >= 60
    suffixes = {Path(name).suffix for name in BAD}
    assert {".yaml", ".json", ".jsonl"} <= suffixes
    for name, row in TABLE.items():
        assert set(row) == {"error", "at", "message"}, name
        if row["error"]:
            assert isinstance(getattr(error_classes, row["error"]), type), name
            assert issubclass(getattr(error_classes, row["error"]), BadInput), name
            line, col = row["at"]
            assert row["message"].startswith(f"{name}:{line}:{col}: "), name


@pytest.mark.parametrize("name", BAD)
def test_api_raises_the_exact_class_at_the_exact_position(name, monkeypatch):
    row = TABLE[name]
    monkeypatch.chdir(CORPUS)
    with pytest.raises(BadInput) as info:
        Engine(settings=Settings()).plan(load_session(name))
    error = info.value
    assert type(error).__name__ == row["error"]
    assert [error.line, error.col] == row["at"]
    assert str(error) == row["message"]
    assert error.path == name


@pytest.mark.parametrize("name", BAD)
def test_cli_prints_one_exact_line_and_exits_2(name, cli_runs):
    result = cli_runs["plan", name]
    assert one_line_error(result) == TABLE[name]["message"]
    assert result.stdout == b""


@pytest.mark.parametrize("name", OTHER_COMMANDS)
@pytest.mark.parametrize("command", ["render", "check"])
def test_render_and_check_refuse_the_same_way(name, command, cli_runs):
    result = cli_runs[command, name]
    assert one_line_error(result) == TABLE[name]["message"]
    assert result.stdout == b""


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_inputs_plan(name, monkeypatch, cli_runs):
    """A UTF-8 BOM is skipped; a partial last JSONL line (even cut inside a character) is ignored."""
    monkeypatch.chdir(CORPUS)
    session = load_session(name)
    plan = Engine(settings=Settings()).plan(session)
    assert plan.ok
    assert not plan.render().startswith("\ufeff")
    result = cli_runs["plan", name]
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    if name.endswith(".jsonl"):
        complete = [line for line in (CORPUS / name).read_bytes().split(b"\n")[:-1] if line.strip()]
        assert session.turn_count == len(complete)
        for line in complete:
            json.loads(line)


def test_a_bom_changes_nothing(tmp_path):
    """The BOM is not content: the session with and without it plans to the same fingerprint."""
    with_bom = (CORPUS / "bom_accepted.yaml").read_bytes()
    assert with_bom.startswith(b"\xef\xbb\xbf")
    plain = tmp_path / "plain.yaml"
    plain.write_bytes(with_bom[3:])
    engine = Engine(settings=Settings())
    first = engine.plan(load_session(CORPUS / "bom_accepted.yaml"))
    second = engine.plan(load_session(plain))
    assert first.fingerprint == second.fingerprint and first.tokens_after == second.tokens_after
