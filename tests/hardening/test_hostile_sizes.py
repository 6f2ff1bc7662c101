"""Hardening II, generated at test time (never committed): inputs whose cost is in their size.

Base-60 integers (quadratic to build in PyYAML), one big scalar aliased thousands of times (a bomb by
size, not by count), and a huge turn built in Python (refused by size before counting). The file
cases run in one child limited to 2 GiB of address space: they must end in one line, not a crash.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from tokenbox.core import BadInput, Engine, load_session
from tokenbox.core.model.errors import SessionError
from tokenbox.core.planning import engine as engine_module
from tokenbox.core.planning.config import Settings

from tests.hardening.support import one_line_error, run_batch

HEAD = "tokenbox: 1\ntokenizer: o200k_base\n"
TAIL = "sections:\n  - id: a\n    kind: user\n    text: hi\n"


def base60(path: Path) -> Path:
    path.write_text(HEAD + "budget:\n  max_ctx: " + ":".join(["1"] * 300_000) + "\n" + TAIL, encoding="utf-8")
    return path


def aliased(path: Path) -> Path:
    big = "x" * 1_000_000
    refs = ", ".join(["*big"] * 2000)
    path.write_text(HEAD + f"meta:\n  big: &big {big}\n  many: [{refs}]\n" + TAIL, encoding="utf-8")
    return path


def test_base60_integer_is_refused_unbuilt_with_a_position(tmp_path):
    path = base60(tmp_path / "b60.yaml")
    with pytest.raises(SessionError) as info:
        load_session(str(path))
    assert (info.value.line, info.value.col) == (4, 12)
    assert "base-60" in info.value.problem


def test_one_scalar_aliased_thousands_of_times_is_a_bomb_by_size(tmp_path):
    path = aliased(tmp_path / "alias.yaml")
    assert path.stat().st_size < 1_100_000
    with pytest.raises(SessionError) as info:
        load_session(str(path))
    assert info.value.line == 5 and "alias" in info.value.problem


def test_file_bombs_end_in_one_line_under_a_2_gib_limit(tmp_path):
    paths = [base60(tmp_path / "b60.yaml"), aliased(tmp_path / "alias.yaml")]
    home = tmp_path / "home"
    home.mkdir()
    results = run_batch([["plan", str(p)] for p in paths], home=home)
    messages = [one_line_error(r) for r in results]
    assert messages[0].startswith(f"{paths[0]}:4:12: a base-60")
    assert messages[1].startswith(f"{paths[1]}:5:") and "alias" in messages[1]


def test_a_huge_turn_from_python_is_refused_by_size_before_counting(monkeypatch):
    session = load_session(str(Path(__file__).resolve().parents[2] / "sample_sessions" / "facet_layout.yaml"))
    monkeypatch.setattr(engine_module, "MAX_TEXT_CHARS", 1000)
    big = replace(session, sections=(replace(session.sections[0], text="y" * 5000), *session.sections[1:]))
    with pytest.raises(BadInput) as info:
        Engine(settings=Settings()).plan(big)
    assert "MiB of text" in info.value.problem and info.value.remedy


def test_import_round_trips_a_64_bit_seed(tmp_path):
    """`tokenbox import` output plans again when a value exceeds 10^18 (an OpenAI `seed` under `meta`)."""
    import json

    from tests.inprocess import run_main

    source = tmp_path / "s.json"
    seed = 2**64 - 1
    source.write_text(json.dumps({"tokenbox": 1, "tokenizer": "o200k_base", "meta": {"seed": seed},
                                  "sections": [{"id": "a", "kind": "user", "text": "hi"}]}), encoding="utf-8")
    exported = run_main(["import", str(source)])
    assert exported.returncode == 0, exported.stderr
    again = tmp_path / "again.yaml"
    again.write_bytes(exported.stdout)
    assert load_session(str(again)).meta["seed"] == seed
    assert run_main(["plan", str(again)]).returncode == 0
