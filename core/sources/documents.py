"""Reading a session file's text into turns: a tokenbox session (YAML, JSON) or log (JSON lines), or a
format of the ``formats.FORMATS`` table, chosen by content.

JSON is read with ``json``'s C scanner first (``nodes.fast_json``) and falls back to the positional
parser whenever the fast read cannot be trusted, so every error is the positional path's, with its
message and position. Every problem becomes a ``SessionError`` naming the file, line and column.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import FastDocument, Node, Unlocated, fast_json, parse_json
from tokenbox.core.parse.schema import Reusable, session_from_node
from tokenbox.core.sources import foreign
from tokenbox.core.sources.formats import FORMATS, Format, Shape, of_shape, torn_line_stand_in, transcript_format
from tokenbox.core.sources.turns import no_complete_line, with_history, with_path

EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}


def format_of(path: str, text: str) -> str:
    """``yaml``, ``json`` or ``jsonl``: by extension, else (a pipe, a device) by the text."""
    ext = os.path.splitext(path)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" in stripped.rstrip():
        # a pipe or device has no extension: one JSON document whose lines start with `{` is still JSON
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return "jsonl"
        return "json"
    if stripped.startswith(("{", "[")):
        return "json"
    return "yaml"


# ---------------------------------------------------------------- JSON: a fast path, and the positional one
#
# A JSON document is first read with the C scanner (``nodes.fast_json``), which locates only what a
# valid session keeps (the root, its values, each section), and validated from that. Anything that
# could go wrong there (the scanner has doubts, an importer claims the document, validation fails)
# sends the whole document through the positional parser and validation again, so an error is
# always the one the positional path raises, with its message and position.


def fast_turns(
    doc: FastDocument, path: str, previous: Reusable | None = None, formats: Sequence[Format] = FORMATS
) -> list[Session] | None:
    """The turn of a fast-read document, or ``None`` when the positional path must load it."""
    try:
        view = doc.view()
        if any(row.detect(view) for row in of_shape(formats, Shape.DOCUMENT)):
            return None  # importers position their blocks: they get positioned nodes
        return [session_from_node(doc.root, path, previous)]
    except Exception:  # the positional path raises the real error
        return None


class LogLine:
    """One line of a JSON-lines log, parsed; the positioned tree and the validated turn come on demand.

    Constructing one parses the line (fast path, else the positional parser, whose ``SessionError``
    propagates). A ``logreader.LogReader`` keeps the lines of the log it follows.
    """

    __slots__ = ("_node", "_session", "_view", "fast", "number", "text")

    def __init__(self, number: int, text: str, path: str) -> None:
        self.number = number
        self.text = text
        self.fast = fast_json(text, number, 1)
        self._node = None if self.fast is not None else parse_json(text, path, number, 1, unit="line")
        self._view: Node | None = None
        self._session: Session | None = None

    def node(self, path: str) -> Node:
        """The line's positioned tree, as the positional parser builds it (errors name ``path``).

        Kept only when the line was read on the positional path; otherwise (an importer's lines, a
        line whose validation failed) it is built again when asked for: positioned trees weigh
        several times their text, and the cache is bounded by text.
        """
        if self._node is not None:
            return self._node
        return parse_json(self.text, path, self.number, 1, unit="line")

    def view(self, path: str) -> Node:
        """The line as nodes for content detectors (unpositioned when read on the fast path)."""
        if self._view is None:
            self._view = self.fast.view() if self.fast is not None else self.node(path)
        return self._view

    def session(self, path: str) -> Session:
        """The line validated as a tokenbox turn of the file ``path``; errors come from the positional path."""
        session = self._session
        if session is None:
            if self.fast is not None:
                try:
                    session = session_from_node(self.fast.root, path)
                except Exception:  # the positional path raises the real error
                    session = None
            if session is None:
                session = session_from_node(self.node(path), path)
        elif session.path != path:
            session = with_path(session, path)
        self._session = session
        return session


def jsonl_lines(text: str, path: str, formats: Sequence[Format] = FORMATS) -> list[LogLine]:
    """Parse a JSON-lines log: blank lines skipped, an unterminated last line ignored unless complete, a
    line that does not parse read as the stand-in a row of ``formats`` names for it (``torn_line``).

    Every line is parsed: following a growing log is ``logreader.LogReader``'s job.
    """
    parsed = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = LogLine(number, line, path)
        except SessionError:
            if number == len(lines):
                break  # the last line has no newline yet: an agent is still writing it
            stand_in = torn_line_stand_in(formats, parsed[0].text if parsed else None)
            if stand_in is None:
                raise
            entry = LogLine(number, stand_in, path)  # a torn record of a format that skips them
        parsed.append(entry)
    return parsed


def parse_turns(text: str, path: str, fmt: str | None = None, formats: Sequence[Format] = FORMATS) -> Sequence[Session]:
    """All turns in ``text`` (one for YAML/JSON, one per line for JSONL), oldest first."""
    fmt = fmt or format_of(path, text)
    if fmt == "jsonl":
        transcript = transcript_format(formats, text)
        if transcript is not None:
            return transcript.convert(text, path)
        lines = parse_or_refuse(lambda: jsonl_lines(text, path, formats), text, path)
        if not lines:
            raise no_complete_line(path)
        views = [line.view(path) for line in lines]
        for row in of_shape(formats, Shape.LINES):
            if detects(row.detect, views, lines, path):
                return row.convert([line.node(path) for line in lines], path)
        refusal = foreign.sniff_lines(views, path)
        if refusal is not None:
            raise refusal
        return [line.session(path) for line in lines]
    if fmt == "json":
        doc = fast_json(text)
        if doc is not None:
            turns = fast_turns(doc, path, formats=formats)
            if turns is not None:
                return turns
    if fmt == "json":
        node = parse_or_refuse(lambda: parse_json(text, path), text, path)
    else:
        from tokenbox.core.parse.yamlnodes import parse_yaml  # start-up: PyYAML loads only when a YAML file is read

        node = parse_or_refuse(lambda: parse_yaml(text, path), text, path)
    for row in of_shape(formats, Shape.DOCUMENT):
        if row.detect(node):
            return row.convert(node, path)
    refusal = foreign.sniff_document(node, path) or foreign.sniff_text(text, path, node)
    if refusal is not None:
        raise refusal
    return [session_from_node(node, path)]


def parse_or_refuse(parse: Callable[[], Any], text: str, path: str) -> Any:
    """``parse()``; when it fails on another tool's recognisable text, that refusal instead of the syntax error."""
    try:
        return parse()
    except SessionError:
        refusal = foreign.sniff_text(text, path)
        if refusal is not None:
            raise refusal from None
        raise


def detects(detect: Callable[[list[Node]], bool], views: list[Node], lines: Sequence[LogLine], path: str) -> bool:
    """``detect`` on the lines as read; on positioned trees if it needs a position the views lack."""
    try:
        return detect(views)
    except Unlocated:
        return detect([line.node(path) for line in lines])


def turns_of(text: str, path: str, formats: Sequence[Format] = FORMATS) -> list[Session]:
    """Every turn in ``text`` (read from ``path``), each with its history: ``load_turns`` without the read."""
    turns = parse_turns(text, path, formats=formats)
    return [with_history(t, tuple(turns[:i]), i + 1, len(turns)) for i, t in enumerate(turns)]

