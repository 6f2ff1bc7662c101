"""``yamlwrite``: the bytes PyYAML's emitter writes for tokenbox's export documents, without its per-node and
per-character cost (issue 24: a 20 MB value took 19 s, 8 000 parallel tool calls 16 s)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.sources import export, yamlwrite
from tokenbox.core.sources.loader import load_turns

ROOT = Path(__file__).resolve().parents[2]
# characters that steer PyYAML's choice of style and its folding
PIECES = [" ", " ", "  ", "\n", "\t", "a", "word", "word ", ":", ": ", "#", " #", "-", "- ", "'", '"', "\\", "\x85", "\u2028",
          "é", "\ufeff", "\x00", "\r", "[", ",", "?", "x" * 60, "—", "\U0001f600", "true", "1", ".", "...", "*", "|", "{", "null"]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)
scalars = st.one_of(texts, st.none(), st.booleans(), st.integers(-10**12, 10**12), st.sampled_from([1.5, 1e17, -0.25, float("inf")]))
values = st.recursive(
    st.one_of(scalars, st.lists(texts, max_size=6).map(export._Flow)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text("abc_", min_size=1, max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def pyyaml(document: object) -> str:
    return yaml.dump(document, Dumper=export._Dumper, sort_keys=False, allow_unicode=True, width=export._WIDTH,
                     default_flow_style=False)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "text", "meta", "sections", "tags", "k: v", "a b"]), values, min_size=1, max_size=5))
def test_the_same_bytes_as_pyyaml(document: dict) -> None:
    assert yamlwrite.dump(document, export._Flow) == pyyaml(document)


@pytest.mark.parametrize("text", [
    ("word " * 6000).strip(),  # plain, folded at lone spaces past the width
    "line one\nline two   with spaces\n\n  indented\n" * 800,  # literal
    "tab\there, a trailing space \nand more " * 900,  # double-quoted (a tab; a space before a break), folded
    "'quoted': " + "it's a value: yes " * 1500,  # single-quoted, quotes doubled
    "a" * 30000,  # one long word
    "\u2028" + "unicode break " * 900,
], ids=["plain", "literal", "double-quoted", "single-quoted", "one-word", "unicode-break"])
def test_long_values_are_written_as_pyyaml_writes_them(text: str) -> None:
    document = {"tokenbox": 1, "sections": [{"id": "s", "kind": "text", "text": text}], "meta": {"tags": export._Flow([text[:300]])}}
    assert yamlwrite.dump(document, export._Flow) == pyyaml(document)


def test_every_real_session_exports_as_before() -> None:
    files = sorted((ROOT / "tests" / "fixtures" / "real_sessions").glob("*.json*")) + sorted((ROOT / "sample_sessions").glob("*"))
    checked = 0
    for path in files:
        try:
            turns = load_turns(path)
        except Exception:  # a file only other commands read (a fixture of another format)
            continue
        for turn in list(turns)[-2:]:
            document = export.session_document(turn)
            assert yamlwrite.dump(document, export._Flow) == pyyaml(document), path.name
            checked += 1
    assert checked >= 12


def test_work_grows_with_output_lines_not_characters() -> None:
    """A value is written in runs: one piece per output line, not one step per character."""
    for text, most in (("a" * (4 << 20), 10), (("word " * (1 << 20)).strip(), 3 * ((5 << 20) // 120) + 10)):
        writer = yamlwrite._Writer(export._Flow)
        writer.root({"text": text})
        assert len(writer.out) <= most


def test_shapes_it_does_not_cover_go_to_pyyaml() -> None:
    assert yamlwrite.dump({"k" * 200: 1}, export._Flow) is None  # a complex key
    assert yamlwrite.dump({1: "x"}, export._Flow) is None
    assert yamlwrite.dump({"x": (1, 2)}, export._Flow) is None
    assert yamlwrite.dump({"x": export._Flow([{"a": 1}])}, export._Flow) is None
