"""Re-planning an edited JSON session file with a warm engine (the one that planned the version before,
reloading the file by its path) gives exactly what a fresh engine and a fresh loader give: the same
plan JSON bytes, render, section texts and file positions, or the same one-line error.

An edit of a few text sections re-plans by patching the last assembly, join and layout (issue 10,
item 5); these tests hold that path to the cold one on random edits: texts and token counts, ids,
kinds, edits that make trimming start or stop, fixed sizes, escapes, duplicate keys and broken files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, TokenboxError, load_session
from tokenbox.core.commands.cli import main as cli_main
from tokenbox.core.sources.loader import Loader

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
SAMPLE_DOCS = {path.name: yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(SAMPLES.glob("*.yaml"))}
TEXT_KINDS = ("text", "logs", "mandates", "user")
TOKENIZERS = ("o200k_base", "cl100k_base", "heuristic")

# ------------------------------------------------------------------------------------- the files


def dump(doc: dict[str, Any], indent: int | None, escaped: frozenset[int], raw_edits: list[tuple[str, int]]) -> str:
    """``doc`` as JSON, with the sections numbered in ``escaped`` written with ``\\u`` escapes and the
    raw edits (duplicate keys, lone surrogates, broken values, a cut file) applied to the text."""
    sections = []
    for index, section in enumerate(doc["sections"]):
        body = json.dumps(section, ensure_ascii=index in escaped, indent=indent)
        for op, where in raw_edits:
            if where % max(len(doc["sections"]), 1) != index:
                continue
            if op == "dup_id":
                body = body.replace("{", '{"id": "dup",', 1)
            elif op == "dup_text" and '"text"' in body:
                body = body.replace('"text"', '"text": "first", "text"', 1)
            elif op == "surrogate" and '"text": "' in body:
                body = body.replace('"text": "', '"text": "\\ud800', 1)
            elif op == "pair" and '"text": "' in body:
                body = body.replace('"text": "', '"text": "\\ud83d\\ude00', 1)
            elif op == "bad_value":
                body = body.replace("{", '{"priority": "high",', 1) if '"priority"' not in body else body
        sections.append(body)
    head = {k: v for k, v in doc.items() if k != "sections"}
    separator = ",\n" if indent is not None else ", "
    text = json.dumps(head, indent=indent)[:-1].rstrip() + (",\n" if head else "") + '"sections": [' + separator.join(sections) + "]}"
    if ("cut", 0) in raw_edits:
        text = text[: len(text) * 2 // 3]
    if ("bom", 0) in raw_edits:
        text = "\ufeff" + text  # a UTF-8 byte-order mark, which a load skips
    return text


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "the", "a", "\n", "  ", "é", "è", "😀", "😁", "©", "\ufeff", '"q"', "\\", "\t", "{x}", "0.5", "-", "."])
_TEXT = st.lists(_WORDS, max_size=24).map(" ".join)
_BIG = st.integers(20, 120).map(lambda n: " ".join(f"word{k} stuff" for k in range(n)))


@st.composite
def synthetic(draw) -> dict[str, Any]:
    sections = []
    for k in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(TEXT_KINDS))
        section: dict[str, Any] = {"id": f"s{k}", "kind": kind, "text": draw(st.one_of(_TEXT, _BIG))}
        if draw(st.booleans()):
            section["priority"] = draw(st.integers(-2, 3))
        if draw(st.booleans()):
            section["grow"] = draw(st.sampled_from([0, 0.5, 1, 2.25, 1 / 3]))
        if kind != "user" and draw(st.booleans()):
            section["shrink"] = draw(st.sampled_from([0, 1, 2]))
        if draw(st.integers(0, 5)) == 0:
            section["min"] = draw(st.integers(0, 30))
        if kind == "text" and draw(st.integers(0, 6)) == 0:
            section["tokens"] = draw(st.integers(0, 50))
        sections.append(section)
    max_ctx = draw(st.sampled_from([60, 200, 800, 5000, 100_000, 100_000, 100_000]))
    return {"tokenbox": 1, "tokenizer": draw(st.sampled_from(TOKENIZERS)), "budget": {"max_ctx": max_ctx, "reserve_out": 0},
            "sections": sections}


_DOCS = st.one_of(st.sampled_from(sorted(SAMPLE_DOCS)).map(lambda name: json.loads(json.dumps(SAMPLE_DOCS[name]))), synthetic())

_EDIT = st.tuples(
    st.sampled_from(["text", "append", "big", "empty", "id", "kind", "tokens", "critical", "grow", "budget",
                     "escape", "dup_id", "dup_text", "surrogate", "pair", "bad_value", "cut", "bom"]),
    st.integers(0, 50),
    _TEXT,
)


def apply(doc: dict[str, Any], edits: list[tuple[str, int, str]], escaped: set[int]) -> list[tuple[str, int]]:
    """Apply ``edits`` to ``doc`` (in place) and ``escaped``; returns the raw edits to make on the text."""
    raw = []
    sections = doc["sections"]
    for op, where, words in edits:
        index = where % len(sections)
        section = sections[index]
        texty = "text" in section and section.get("kind", "text") in TEXT_KINDS
        if op in ("dup_id", "dup_text", "surrogate", "pair", "bad_value", "cut", "bom"):
            raw.append((op, index if op not in ("cut", "bom") else 0))
        elif op == "escape":
            escaped.symmetric_difference_update({index})
        elif op == "budget":
            doc.setdefault("budget", {})["max_ctx"] = [60, 200, 800, 5000, 100_000][where % 5]
        elif not texty:
            continue  # prefix, context, behaviours: only the file's raw text is edited here
        elif op == "text":
            section["text"] = words
        elif op == "append":
            section["text"] += " " + words
        elif op == "big":
            section["text"] += " " + " ".join(f"grown{k} more" for k in range(40 + where))
        elif op == "empty":
            section["text"] = ""
        elif op == "id":
            section["id"] = f"{section['id']}-{where}"
        elif op == "kind":
            section["kind"] = TEXT_KINDS[where % len(TEXT_KINDS)]
            if section["kind"] == "user":
                section.pop("shrink", None)
            if section["kind"] != "text":
                section.pop("tokens", None)
        elif op == "tokens" and section.get("kind", "text") == "text":
            if "tokens" in section and where % 2:
                section.pop("tokens")
            else:
                section["tokens"] = where
        elif op == "critical" and section.get("kind", "text") != "user":
            section["shrink"] = 0 if section.get("shrink", 1) else 1
        elif op == "grow":
            section["grow"] = [0, 1, 0.75, 3][where % 4]
    return raw


# ------------------------------------------------------------------------------------- comparing


def outcome(engine: Engine, load: Any, path: Path) -> Any:
    """Everything a reader of the plan sees, or the error's type and message."""
    try:
        session = load(path)
        plan = engine.plan(session)
    except TokenboxError as exc:
        return ("error", type(exc).__name__, str(exc))
    return (
        json.dumps(plan.to_dict(), ensure_ascii=False, indent=2),
        plan.render(),
        [(r.section.id, r.section.line, r.section.col, r.section.meta, r.text_before, r.text_after, r.cut) for r in plan.sections],
        [(s.to_dict(), s.total_after, s.note, s.text_after) for s in plan.steps],
    )


def cold(path: Path) -> Any:
    return outcome(Engine(), Loader().load_session, path)


# One engine for every example too: it last planned another file, with as many sections at times
# (the patch must not take another file's assembly for this one's).
_SHARED = Engine()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    doc=_DOCS,
    steps=st.lists(st.lists(_EDIT, min_size=1, max_size=3), min_size=1, max_size=5),
    indent=st.sampled_from([None, 1, 2]),
)
def test_a_warm_replan_after_edits_equals_a_cold_plan(tmp_path_factory: pytest.TempPathFactory, doc, steps, indent) -> None:
    path = tmp_path_factory.mktemp("edit") / "session.json"
    escaped: set[int] = set()
    path.write_text(dump(doc, indent, frozenset(escaped), []), encoding="utf-8")
    warm = Engine()
    loader = Loader()
    assert outcome(warm, loader.load_session, path) == cold(path) == outcome(_SHARED, load_session, path)
    for edits in steps:
        raw = apply(doc, edits, escaped)
        path.write_text(dump(doc, indent, frozenset(escaped), raw), encoding="utf-8")
        assert outcome(warm, loader.load_session, path) == cold(path) == outcome(_SHARED, load_session, path)


# ------------------------------------------------------------------------------- fixed examples


def _big_session(sections: int = 60, budget: int = 100_000) -> dict[str, Any]:
    return {
        "tokenbox": 1, "tokenizer": "o200k_base", "budget": {"max_ctx": budget, "reserve_out": 0},
        "sections": [{"id": f"s{k}", "text": f"section {k}: " + "some words here " * (5 + k % 7), **({"grow": 1} if k % 9 == 0 else {})}
                     for k in range(sections)],
    }


def test_an_edit_of_one_section_keeps_the_other_results(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    doc = _big_session()
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    engine = Engine()
    first = engine.plan(load_session(path))
    doc["sections"][17]["text"] += " edited"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    second = engine.plan(load_session(path))
    assert json.dumps(second.to_dict(), ensure_ascii=False, indent=2) == cold(path)[0]
    assert second.sections[17].tokens_before > first.sections[17].tokens_before
    # the sections that neither changed nor share the slack (every ninth grows) are the results of the plan before
    same = [a is b for k, (a, b) in enumerate(zip(first.sections, second.sections, strict=True)) if k % 9]
    assert same == [k != 17 for k in range(60) if k % 9]


def test_an_edit_that_makes_trimming_start_then_stop(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    doc = _big_session(budget=3000)
    path.write_text(json.dumps(doc), encoding="utf-8")
    engine = Engine()
    assert not engine.plan(load_session(path)).steps
    original = doc["sections"][5]["text"]
    doc["sections"][5]["text"] += " grown" * 3000
    path.write_text(json.dumps(doc), encoding="utf-8")
    squeezed = outcome(engine, load_session, path)
    assert squeezed == cold(path) and squeezed[3]  # steps
    doc["sections"][5]["text"] = original + " back"
    path.write_text(json.dumps(doc), encoding="utf-8")
    relaxed = outcome(engine, load_session, path)
    assert relaxed == cold(path) and not relaxed[3]


def test_bad_input_after_a_good_load_is_one_line_and_the_next_good_load_recovers(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.json"
    doc = _big_session(sections=20)
    good = json.dumps(doc, indent=1)
    path.write_text(good, encoding="utf-8")
    assert cli_main(["plan", str(path), "--json"]) == 0
    capsys.readouterr()
    engine = Engine()
    engine.plan(load_session(path))
    bad = [
        good.replace('"id": "s7"', '"id": "s7", "id": "again"'),  # a duplicate key in one section
        good.replace('"text": "section 9', '"text": "\\udc00section 9'),  # an escaped lone surrogate
        good.replace('"id": "s3"', '"id": "s3", "priority": "x"'),  # a bad value
        good[: len(good) // 2],  # cut short
    ]
    for text in bad:
        path.write_text(text, encoding="utf-8")
        assert cli_main(["plan", str(path), "--json"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and err.startswith(f"tokenbox: error: {path}:") and "Traceback" not in err
        line, col = err[len(f"tokenbox: error: {path}:"):].split(":")[:2]
        assert int(line) > 1 and int(col) >= 1
        with pytest.raises(TokenboxError) as raised:
            engine.plan(load_session(path))
        assert str(raised.value) in err
        doc["sections"][len(bad) % 20]["text"] += " recovered"
        recovered = json.dumps(doc, indent=1)
        path.write_text(recovered, encoding="utf-8")
        assert cli_main(["plan", str(path), "--json"]) == 0
        out, _ = capsys.readouterr()
        assert out == cold(path)[0] + "\n"
        assert outcome(engine, load_session, path) == cold(path)


@pytest.mark.parametrize(
    ("before", "after"),
    [("😀", "😁"), ("é", "è"), ("é", "©"), ("€", "₭"), ("é", "😀"), ("a", "é"), ("😀", "")],
)
def test_an_edit_inside_a_multibyte_character_reloads_like_a_cold_load(tmp_path: Path, before: str, after: str) -> None:
    # the first and the last differing bytes of the file fall inside a character (same lead bytes, or
    # the same continuation bytes): the reload must still find the change on character boundaries
    path = tmp_path / "s.json"
    doc = _big_session(sections=30)
    for ensure_ascii in (False, True):
        doc["sections"][12]["text"] = f"start {before}{before} middle {before} end"
        path.write_text(json.dumps(doc, ensure_ascii=ensure_ascii), encoding="utf-8")
        engine = Engine()
        loader = Loader()
        assert outcome(engine, loader.load_session, path) == cold(path)
        doc["sections"][12]["text"] = f"start {before}{after} middle {after} end"
        path.write_text(json.dumps(doc, ensure_ascii=ensure_ascii), encoding="utf-8")
        assert outcome(engine, loader.load_session, path) == cold(path)


_SCRIPT = """
import json, sys
from tokenbox.core import Engine, load_session
path, edited = sys.argv[1], sys.argv[2]
engine = Engine()
engine.plan(load_session(path))
with open(path, "w", encoding="utf-8") as handle:
    handle.write(open(edited, encoding="utf-8").read())
sys.stdout.write(json.dumps(engine.plan(load_session(path)).to_dict(), ensure_ascii=False, indent=2))
"""


def test_the_patched_plan_is_the_same_bytes_under_another_hash_seed(tmp_path: Path) -> None:
    path, edited = tmp_path / "s.json", tmp_path / "edited.json"
    doc = _big_session(sections=40)
    path.write_text(json.dumps(doc), encoding="utf-8")
    doc["sections"][11]["text"] += " edited é😀"
    doc["sections"][30]["id"] = "renamed"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-c", _SCRIPT, str(path), str(edited)], capture_output=True, env=env, check=True,
                         timeout=120)
    assert run.stdout.decode("utf-8") == cold(path)[0]
