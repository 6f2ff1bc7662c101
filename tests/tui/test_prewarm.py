"""The start-up prewarm: ``tokenbox-tui FILE`` loads the BPE table FILE needs before Textual is
imported, loads nothing it is not sure of, and never turns a bad file into a crash."""

from __future__ import annotations

import os

import pytest
from tokenbox.tui import launch, prewarm
from tokenbox.tui.cli import DEFAULT_SAMPLE

from tests.tui.helpers import sample_text


@pytest.fixture
def environ(tmp_path):
    """No config file and no overrides: the file decides."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


@pytest.fixture
def warmed(monkeypatch):
    """The names ``load`` builds (the table itself is not built: tests stay fast)."""
    names: list[str] = []
    monkeypatch.setattr(prewarm, "warm", names.append)
    return names


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_file_model_decides(tmp_path, environ):
    path = write(tmp_path, "turn.yaml", sample_text("passepartout_turn.yaml"))  # model: gpt-4o
    assert prewarm.tokenizer_for(path, environ=environ) == "o200k_base"


def test_the_file_tokenizer_decides(tmp_path, environ):
    text = '{"tokenbox": 1, "tokenizer": "cl100k_base", "budget": {"max_ctx": 1000}, "sections": [{"id": "a", "kind": "user", "text": "hi"}]}'
    assert prewarm.tokenizer_for(write(tmp_path, "s.json", text), environ=environ) == "cl100k_base"


def test_the_plugins_are_not_looked_up(tmp_path, environ, monkeypatch):
    """A plug-in is never exact, so the built-in entries decide (importlib.metadata cost the start ≈50 ms)."""
    from importlib import metadata

    from tokenbox.core.tokens import tokenizers

    groups: list[str] = []
    monkeypatch.setattr(metadata, "entry_points", lambda group: groups.append(group) or [])
    monkeypatch.setattr(tokenizers, "_DEFAULT", None)  # a fresh process-wide registry, its plug-ins pending
    path = write(tmp_path, "turn.yaml", sample_text("passepartout_turn.yaml"))
    assert prewarm.tokenizer_for(path, environ=environ) == "o200k_base"
    assert groups == []


def test_the_flag_and_the_environment_win_without_reading_the_file(tmp_path, environ):
    missing = str(tmp_path / "missing.yaml")
    assert prewarm.tokenizer_for(missing, "cl100k_base", environ=environ) == "cl100k_base"
    assert prewarm.tokenizer_for(missing, environ={**environ, "TOKENBOX_TOKENIZER": "cl100k_base"}) == "cl100k_base"


@pytest.mark.parametrize(
    "text",
    [
        "sections: [unclosed\n",  # broken YAML
        "tokenbox: 1\nsections: []\n",  # names neither model nor tokenizer
        "tokenbox: 1\ntokenizer: heuristic\nsections:\n  - {id: a, kind: user, text: hi}\n",  # nothing to load
        "tokenbox: 1\ntokenizer: no-such\nsections:\n  - {id: a, kind: user, text: hi}\n",  # unknown name
        "",
    ],
)
def test_nothing_is_warmed_for_a_file_that_needs_no_table_or_does_not_load(tmp_path, environ, warmed, text):
    path = write(tmp_path, "s.yaml", text)
    assert prewarm.tokenizer_for(path, environ=environ) is None
    assert prewarm.load(path, environ=environ) is None
    assert warmed == []


def test_missing_directory_and_large_files_load_nothing(tmp_path, environ, warmed, monkeypatch):
    assert prewarm.load(str(tmp_path / "missing.yaml"), environ=environ) is None
    assert prewarm.load(str(tmp_path), environ=environ) is None
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # nobody writes it: peeking must not wait for a writer
    assert prewarm.load(str(fifo), environ=environ) is None
    monkeypatch.setattr(prewarm, "PEEK_MAX_BYTES", 100)
    path = write(tmp_path, "big.yaml", sample_text("passepartout_turn.yaml"))
    assert os.path.getsize(path) > 100
    assert prewarm.load(path, environ=environ) is None
    assert warmed == []
    assert prewarm.load(path, "o200k_base", environ=environ) == "o200k_base"  # the flag needs no read
    assert warmed == ["o200k_base"]


def test_load_builds_the_file_tokenizer(tmp_path, environ, warmed):
    path = write(tmp_path, "turn.yaml", sample_text("passepartout_turn.yaml"))
    assert prewarm.load(path, environ=environ) == "o200k_base"
    assert warmed == ["o200k_base"]


def test_the_table_is_the_one_the_planner_uses(tmp_path, environ):
    """The real build: the registry the planner's engine uses holds the tokenizer afterwards."""
    from tokenbox.core import Engine, load_turns
    from tokenbox.core.tokens.tokenizers import default_registry

    path = write(tmp_path, "turn.yaml", sample_text("passepartout_turn.yaml"))
    assert prewarm.load(path, environ=environ) == "o200k_base"
    warmed = default_registry().get("o200k_base")
    plan = Engine().plan(load_turns(path)[-1])
    assert plan.tokenizer.name == "o200k_base"
    assert Engine().counter("o200k_base").tokenizer is warmed


def test_warm_swallows_errors():
    prewarm.warm("no-such-tokenizer")  # the planner reports it, typed, where it is shown


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["FILE"], [("FILE", None)]),
        (["--tokenizer", "cl100k_base", "FILE"], [("FILE", "cl100k_base")]),
        (["--claude"], []),  # transcripts are estimated: no table
        (["--codex"], []),
        (["--record"], []),
        (["--budget", "0", "FILE"], []),  # a bad flag: the app reports it
        (["--help"], []),
        (["--version"], []),
    ],
)
def test_the_entry_prewarms_the_file_it_opens(monkeypatch, capsys, args, expected):
    calls: list[tuple] = []
    monkeypatch.setattr(prewarm, "load", lambda path, tokenizer=None, environ=None: calls.append((path, tokenizer)))
    launch.prewarm_for(args)
    assert calls == [(os.path.abspath(path), tokenizer) for path, tokenizer in expected]
    assert capsys.readouterr() == ("", "")  # help, version and errors are printed once, by the app


def test_without_a_file_the_bundled_sample_is_prewarmed(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(prewarm, "load", lambda path, tokenizer=None, environ=None: calls.append(path))
    launch.prewarm_for([])
    assert len(calls) == 1 and os.path.basename(calls[0]) == DEFAULT_SAMPLE and os.path.isfile(calls[0])


def test_a_bad_file_is_still_one_clean_error_line(tmp_path, capsys):
    assert launch.main([str(tmp_path)]) == 2  # a directory: reported by the app, the prewarm stays quiet
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tokenbox: error: ") and "directory" in err
