"""Parse YAML and JSON into a tree of values that remember their line and column.

Validation needs positions for its messages, which neither ``json`` nor PyYAML's safe loader keep.
JSON is read first by ``fast_json`` (``json``'s C scanner, positions only for what a valid session
keeps); whatever it cannot vouch for, and every error, goes through a small recursive-descent
parser (``parse_json``; strings are scanned by the C ``scanstring``), the one source of messages.
YAML is composed with libyaml's ``CSafeLoader`` when present and converted node by node, so tags
that would build Python objects, alias bombs and duplicate keys are refused before any value exists.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from tokenbox.core.errors import SessionError

MAX_DEPTH = 64
MAX_NODES = 2_000_000
MAX_INT = 2**53
MAX_INT_DIGITS = 20  # the longest whole number a session may hold (as in JSON: a 64-bit seed fits)
MAX_EXPANDED_CHARS = 256 * 1024 * 1024  # scalar text a YAML document may expand to through its aliases

try:
    _YAML_LOADER: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _YAML_LOADER = yaml.SafeLoader


@dataclass(slots=True)
class Node:
    """A parsed value with its 1-based position; mappings hold ``dict[str, Node]``, lists ``list[Node]``."""

    value: Any
    line: int
    col: int
    keys: dict[str, tuple[int, int]] | None = None  # mappings: where each key was written

    def plain(self) -> Any:
        """The value with positions stripped, recursively."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


class _Lines:
    """Offset → (line, column) for one text, computed only when a position is asked for."""

    def __init__(self, text: str, first_line: int = 1, first_col: int = 1) -> None:
        self.text = text
        self.first_line = first_line
        self.first_col = first_col
        self._starts: list[int] | None = None

    def at(self, offset: int) -> tuple[int, int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        index = bisect.bisect_right(self._starts, offset) - 1
        col = offset - self._starts[index] + 1
        if index == 0:
            col += self.first_col - 1
        return self.first_line + index, col


def _mark_at(lines: _Lines, mark: Any) -> tuple[int, int]:
    """1-based line and column of a YAML mark, counted as everywhere in tokenbox: lines end at ``\n``.

    libyaml also ends lines at U+0085, U+2028, U+2029 (and a lone ``\r``); its character ``index``
    is exact, so the position is recomputed from it (editors and the JSON reader agree with this).
    """
    return lines.at(mark.index)


_WS = re.compile(r"[ \t\n\r]*")
_AFTER_ITEM = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|(\]))")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


_SURROGATE = re.compile(r"[\ud800-\udfff]")


class _JsonParser:
    def __init__(self, text: str, path: str, first_line: int, first_col: int, unit: str = "file") -> None:
        self.text = text
        self.path = path
        self.lines = _Lines(text, first_line, first_col)
        self.nodes = 0
        self.unit = unit  # "file", or "line" for one line of a JSON-lines log

    def fail(self, offset: int, problem: str, remedy: str) -> SessionError:
        line, col = self.lines.at(offset)
        return SessionError(problem, remedy, self.path, line, col)

    def skip(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def parse(self) -> Node:
        pos = self.skip(0)
        if pos >= len(self.text):
            raise self.fail(0, "empty document", "write a JSON object with `tokenbox: 1`")
        node, pos = self.value(pos, 0)
        pos = self.skip(pos)
        if pos < len(self.text):
            raise self.fail(pos, "extra data after the JSON value", f"a {self.unit} holds one JSON object")
        return node

    def value(self, pos: int, depth: int) -> tuple[Node, int]:
        if depth > MAX_DEPTH:
            raise self.fail(pos, f"nesting deeper than {MAX_DEPTH} levels", "flatten the document")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(pos, f"more than {MAX_NODES} values", "split the session")
        text = self.text
        line, col = self.lines.at(pos)
        char = text[pos] if pos < len(text) else ""
        if char == "{":
            return self.obj(pos, depth, line, col)
        if char == "[":
            return self.array(pos, depth, line, col)
        if char == '"':
            try:
                string, end = json.decoder.scanstring(text, pos + 1, True)
            except json.JSONDecodeError as exc:
                # scanstring's messages end in " at" / " starting at", expecting a position after them.
                what = exc.msg.removesuffix(" at").removesuffix(" starting").lower()
                if what.startswith("unterminated"):
                    remedy = f"close the string with `\"` before the end of the {self.unit}"
                elif "control character" in what:
                    remedy = "write control characters as escapes, e.g. \\n or \\t"
                else:
                    remedy = "check the backslash escapes"
                raise self.fail(exc.pos, f"bad string: {what}", remedy) from None
            # Text read from UTF-8 holds no surrogates; only a \u escape can make a lone one.
            surrogate = _SURROGATE.search(string) if text.find("\\u", pos, end) >= 0 else None
            if surrogate:
                raise self.fail(
                    pos,
                    f"string holds a lone surrogate \\u{ord(surrogate.group()):04x}, which is not a character",
                    "escape a character outside the BMP as a surrogate pair, e.g. \\ud83d\\ude00",
                )
            return Node(string, line, col), end
        match = _NUMBER.match(text, pos)
        if match and match.end() > pos:
            literal = match.group()
            if match.group(1) or match.group(2):
                number: Any = float(literal)
                if not math.isfinite(number):
                    raise self.fail(pos, f"number {literal[:40]} is out of range", "use a smaller number")
            else:
                if len(literal) > 20:
                    raise self.fail(pos, f"number {literal[:40]}{'…' if len(literal) > 40 else ''} is too large", "use a smaller number")
                number = int(literal)
            return Node(number, line, col), match.end()
        for word, value in _LITERALS.items():
            if text.startswith(word, pos):
                return Node(value, line, col), pos + len(word)
        for word in ("NaN", "Infinity", "-Infinity"):
            if text.startswith(word, pos):
                raise self.fail(pos, f"{word} is not a valid JSON number", "use a finite number")
        if not char:
            raise self.fail(pos, f"unexpected end of {self.unit}", "the JSON value is incomplete")
        raise self.fail(pos, f"unexpected character {char!r}", "expected a JSON value")

    def obj(self, start: int, depth: int, line: int, col: int) -> tuple[Node, int]:
        text = self.text
        result: dict[str, Node] = {}
        keys: dict[str, tuple[int, int]] = {}
        pos = self.skip(start + 1)
        if text.startswith("}", pos):
            return Node(result, line, col, keys), pos + 1
        while True:
            if not text.startswith('"', pos):
                if pos >= len(text):
                    raise self.fail(pos, f"unexpected end of {self.unit} inside an object", "close it with `}`")
                raise self.fail(pos, "expected a quoted key", "JSON keys are strings in double quotes")
            key_pos = pos
            key_node, pos = self.value(pos, depth + 1)
            if key_node.value in result:
                raise self.fail(key_pos, f"duplicate key {key_node.value!r}", "each key may appear once")
            pos = self.skip(pos)
            if not text.startswith(":", pos):
                raise self.fail(pos, "expected `:` after the key", "write `\"key\": value`")
            node, pos = self.value(self.skip(pos + 1), depth + 1)
            result[key_node.value] = node
            keys[key_node.value] = (key_node.line, key_node.col)
            pos = self.skip(pos)
            if text.startswith(",", pos):
                pos = self.skip(pos + 1)
                continue
            if text.startswith("}", pos):
                return Node(result, line, col, keys), pos + 1
            if pos >= len(text):
                raise self.fail(pos, f"unexpected end of {self.unit} inside an object", "close it with `}`")
            raise self.fail(pos, "expected `,` or `}`", "separate members with commas")

    def array(self, start: int, depth: int, line: int, col: int) -> tuple[Node, int]:
        text = self.text
        result: list[Node] = []
        pos = self.skip(start + 1)
        if text.startswith("]", pos):
            return Node(result, line, col), pos + 1
        while True:
            node, pos = self.value(pos, depth + 1)
            result.append(node)
            pos = self.skip(pos)
            if text.startswith(",", pos):
                pos = self.skip(pos + 1)
                continue
            if text.startswith("]", pos):
                return Node(result, line, col), pos + 1
            if pos >= len(text):
                raise self.fail(pos, f"unexpected end of {self.unit} inside a list", "close it with `]`")
            raise self.fail(pos, "expected `,` or `]`", "separate items with commas")


def parse_json(text: str, path: str, first_line: int = 1, first_col: int = 1, *, unit: str = "file") -> Node:
    """Parse one JSON document into positioned nodes; errors are ``SessionError`` with a position.

    ``unit`` names what ``text`` is in messages: ``"file"``, or ``"line"`` for one line of a log.
    """
    return _JsonParser(text, path, first_line, first_col, unit).parse()


# ---------------------------------------------------------------- the fast JSON path


class ShallowNode(Node):
    """A positioned node whose value holds plain Python values (``dict``/``list``/scalars), not nodes.

    The fast JSON path positions only what a valid session keeps (the root, its values and each item
    of ``sections``); everything inside those is left as ``json`` built it.
    """

    __slots__ = ()

    def plain(self) -> Any:
        """The value itself: it holds no nodes."""
        return self.value


class Unlocated(Exception):
    """A position was asked of a value the fast path did not locate; the positional path must run."""


class LazyNode(Node):
    """Plain values seen as nodes, wrapped level by level as they are read; they have no position.

    Content detectors (importers) read documents as nodes; this lets them look at the fast path's
    plain values without wrapping the whole document. Asking for a position raises ``Unlocated``.
    """

    __slots__ = ("_children", "_raw")

    def __init__(self, raw: Any) -> None:  # Node's fields are properties here
        self._raw = raw
        self._children: Any = None

    @property  # type: ignore[override]
    def value(self) -> Any:
        raw = self._raw
        if self._children is None and type(raw) in (dict, list):
            self._children = {k: LazyNode(v) for k, v in raw.items()} if type(raw) is dict else [LazyNode(v) for v in raw]
        return raw if self._children is None else self._children

    @property  # type: ignore[override]
    def line(self) -> int:
        raise Unlocated("line")

    @property  # type: ignore[override]
    def col(self) -> int:
        raise Unlocated("col")

    @property  # type: ignore[override]
    def keys(self) -> dict[str, tuple[int, int]] | None:
        raise Unlocated("keys")

    def plain(self) -> Any:
        """The plain value this view wraps."""
        return self._raw

    def __repr__(self) -> str:
        return f"LazyNode({self._raw!r})"


@dataclass(slots=True)
class FastDocument:
    """A JSON document read by ``fast_json``: the positioned shallow tree and the plain value."""

    root: Node  # the root object; its values are ShallowNodes, ``sections`` a Node of ShallowNodes
    value: dict[str, Any]

    def view(self) -> Node:
        """The whole document as (unpositioned) nodes, for content detectors."""
        return LazyNode(self.value)


class _Refused(Exception):
    """Something the positional parser might refuse (or position differently): let it decide."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Refused("duplicate key")
    return result


# The C scanner, as json.loads uses it, with duplicate keys refused; NaN and Infinity come out as
# non-finite floats and are refused by _measure, like exponents that overflow.
_SCAN = json.JSONDecoder(object_pairs_hook=_unique_pairs).scan_once
_SCANSTRING = json.decoder.scanstring
# Integers the positional parser reads: at most 20 characters, sign included (no leading zeros in JSON).
_INT_LOW = -(10**19)
_INT_HIGH = 10**20
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogate_free(value: str) -> bool:
    return value.isascii() or _SURROGATE.search(value) is None


def _measure(container: dict[str, Any] | list[Any], depth: int, strings: bool) -> int:
    """How many values ``container`` (non-empty, at ``depth``) holds below it, keys included.

    Raises ``_Refused`` for what the positional parser refuses: nesting past ``MAX_DEPTH``, integers
    of more than 20 characters, non-finite numbers and (when ``strings``) strings holding surrogates.
    """
    if depth >= MAX_DEPTH:
        raise _Refused("depth")
    items: Any
    if type(container) is dict:
        count = 2 * len(container)
        if strings and not all(_surrogate_free(key) for key in container):
            raise _Refused("surrogate")
        items = container.values()
    else:
        count = len(container)
        items = container
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            if item:
                count += _measure(item, depth + 1, strings)
        else:
            _check_scalar(item, kind, strings)
    return count


def _check_scalar(value: Any, kind: type, strings: bool) -> None:
    """Refuse a scalar the positional parser would refuse or read differently."""
    if kind is str:
        if strings and not _surrogate_free(value):
            raise _Refused("surrogate")
    elif kind is int:
        if not _INT_LOW < value < _INT_HIGH:
            raise _Refused("integer")
    elif kind is float and not math.isfinite(value):
        raise _Refused("number")


def _value_size(value: Any, depth: int, strings: bool) -> int:
    """``_measure`` for any value: 1 for itself plus what it holds."""
    kind = type(value)
    if kind is dict or kind is list:
        return 1 + _measure(value, depth, strings) if value else 1
    _check_scalar(value, kind, strings)
    return 1


def fast_json(text: str, first_line: int = 1, first_col: int = 1) -> FastDocument | None:
    """Read a JSON object with the C scanner, or ``None`` when ``parse_json`` has to decide.

    A document comes back only when ``parse_json`` would read it without error and to the same
    values: anything it might refuse (syntax, duplicate keys, NaN/Infinity, out-of-range numbers,
    lone surrogates, nesting past ``MAX_DEPTH``, more than ``MAX_NODES`` values) gives ``None``, and
    so does a root that is not an object. Positions (as ``parse_json`` gives them) are kept for the
    root, each of its values and each item of a ``sections`` list: all that a valid session keeps.
    """
    try:
        return _fast_json(text, first_line, first_col)
    except Exception:  # whatever the C scanner or a check raised, parse_json decides
        return None


def _fast_json(text: str, first_line: int, first_col: int) -> FastDocument | None:
    skip = _WS.match
    scan = _SCAN
    # parse_json refuses a string holding a surrogate only when the string has a \u escape: strings
    # are looked at only when the text has one (and, if all ASCII, one of \ud800-\udfff).
    strings = "\\u" in text and (not text.isascii() or _ESCAPED_SURROGATE.search(text) is not None)
    pos = skip(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("{", pos):
        return None
    offsets = [pos]  # where each positioned value starts, in document order
    shallow: list[tuple[str, Any, bool]] = []  # key, value, whether its items are positioned
    members: dict[str, Any] = {}
    count = 1
    pos = skip(text, pos + 1).end()  # type: ignore[union-attr]
    if text.startswith("}", pos):
        pos += 1
    else:
        while True:
            if not text.startswith('"', pos):
                return None
            key, pos = _SCANSTRING(text, pos + 1, True)
            if key in members or (strings and not _surrogate_free(key)):
                return None
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            if not text.startswith(":", pos):
                return None
            pos = skip(text, pos + 1).end()  # type: ignore[union-attr]
            start = pos
            offsets.append(start)
            listed = key == "sections" and text.startswith("[", pos)
            if listed:
                value: Any = []
                pos = skip(text, pos + 1).end()  # type: ignore[union-attr]
                if text.startswith("]", pos):
                    pos += 1
                else:
                    after = _AFTER_ITEM.match
                    while True:
                        item, end = scan(text, pos)
                        offsets.append(pos)
                        value.append(item)
                        match = after(text, end)  # `,` and the space after it, or the closing `]`
                        if match is None:
                            return None
                        pos = match.end()
                        if match.lastindex == 2:
                            break
            else:
                value, pos = scan(text, pos)
            count += 1 + _value_size(value, 1, strings)  # the key, the value and what it holds
            members[key] = value
            shallow.append((key, value, listed))
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            if text.startswith(",", pos):
                pos = skip(text, pos + 1).end()  # type: ignore[union-attr]
                continue
            if not text.startswith("}", pos):
                return None
            pos += 1
            break
    if skip(text, pos).end() < len(text) or count > MAX_NODES:  # type: ignore[union-attr]
        return None
    where = iter(_positions(text, offsets, first_line, first_col))
    line, col = next(where)
    fields: dict[str, Node] = {}
    for key, value, listed in shallow:
        at = next(where)
        if listed:
            fields[key] = Node([ShallowNode(item, *next(where)) for item in value], *at)
        else:
            fields[key] = ShallowNode(value, *at)
    return FastDocument(Node(fields, line, col), members)


def _positions(text: str, offsets: list[int], first_line: int, first_col: int) -> list[tuple[int, int]]:
    """(line, column) of each offset (ascending), as ``_Lines.at`` gives them, in one pass."""
    result = []
    line = first_line
    line_start = 0
    previous = 0
    count = text.count
    rfind = text.rfind
    for offset in offsets:
        newline = rfind("\n", previous, offset)
        if newline >= 0:
            line += count("\n", previous, offset)
            line_start = newline + 1
        col = offset - line_start + 1
        if line == first_line:
            col += first_col - 1
        result.append((line, col))
        previous = offset
    return result


_YAML_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:timestamp",
}


class _YamlConverter:
    def __init__(self, path: str, lines: _Lines) -> None:
        self.path = path
        self.lines = lines
        self.count = 0
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, problem: str, remedy: str) -> SessionError:
        return SessionError(problem, remedy, self.path, *_mark_at(self.lines, node.start_mark))

    def convert(self, node: yaml.Node, depth: int, active: tuple[int, ...] = ()) -> Node:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES} values (an alias bomb?)", "do not expand aliases")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {MAX_DEPTH} levels", "flatten the document")
        if node.tag not in _YAML_TAGS:
            raise self.fail(node, f"YAML tag {node.tag} is not allowed", "remove the tag; plain values only")
        line, col = _mark_at(self.lines, node.start_mark)
        if isinstance(node, yaml.MappingNode):
            if id(node) in active:
                raise self.fail(node, "recursive alias", "remove the self-reference")
            result: dict[str, Node] = {}
            keys: dict[str, tuple[int, int]] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(key_node, "merge keys (`<<`) are not supported", "write the keys out")
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                    raise self.fail(key_node, "mapping keys must be plain strings", "quote the key")
                key = key_node.value
                if key in result:
                    raise self.fail(key_node, f"duplicate key {key!r}", "each key may appear once")
                result[key] = self.convert(value_node, depth + 1, (*active, id(node)))
                keys[key] = _mark_at(self.lines, key_node.start_mark)
            return Node(result, line, col, keys)
        if isinstance(node, yaml.SequenceNode):
            if id(node) in active:
                raise self.fail(node, "recursive alias", "remove the self-reference")
            return Node([self.convert(item, depth + 1, (*active, id(node))) for item in node.value], line, col)
        tag = node.tag
        if tag == "tag:yaml.org,2002:str":
            return Node(node.value, line, col)
        if tag == "tag:yaml.org,2002:timestamp":
            return Node(node.value, line, col)  # keep dates as the text the user wrote
        if tag == "tag:yaml.org,2002:int":
            digits = node.value.replace("_", "")
            if ":" in digits:
                # YAML 1.1 base 60 (``1:30``): PyYAML builds it in quadratic time, so refuse it unbuilt.
                raise self.fail(node, f"base-60 number {node.value[:40]!r} is not supported", "quote it to keep it as text")
            if len(digits.lstrip("+-")) > MAX_INT_DIGITS:
                raise self.fail(node, f"number {node.value[:40]}{'…' if len(node.value) > 40 else ''} is too large", "use a smaller number")
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError, KeyError, IndexError, TypeError, yaml.YAMLError):
            # e.g. ``!!bool maybe`` (KeyError) or ``!!int ""`` (IndexError) inside PyYAML
            raise self.fail(node, f"bad {tag.rsplit(':', 1)[-1]} value {node.value[:40]!r}", "fix the value or quote it as text") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(node, f"{node.value} is not a finite number", "use a finite number")
        if isinstance(value, int) and not isinstance(value, bool) and len(str(abs(value))) > MAX_INT_DIGITS:
            raise self.fail(node, f"number {node.value[:40]} is too large", "use a smaller number")
        return Node(value, line, col)


_START_EVENTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_END_EVENTS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_shape(text: str, path: str) -> None:
    """Refuse documents nested deeper than ``MAX_DEPTH`` or whose aliases expand past ``MAX_NODES``.

    This walks libyaml's event stream, which is iterative, before anything is composed: libyaml's
    composer recurses in C, so a document nested a few hundred thousand levels deep would overflow
    the C stack (a crash, not an exception), and a billion-laughs alias bomb is caught here in
    proportion to the file's size rather than to its expansion.
    """
    open_nodes: list[tuple[str | None, int, int]] = []  # per open collection: its anchor, count and chars at its start
    sizes: dict[str, tuple[int, int]] = {}  # anchor → number of values and scalar characters it expands to
    count = 0
    chars = 0  # scalar text after expansion: one big scalar aliased many times is a bomb by size

    def fail(event: yaml.Event, problem: str, remedy: str) -> SessionError:
        return SessionError(problem, remedy, path, *_mark_at(_Lines(text), event.start_mark))

    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, _END_EVENTS):
            anchor, start, start_chars = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = (count - start, chars - start_chars)
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        if len(open_nodes) > MAX_DEPTH:
            raise fail(event, f"nesting deeper than {MAX_DEPTH} levels", "flatten the document")
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _, _ in open_nodes):
                raise fail(event, f"recursive alias *{event.anchor}", "remove the self-reference")
            values, size = sizes.get(event.anchor, (1, 0))
            count += values
            chars += size
        else:
            count += 1
            if isinstance(event, _START_EVENTS):
                open_nodes.append((event.anchor, count - 1, chars))
            else:
                chars += len(event.value)
                if event.anchor is not None:
                    sizes[event.anchor] = (1, len(event.value))
        if chars > MAX_EXPANDED_CHARS:
            raise fail(event, f"aliases expand the text past {MAX_EXPANDED_CHARS // 2**20} MiB (an alias bomb?)", "write the text out once instead of repeating aliases")
        if count > MAX_NODES:
            raise fail(event, f"more than {MAX_NODES} values (an alias bomb?)", "write the values out instead of repeating aliases")


def _syntax_message(exc: yaml.MarkedYAMLError, lines: _Lines) -> str:
    """One readable sentence from libyaml's problem and context (which may point elsewhere)."""
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    where = exc.context_mark
    if not problem:
        return context or "invalid YAML"
    if not context or where is None:
        return problem
    line, col = _mark_at(lines, where)
    at = f"line {line}, column {col}"
    if context.startswith("while "):
        return f"{problem} {context} that starts at {at}"
    if "duplicate anchor" in context:
        return f"duplicate anchor (first defined at {at})"
    if "single document" in context:
        return "more than one YAML document in the file"
    return f"{context} ({at}): {problem}"


def _offset_position(text: str, offset: int, byte_offset: bool) -> tuple[int, int]:
    """1-based line and column (in characters) of ``offset``, given in characters or UTF-8 bytes."""
    if byte_offset:
        offset = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
    return _Lines(text).at(offset)


def parse_yaml(text: str, path: str) -> Node:
    """Parse one YAML document (safe subset) into positioned nodes."""
    try:
        _check_shape(text, path)
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = _syntax_message(exc, _Lines(text))
        if mark is not None:
            raise SessionError(f"YAML syntax: {problem}", "fix the syntax", path, *_mark_at(_Lines(text), mark)) from None
        raise SessionError(f"YAML syntax: {problem}", "fix the syntax", path) from None
    except yaml.reader.ReaderError as exc:
        # libyaml (the C loader) counts this offset in bytes of the UTF-8 text, PyYAML in characters.
        line, col = _offset_position(text, exc.position, _YAML_LOADER is not yaml.SafeLoader)
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise SessionError(
            f"YAML does not allow the control character U+{code:04X} in a file",
            "remove it, or write it as an escape inside double quotes, e.g. \"\\x1b\"",
            path,
            line,
            col,
        ) from None
    except yaml.YAMLError as exc:
        raise SessionError(f"YAML: {exc}", "fix the syntax", path) from None
    except RecursionError:
        raise SessionError("YAML nesting is too deep", "flatten the document", path) from None
    if root is None:
        raise SessionError("empty document", "write a mapping with `tokenbox: 1`", path, 1, 1)
    return _YamlConverter(path, _Lines(text)).convert(root, 0)
