"""The fast JSON path (C scanner) against the positional parser: same sessions, same errors.

``parse_turns`` reads JSON documents and JSON-lines logs with ``json``'s C scanner first and falls
back to the positional parser (``nodes.parse_json``) whenever anything could differ. The reference
here is the loader as it was before the fast path: ``parse_json`` for the whole text (or each line),
the importers' detectors, then ``session_from_node``. Every generated text (valid sessions, sessions
with wrong values, and texts mutated with duplicate keys, NaN, huge numbers, deep nesting, surrogate
escapes, odd whitespace or broken syntax) must give the same turns, field by field and position by
position, or an exception of the same type with the same text.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core.model.errors import NotYetComplete, SessionError
from tokenbox.core.model.kinds import KINDS
from tokenbox.core.model.session import Session
from tokenbox.core.parse import nodes
from tokenbox.core.parse.nodes import fast_json, parse_json
from tokenbox.core.parse.schema import session_from_node
from tokenbox.core.sources.documents import parse_turns
from tokenbox.core.sources.formats import FORMATS, Format, Shape, of_shape
from tokenbox.core.sources.logreader import LogReader
from tokenbox.core.sources.turns import with_histories

# 100 derandomized examples each (never fewer for these equivalence fuzzers): 300 made this the
# suite's most expensive module, nearly all of it in generating the documents.
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


# ---------------------------------------------------------------- the reference: the positional path only


def reference_turns(text: str, path: str, fmt: str) -> list[Session]:
    """``parse_turns`` as it was before the fast path (positional parser for everything)."""
    from tokenbox.core.sources import foreign

    if fmt == "jsonl":
        parsed = []
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                parsed.append(parse_json(line, path, number, 1, unit="line"))
            except SessionError:
                if number == len(lines):
                    break
                raise
        if not parsed:
            raise NotYetComplete("no complete session line", "append one JSON session object per line", path, 1, 1,
                                 awaiting="the first complete line")
        for row in of_shape(FORMATS, Shape.LINES):
            if row.detect(parsed):
                return row.convert(parsed, path)
        refusal = foreign.sniff_lines(parsed, path)  # another tool's format, refused by name
        if refusal is not None:
            raise refusal
        return [session_from_node(node, path) for node in parsed]
    node = parse_json(text, path)
    for row in of_shape(FORMATS, Shape.DOCUMENT):
        if row.detect(node):
            return row.convert(node, path)
    refusal = foreign.sniff_document(node, path) or foreign.sniff_text(text, path, node)
    if refusal is not None:
        raise refusal
    return [session_from_node(node, path)]


def outcome(load: Any) -> tuple[Any, ...]:
    """What a loader gave: every field of every turn (reprs tell 1, 1.0 and true apart), or the error."""
    try:
        turns = load()
    except Exception as exc:  # the comparison covers unexpected exceptions too
        fields = dataclasses.astuple(exc) if dataclasses.is_dataclass(exc) else ()
        return ("error", type(exc).__name__, str(exc), repr(fields))
    return ("ok", [repr(dataclasses.astuple(turn)) for turn in turns])


def assert_same(text: str, path: str, fmt: str) -> tuple[Any, ...]:
    expected = outcome(lambda: reference_turns(text, path, fmt))
    got = outcome(lambda: parse_turns(text, path, fmt))
    assert got == expected, text[:2000]
    return got


# ---------------------------------------------------------------- documents


class Dup(dict):
    """An object serialized with these (key, value) pairs, duplicates included (json calls ``items()``)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs

    def items(self):  # type: ignore[override]
        return self.pairs


CLEAN_TEXT = ["", " ", "\n", "\t", "é", "日本", "🙂", "\ud83d\ude00", "\\", '"', "\x1b", "\u2028", "a:b", "{}[],", "\\ud800"]
clean_text = st.one_of(st.sampled_from(CLEAN_TEXT), st.text(max_size=8))  # no lone surrogates
any_text = st.one_of(clean_text, st.sampled_from(["\ud800", "x\udfff", "\udc00\ud800", "\ud800\x1b", "é\udfff\n"]))
ids = st.one_of(st.sampled_from(["a", "b", "s-1", "x.y", "a"]), st.text(max_size=4))
clean_numbers = st.one_of(
    st.integers(-5, 5),
    st.integers(-(10**19) + 1, 10**20 - 1),
    st.sampled_from([0, 1, 10**9, 10**9 + 1, -(10**9), 10**19 - 1, 10**20 - 1, -(10**19) + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, 1.0, -0.0, 1e308, 2.5, 1e-300]),
)
any_numbers = st.one_of(clean_numbers, st.integers(), st.sampled_from([10**19, 10**20, -(10**19), 10**25, math.nan, math.inf]))


def json_values(scalars: st.SearchStrategy) -> st.SearchStrategy:
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.sampled_from(["a", "b", "c", "é", ""]), children, max_size=3),
        ),
        max_leaves=8,
    )


clean_value = json_values(st.one_of(st.none(), st.booleans(), clean_numbers, clean_text))
json_value = json_values(st.one_of(st.none(), st.booleans(), any_numbers, any_text))
LENSES = ["tail_lines:2", "head_lines:1", "summary", "drop", "dedupe_lines", " drop "]
BAD_LENSES = ["demote", "bogus", "tail_lines:x", "tail_lines:0"]


# The strategies are built once, here: a strategy made inside a draw is validated again on every
# draw, which cost a third of this module's time. The helpers below draw from them inline.
SOMETIMES_BROKEN = st.integers(0, 5)
NESTED_DEPTH = st.integers(50, 70)
NESTED_BOTTOM = st.sampled_from([[], {}, 1, "x", [1], {"k": None}])
BIT = st.integers(0, 1)
BOOL = st.booleans()
SECTION_COUNT = st.integers(0, 4)
ONE_IN_FOUR = st.integers(0, 3)
ONE_IN_THREE = st.integers(0, 2)
ONE_IN_TEN = st.integers(0, 9)


def field(draw, valid: st.SearchStrategy, broken: bool) -> Any:
    """A valid value, or (in a broken document, now and then) any JSON value."""
    if broken and draw(SOMETIMES_BROKEN) == 0:
        return draw(json_value)
    return draw(valid)


@st.composite
def nested(draw) -> Any:
    """A value nested around the depth limit: lists and objects, empty or not at the bottom."""
    depth = draw(NESTED_DEPTH)
    value: Any = draw(NESTED_BOTTOM)
    for level in range(depth):
        value = [value] if (level + draw(BIT)) % 2 else {"n": value}
    return value


NESTED = nested()


def optional_keys(fields: dict[str, Any], required: list[str]) -> st.SearchStrategy:
    """Up to four of the optional keys of ``fields`` (a strategy, built once per field set)."""
    return st.lists(st.sampled_from([key for key in sorted(fields) if key not in required]), max_size=4, unique=True)


def pick_keys(draw, keys: st.SearchStrategy, required: list[str], broken: bool) -> list[str]:
    chosen = draw(keys)
    if broken and draw(BOOL):
        return chosen
    return [*required, *chosen]


def fields_and_keys(fields: dict[str, Any], required: list[str]) -> tuple[dict[str, Any], st.SearchStrategy, list[str]]:
    return fields, optional_keys(fields, required), required


BEHAVIOUR_FIELDS = {
    "name": ids,
    "kind": st.sampled_from(["constraint", "directive", "procedure", "preference"]),
    "activation": st.floats(0, 1),
    "content": clean_text,
    "summary": clean_text,
    "tags": st.lists(clean_text, max_size=2),
}
BEHAVIOUR = {
    broken: fields_and_keys({**BEHAVIOUR_FIELDS, **({"bogus": json_value, "meta": json_value} if broken else {})}, ["name", "content"])
    for broken in (False, True)
}
BEHAVIOUR_COUNT = st.integers(0, 3)


def behaviour(draw, broken: bool) -> Any:
    fields, keys, required = BEHAVIOUR[broken]
    return {key: field(draw, fields[key], broken) for key in pick_keys(draw, keys, required, broken)}


def behaviours(draw, broken: bool) -> Any:
    items = [behaviour(draw, broken) for _ in range(draw(BEHAVIOUR_COUNT))]
    names = [item.get("name") for item in items]
    if not broken and len(set(map(repr, names))) != len(names):
        items = items[:1]
    return items


class Drawn:
    """A marker: this field's value is drawn by a helper (``behaviours``), not from a strategy."""


KIND_FIELDS = {
    "text": {"text": clean_text},
    "user": {"text": clean_text},
    "logs": {"text": clean_text},
    "mandates": {"text": clean_text},
    "prefix": {"assistant_name": clean_text, "identity": clean_text, "tools": clean_text},
    "context": {"foveal_focus": st.none() | clean_text, "scope": st.none() | clean_text, "memory": st.lists(clean_text, max_size=2)},
}
SECTION_FIELDS = {
    "priority": st.integers(-3, 3),
    "min": st.integers(0, 10),
    "grow": st.sampled_from([0, 1, 2.5]),
    "shrink": st.sampled_from([0, 1, 0.5]),
    "strategy": st.one_of(st.sampled_from(LENSES), st.lists(st.sampled_from(LENSES), max_size=2)),
    "keep": st.sampled_from(["head", "tail"]),
    "summary": clean_text,
    "meta": clean_value,
}
BROKEN_SECTION_FIELDS = {
    "meta": st.one_of(json_value, NESTED),
    "strategy": st.one_of(st.sampled_from(BAD_LENSES), st.lists(st.sampled_from(LENSES + BAD_LENSES), max_size=2)),
    "keep": st.sampled_from(["head", "tail", "middle"]),
    "tokenbox": json_value,
}
SECTION_KIND = {
    False: st.sampled_from([*KINDS, *KINDS[:2]]),
    True: st.sampled_from([*KINDS, *KINDS[:2], "bogus"]),
}


def section_fields(kind: str, broken: bool) -> tuple[dict[str, Any], st.SearchStrategy, list[str]]:
    fields: dict[str, Any] = {**SECTION_FIELDS, **KIND_FIELDS.get(kind, {})}
    if kind == "behaviors":
        fields.update(budget=st.integers(0, 100), items=Drawn)
    if broken:
        fields.update(BROKEN_SECTION_FIELDS)
    return fields_and_keys(fields, ["text"] if "text" in fields else [])


SECTION = {(kind, broken): section_fields(kind, broken) for kind in [*KINDS, "bogus"] for broken in (False, True)}


def section_id(index: int) -> st.SearchStrategy:
    return st.sampled_from([f"s{index}", f"s{index}", "s0"]) | ids


SECTION_IDS = [section_id(index) for index in range(5)]


def section(draw, index: int, broken: bool) -> Any:
    kind = draw(SECTION_KIND[broken])
    fields, keys, required = SECTION[(kind, broken)]
    doc = {"id": field(draw, SECTION_IDS[index], broken), "kind": kind}
    if draw(ONE_IN_FOUR) == 0:
        del doc["kind" if kind == "text" else "id"]
    for key in pick_keys(draw, keys, required, broken):
        doc[key] = behaviours(draw, broken) if fields[key] is Drawn else field(draw, fields[key], broken)
    return doc


DOCUMENT_FIELDS = {
    "name": clean_text,
    "model": st.sampled_from(["gpt-4o", "claude-3-5-sonnet", "nope"]),
    "tokenizer": st.sampled_from(["o200k_base", "heuristic"]),
    "budget": st.fixed_dictionaries(
        {},
        optional={"max_ctx": st.integers(1, 10**6), "reserve_out": st.integers(0, 10), "headroom": st.sampled_from([0, 0.5])},
    ),
    "sensor": st.sampled_from(["user-input", "heartbeat"]),
    "trimming": st.sampled_from(["tokenbox", "progressive"]),
    "meta": st.one_of(clean_value, clean_value, NESTED),
}
BROKEN_DOCUMENT_FIELDS = {
    "sectoins": json_value,
    "messages": st.just([{"role": "user", "content": "hi"}]),
    "meta": st.one_of(json_value, NESTED),
    "budget": st.fixed_dictionaries({}, optional={"max_ctx": json_value, "headroom": json_value, "bogus": json_value}),
}
DOCUMENT = {
    broken: fields_and_keys({**DOCUMENT_FIELDS, **(BROKEN_DOCUMENT_FIELDS if broken else {})}, [])
    for broken in (False, True)
}
VERSION = st.just(1)
DROPPED_KEY = st.sampled_from(["tokenbox", "sections"])


@st.composite
def document(draw) -> Any:
    """A session object (valid, or with a few wrong values or keys), sometimes a request body or another value."""
    broken = draw(ONE_IN_THREE) == 0
    fields, keys, required = DOCUMENT[broken]
    doc = {key: field(draw, fields[key], broken) for key in pick_keys(draw, keys, required, broken)}
    doc["tokenbox"] = field(draw, VERSION, broken)
    doc["sections"] = [section(draw, index, broken) for index in range(draw(SECTION_COUNT))]
    if broken and draw(BOOL):
        del doc[draw(DROPPED_KEY)]
    doc = dict(draw(st.permutations(list(doc.items()))))
    return draw(st.sampled_from([doc] * 30 + [[doc], "text", 1, None]))


DOCUMENTS = document()


def with_duplicates(draw, value: Any) -> Any:
    """``value`` with a key repeated in one of its objects (written as the json module writes it)."""
    objects: list[tuple[Any, Any]] = []  # (container, key or index) of every object, to pick one

    def walk(item: Any, parent: Any, at: Any) -> None:
        if isinstance(item, dict):
            if item:
                objects.append((parent, at))
            for key, child in item.items():
                walk(child, item, key)
        elif isinstance(item, list):
            for index, child in enumerate(item):
                walk(child, item, index)

    holder = [value]
    walk(value, holder, 0)
    if objects:
        parent, at = draw(st.sampled_from(objects))
        pairs = list(parent[at].items())
        key, item = draw(st.sampled_from(pairs))
        pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(st.sampled_from([item, 0, "other"]))))
        parent[at] = Dup(pairs)
    return holder[0]


SPLICES = [
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E999", "1e-400", "123456789012345678901", "12345678901234567890",
    "-12345678901234567890", "-1234567890123456789", "00", "01", "-", "1.", ".5", "1e", "-0", "true", "nul", "tru",
    '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\ud83dx"', '"\\u00e9"', '"\\x"', '"a\tb"', '"unterminated',
    ",", ":", "{", "}", "[", "]", '"', "\\", '"k": 1,', '"id": "dup",', "[[[[[[[[", "]]]]", "\u00a0", "\f", "\x0b", "\ufeff",
    "/* c */", "'s'", "\x00",
]
WHITESPACE = [" ", "\t", "\n", "\r", "\r\n", "  \t", "\u00a0", "\f", "\x0b", "\u2028", ""]
SPLICE = st.sampled_from(SPLICES)
NUMBER_SPLICE = st.sampled_from(SPLICES[:24])
SPACE = st.sampled_from(WHITESPACE)
SPACE_BEFORE = st.sampled_from([" ", "\n", ",", ":", "{", "["])
ACTION = st.integers(0, 4)
DELETED = st.integers(1, 3)


def mutated(draw, text: str) -> str:
    """``text`` with a few splices, deletions or whitespace changes at random places."""
    for _ in range(draw(ONE_IN_FOUR)):
        where = draw(st.integers(0, len(text)))
        action = draw(ACTION)
        if action == 0:
            text = text[:where] + draw(SPLICE) + text[where:]
        elif action == 1:
            text = text[:where] + text[where + draw(DELETED) :]
        elif action == 2:
            old = draw(SPACE_BEFORE)
            at = text.find(old, where)
            if at >= 0:
                text = text[: at + (old != " " and old != "\n")] + draw(SPACE) + text[at + 1 :]
        elif action == 3:
            text = text[:where]  # truncated
        else:
            for old in ("1", "0", "true", '"x"', "null"):
                at = text.find(old, where)
                if at >= 0:
                    text = text[:at] + draw(NUMBER_SPLICE) + text[at + len(old) :]
                    break
    return text


INDENT = st.sampled_from([None, None, 0, 1, 2, "\t", " \r\n "])
SEPARATORS = st.sampled_from([None, (",", ":"), (" , ", " : "), (",\t", ":\r")])
LINE_START = st.sampled_from(["", "", "", " \t"])
LINE_END = st.sampled_from(["", "", " ", "\r"])
DOC_START = st.sampled_from(["", "", "", " ", "\n", "\ufeff"])
DOC_END = st.sampled_from(["", "\n", " \t", "\n\n"])


@st.composite
def serialized(draw, *, one_line: bool = False) -> str:
    value = draw(DOCUMENTS)
    if draw(ONE_IN_TEN) == 0:
        value = with_duplicates(draw, value)
    indent = None if one_line else draw(INDENT)
    separators = draw(SEPARATORS)
    try:
        text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(BOOL))
    except ValueError:  # a separator json refuses with this indent
        text = json.dumps(value, ensure_ascii=False)
    if one_line:
        text = text.replace("\n", " ").replace("\r", " ")
    if draw(ONE_IN_FOUR) == 0:
        text = mutated(draw, text)
    if one_line:
        return draw(LINE_START) + text + draw(LINE_END)
    return draw(DOC_START) + text + draw(DOC_END)


# ---------------------------------------------------------------- properties


@FUZZ
@given(serialized())
def test_json_documents_load_the_same_on_both_paths(text: str) -> None:
    assert_same(text, "doc.json", "json")


@FUZZ
@given(st.lists(serialized(one_line=True), min_size=1, max_size=4), st.sampled_from(["\n", "\r\n", "\n\n"]), st.booleans())
def test_jsonl_logs_load_the_same_on_both_paths(lines: list[str], newline: str, terminated: bool) -> None:
    text = newline.join(lines) + (newline if terminated else "")
    assert_same(text, "log.jsonl", "jsonl")
    assert_same(text, "log.jsonl", "jsonl")  # again: the lines now come from the cache


@FUZZ
@given(st.lists(serialized(one_line=True), min_size=1, max_size=5), st.integers(0, 10**6))
def test_a_growing_log_reads_the_same_at_every_length(lines: list[str], tag: int) -> None:
    path = f"grow-{tag}.jsonl"
    for count in range(1, len(lines) + 1):
        assert_same("\n".join(lines[:count]) + "\n", path, "jsonl")
        assert_same("\n".join(lines[:count]) + "\n" + lines[count - 1][: len(lines[count - 1]) // 2], path, "jsonl")


@FUZZ
@given(st.text(alphabet=st.sampled_from('{}[]",:0123456789.eE-+ \t\n\rtruefalsnNI\\uad8x"'), max_size=60))
def test_json_soup_loads_the_same_on_both_paths(text: str) -> None:
    assert_same(text, "soup.json", "json")
    assert_same(text, "soup.jsonl", "jsonl")


@FUZZ
@given(serialized(), st.integers(1, 5), st.integers(1, 5))
def test_fast_json_only_answers_what_parse_json_reads_the_same(text: str, first_line: int, first_col: int) -> None:
    doc = fast_json(text, first_line, first_col)
    if doc is None:
        return
    node = parse_json(text, "x.json", first_line, first_col)  # must not raise
    assert repr(doc.root.plain()) == repr(node.plain()) == repr(doc.value)
    assert (doc.root.line, doc.root.col) == (node.line, node.col)
    for key, item in node.value.items():
        fast = doc.root.value[key]
        assert (fast.line, fast.col) == (item.line, item.col), key
        if key == "sections" and isinstance(item.value, list):
            assert [(s.line, s.col) for s in fast.value] == [(s.line, s.col) for s in item.value]


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(serialized(), st.integers(2, 40), st.integers(1, 6))
def test_small_limits_are_met_at_the_same_value(text: str, max_nodes: int, max_depth: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nodes, "MAX_NODES", max_nodes)
        mp.setattr(nodes, "MAX_DEPTH", max_depth)
        assert_same(text, "small.json", "json")


# ---------------------------------------------------------------- examples


@pytest.mark.parametrize(
    "text",
    [
        '{"tokenbox": 1, "sections": [{"text": "a"}], "tokenbox": 1}',
        '{"tokenbox": 1, "sections": [{"text": "a", "text": "b"}]}',
        '{"tokenbox": 1, "meta": {"x": NaN}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": -Infinity}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": 1e400}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": 123456789012345678901}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": -12345678901234567890}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": 12345678901234567890}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": "\\ud800"}, "sections": []}',
        '{"tokenbox": 1, "meta": {"\\udc00": 1}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": "\\ud83d\\ude00 \ud800"}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": "\ud800"}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": "\\u00e9 \ud800"}, "sections": []}',
        '{"tokenbox": 1, "meta": {"x": "\\u00e9", "y": "\ud800"}, "sections": []}',
        '{"tokenbox": 1, "meta": ' + "[" * 63 + "]" * 63 + ', "sections": []}',
        '{"tokenbox": 1, "meta": ' + "[" * 64 + "]" * 64 + ', "sections": []}',
        '{"tokenbox": 1, "meta": ' + "[" * 64 + "1" + "]" * 64 + ', "sections": []}',
        '{"tokenbox": 1, "sections": [' + "[" * 62 + "]" * 62 + "]}",
        '{"tokenbox": 1, "sections": [' + "[" * 63 + "]" * 63 + "]}",
        '{"tokenbox": 1, "sections": [' + "[" * 5000 + "]" * 5000 + "]}",
        '{"tokenbox": 1, "sections": [{"text": "a"},]}',
        '{"tokenbox": 1, "sections": [{"text": "a"}] ',
        '{"tokenbox": 1,\r\n\t"sections" :[ {"text":"a"} ,{"text":"b", "id": "b"}\n]\n}\n',
        '\n\n  {"tokenbox": 1, "model": "nope", "sections": []}',
        '{"tokenbox": 1, "sections": [{"id": "a", "text": ""}, {"id": "a", "text": ""}]}',
        '{"tokenbox": 1, "sections": [{"text": "x", "strategy": ["drop", "tail_lines:0"]}]}',
        '{"tokenbox": 1, "sections": [{"kind": "behaviors", "items": [{"name": "n", "content": "c", "nope": 1}]}]}',
        '{"tokenbox": 1.0, "sections": []}',
        '{"tokenbox": true, "sections": []}',
        '{"tokenbox": 1, "sections": []}{}',
        '{"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}',
        '{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "model": "claude-3-5-haiku"}',
        "[]",
        "",
        "   ",
    ],
)
def test_documents_that_could_trip_the_fast_path(text: str) -> None:
    assert_same(text, "case.json", "json")
    assert_same(text, "case.jsonl", "jsonl")


def test_a_log_that_grows_by_a_line_parses_only_that_line(tmp_path: Path) -> None:
    lines = [json.dumps({"tokenbox": 1, "sections": [{"id": "a", "text": f"turn {k}"}]}) for k in range(30)]
    log = tmp_path / "grows-by-one.jsonl"
    log.write_text("\n".join(lines[:29]) + "\n")
    reader = LogReader(log)
    first = reader.read()
    assert reader.lines_parsed == 29
    with log.open("a") as handle:
        handle.write(lines[29] + "\n")
    again = reader.read()
    assert reader.lines_parsed == 30 and reader.resets == 1
    assert all(a.sections is b.sections for a, b in zip(again, first, strict=False))  # kept, not rebuilt
    assert again == with_histories(reference_turns("\n".join(lines) + "\n", str(log), "jsonl"))
    log.write_text("\n" + "\n".join(lines) + "\n")  # every line moved down: read again from the top
    moved = reader.read()
    assert [t.line for t in moved] == list(range(2, 32))
    assert reader.lines_parsed == 60 and reader.resets == 2


def test_the_same_lines_in_another_file_name_that_file() -> None:
    good = json.dumps({"tokenbox": 1, "sections": [{"id": "a", "text": "x"}]})
    bad = json.dumps({"tokenbox": 1, "sections": [{"id": "a", "txt": "x"}]})
    for path in ("one.jsonl", "two.jsonl", "one.jsonl"):
        turns = parse_turns(good + "\n" + good + "\n", path)
        assert [turn.path for turn in turns] == [path, path]
        assert outcome(lambda path=path: parse_turns(good + "\n" + bad + "\n", path)) == outcome(
            lambda path=path: reference_turns(good + "\n" + bad + "\n", path, "jsonl")
        )
        with pytest.raises(SessionError, match=f"^{path}:2:"):
            parse_turns(good + "\n" + bad + "\n", path)


def test_a_detector_that_reads_positions_gets_positioned_nodes() -> None:
    seen: list[int] = []

    def detect(found: list[nodes.Node]) -> bool:
        seen.extend(node.line for node in found)
        return False

    table = (Format("positions", Shape.LINES, detect, lambda found, path: []),)
    text = '{"tokenbox": 1, "sections": []}\n\n{"tokenbox": 1, "sections": []}\n'
    assert len(parse_turns(text, "positions.jsonl", formats=table)) == 2
    assert seen == [1, 3]


def test_nan_and_huge_numbers_are_refused_at_their_place() -> None:
    for literal, problem in [("NaN", "NaN is not a valid JSON number"), ("1e999", "number 1e999 is out of range")]:
        with pytest.raises(SessionError) as caught:
            parse_turns('{"tokenbox": 1,\n "meta": {"a": ' + literal + '}, "sections": []}', "n.json")
        assert str(caught.value).startswith(f"n.json:2:16: {problem}")
    assert math.isfinite(parse_turns('{"tokenbox": 1, "meta": {"a": 1e308}, "sections": []}', "n.json")[0].meta["a"])
