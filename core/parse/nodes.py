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

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.records import dataclass, field

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
MAX_NODES = 2_000_000
MAX_INT = 2**53



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


class Lines:
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


_WS = re.compile(r"[ \t\n\r]*")
_AFTER_ITEM = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|(\]))")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


_SURROGATE = re.compile(r"[\ud800-\udfff]")


class _JsonParser:
    def __init__(self, text: str, path: str, first_line: int, first_col: int, unit: str = "file") -> None:
        self.text = text
        self.path = path
        self.lines = Lines(text, first_line, first_col)
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
    # each item of ``sections``: (start offset, end offset, value, values it holds), for ``Reuse``
    items: list[tuple[int, int, Any, int]] = field(default_factory=list)
    strings: bool = False  # whether strings were checked for surrogates
    list_end: int = -1  # offset just after the ``sections`` list's closing bracket (-1: no items)
    # for ``Reuse``: where each positioned value starts (document order) and its (line, column), the
    # first line and column the positions count from, and where the first ``\\u`` escape and the first
    # escaped surrogate are (-1: none; the surrogate ``None`` when not looked for)
    offsets: list[int] = field(default_factory=list)
    places: list[tuple[int, int]] = field(default_factory=list)
    origin: tuple[int, int] = (1, 1)
    escape_at: int = -1
    surrogate_at: int | None = None

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


class Reuse:
    """What a new version of a document can take from the previous one, read by ``fast_json``.

    The two texts are compared once (common prefix and suffix, found chunk by chunk); a ``sections``
    item whose text lies wholly in the unchanged prefix, or wholly in the unchanged suffix, is taken
    as it was (its value object, its end, its size) instead of being scanned and checked again: the
    scanner's result depends on the item's text alone, and that text was accepted before.
    """

    __slots__ = ("delta", "ends", "escape_at", "index", "items", "list_end", "newlines", "nodes", "origin", "places",
                 "prefix", "spans", "strings", "suffix_newline", "suffix_start", "surrogate_at")

    _CHUNK = 4096

    def __init__(
        self, old_text: str, old: FastDocument, new_text: str, old_data: bytes | None = None, new_data: bytes | None = None
    ) -> None:
        self.prefix, suffix = _common_ends(old_text, new_text, old_data, new_data, self._CHUNK)
        self.suffix_start = len(old_text) - suffix  # in the old text
        self.delta = len(new_text) - len(old_text)
        self.items = {start: (end, value, size) for start, end, value, size in old.items}
        self.spans = old.items
        self.index = {span[0]: k for k, span in enumerate(old.items)}
        self.ends = [span[1] for span in old.items]
        self.list_end = old.list_end
        self.strings = old.strings
        # Positions: a value before the change is where it was; one after it is as many lines further
        # as the change added, at the same column once a line break after the change precedes it.
        new_end = self.suffix_start + self.delta
        self.newlines = new_text.count("\n", self.prefix, new_end) - old_text.count("\n", self.prefix, self.suffix_start)
        self.suffix_newline = new_text.find("\n", new_end)
        self.places = dict(zip(old.offsets, old.places, strict=True))
        self.origin = old.origin
        listed = old.root.value.get("sections") if isinstance(old.root.value, dict) else None
        self.nodes: dict[int, Node] = {}
        if listed is not None and isinstance(listed.value, list) and len(listed.value) == len(old.items):
            self.nodes = {span[0]: node for span, node in zip(old.items, listed.value, strict=True)}
        self.escape_at = old.escape_at
        self.surrogate_at = old.surrogate_at

    def place(self, pos: int) -> tuple[int, int] | None:
        """``(line, column)`` of a value starting at ``pos`` of the new text, when known from the old one."""
        if pos <= self.prefix:  # a position depends only on the text before it
            return self.places.get(pos)
        new_end = self.suffix_start + self.delta
        if pos < new_end or not 0 <= self.suffix_newline < pos:
            return None  # in the change, or on the line the change ends on: counted
        found = self.places.get(pos - self.delta)
        return None if found is None else (found[0] + self.newlines, found[1])

    def node(self, pos: int, value: Any, place: tuple[int, int]) -> Node | None:
        """The old node of an unchanged item now at ``pos``, when it holds ``value`` at ``place``."""
        found = self.nodes.get(pos if pos <= self.prefix else pos - self.delta)
        if found is not None and found.value is value and found.line == place[0] and found.col == place[1]:
            return found
        return None

    def first(self, text: str, old_at: int, length: int, find: Any) -> int:
        """Where a pattern of ``length`` characters first occurs in the new text (-1: nowhere), from
        where it first occurred in the old one (``old_at``): only the changed part is searched, and
        what follows it when the old text's first occurrence was inside the change."""
        if 0 <= old_at and old_at + length <= self.prefix:
            return old_at  # the same first occurrence: the text up to it is unchanged
        new_end = self.suffix_start + self.delta
        found = find(text, max(0, self.prefix - length + 1), min(len(text), new_end + length - 1))
        if found >= 0 or old_at < 0:
            return found
        if old_at >= self.suffix_start:
            return old_at + self.delta
        return find(text, new_end, len(text))

    def run(self, pos: int) -> tuple[list[tuple[int, int, Any, int]], int, bool] | None:
        """Several unchanged items from ``pos`` on, with the separators between them: ``(spans in the
        new text, where to go on, whether that is past the list's closing bracket)``, or ``None``."""
        if pos < self.prefix:
            k = self.index.get(pos)
            if k is None:
                return None
            m = bisect.bisect_left(self.ends, self.prefix, k) - 1  # the last item ending before the change
            if m == len(self.spans) - 1 and 0 <= self.list_end <= self.prefix:
                return self.spans[k : m + 1], self.list_end, True
            if m - 1 <= k:
                return None
            return self.spans[k:m], self.spans[m][0], False  # item m (and what follows) the usual way
        old = pos - self.delta
        if old < self.suffix_start or self.list_end < 0:
            return None
        k = self.index.get(old)
        if k is None:
            return None
        delta = self.delta
        moved = [(start + delta, end + delta, value, size) for start, end, value, size in self.spans[k:]]
        return moved, self.list_end + delta, True

    def take(self, pos: int) -> tuple[int, Any, int] | None:
        """``(end, value, size)`` for an unchanged item starting at ``pos`` of the new text, else ``None``."""
        if pos < self.prefix:
            found = self.items.get(pos)
            if found is not None and found[0] < self.prefix:  # the character after it is unchanged too
                return found
            return None
        old = pos - self.delta
        if old >= self.suffix_start:
            found = self.items.get(old)
            if found is not None:
                return found[0] + self.delta, found[1], found[2]
        return None


_BOM = b"\xef\xbb\xbf"


def _common_ends(old_text: str, new_text: str, old_data: bytes | None, new_data: bytes | None, chunk: int) -> tuple[int, int]:
    """The lengths (in characters) of the common start of two texts and of their common end after it.

    With the UTF-8 bytes each text was decoded from (``None``: unknown), the ends are found in the
    bytes, whose slices are copies of up to 4 times fewer bytes than those of a text holding a
    character past U+FFFF, with no scan for the widest character; then counted in characters.
    """
    if old_data is None or new_data is None or old_data.startswith(_BOM) or new_data.startswith(_BOM):
        prefix = _common_prefix(old_text, new_text, chunk)
        return prefix, _common_suffix(old_text, new_text, min(len(old_text), len(new_text)) - prefix, chunk)
    start = _common_prefix(old_data, new_data, chunk)
    # back to the start of a character in both (a continuation byte is 0b10xxxxxx)
    while start and (_continues(new_data, start) or _continues(old_data, start)):
        start -= 1
    end = _common_suffix(old_data, new_data, min(len(old_data), len(new_data)) - start, chunk)
    while end and _continues(new_data, len(new_data) - end):  # the same byte in both
        end -= 1
    # In characters: the common start decoded from whichever side of it is shorter, and the common
    # end as what the changed middle leaves of the new text (decoding is what costs here).
    view = memoryview(new_data)
    if start <= len(view) // 2:
        prefix = len(str(view[:start], "utf-8"))
    else:
        prefix = len(new_text) - len(str(view[start:], "utf-8"))
    return prefix, len(new_text) - prefix - len(str(view[start : len(view) - end], "utf-8"))


def _continues(data: bytes, at: int) -> bool:
    """Whether the byte at ``at`` continues a UTF-8 character (``0b10xxxxxx``); false past the end."""
    return at < len(data) and data[at] & 0xC0 == 0x80


def _common_prefix(a: str, b: str, chunk: int) -> int:
    """Length of the common start of ``a`` and ``b`` (growing chunks, then halving to the difference).

    Each probe copies a slice of ``a`` only and compares it in place in ``b`` (``startswith`` at an
    offset): half the copying of comparing two slices, which counts for a text of wide characters.
    """
    n = min(len(a), len(b))
    lo = 0
    hi = 0
    while lo < n:
        hi = min(lo + chunk, n)
        if not b.startswith(a[lo:hi], lo):
            break
        lo = hi
        chunk *= 2
    else:
        return n
    while hi - lo > 64:  # the first difference is in [lo, hi)
        mid = (lo + hi) // 2
        if b.startswith(a[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    while lo < hi and a[lo] == b[lo]:
        lo += 1
    return lo


def _common_suffix(a: str, b: str, limit: int, chunk: int) -> int:
    """Length of the common end of ``a`` and ``b``, at most ``limit`` (at most the shorter length);
    slices of ``a`` are compared in place at the end of ``b[:end]`` (``endswith``)."""
    la, lb = len(a), len(b)
    k = 0
    step = 0
    # An edit is usually short: all but the last chunk before ``limit`` is tried in one probe first,
    # which copies the common end once instead of about twice (growing chunks).
    guess = limit - chunk
    if guess > chunk and b.endswith(a[la - guess :]):
        k = guess
    while k < limit:
        step = min(chunk, limit - k)
        if not b.endswith(a[la - k - step : la - k], 0, lb - k):
            break
        k += step
        chunk *= 2
    if k >= limit:
        return limit
    lo, hi = k, k + step  # the common end is at least lo and less than hi characters long
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if b.endswith(a[la - mid : la - lo], 0, lb - lo):
            lo = mid
        else:
            hi = mid
    while lo < hi and a[la - lo - 1] == b[lb - lo - 1]:
        lo += 1
    return lo


def fast_json(text: str, first_line: int = 1, first_col: int = 1, reuse: Reuse | None = None) -> FastDocument | None:
    """Read a JSON object with the C scanner, or ``None`` when ``parse_json`` has to decide.

    A document comes back only when ``parse_json`` would read it without error and to the same
    values: anything it might refuse (syntax, duplicate keys, NaN/Infinity, out-of-range numbers,
    lone surrogates, nesting past ``MAX_DEPTH``, more than ``MAX_NODES`` values) gives ``None``, and
    so does a root that is not an object. Positions (as ``parse_json`` gives them) are kept for the
    root, each of its values and each item of a ``sections`` list: all that a valid session keeps.
    """
    try:
        return _fast_json(text, first_line, first_col, reuse)
    except Exception:  # whatever the C scanner or a check raised, parse_json decides
        return None


def _fast_json(text: str, first_line: int, first_col: int, reuse: Reuse | None = None) -> FastDocument | None:
    skip = _WS.match
    scan = _SCAN
    # parse_json refuses a string holding a surrogate only when the string has a \u escape: strings
    # are looked at only when the text has one (and, if all ASCII, one of \ud800-\udfff).
    if reuse is not None and reuse.origin != (first_line, first_col):
        reuse = None
    escape_at = reuse.first(text, reuse.escape_at, 2, _find_escape) if reuse is not None else text.find("\\u")
    surrogate_at = None
    if escape_at >= 0 and text.isascii():
        if reuse is not None and reuse.surrogate_at is not None:
            surrogate_at = reuse.first(text, reuse.surrogate_at, 4, _find_surrogate)
        else:
            surrogate_at = _find_surrogate(text, 0, len(text))
    strings = escape_at >= 0 and (surrogate_at is None or surrogate_at >= 0)
    if reuse is not None and reuse.strings != strings:
        reuse = None
    spans: list[tuple[int, int, Any, int]] = []
    list_end = -1
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
                        run = reuse.run(pos) if reuse is not None else None
                        if run is not None:  # unchanged items, taken together with the separators between them
                            taken_items, pos, closed = run
                            for span in taken_items:
                                spans.append(span)
                                count += span[3]
                                offsets.append(span[0])
                                value.append(span[2])
                            if closed:
                                list_end = pos
                                break
                            continue
                        taken = reuse.take(pos) if reuse is not None else None
                        if taken is None:
                            item, end = scan(text, pos)
                            size = _value_size(item, 2, strings)
                        else:
                            end, item, size = taken
                        spans.append((pos, end, item, size))
                        count += size
                        offsets.append(pos)
                        value.append(item)
                        match = after(text, end)  # `,` and the space after it, or the closing `]`
                        if match is None:
                            return None
                        pos = match.end()
                        if match.lastindex == 2:
                            list_end = pos
                            break
            else:
                value, pos = scan(text, pos)
            if listed:  # the key, the list and its items (counted above)
                count += 2
            else:
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
    places = _positions(text, offsets, first_line, first_col, reuse.place if reuse is not None else None)
    where = iter(places)
    line, col = next(where)
    fields: dict[str, Node] = {}
    for key, value, listed in shallow:
        at = next(where)
        if listed:
            if reuse is None:
                fields[key] = Node([ShallowNode(item, *next(where)) for item in value], *at)
            else:  # an unchanged item at its old place keeps its node
                nodes = []
                for span in spans:
                    place = next(where)
                    nodes.append(reuse.node(span[0], span[2], place) or ShallowNode(span[2], *place))
                fields[key] = Node(nodes, *at)
        else:
            fields[key] = ShallowNode(value, *at)
    return FastDocument(Node(fields, line, col), members, spans, strings, list_end, offsets, places, (first_line, first_col),
                        escape_at, surrogate_at)


def _find_escape(text: str, start: int, end: int) -> int:
    return text.find("\\u", start, end)


def _find_surrogate(text: str, start: int, end: int) -> int:
    found = _ESCAPED_SURROGATE.search(text, start, end)
    return -1 if found is None else found.start()


def _positions(
    text: str, offsets: list[int], first_line: int, first_col: int, known: Any = None
) -> list[tuple[int, int]]:
    """(line, column) of each offset (ascending), as ``Lines.at`` gives them, in one pass.

    ``known(offset)``, when given, answers the place of an offset without counting (``None``: count).
    """
    result = []
    line = first_line
    line_start = 0
    previous = 0
    count = text.count
    rfind = text.rfind
    for offset in offsets:
        if known is not None:
            found = known(offset)
            if found is not None:
                line = found[0]
                line_start = offset - found[1] + 1 + (first_col - 1 if line == first_line else 0)
                result.append(found)
                previous = offset
                continue
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


# ---------------------------------------------------------------- a JSON-lines log's line, placed on demand


# What a line must hold for the positional parser to refuse a value the scanner read (NaN, Infinity, an
# integer of more than 20 characters, an exponent that may overflow, a \u escape that may be a lone surrogate):
# a line without any of these, of fewer values than MAX_NODES and fewer brackets than MAX_DEPTH, is not walked.
_RISKY_NUMBER = re.compile(r"[0-9](?:[eE]|[0-9]{19})")


def _risky(text: str) -> bool:
    return "\\u" in text or "NaN" in text or "Infinity" in text or _RISKY_NUMBER.search(text) is not None
_STRING_END = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string as written (its escapes not decoded)


class LocatedNode(Node):
    """A value of one JSON line read by the C scanner, seen as positioned nodes: a container's members are
    made when it is first read, and their places found in the line's text when one of them is asked for its
    place (one level at a time, ``_Members``).

    Values, positions and ``keys`` are those ``parse_json(text, path, line, 1, unit="line")`` gives
    (``json_line`` hands out such a node only when the fast read can vouch for that): a reader pays for
    the levels it reads and the places it asks for, not for a node per value. No node refers back to the
    container it is in (a line's nodes hold no cycle: they are freed as soon as the line is read).
    """

    __slots__ = ("_at", "_children", "_index", "_line", "_members", "_own", "_raw", "_text")

    def __init__(self, raw: Any, text: str, line: int, at: int = -1, members: _Members | None = None, index: int = 0) -> None:
        self._raw = raw  # Node's fields are properties here
        self._text = text
        self._line = line
        self._at = at  # offset of the value's first character in the line (-1: not found yet)
        self._members = members  # the members of the container it is in, which finds its place
        self._index = index
        self._children: Any = None
        self._own: _Members | None = None  # its members' places

    @property  # type: ignore[override]
    def value(self) -> Any:
        children = self._children
        if children is None:
            raw, text, line = self._raw, self._text, self._line
            own = self._own = _Members(text, raw, self._at, self._members, self._index)
            if type(raw) is dict:
                children = {key: _located(item, text, line, own, index) for index, (key, item) in enumerate(raw.items())}
            elif type(raw) is list:
                children = [_located(item, text, line, own, index) for index, item in enumerate(raw)]
            else:
                return raw  # a scalar at the root of a line
            self._children = children
        return children

    @property  # type: ignore[override]
    def line(self) -> int:
        return self._line

    @property  # type: ignore[override]
    def col(self) -> int:
        if self._at < 0:
            self._at = self._members.offset(self._index)  # type: ignore[union-attr]
        return self._at + 1  # a line holds no newline: the column is the offset, 1-based

    @property  # type: ignore[override]
    def keys(self) -> dict[str, tuple[int, int]] | None:
        if type(self._raw) is not dict:
            return None
        self.value  # noqa: B018  (makes its members)
        return self._own.keys(self._line)  # type: ignore[union-attr]

    def plain(self) -> Any:
        """The plain value (as ``json`` built it; it holds no nodes)."""
        return self._raw

    def __repr__(self) -> str:
        return f"LocatedNode({self._raw!r}, line={self._line})"


class _LocatedLeaf(Node):
    """A scalar member of a container read by ``json_line``: its value as read, its place found when asked."""

    __slots__ = ("_index", "_members")

    def __init__(self, raw: Any, line: int, members: _Members, index: int) -> None:
        self.value = raw
        self.line = line
        self._members = members
        self._index = index

    @property  # type: ignore[override]
    def col(self) -> int:
        return self._members.offset(self._index) + 1

    @property  # type: ignore[override]
    def keys(self) -> dict[str, tuple[int, int]] | None:
        return None

    def plain(self) -> Any:
        """The value (a scalar holds no nodes)."""
        return self.value


class _Members:
    """Where the members of one container of a line start (and its keys), found by one walk of its text when
    first asked; the container's own place is asked of the members it is in."""

    __slots__ = ("_at", "_index", "_keys", "_offsets", "_outer", "_raw", "_text")

    def __init__(self, text: str, raw: Any, at: int, outer: _Members | None, index: int) -> None:
        self._text = text
        self._raw = raw
        self._at = at
        self._outer = outer
        self._index = index
        self._offsets: list[int] | None = None
        self._keys: list[int] | None = None  # each key's offset (a mapping's)

    def offset(self, index: int) -> int:
        if self._offsets is None:
            self._walk()
        return self._offsets[index]  # type: ignore[index]

    def keys(self, line: int) -> dict[str, tuple[int, int]]:
        if self._offsets is None:
            self._walk()
        return {key: (line, at + 1) for key, at in zip(self._raw, self._keys, strict=True)}  # type: ignore[arg-type]

    def _walk(self) -> None:
        text = self._text
        at = self._at if self._at >= 0 else self._outer.offset(self._index)  # type: ignore[union-attr]
        skip = _WS.match
        pos = skip(text, at + 1).end()  # type: ignore[union-attr]  (just past the bracket)
        raw = self._raw
        last = len(raw) - 1
        offsets = []
        if type(raw) is dict:
            keys = []
            for index, item in enumerate(raw.values()):  # in the text's order (no key repeats)
                keys.append(pos)
                pos = skip(text, _STRING_END.match(text, pos).end()).end()  # type: ignore[union-attr]
                pos = skip(text, pos + 1).end()  # type: ignore[union-attr]  (past the colon)
                offsets.append(pos)
                if index < last:
                    pos = _next_member(text, pos, item)
            self._keys = keys
        else:
            for index, item in enumerate(raw):
                offsets.append(pos)
                if index < last:
                    pos = _next_member(text, pos, item)
        self._offsets = offsets


def _located(raw: Any, text: str, line: int, members: _Members, index: int) -> Node:
    if type(raw) is dict or type(raw) is list:
        return LocatedNode(raw, text, line, -1, members, index)
    return _LocatedLeaf(raw, line, members, index)


def _next_member(text: str, pos: int, value: Any) -> int:
    """Where the member after the one written at ``pos`` starts: past the value (a string is matched, not
    decoded again), the space around the comma and the comma."""
    end = _STRING_END.match(text, pos).end() if type(value) is str else _SCAN(text, pos)[1]  # type: ignore[union-attr]
    return _WS.match(text, _WS.match(text, end).end() + 1).end()  # type: ignore[union-attr]


def json_line(text: str, path: str, number: int) -> Node:
    """One line of a JSON-lines log (``number``) as nodes: ``parse_json(text, path, number, 1, unit="line")``
    in values, positions and errors, read by the C scanner (``LocatedNode``) whenever the positional parser
    would accept the line and read it to the same values; otherwise by that parser (its error)."""
    try:
        pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
        raw, end = _SCAN(text, pos)
        if _WS.match(text, end).end() != len(text) or "\n" in text:  # type: ignore[union-attr]
            raise _Refused("extra data")
        if _risky(text) or len(text) > MAX_NODES or text.count("{") + text.count("[") >= MAX_DEPTH:
            # what the positional parser might refuse may be there: every value checked
            if _value_size(raw, 0, text.find("\\u") >= 0) > MAX_NODES:
                raise _Refused("size")
    except Exception:  # what the C scanner or a check refused: the positional parser decides
        return parse_json(text, path, number, 1, unit="line")
    return LocatedNode(raw, text, number, pos)
