"""``nodes.json_line``: one line of a JSON-lines log as ``parse_json`` reads it — the same values, positions
(line, column, every key's) at every level and the same errors — read by the C scanner and placed on demand."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenbox.core.model.errors import SessionError
from tokenbox.core.parse.nodes import LocatedNode, Node, json_line, parse_json

TESTS = Path(__file__).resolve().parent.parent
HOSTILE = [
    '{"a": [1, {"b" : "x\\"y"} ,  "c\\u00e9"], "d":{}, "e":[], "f" : null}',
    ' [ 1 , "é" , {"k":[ ]}, "日本" ] ',
    '"s"',
    '{"a":1,"a":2}',  # a repeated key: refused by the positional parser
    '{"a":NaN}',
    '{"a": 1e400}',
    '{"a": 123456789012345678901}',
    '{"a": -Infinity}',
    '{"a": 1E5, "b": 12345678901234567890, "c": -0, "d": -0.0}',
    '[' * 70 + ']' * 70,
    '{"b":' * 70 + '1' + '}' * 70,
    '{"x": "\\ud800"}',  # a lone surrogate
    '{"x": "\\ud83d\\ude00 \\\\u"}',
    '{"a":1} x',
    '{"a": "tab\there"}',  # a control character inside a string
    '{"a": [1, 2,]}',
    '{"a" 1}',
]


def _same(located: Node, parsed: Node, where: str) -> None:
    assert (located.line, located.col, located.keys) == (parsed.line, parsed.col, parsed.keys), where
    if isinstance(parsed.value, dict):
        assert list(located.value) == list(parsed.value), where
        for key in parsed.value:
            _same(located.value[key], parsed.value[key], f"{where}.{key}")
    elif isinstance(parsed.value, list):
        assert len(located.value) == len(parsed.value), where
        for index, (a, b) in enumerate(zip(located.value, parsed.value, strict=True)):
            _same(a, b, f"{where}[{index}]")
    else:
        assert located.value == parsed.value and type(located.value) is type(parsed.value), where
    assert located.plain() == parsed.plain(), where


def _lines() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(TESTS.rglob("*.jsonl")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [(path.name, number, line) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    return found + [("hostile", 7, line) for line in HOSTILE]


def test_a_line_reads_as_the_positional_parser_reads_it() -> None:
    located = 0
    for name, number, line in _lines():
        try:
            parsed = parse_json(line, name, number, 1, unit="line")
        except SessionError as exc:
            with pytest.raises(SessionError) as caught:
                json_line(line, name, number)
            assert str(caught.value) == str(exc), (name, number)
            continue
        node = json_line(line, name, number)
        located += isinstance(node, LocatedNode)
        _same(node, parsed, f"{name}:{number}")
    assert located > 500  # the fixtures' lines are read by the scanner, not by the positional parser


def test_places_are_found_only_where_they_are_asked_for() -> None:
    line = '{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "content": [{"text": "a"}, {"text": "b"}]}}'
    node = json_line(line, "f", 3)
    payload = node.value["payload"]
    assert payload.value["type"].value == "message"  # read without placing anything below the root
    second = payload.value["content"].value[1]
    assert (second.line, second.col) == (3, line.index('{"text": "b"}') + 1)
