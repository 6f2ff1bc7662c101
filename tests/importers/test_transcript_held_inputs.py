"""What a followed Claude Code transcript keeps of each tool call's input (issue 27, "memory stays flat").

A followed reader keeps every call it read. Kept as parsed, an input was a dict of strings, each string an
object of its own, though the call's text says every one of them again; an uncompacted chain paid that for
every call it ever made (about 2.5 KB a request). Counted here: what a call's input holds beside its
call's text, and the input given back (a pack, an export) being the one the line holds.
"""

from __future__ import annotations

import gc
import json
import sys

from tokenbox.core.sources.readers.anthropic import plain_block
from tokenbox.core.sources.readers.common import hold_input, tool_input

from tests.importers.followed_chain import followed as _followed


def _inputs_in_file(path) -> dict[str, object]:
    """Each tool call's input by its id, as ``json.loads`` reads the file's lines."""
    found = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            content = json.loads(line).get("message", {}).get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    found[block["id"]] = block.get("input", {})
    return found


def _bytes_beside(value: object, shared: object) -> int:
    """The bytes of every object reachable from ``value`` but ``shared`` (and the words Python keeps once)."""
    seen, total, stack = {id(shared)}, 0, [value]
    while stack:
        item = stack.pop()
        if id(item) in seen or item is None or isinstance(item, bool):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif not isinstance(item, (str, bytes, int, float)):
            stack.extend(getattr(item, name) for name in getattr(type(item), "__slots__", ()))
    return total


def test_a_followed_calls_input_holds_little_beside_its_text(tmp_path) -> None:
    path, reader = _followed(tmp_path)
    gc.collect()
    calls = [block for node in reader.nodes if node.thread == "main" and node.blocks
             for block in node.blocks if block.type == "tool_use"]
    assert len(calls) >= 10
    in_file = _inputs_in_file(path)
    written = sum(len(json.dumps(in_file[block.meta["tool_use_id"]], ensure_ascii=False)) for block in calls)
    held = sum(_bytes_beside(block.meta["tool_input"], block.text) for block in calls)
    # kept as parsed, the inputs held more bytes than their JSON has characters (this chain's 17 calls:
    # 30 467 bytes for 11 149 characters), beside the calls' texts that say them again; held now: a few
    # lengths and the argument a label shows, a few hundred bytes a call whatever its input's size
    assert held < written // 2, (held, written)
    assert held / len(calls) < 400, held / len(calls)


def test_a_followed_calls_input_is_the_lines(tmp_path) -> None:
    path, reader = _followed(tmp_path)
    in_file = _inputs_in_file(path)
    turn = reader.main_turns()[-1]
    calls = [s for s in turn.sections if s.meta.get("block") == "tool_use"]
    assert len(calls) >= 10
    for section in calls:
        assert tool_input(section.meta) == in_file[section.meta["tool_use_id"]]
        assert list(tool_input(section.meta)) == list(in_file[section.meta["tool_use_id"]])  # keys in order


ODD_INPUTS = [
    {},
    {"command": "ls -la", "description": "List files"},
    {"a": "x\ny: z\n", "b\n: c": [1, {"k": "é😀"}], "": ""},
    {"n": 1.5, "big": 2**70, "s": "", "t": True, "u": None, "neg": -0.0, "nan": float("inf")},
    {"lone": "\ud800 half a character"},
    [1, "two"],
    "just a string",
    3,
]


def test_an_input_held_is_given_back_as_written() -> None:
    for value in ODD_INPUTS:
        block = plain_block({"type": "tool_use", "id": "t1", "name": "Tool", "input": value})
        held = hold_input(value, block.text, "[tool_use Tool]", "")
        if not isinstance(value, dict):
            assert held is None, value  # kept as it is
            continue
        assert held is not None
        # compared as JSON: a value and its type (1.5 is not "1.5", -0.0 keeps its sign), keys in order
        assert json.dumps(held.value()) == json.dumps(value), value
        assert held == hold_input(json.loads(json.dumps(value)), block.text, "[tool_use Tool]", "")
        assert held == json.loads(json.dumps(value)) and json.loads(json.dumps(value)) == held  # a meta read back
        # read as the dict it stands for (a caller of the API)
        assert len(held) == len(value) and list(held) == list(value)
        assert json.dumps({key: held[key] for key in held}) == json.dumps(value)
        assert dict(held.items()) == value


def test_an_input_laid_out_otherwise_is_kept_as_it_is() -> None:
    value = {"command": "ls"}
    assert hold_input(value, "[tool_use Tool]\ncommand: ls -la", "[tool_use Tool]", "") is None
    assert hold_input(value, "[tool_use Toal]\ncommand: ls", "[tool_use Tool]", "") is None  # as long, another header
    assert hold_input(value, "[tool_use Tool]\ncommand: ls", "[tool_use Tool]", "ls") is not None
