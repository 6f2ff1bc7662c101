"""YAML documents as positioned nodes (the part of ``tokenbox.core.parse.nodes`` that needs PyYAML).

Kept apart so that reading JSON, JSON lines or a transcript never imports YAML.
"""

from __future__ import annotations

import math
import re

import yaml
from tokenbox.core.model.errors import SessionError
from tokenbox.core.parse.nodes import MAX_DEPTH, MAX_NODES, Lines, Node

try:
    _YAML_LOADER: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _YAML_LOADER = yaml.SafeLoader


MAX_EXPANDED_CHARS = 64 * 1024 * 1024  # text a document may hold once its aliases are expanded
MAX_INT_DIGITS = 20  # as JSON reads them: an OpenAI `seed` round-trips through `tokenbox import`
MAX_INT_CHARS = 64  # an integer literal longer than this is refused unread (underscores, signs included)

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
    def __init__(self, path: str, at: _Positions | None = None) -> None:
        self.at = at or _Positions("")
        self.path = path
        self.count = 0
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, problem: str, remedy: str) -> SessionError:
        mark = node.start_mark
        return SessionError(problem, remedy, self.path, *self.at(mark))

    def convert(self, node: yaml.Node, depth: int, active: tuple[int, ...] = ()) -> Node:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES} values (an alias bomb?)", "do not expand aliases")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {MAX_DEPTH} levels", "flatten the document")
        if node.tag not in _YAML_TAGS:
            raise self.fail(node, f"YAML tag {node.tag} is not allowed", "remove the tag; plain values only")
        line, col = self.at(node.start_mark)
        expected = _COLLECTION_TAGS.get(type(node))
        if expected is not None and node.tag != expected:  # `!!int {a: 1}`, `!!str [a]`: a tag its value cannot have
            what = "mapping" if isinstance(node, yaml.MappingNode) else "sequence"
            raise self.fail(node, f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} on a {what}",
                            "remove the tag")
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
                keys[key] = self.at(key_node.start_mark)
            return Node(result, line, col, keys)
        if isinstance(node, yaml.SequenceNode):
            if id(node) in active:
                raise self.fail(node, "recursive alias", "remove the self-reference")
            return Node([self.convert(item, depth + 1, (*active, id(node))) for item in node.value], line, col)
        tag = node.tag
        if tag == "tag:yaml.org,2002:str":
            return Node(node.value, line, col)
        if tag == "tag:yaml.org,2002:int" and (":" in node.value or len(node.value) > MAX_INT_CHARS):
            # YAML 1.1's base-60 integers (1:30:00) cost PyYAML quadratic time to build; a number this
            # long is too large anyway: refused before the constructor sees it
            what = "a base-60 (sexagesimal) integer" if ":" in node.value else f"number {node.value[:40]}…"
            raise self.fail(node, f"{what} is not allowed", "quote it to keep it as text, or write a plain number")
        if tag == "tag:yaml.org,2002:timestamp":
            return Node(node.value, line, col)  # keep dates as the text the user wrote
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError, yaml.YAMLError, KeyError, IndexError, TypeError):
            # e.g. `!!bool maybe` (KeyError), `!!int ""` (IndexError): a value the tag cannot hold
            raise self.fail(node, f"bad value {node.value[:60]!r} for tag {tag}", "fix the value or remove the tag") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(node, f"{node.value} is not a finite number", "use a finite number")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_INT_DIGITS:
            raise self.fail(node, f"number {node.value[:40]} is too large", "use a smaller number")
        return Node(value, line, col)


_COLLECTION_TAGS = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}

# YAML 1.1 breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR too; tokenbox (and JSON, and
# most editors' line numbers) only at "\n". Marks are turned into positions by their character index
# when the text holds one of them, so that a position means the same line in every format.
_OTHER_BREAKS = ("\x85", "\u2028", "\u2029")


class _Positions:
    """1-based (line, column) of a libyaml mark, counted as tokenbox counts lines."""

    def __init__(self, text: str) -> None:
        self.lines = Lines(text) if any(ch in text for ch in _OTHER_BREAKS) else None

    def __call__(self, mark) -> tuple[int, int]:
        if self.lines is None:
            return mark.line + 1, mark.column + 1
        return self.lines.at(mark.index)


_START_EVENTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_END_EVENTS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_shape(text: str, path: str, at: _Positions) -> None:
    """Refuse documents nested deeper than ``MAX_DEPTH`` or whose aliases expand past ``MAX_NODES``.

    This walks libyaml's event stream, which is iterative, before anything is composed: libyaml's
    composer recurses in C, so a document nested a few hundred thousand levels deep would overflow
    the C stack (a crash, not an exception), and a billion-laughs alias bomb is caught here in
    proportion to the file's size rather than to its expansion.
    """
    open_nodes: list[tuple[str | None, int, int]] = []  # per open collection: its anchor, count and size at its start
    sizes: dict[str, tuple[int, int]] = {}  # anchor → (values, characters) it expands to
    count = 0
    chars = 0  # characters of the scalars, aliases expanded: an alias of a large value weighs that value

    def fail(event: yaml.Event, problem: str, remedy: str) -> SessionError:
        mark = event.start_mark
        return SessionError(problem, remedy, path, *at(mark))

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
                size = len(event.value) if isinstance(event, yaml.ScalarEvent) else 0
                chars += size
                if event.anchor is not None:
                    sizes[event.anchor] = (1, size)
        if count > MAX_NODES:
            raise fail(event, f"more than {MAX_NODES} values (an alias bomb?)", "write the values out instead of repeating aliases")
        if chars > MAX_EXPANDED_CHARS:
            raise fail(event, f"aliases expand the document past {MAX_EXPANDED_CHARS // (1024 * 1024)} MiB of text",
                       "write the values out instead of repeating aliases of large ones")


# What ``_deep_flow_end`` looks at: flow brackets, and the quoted scalars, comments and block scalars
# whose brackets are text. Quoted scalars count only where a token may start (a quote inside a plain
# scalar such as ``don't`` is text); an unterminated one is read as text, never swallowing the rest.
_FLOW_LEXEME = re.compile(
    r"""(?P<open>[\[{])|(?P<close>[\]}])"""
    r"""|(?P<quoted>(?<![^\s\[{,:])(?:"[^"\\]*(?:\\.[^"\\]*)*"|'[^']*(?:''[^']*)*'))"""
    r"""|(?P<comment>(?<!\S)\#[^\n]*)"""
    r"""|(?P<block>(?<!\S)[|>][-+0-9]*[ \t]*(?:\#[^\n]*)?(?:\n|$))""",
)
_INDENT = re.compile("[ ]*")
_BLOCK_BODY: dict[int, re.Pattern[str]] = {}  # indentation of a block scalar's line → its body's lines


def _block_body(indent: int) -> re.Pattern[str]:
    """The lines of a block scalar under a line indented ``indent`` spaces: blank or indented more."""
    if indent not in _BLOCK_BODY:
        _BLOCK_BODY[indent] = re.compile(rf"(?:[ \t]*\n|[ ]{{{indent + 1},}}[^\n]*(?:\n|$))*")
    return _BLOCK_BODY[indent]


def _deep_flow_end(text: str) -> int | None:
    """Where the text's flow collections (``[``/``{``) first nest deeper than ``MAX_DEPTH``, if they do:
    the offset just past that opening bracket.

    A lexer, not a parser (see ``_own_limits_first``): quoted scalars, comments and block scalars are
    skipped, and a bracket in block context counts only where a token may start. Where it errs, the
    cut text shows no depth error and the parser's own error stands.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # too few brackets to nest that deep: the common case costs two counts
    depth = 0
    pos = 0
    search = _FLOW_LEXEME.search
    while (match := search(text, pos)) is not None:
        pos = match.end()
        kind = match.lastgroup
        if kind == "open":
            start = match.start()
            # in block context a bracket opens a flow collection only where a token starts
            if depth or start == 0 or text[start - 1] in " \t\n-?:":
                depth += 1
                if depth > MAX_DEPTH:
                    return pos
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "block" and depth == 0:
            line_start = text.rfind("\n", 0, match.start()) + 1
            indent = _INDENT.match(text, line_start).end() - line_start  # type: ignore[union-attr]
            body = _block_body(indent).match(text, pos)
            pos = body.end() if body is not None else pos
    return None


def _own_limits_first(text: str, path: str, at: _Positions) -> None:
    """Raise tokenbox's depth error if the text nests deeper than ``MAX_DEPTH`` before a parser error.

    Called when the parser failed: its own nesting limit (libyaml's, PyYAML ≥ 6.0.4) may be what
    fired, because its scanner reads flow brackets far ahead of the events ``_check_shape`` counts.
    The text up to where its flow brackets pass tokenbox's limit holds the same first events and is
    within every parser's limit, so tokenbox's error (same message, same position whatever the
    version) is found there. Valid documents never pay for this.
    """
    cut = _deep_flow_end(text)
    if cut is None:
        return
    try:
        _check_shape(text[:cut], path, at)
    except yaml.YAMLError:
        return  # no depth error before the cut: the parser's error stands


def _syntax_message(exc: yaml.MarkedYAMLError, at: _Positions) -> str:
    """One readable sentence from libyaml's problem and context (which may point elsewhere)."""
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    where = exc.context_mark
    if not problem:
        return context or "invalid YAML"
    if not context or where is None:
        return problem
    line, col = at(where)  # the position inside the message is counted like the reported one
    at_text = f"line {line}, column {col}"
    if context.startswith("while "):
        return f"{problem} {context} that starts at {at_text}"
    if "duplicate anchor" in context:
        return f"duplicate anchor (first defined at {at_text})"
    if "single document" in context:
        return "more than one YAML document in the file"
    return f"{context} ({at_text}): {problem}"


def _offset_position(text: str, offset: int, byte_offset: bool) -> tuple[int, int]:
    """1-based line and column (in characters) of ``offset``, given in characters or UTF-8 bytes."""
    if byte_offset:
        offset = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
    return Lines(text).at(offset)


def parse_yaml(text: str, path: str) -> Node:
    """Parse one YAML document (safe subset) into positioned nodes."""
    at = _Positions(text)
    try:
        try:
            _check_shape(text, path, at)
        except yaml.YAMLError:
            _own_limits_first(text, path, at)  # a parser's own limit may have fired before tokenbox's
            raise
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = _syntax_message(exc, at)
        if mark is not None:
            raise SessionError(f"YAML syntax: {problem}", "fix the syntax", path, *at(mark)) from None
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
    return _YamlConverter(path, at).convert(root, 0)
