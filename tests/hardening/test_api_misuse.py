"""Issue 14: misuse of the Python API ends in a typed ``BadInput``, and one engine serves many threads."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tokenbox.core import BadInput, Engine, load_session, load_threads, load_turns
from tokenbox.core.commands.cli import main as cli

SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "facet_layout.yaml"


def _session():
    return load_session(SAMPLE)


MISUSE = [
    lambda: Engine().plan("session.yaml"),
    lambda: Engine().plan(None),
    lambda: Engine().plan({"tokenbox": 1}),
    lambda: Engine().plan(_session(), budget=0),
    lambda: Engine().plan(_session(), budget=-5),
    lambda: Engine().plan(_session(), budget=1.5),
    lambda: Engine().plan(_session(), budget="16384"),
    lambda: Engine().plan(_session(), budget=True),
    lambda: Engine().plan(_session(), budget=10**12),
    lambda: Engine().plan(_session(), reserve_out=-1),
    lambda: Engine().plan(_session(), reserve_out="1"),
    lambda: Engine().plan(_session(), tokenizer=5),
    lambda: Engine().plan(_session(), tokenizer=""),
    lambda: Engine().plan(_session(), tokenizer="nope"),
    lambda: Engine().plan(_session(), trimming="fast"),
    lambda: Engine().plan(_session(), trimming=1),
    lambda: Engine(registry=3),
    lambda: Engine(settings={"max_ctx": 1}),
    lambda: Engine(environ=["TOKENBOX_MAX_CTX=1"]),
    lambda: Engine(environ={"TOKENBOX_MAX_CTX": "zero"}),
    lambda: load_session(5),
    lambda: load_session(None),
    lambda: load_session(""),
    lambda: load_session("a\x00b.yaml"),
    lambda: load_session("/nonexistent/file.yaml"),
    lambda: load_session(SAMPLE, turn=0),
    lambda: load_session(SAMPLE, turn=2),
    lambda: load_turns(3.5),
    lambda: load_threads(object()),
    lambda: load_session(SAMPLE, thread="nope"),
    lambda: Engine().plan(_session()).state_at("2"),
    lambda: Engine().plan(_session()).state_at(None),
    lambda: Engine().plan(_session()).state_at(1.0),
]


@pytest.mark.parametrize("call", MISUSE, ids=[f"misuse-{i}" for i in range(len(MISUSE))])
def test_misuse_raises_a_typed_error(call):
    with pytest.raises(BadInput) as info:
        call()
    assert str(info.value)  # one readable line
    assert "\n" not in str(info.value)


def test_one_engine_plans_from_many_threads_as_from_one():
    engine = Engine()
    session = _session()
    budgets = list(range(1500, 4000, 61))
    expected = {b: json.dumps(Engine().plan(session, budget=b).to_dict()) for b in budgets}
    results: list[tuple[int, str]] = []
    errors: list[str] = []

    def work() -> None:
        for budget in budgets:
            try:
                results.append((budget, json.dumps(engine.plan(session, budget=budget).to_dict())))
            except Exception as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 8 * len(budgets) and all(expected[b] == text for b, text in results)


def test_a_huge_session_is_refused_before_counting():
    from tokenbox.core import session_from_dict
    from tokenbox.core.planning.engine import MAX_TEXT_CHARS

    big = "x" * (MAX_TEXT_CHARS // 2 + 1)
    session = session_from_dict({"tokenbox": 1, "tokenizer": "o200k_base",
                                 "sections": [{"id": "a", "text": big}, {"id": "b", "text": big}]})
    with pytest.raises(BadInput, match="MiB of text"):
        Engine().plan(session)


def test_yaml_classes_end_in_one_positioned_line(tmp_path, capsys):
    cases = {
        "base60.yaml": ("tokenbox: 1\nmeta: {a: " + ":".join(["1"] * 50_000) + "}\nsections: []\n", "2:11", "base-60"),
        "bool.yaml": ("tokenbox: 1\nmeta: {a: !!bool maybe}\nsections: []\n", "2:11", "for tag"),
        "int.yaml": ('tokenbox: 1\nmeta: {a: !!int ""}\nsections: []\n', "2:11", "for tag"),
    }
    for name, (text, where, words) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert cli(["plan", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tokenbox: error: {path}:{where}: ") and words in err and err.count("\n") == 1


def test_an_imported_request_with_a_big_seed_plans_again(tmp_path, capsys):
    body = tmp_path / "r.json"
    body.write_text(json.dumps({"model": "gpt-4o", "seed": 12345678901234567890,
                                "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    assert cli(["import", str(body)]) == 0
    exported = tmp_path / "r.yaml"
    exported.write_text(capsys.readouterr().out, encoding="utf-8")
    assert cli(["plan", str(exported), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_json_through_a_pipe_is_json(tmp_path):
    text = json.dumps({"tokenbox": 1, "tokenizer": "o200k_base",
                       "sections": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]}, indent=None).replace(", {", ",\n{")
    result = subprocess.run([sys.executable, "-m", "tokenbox.core.commands.cli", "plan", "/dev/stdin", "--json"],
                            input=text.encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["sections"][1]["id"] == "b"


def test_aliases_are_weighed_by_size(tmp_path, capsys):
    path = tmp_path / "alias.yaml"
    path.write_text("tokenbox: 1\nmeta:\n  big: &a \"" + "y" * 1_000_000 + "\"\n  copies: [" + ", ".join(["*a"] * 2000)
                    + "]\nsections: []\n", encoding="utf-8")
    assert cli(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "aliases expand the document past 64 MiB" in err and err.startswith(f"tokenbox: error: {path}:4:")


def test_positions_after_unicode_line_separators_count_newlines_only(tmp_path, capsys):
    path = tmp_path / "u.yaml"
    path.write_text('tokenbox: 1\nname: "a\u2028b"\nsections: [{id: x, kind: nope}]\n', encoding="utf-8")
    assert cli(["plan", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"tokenbox: error: {path}:3:26: unknown section kind")
    nel = tmp_path / "nel.yaml"
    nel.write_text("tokenbox: 1\n# a\x85 b\nsections: []\n", encoding="utf-8")
    assert cli(["plan", str(nel)]) == 2
    assert capsys.readouterr().err.startswith(f"tokenbox: error: {nel}:2:")
