"""A JSON session loaded again by path: unchanged sections are the same objects, and the result always
equals a cold parse (duplicate keys, broken syntax and moved sections included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import load_session
from tokenbox.core.model.errors import SessionError
from tokenbox.core.sources.documents import parse_turns


def document(texts: list[str]) -> dict:
    return {"tokenbox": 1, "tokenizer": "o200k_base", "sections": [{"id": f"s{k}", "text": t} for k, t in enumerate(texts)]}


def cold(path: Path):
    try:
        return parse_turns(path.read_text(), str(path))[0]
    except SessionError as exc:
        return str(exc)


def load(path: Path):
    try:
        return load_session(path)
    except SessionError as exc:
        return str(exc)


def test_an_edit_reuses_the_other_sections(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    texts = [f"section {k} " * 20 for k in range(40)]
    path.write_text(json.dumps(document(texts), indent=1))
    first = load_session(path)
    texts[17] += " edited"
    path.write_text(json.dumps(document(texts), indent=1))
    second = load_session(path)
    assert second == cold(path)
    same = [a is b for a, b in zip(first.sections, second.sections, strict=True)]
    assert same == [k != 17 for k in range(40)]
    assert load_session(path) is second  # the same text again: the same session


def test_a_duplicate_key_in_the_edited_section_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    text = json.dumps(document(["a", "b", "c"]), indent=1)
    path.write_text(text)
    load_session(path)
    path.write_text(text.replace('"text": "b"', '"text": "b", "text": "x"'))
    with pytest.raises(SessionError, match="duplicate key"):
        load_session(path)


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["text", "insert", "delete", "newline", "dup", "break", "swap"]),
        st.integers(0, 30),
        st.sampled_from(["x", "yy", "é", "a b", ""]),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS, indent=st.sampled_from([None, 1]))
def test_reloads_equal_a_cold_parse(tmp_path_factory: pytest.TempPathFactory, edits, indent) -> None:
    path = tmp_path_factory.mktemp("reload") / "s.json"
    texts = [f"t{k}" for k in range(6)]
    path.write_text(json.dumps(document(texts), indent=indent))
    load(path)
    for op, where, value in edits:
        k = where % max(len(texts), 1)
        raw = json.dumps(document(texts), indent=indent)
        if op == "text" and texts:
            texts[k] = texts[k] + value
        elif op == "insert":
            texts.insert(k, value)
        elif op == "delete" and texts:
            texts.pop(k)
        elif op == "swap" and len(texts) > 1:
            texts[0], texts[-1] = texts[-1], texts[0]
        raw = json.dumps(document(texts), indent=indent)
        if op == "newline":
            raw = raw.replace('"sections"', '\n"sections"', 1)
        elif op == "dup":
            raw = raw.replace('"id": "s', '"id": "d", "id": "s', 1)
        elif op == "break":
            raw = raw[: len(raw) // 2]
        path.write_text(raw)
        assert load(path) == cold(path)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.sampled_from(["a b", "x\ny", "hello world.", "  ", "é ü", "{}", "z"]), min_size=2, max_size=12),
    edits=st.lists(st.tuples(st.integers(0, 11), st.sampled_from(["q r", "\n\nend", " lead", "w"])), min_size=1, max_size=3),
)
def test_a_join_patched_from_a_kept_one_counts_exactly(texts, edits) -> None:
    from tokenbox.core.model.names import SEPARATOR
    from tokenbox.core.tokens.counting import JoinedTotal, TokenCounter
    from tokenbox.core.tokens.tokenizers import default_registry

    tokenizer = default_registry().get("o200k_base")
    counter = TokenCounter(tokenizer)
    JoinedTotal(counter, texts)
    changed = list(texts)
    for index, text in edits:
        changed[index % len(changed)] += text
    joined = JoinedTotal(counter, changed)
    assert joined.total == tokenizer.count(SEPARATOR.join(t for t in changed if t))
    assert joined.counts == tuple(tokenizer.count(t) if t else 0 for t in changed)
