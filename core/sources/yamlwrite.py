"""A YAML writer for the documents ``tokenbox import`` writes, byte-identical to PyYAML's, in linear time.

``export.session_yaml`` used PyYAML's pure-Python emitter, which costs tens of microseconds per node
and a Python loop per character: 8 000 parallel tool calls (600 000 nodes) took 16 s, a 20 MB text
value 19 s. This writer emits the same bytes as ``yaml.dump(doc, Dumper=SafeDumper-like, sort_keys=False,
allow_unicode=True, width=120, default_flow_style=False)`` with the same representers (``str`` in ``|``
style when it holds a newline, ``"`` style when it holds a Unicode line break; flow lists) — it follows
PyYAML's emitter state for state, but analyses each scalar with regular expressions and writes it by
runs (a plain or quoted scalar is folded with one search per output line, not one step per character).

``dump(doc, flow_type)`` returns ``None`` for anything outside the shapes tokenbox writes (a key that is
not a short single-line string, a type other than dict, list, str, int, float, bool and None, a flow
list of collections): the caller then uses PyYAML. ``tests/importers/test_yamlwrite.py`` checks
equality with PyYAML on generated documents and on every real session's export.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

WIDTH = 120
INDENT = 2
_BREAKS = "\n\x85\u2028\u2029"
_WS = "\0 \t\r\n\x85\u2028\u2029"
# Characters PyYAML writes as they are (allow_unicode): the rest are "special" (double quotes only).
_SPECIAL = re.compile("[^\n\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]")
_BREAK_SPACE = re.compile("[\n\x85\u2028\u2029] ")
_SPACE_BREAK = re.compile(" [\n\x85\u2028\u2029]")
_LINE_BREAK = re.compile("[\n\x85\u2028\u2029]")
_FLOW_INDICATOR = re.compile(r"[,?\[\]{}:]")
_COLON_THEN_SPACE = re.compile(":(?:[\0 \t\r\n\x85\u2028\u2029]|$)")
_HASH_AFTER_SPACE = re.compile("[\0 \t\r\n\x85\u2028\u2029]#")
_SINGLE_SPACE = re.compile("(?<! ) (?! )")
# In double quotes: what is written escaped (PyYAML's test, allow_unicode)
_ESCAPED = re.compile('["\\\\\x85\u2028\u2029\ufeff]|[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]')
_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\x09": "t", "\x0a": "n", "\x0b": "v", "\x0c": "f", "\x0d": "r",
            "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N", "\xa0": "_", "\u2028": "L", "\u2029": "P"}
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


class _Unsupported(Exception):
    """The document has a shape this writer does not cover: PyYAML writes it."""


def dump(doc: Any, flow_type: type) -> str | None:
    """``doc`` as PyYAML would write it (see the module docstring), or ``None`` to ask PyYAML."""
    writer = _Writer(flow_type)
    try:
        writer.root(doc)
    except (_Unsupported, RecursionError):
        return None
    return "".join(writer.out)


class _Analysis:
    __slots__ = ("allow_block", "allow_block_plain", "allow_flow_plain", "allow_single", "empty", "multiline")

    def __init__(self, text: str) -> None:
        if not text:
            self.empty, self.multiline = True, False
            self.allow_flow_plain, self.allow_block_plain, self.allow_single, self.allow_block = False, True, True, False
            return
        self.empty = False
        first = text[0]
        followed = len(text) == 1 or text[1] in _WS
        flow = block = text.startswith(("---", "..."))
        if first in "#,[]{}&*!|>'\"%@`" or (first == "-" and followed):
            flow = block = True
        elif first in "?:":
            flow = True
            block = block or followed
        rest = text[1:]
        if _FLOW_INDICATOR.search(rest) or _HASH_AFTER_SPACE.search(text):
            flow = True
        if _COLON_THEN_SPACE.search(text, 1) or _HASH_AFTER_SPACE.search(text):
            block = True
        breaks = _LINE_BREAK.search(text) is not None
        special = _SPECIAL.search(text) is not None
        edge_space = first == " " or text[-1] == " "
        edge_break = first in _BREAKS or text[-1] in _BREAKS
        break_space = _BREAK_SPACE.search(text) is not None
        space_break = _SPACE_BREAK.search(text) is not None
        flow_plain = block_plain = single = allow_block = True
        if edge_space or edge_break:
            flow_plain = block_plain = False
        if text[-1] == " ":
            allow_block = False
        if break_space:
            flow_plain = block_plain = single = False
        if space_break or special:
            flow_plain = block_plain = single = allow_block = False
        if breaks:
            flow_plain = block_plain = False
        if flow:
            flow_plain = False
        if block:
            block_plain = False
        self.multiline = breaks
        self.allow_flow_plain, self.allow_block_plain, self.allow_single, self.allow_block = flow_plain, block_plain, single, allow_block


class _Writer:
    """PyYAML's emitter state (column, indent, whitespace, indention) for the events of one document."""

    def __init__(self, flow_type: type) -> None:
        self.flow_type = flow_type
        self.out: list[str] = []
        self.column = 0
        self.indent: int | None = None
        self.whitespace = True
        self.indention = True
        self.open_ended = False
        self.flow_level = 0

    # -- low level, as PyYAML's write_indicator / write_indent / write_line_break

    def indicator(self, text: str, need_whitespace: bool, whitespace: bool = False, indention: bool = False) -> None:
        data = text if self.whitespace or not need_whitespace else " " + text
        self.whitespace = whitespace
        self.indention = self.indention and indention
        self.column += len(data)
        self.open_ended = False
        self.out.append(data)

    def write_indent(self) -> None:
        indent = self.indent or 0
        if not self.indention or self.column > indent or (self.column == indent and not self.whitespace):
            self.line_break()
        if self.column < indent:
            self.whitespace = True
            self.out.append(" " * (indent - self.column))
            self.column = indent

    def line_break(self, data: str = "\n") -> None:
        self.whitespace = True
        self.indention = True
        self.column = 0
        self.out.append(data)

    # -- nodes

    def root(self, doc: Any) -> None:
        self.node(doc, root=True)
        # DocumentEnd then StreamEnd, as PyYAML: an indent, then "..." when the last scalar left the document open
        self.write_indent()
        if self.open_ended:
            self.indicator("...", True)
            self.write_indent()

    def node(self, value: Any, *, root: bool = False, sequence: bool = False, mapping: bool = False, simple_key: bool = False) -> None:
        if isinstance(value, dict):
            if self.flow_level or not value:
                self.flow_mapping(value)
            else:
                self.block_mapping(value, mapping)
        elif isinstance(value, list):
            if isinstance(value, self.flow_type) or self.flow_level or not value:
                self.flow_sequence(value)
            else:
                self.block_sequence(value, mapping)
        else:
            self.scalar(value, root=root, simple_key=simple_key)

    def _push(self, flow: bool, indentless: bool = False) -> int | None:
        saved = self.indent
        if self.indent is None:
            self.indent = INDENT if flow else 0
        elif not indentless:
            self.indent += INDENT
        return saved

    def block_mapping(self, value: dict, in_mapping: bool) -> None:
        saved = self._push(False)
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unsupported
            self.write_indent()
            analysis = _Analysis(key)
            if len(key) >= 128 or analysis.empty or analysis.multiline:
                raise _Unsupported  # a complex key ("? …")
            self.scalar(key, simple_key=True, analysis=analysis)
            self.indicator(":", False)
            self.node(item, mapping=True)
        self.indent = saved

    def block_sequence(self, value: list, in_mapping: bool) -> None:
        saved = self._push(False, indentless=in_mapping and not self.indention)
        for item in value:
            self.write_indent()
            self.indicator("-", True, indention=True)
            self.node(item, sequence=True)
        self.indent = saved

    def flow_sequence(self, value: list) -> None:
        self.indicator("[", True, whitespace=True)
        self.flow_level += 1
        saved = self._push(True)
        for number, item in enumerate(value):
            if isinstance(item, (dict, list)):
                raise _Unsupported
            if number:
                self.indicator(",", False)
                if self.column > WIDTH:
                    self.write_indent()
            elif self.column > WIDTH:
                self.write_indent()
            self.node(item, sequence=True)
        self.indent = saved
        self.flow_level -= 1
        self.indicator("]", False)

    def flow_mapping(self, value: dict) -> None:
        if value:
            raise _Unsupported
        self.indicator("{", True, whitespace=True)
        self.indicator("}", False)

    # -- scalars

    def scalar(self, value: Any, *, root: bool = False, simple_key: bool = False, analysis: _Analysis | None = None) -> None:
        saved = self._push(True)
        if isinstance(value, str):
            self.string(value, root, simple_key, analysis)
        else:
            self.plain(_plain_text(value), root, split=not simple_key)
        self.indent = saved

    def string(self, text: str, root: bool, simple_key: bool, analysis: _Analysis | None) -> None:
        if any(ch in text for ch in "\x85\u2028\u2029"):
            style = '"'
        else:
            style = "|" if "\n" in text else None
        analysis = analysis or _Analysis(text)
        chosen = '"'
        if style != '"':
            implicit = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG
            if style is None and implicit and not (simple_key and (analysis.empty or analysis.multiline)) and (
                    (self.flow_level and analysis.allow_flow_plain) or (not self.flow_level and analysis.allow_block_plain)):
                chosen = ""
            elif style == "|" and not self.flow_level and not simple_key and analysis.allow_block:
                chosen = "|"
            elif style is None and analysis.allow_single and not (simple_key and analysis.multiline):
                chosen = "'"
        split = not simple_key
        if chosen == "":
            self.plain(text, root, split)
        elif chosen == "|":
            self.literal(text)
        elif chosen == "'":
            self.single_quoted(text, split)
        else:
            self.double_quoted(text, split)

    def plain(self, text: str, root: bool, split: bool) -> None:
        if root:
            self.open_ended = True
        if not text:
            return
        if not self.whitespace:
            self.out.append(" ")
            self.column += 1
        self.whitespace = False
        self.indention = False
        self._fold(text, split, plain=True)

    def single_quoted(self, text: str, split: bool) -> None:
        self.indicator("'", True)
        # No line breaks reach here (a text with one is "|" or double-quoted); quotes are doubled and
        # count twice toward the column, so the text is written in pieces between quotes.
        pieces = text.split("'")
        for number, piece in enumerate(pieces):
            if number:
                self.out.append("''")
                self.column += 2
            if piece:
                self._single_piece(text, piece, split, number, pieces)
        self.indicator("'", False)

    def _single_piece(self, text: str, piece: str, split: bool, number: int, pieces: list[str]) -> None:
        # PyYAML breaks at a lone space past the width, but not at the first or last character of the text
        self._fold(piece, split, plain=False, avoid_first=number == 0, avoid_last=number == len(pieces) - 1)

    def _fold(self, text: str, split: bool, *, plain: bool, avoid_first: bool = False, avoid_last: bool = False) -> None:
        """Write ``text`` (no line break in it): a lone space becomes a new line once the column is past the width."""
        out = self.out
        start = 0
        length = len(text)
        while True:
            match = _SINGLE_SPACE.search(text, start + max(0, WIDTH + 1 - self.column)) if split else None
            while match is not None and ((avoid_first and match.start() == 0) or (avoid_last and match.start() == length - 1)):
                match = _SINGLE_SPACE.search(text, match.start() + 1) if match.start() + 1 < length else None
            if match is None:
                out.append(text[start:])
                self.column += length - start
                return
            end = match.start()
            out.append(text[start:end])
            self.column += end - start
            self.write_indent()
            if plain:  # PyYAML's plain writer says so after its indent; the quoted one does not
                self.whitespace = False
                self.indention = False
            start = end + 1

    def double_quoted(self, text: str, split: bool) -> None:
        self.indicator('"', True)
        out = self.out
        length = len(text)
        start = 0
        end = 0
        escapes = _ESCAPED
        while end <= length:
            # the next place where something can happen: an escaped character, a space where the line
            # may fold, or (right after an escape) any character
            if end < length and start < end:
                limit = start + WIDTH - self.column  # a fold needs column + (end - start) > WIDTH
                escape = escapes.search(text, end)
                stop = escape.start() if escape is not None else length
                space_from = max(end, limit + 1)
                space = text.find(" ", space_from, stop) if space_from < stop else -1
                end = space if space >= 0 else stop
            ch = text[end] if end < length else None
            if ch is None or escapes.match(ch):
                if start < end:
                    out.append(text[start:end])
                    self.column += end - start
                    start = end
                if ch is not None:
                    code = ord(ch)
                    data = "\\" + _ESCAPES[ch] if ch in _ESCAPES else (
                        f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
                    out.append(data)
                    self.column += len(data)
                    start = end + 1
            if 0 < end < length - 1 and (ch == " " or start >= end) and self.column + (end - start) > WIDTH and split:
                data = text[start:end] + "\\"
                if start < end:
                    start = end
                out.append(data)
                self.column += len(data)
                self.write_indent()
                self.whitespace = False
                self.indention = False
                if text[start] == " ":
                    out.append("\\")
                    self.column += 1
            end += 1
        self.indicator('"', False)

    def literal(self, text: str) -> None:
        hints = ""
        if text[0] in " \n\x85\u2028\u2029":
            hints += str(INDENT)
        if text[-1] not in _BREAKS:
            hints += "-"
        elif len(text) == 1 or text[-2] in _BREAKS:
            hints += "+"
        self.indicator("|" + hints, True)
        if hints[-1:] == "+":
            self.open_ended = True
        self.line_break()
        pad = " " * (self.indent or 0)
        lines = text.split("\n")  # "|" texts hold no other line break (they are double-quoted)
        body = "\n".join(pad + line if line else line for line in lines)
        if not text.endswith("\n"):
            body += "\n"
        self.out.append(body)
        self.whitespace = True
        self.indention = True
        self.column = 0


def _plain_text(value: Any) -> str:
    """How PyYAML's SafeRepresenter writes a non-string scalar."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value).lower()
        return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text
    raise _Unsupported
