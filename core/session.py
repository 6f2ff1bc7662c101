"""Load and validate session files (YAML, JSON, JSONL) into ``Session`` objects.

Every problem becomes a ``SessionError`` naming the file, line and column, the problem and a remedy.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from typing import Any

from tokenbox.core import kinds
from tokenbox.core.errors import ConfigError, FileTooLarge, NotYetComplete, SessionError
from tokenbox.core.lensspec import parse_lens
from tokenbox.core.model import (
    BEHAVIOR_KINDS,
    KEEP_ENDS,
    SENSORS,
    TRIMMING_POLICIES,
    Behavior,
    BudgetSpec,
    Calibration,
    Section,
    Session,
    TurnHistory,
)
from tokenbox.core.nodes import FastDocument, Node, Unlocated, fast_json, parse_json, parse_yaml

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
SCHEMA_VERSION = 1
SESSION_KEYS = (
    "tokenbox", "name", "meta", "model", "tokenizer", "budget", "sensor", "trimming", "context_tokens", "calibration", "sections",
)
CALIBRATION_KEYS = ("method", "scale", "hidden", "turns", "source")
BUDGET_KEYS = ("max_ctx", "reserve_out", "headroom")
BEHAVIOR_KEYS = ("name", "kind", "activation", "content", "summary", "tags", "meta")
ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
MAX_COUNT = 10**9
MAX_WEIGHT = 10**6

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}


# ---------------------------------------------------------------- reading bytes


def read_text(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """Read ``path`` as UTF-8 text, refusing directories, oversized and binary files before parsing."""
    return decode_text(read_bytes(path, max_bytes), path, partial_tail=path.lower().endswith(".jsonl"))


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` as ``read_text`` reads them (same refusals), before decoding."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SessionError("no such file", "check the path", path) from None
    except OSError as exc:
        raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
    if stat.S_ISDIR(info.st_mode):
        raise SessionError("is a directory", "name a session file inside it", path)
    regular = stat.S_ISREG(info.st_mode)
    if regular and info.st_size > max_bytes:
        raise FileTooLarge(
            f"file is {info.st_size} bytes, over the {max_bytes}-byte limit",
            "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
            path,
        )
    try:
        # Read-only: tokenbox never writes a session file. O_NONBLOCK only keeps open() of a named
        # pipe from waiting for a writer; reads block as usual (and end at once when none is there).
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            if _O_NONBLOCK:
                os.set_blocking(fd, True)
            data = _read_at_most(fd, max_bytes + 1, info.st_size)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
    if len(data) > max_bytes:
        raise FileTooLarge(
            f"more than {max_bytes} bytes" + (" (the file grew while being read)" if regular else ""),
            "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
            path,
        )
    if not data and not regular:
        raise SessionError("nothing to read (not a regular file)", "pass the path of a session file", path)
    return data


_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_READ_CHUNK = 1 << 20


def _read_at_most(fd: int, limit: int, size_hint: int) -> bytes:
    """Up to ``limit`` bytes of ``fd``, in one read when ``size_hint`` (the size ``stat`` saw) is right.

    Memory follows what is actually there, never the limit: a small file costs little however high
    ``--max-file-size`` is set, and pipes and devices (size 0) are read in chunks until they end.
    """
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(limit - total, max(size_hint + 1 - total, _READ_CHUNK)))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decode_text(data: bytes, path: str, *, partial_tail: bool = False) -> str:
    """Decode UTF-8 (a leading BOM is skipped); NUL bytes and invalid UTF-8 are errors with a position.

    With ``partial_tail`` (a JSON-lines log an agent appends to), a last line cut inside a multi-byte
    character is still being written: it is left out instead of being an encoding error.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, or UTF-32 LE (same start)
        raise SessionError("UTF-16 or UTF-32 text (a byte-order mark)", "save the file as UTF-8", path, 1, 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _byte_position(data, nul)
        raise SessionError("binary data (a NUL byte)", "a session file is UTF-8 text", path, line, col)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if partial_tail and exc.end == len(data) and exc.reason == "unexpected end of data":
            return data[: data.rfind(b"\n") + 1].decode("utf-8")  # everything before exc.start is valid
        line, col = _byte_position(data, exc.start)
        raise SessionError(
            f"invalid UTF-8 (byte 0x{data[exc.start]:02x})", "save the file as UTF-8", path, line, col
        ) from None


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    col = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, col


# ---------------------------------------------------------------- validation helpers


# What the validator reads: a ``Node``, or (on the fast JSON path, below the positioned levels) the
# plain value itself. Errors raised on the fast path are never shown: any exception there makes the
# load run again on the positional path, whose messages and positions are the ones users get.
Item = Any


def _value(item: Item) -> Any:
    """The value of a node, or ``item`` itself when it is a plain value (fast JSON path)."""
    return item.value if isinstance(item, Node) else item


class _Validator:
    """Turns positioned nodes into model objects, failing with the node's position."""

    def __init__(self, path: str) -> None:
        self.path = path

    @staticmethod
    def where(item: Item) -> tuple[int | None, int | None]:
        """``item``'s position; none for a plain value (the fast path, whose errors are not shown)."""
        return (item.line, item.col) if isinstance(item, Node) else (None, None)

    def fail(self, node: Item, problem: str, remedy: str) -> SessionError:
        return SessionError(problem, remedy, self.path, *self.where(node))

    def mapping(self, node: Item, what: str, known: tuple[str, ...]) -> dict[str, Item]:
        """``node``'s fields, refusing any key not in ``known`` (a typo must not change a layout)."""
        fields = _value(node)
        if not isinstance(fields, dict):
            raise self.fail(node, f"{what} must be a mapping, not {_type_name(fields)}", "write `key: value` pairs")
        for key, value in fields.items():
            if key not in known:
                hint = _suggest(key, known)
                keys = node.keys if isinstance(node, Node) else None
                line, col = (keys or {}).get(key) or self.where(value)
                raise SessionError(
                    f"unknown key {key!r} in {what}",
                    (f"did you mean {hint!r}? " if hint else "") + f"known keys: {', '.join(known)}" + ("; free-form data goes under meta" if "meta" in known else ""),
                    self.path,
                    line,
                    col,
                )
        return fields

    def string(self, node: Item, what: str) -> str:
        value = _value(node)
        if not isinstance(value, str):
            raise self.fail(node, f"{what} must be a string, not {_type_name(value)}", "quote the value")
        return value

    def integer(self, node: Item, what: str, low: int, high: int) -> int:
        value = _value(node)
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and low <= value <= high:
                return int(value)
            got = _short(value) if isinstance(value, float) else _type_name(value)
            raise self.fail(node, f"{what} must be a whole number, not {got}", f"use a number from {low} to {high}")
        if not low <= value <= high:
            raise self.fail(node, f"{what} is {_short(value)}, out of range", f"use a number from {low} to {high}")
        return value

    def number(self, node: Item, what: str, low: float, high: float, *, high_open: bool = False) -> float | int:
        value = _value(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(node, f"{what} must be a number, not {_type_name(value)}", f"use a number from {low} to {high}")
        if value < low or value > high or (high_open and value >= high):
            bound = f"at least {low} and below {high}" if high_open else f"from {low} to {high}"
            raise self.fail(node, f"{what} is {_short(value)}, out of range", f"use a number {bound}")
        return value

    def choice(self, node: Item, what: str, choices: tuple[str, ...]) -> str:
        value = self.string(node, what)
        if value not in choices:
            raise self.fail(node, f"unknown {what} {value!r}", f"use one of: {', '.join(choices)}")
        return value

    def string_list(self, node: Item, what: str) -> tuple[str, ...]:
        items = _value(node)
        if not isinstance(items, list):
            raise self.fail(node, f"{what} must be a list of strings, not {_type_name(items)}", "write `[a, b]`")
        return tuple(self.string(item, f"each item of {what}") for item in items)

    def meta(self, node: Item) -> dict[str, Any]:
        value = _value(node)
        if not isinstance(value, dict):
            raise self.fail(node, f"meta must be a mapping, not {_type_name(value)}", "write `meta: {key: value}`")
        return node.plain() if isinstance(node, Node) else value


def _type_name(value: Any) -> str:
    """What ``value`` is, for messages; scalars are shown too (``1e3`` reads as a string in YAML)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, (int, float)):
        return f"a number ({_short(value)})"
    if isinstance(value, str):
        return f"a string ({_short(value)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _short(value: Any) -> str:
    """``value`` as written in a session file (true/false/null, not Python's names), kept short."""
    text = "null" if value is None else ("true" if value else "false") if isinstance(value, bool) else repr(value)
    return text if len(text) <= 24 else text[:20] + "…"


def _suggest(key: str, known: tuple[str, ...]) -> str | None:
    import difflib

    matches = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return matches[0] if matches else None


# ---------------------------------------------------------------- sections


def _section(v: _Validator, node: Node, index: int) -> Section:
    if not isinstance(node.value, dict):
        raise v.fail(node, f"section {index} must be a mapping, not {_type_name(node.value)}", "write `- id: name` with its keys")
    raw = node.value
    kind = "text"
    if "kind" in raw:
        kind = v.choice(raw["kind"], "section kind", kinds.KINDS)
    fields = v.mapping(node, f"section {index} (kind {kind})", kinds.allowed_keys(kind))
    attrs: dict[str, Any] = dict(kinds.KIND_PRESETS[kind])
    if "id" in fields:
        sid = v.string(fields["id"], "section id")
        if not ID_PATTERN.fullmatch(sid):
            raise v.fail(fields["id"], f"section id {sid!r} has characters outside [A-Za-z0-9_.-]", "use letters, digits, _ . -")
    else:
        sid = f"section-{index}"
    attrs.update(id=sid, kind=kind, line=node.line, col=node.col)
    for key, item in fields.items():
        if key in ("id", "kind"):
            continue
        if key == "priority":
            attrs[key] = v.integer(item, "priority", -MAX_COUNT, MAX_COUNT)
        elif key == "min":
            attrs[key] = v.integer(item, "min", 0, MAX_COUNT)
        elif key in ("grow", "shrink"):
            attrs[key] = v.number(item, key, 0, MAX_WEIGHT)
        elif key == "strategy":
            attrs[key] = _strategy(v, item, kind)
        elif key == "keep":
            attrs[key] = v.choice(item, "keep", KEEP_ENDS)
        elif key in ("summary", "text", "assistant_name", "identity", "feedback", "tools"):
            attrs[key] = v.string(item, key)
        elif key in ("foveal_focus", "scope"):
            attrs[key] = None if _value(item) is None else v.string(item, key)
        elif key == "memory":
            attrs[key] = v.string_list(item, "memory")
        elif key == "budget":
            attrs[key] = v.integer(item, "behaviors budget", 0, MAX_COUNT)
        elif key == "items":
            attrs[key] = _behaviors(v, item)
        elif key == "tokens":
            attrs[key] = v.integer(item, "inferred tokens", 0, MAX_COUNT)
        elif key == "meta":
            attrs[key] = v.meta(item)
    if kind == "inferred":
        if "tokens" not in fields:
            raise v.fail(node, f"section {sid!r} (kind inferred) has no tokens", "add `tokens: N`, the size of the hidden part")
        if attrs.get("shrink", 0) != 0:
            raise v.fail(fields["shrink"], f"section {sid!r} (kind inferred) cannot shrink", "an inferred part has no text to trim: remove `shrink`")
    if kind in ("text", "user", "logs", "mandates") and "text" not in fields:
        raise v.fail(node, f"section {sid!r} (kind {kind}) has no text", "add `text: ...`; an empty string is allowed")
    return Section(**attrs)


# Strategies already validated, by (specs, kind): the same few are written on many sections.
_STRATEGIES: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}


def _strategy(v: _Validator, node: Item, kind: str) -> tuple[str, ...]:
    value = _value(node)
    specs = (v.string(node, "strategy"),) if isinstance(value, str) else v.string_list(node, "strategy")
    known = _STRATEGIES.get((specs, kind))
    if known is not None:
        return known
    result = []
    for index, spec in enumerate(specs):
        where = value[index] if isinstance(value, list) else node
        try:
            name, _ = parse_lens(spec)
        except SessionError as exc:
            raise exc.located(v.path, *v.where(where)) from None
        if name == "demote" and kind != "behaviors":
            raise v.fail(where, "lens 'demote' works only on sections of kind behaviors", "remove it or change the kind")
        result.append(spec.strip())
    if len(_STRATEGIES) >= 1024:
        _STRATEGIES.clear()
    known = _STRATEGIES[(specs, kind)] = tuple(result)
    return known


def _behaviors(v: _Validator, node: Item) -> tuple[Behavior, ...]:
    items = _value(node)
    if not isinstance(items, list):
        raise v.fail(node, f"items must be a list of behaviours, not {_type_name(items)}", "write `- {name: ..., content: ...}`")
    result = []
    seen: dict[str, Item] = {}
    for index, item in enumerate(items, start=1):
        fields = v.mapping(item, f"behaviour {index}", BEHAVIOR_KEYS)
        for required in ("name", "content"):
            if required not in fields:
                raise v.fail(item, f"behaviour {index} has no {required}", f"add `{required}: ...`")
        name = v.string(fields["name"], "behaviour name")
        if name in seen:
            raise v.fail(fields["name"], f"duplicate behaviour name {name!r}", "give each behaviour its own name")
        seen[name] = fields["name"]
        result.append(
            Behavior(
                name=name,
                kind=v.choice(fields["kind"], "behaviour kind", BEHAVIOR_KINDS) if "kind" in fields else "directive",
                activation=v.number(fields["activation"], "activation", 0, 1) if "activation" in fields else 1.0,
                content=v.string(fields["content"], "content"),
                summary=v.string(fields["summary"], "summary") if "summary" in fields else None,
                tags=v.string_list(fields["tags"], "tags") if "tags" in fields else (),
            )
        )
    return tuple(result)


# ---------------------------------------------------------------- sessions


def session_from_node(node: Node, path: str, previous: Reusable | None = None) -> Session:
    """Validate one parsed session object (the whole file, or one line of a ``.jsonl`` log).

    ``previous`` (raw section values and the ``Section`` each became, from an earlier load of the
    same file) lets a section whose raw value is the very same object, at the same index and
    position, be taken as it was: ``nodes.Reuse`` hands unchanged items over by identity.
    """
    v = _Validator(path)
    if not isinstance(node.value, dict):
        raise v.fail(node, f"a session must be a mapping, not {_type_name(node.value)}", "start the file with `tokenbox: 1`")
    fields = v.mapping(node, "the session", SESSION_KEYS)
    if "tokenbox" not in fields:
        raise v.fail(node, "missing `tokenbox` schema version", "add `tokenbox: 1` at the top")
    version = fields["tokenbox"]
    if type(version.value) is not int or version.value != SCHEMA_VERSION:
        raise v.fail(version, f"unsupported schema version {_short(version.value)}", "this tokenbox reads `tokenbox: 1`")
    if "sections" not in fields:
        raise v.fail(node, "missing `sections`", "add `sections:` with a list of sections")
    sections_node = fields["sections"]
    if not isinstance(sections_node.value, list):
        raise v.fail(sections_node, f"sections must be a list, not {_type_name(sections_node.value)}", "write `- id: ...` items")
    sections = []
    seen: dict[str, Node] = {}
    for index, item in enumerate(sections_node.value, start=1):
        found = previous.get(id(item.value)) if previous else None
        if (
            found is not None
            and found[0] is item.value
            and found[1] == index
            and found[2].line == item.line
            and found[2].col == item.col
        ):
            section = found[2]
        else:
            section = _section(v, item, index)
        if section.id in seen:
            first = seen[section.id]
            raise v.fail(item, f"duplicate section id {section.id!r} (first at line {first.line})", "give each section its own id")
        seen[section.id] = item
        sections.append(section)
    budget = BudgetSpec()
    if "budget" in fields:
        b = v.mapping(fields["budget"], "budget", BUDGET_KEYS)
        budget = BudgetSpec(
            max_ctx=v.integer(b["max_ctx"], "max_ctx", 1, MAX_COUNT) if "max_ctx" in b else None,
            reserve_out=v.integer(b["reserve_out"], "reserve_out", 0, MAX_COUNT) if "reserve_out" in b else None,
            headroom=v.number(b["headroom"], "headroom", 0, 1, high_open=True) if "headroom" in b else None,
        )
    calibration = _calibration(v, fields["calibration"]) if "calibration" in fields else None
    return Session(
        sections=tuple(sections),
        path=path,
        context_tokens=v.integer(fields["context_tokens"], "context_tokens", 0, MAX_COUNT) if "context_tokens" in fields else None,
        calibration=calibration,
        name=v.string(fields["name"], "name") if "name" in fields else None,
        model=v.string(fields["model"], "model") if "model" in fields else None,
        tokenizer=_tokenizer_name(v, fields["tokenizer"]) if "tokenizer" in fields else None,
        budget=budget,
        sensor=v.choice(fields["sensor"], "sensor", SENSORS) if "sensor" in fields else "user-input",
        trimming=v.choice(fields["trimming"], "trimming policy", TRIMMING_POLICIES) if "trimming" in fields else "tokenbox",
        meta=v.meta(fields["meta"]) if "meta" in fields else {},
        line=node.line,
        positions={key: (item.line, item.col) for key, item in fields.items()},
    )


def _calibration(v: _Validator, node: Item) -> Calibration:
    """``calibration:`` as ``tokenbox import`` writes it (the fitted scale of a real agent's estimates)."""
    c = v.mapping(node, "calibration", CALIBRATION_KEYS)
    if "scale" not in c:
        raise v.fail(node, "calibration has no `scale`", "write `scale: 1.0` (the factor on the estimate)")
    hidden = c.get("hidden")
    turns = c.get("turns")
    return Calibration(
        method=v.string(c["method"], "calibration method") if "method" in c else "",
        scale=float(v.number(c["scale"], "calibration scale", 0.01, 100)),
        hidden=None if hidden is None or _value(hidden) is None else v.integer(hidden, "calibration hidden", 0, MAX_COUNT),
        turns=tuple(v.integer(t, "calibration turn", 1, MAX_COUNT) for t in _value(turns) or ()) if turns is not None else (),
        source=v.string(c["source"], "calibration source") if "source" in c else "",
    )


# Importers register here: (detector, converter). A detector looks at the parsed document and says
# whether it is its format; the converter returns the list of turns as sessions.
DocumentImporter = tuple[Callable[[Any], bool], Callable[[Node, str], list[Session]]]
_IMPORTERS: list[DocumentImporter] = []
_LINE_IMPORTERS: list[tuple[Callable[[list[Node]], bool], Callable[[list[Node], str], list[Session]]]] = []


# Line formats whose writer may leave a torn line (a record cut short): given the first line's text, the
# text read in place of a line that does not parse (the format's reader warns about it), or None.
_TORN_LINES: list[Callable[[str], str | None]] = []


def register_torn_line_stand_in(stand_in: Callable[[str], str | None]) -> None:
    """Let a line format skip its torn lines: ``stand_in(first line)`` names what a torn line is read as."""
    _TORN_LINES.append(stand_in)


def torn_line_stand_in(first: str | None) -> str | None:
    """What a line that does not parse is read as in a log whose first line is ``first`` (``None``: an error)."""
    for stand_in in _TORN_LINES if first is not None else ():
        text = stand_in(first)  # type: ignore[arg-type]
        if text is not None:
            return text
    return None


def _tokenizer_name(v: Any, node: Item) -> str:
    """The session's ``tokenizer``: a name (an empty one is an error, not "no tokenizer")."""
    name = v.string(node, "tokenizer")
    if not name.strip():
        raise v.fail(node, "tokenizer is empty", "name one (`tokenbox tokenizers` lists them) or remove the key")
    return name


# Line formats that can be followed line by line: converter -> a factory of followers (``feed(number,
# text)`` each new complete line, ``turns()`` every turn so far), used by ``logreader.LogReader``.
_LINE_FOLLOWERS: dict[Callable[..., Any], Callable[[str], Any]] = {}


def register_line_follower(convert: Callable[[list[Node], str], list[Session]], follower: Callable[[str], Any]) -> None:
    """Let ``LogReader`` follow the line format read by ``convert`` incrementally, with ``follower(path)``."""
    _LINE_FOLLOWERS[convert] = follower


def register_importer(detect: Callable[[Any], bool], convert: Callable[[Node, str], list[Session]]) -> None:
    """Teach ``load_session`` a foreign single-document format (chosen by content)."""
    _IMPORTERS.append((detect, convert))


def register_line_importer(
    detect: Callable[[list[Node]], bool], convert: Callable[[list[Node], str], list[Session]]
) -> None:
    """Teach ``load_session`` a foreign line-per-record format (chosen by content)."""
    _LINE_IMPORTERS.append((detect, convert))


def format_of(path: str, text: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext in FORMATS:
        return FORMATS[ext]
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


# id(raw section value) -> (raw value, 1-based index, the Section it became)
Reusable = dict[int, tuple[Any, int, Section]]


def fast_turns(doc: FastDocument, path: str, previous: Reusable | None = None) -> list[Session] | None:
    """The turn of a fast-read document, or ``None`` when the positional path must load it."""
    try:
        view = doc.view()
        if any(detect(view) for detect, _ in _IMPORTERS):
            return None  # importers position their blocks: they get positioned nodes
        return [session_from_node(doc.root, path, previous)]
    except Exception:  # the positional path raises the real error
        return None


class _LogLine:
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
            session = _with_path(session, path)
        self._session = session
        return session


def _jsonl_lines(text: str, path: str) -> list[_LogLine]:
    """Parse a JSON-lines log: blank lines skipped, an unterminated last line ignored unless complete.

    Every line is parsed: following a growing log is ``logreader.LogReader``'s job.
    """
    parsed = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = _LogLine(number, line, path)
        except SessionError:
            if number == len(lines):
                break  # the last line has no newline yet: an agent is still writing it
            stand_in = torn_line_stand_in(parsed[0].text if parsed else None)
            if stand_in is None:
                raise
            entry = _LogLine(number, stand_in, path)  # a torn record of a format that skips them
        parsed.append(entry)
    return parsed


def parse_turns(text: str, path: str, fmt: str | None = None) -> list[Session]:
    """All turns in ``text`` (one for YAML/JSON, one per line for JSONL), oldest first."""
    from tokenbox.core.importers import ensure_registered

    ensure_registered()  # the foreign formats
    from tokenbox.core.importers import foreign

    fmt = fmt or format_of(path, text)
    if fmt == "jsonl":
        if is_transcript(text):
            return transcript_turns(path, text)
        lines = _parse_or_refuse(lambda: _jsonl_lines(text, path), text, path)
        if not lines:
            raise no_complete_line(path)
        views = [line.view(path) for line in lines]
        for detect, convert in _LINE_IMPORTERS:
            if _detects(detect, views, lines, path):
                return convert([line.node(path) for line in lines], path)
        refusal = foreign.sniff_lines(views, path)
        if refusal is not None:
            raise refusal
        return [line.session(path) for line in lines]
    if fmt == "json":
        doc = fast_json(text)
        if doc is not None:
            turns = fast_turns(doc, path)
            if turns is not None:
                return turns
    node = _parse_or_refuse(lambda: parse_json(text, path) if fmt == "json" else parse_yaml(text, path), text, path)
    for detect, convert in _IMPORTERS:
        if detect(node):
            return convert(node, path)
    refusal = foreign.sniff_document(node, path) or foreign.sniff_text(text, path, node)
    if refusal is not None:
        raise refusal
    return [session_from_node(node, path)]


def _parse_or_refuse(parse: Callable[[], Any], text: str, path: str) -> Any:
    """``parse()``; when it fails on another tool's recognisable text, that refusal instead of the syntax error."""
    from tokenbox.core.importers import foreign

    try:
        return parse()
    except SessionError:
        refusal = foreign.sniff_text(text, path)
        if refusal is not None:
            raise refusal from None
        raise


_SNIFF_LINES = 50


def no_complete_line(path: str) -> NotYetComplete:
    """A JSON-lines file without one complete line yet: a state to wait in (the agent is writing it)."""
    return NotYetComplete("no complete session line", "append one JSON session object per line", path, 1, 1,
                          awaiting="the first complete line")


def is_transcript(text: str) -> bool:
    """Whether a JSON-lines text is a Claude Code transcript: one of its first lines looks like one and
    none is a tokenbox session."""
    from tokenbox.core.importers.claude_code import looks_like_transcript
    from tokenbox.core.importers.gemini import is_gemini_record

    seen = 0
    found = False
    start = 0
    while seen < _SNIFF_LINES and start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        start = end + 1
        if not line.strip():
            continue
        seen += 1
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and ("tokenbox" in value or is_gemini_record(value)):
            return False  # a Gemini CLI log also carries `sessionId` on its records
        found = found or looks_like_transcript(value)
    return found


def path_argument(path: object) -> str:
    """A path given through the API; anything else is a typed error, not a raw TypeError."""
    try:
        text = os.fspath(path)  # type: ignore[arg-type]
    except TypeError:
        raise SessionError(f"a session path must be a str or os.PathLike, not {type(path).__name__}",
                           "pass the file's path") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise SessionError("the session path is empty or holds a NUL character", "pass the file's path")
    return text


def size_argument(max_bytes: object) -> None:
    """``max_bytes`` through the API: a positive whole number, else a typed error (not a 0-byte limit)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ConfigError(f"max_bytes={max_bytes!r:.40} is not a positive whole number of bytes",
                          "leave it out for the default, or pass e.g. max_bytes=64 * 1024 * 1024")


def turn_argument(turn: object) -> None:
    """``turn`` through the API: ``None`` or a whole number (1-based, negative from the newest)."""
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise SessionError(f"turn={turn!r:.40} is not a whole number", "pass e.g. turn=1, or -1 for the newest")


def load_threads(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> dict[str, Sequence[Session]]:
    """Every thread of a log (CONTRACT §7), through the package's default ``loader.Loader``."""
    from tokenbox.core.loader import DEFAULT_LOADER

    return DEFAULT_LOADER.load_threads(path, max_bytes=max_bytes)


def transcript_turns(path: str, text: str, thread: str | None = None) -> Sequence[Session]:
    """The turns of one thread of a Claude Code transcript (the main one by default)."""
    from tokenbox.core.importers import claude_code
    from tokenbox.core.truth import project_hidden

    reader = claude_code.read_transcript(path, text)
    name = thread or claude_code.default_thread(reader)
    if name is None or name not in reader.threads:
        raise claude_code.no_request_error(path)
    borrowed = None
    chosen = reader.threads[name]
    if name == claude_code.MAIN and not any(r.usage is not None for r in chosen.requests):
        borrowed = project_hidden(path, reader.session_id)
    return claude_code.thread_turns(reader, name, borrowed=borrowed)


def _detects(detect: Callable[[list[Node]], bool], views: list[Node], lines: list[_LogLine], path: str) -> bool:
    """``detect`` on the lines as read; on positioned trees if it needs a position the views lack."""
    try:
        return detect(views)
    except Unlocated:
        return detect([line.node(path) for line in lines])


def select_turn(turns: list[Session], turn: int | None, path: str) -> Session:
    """Pick turn ``turn`` (1-based; negative counts from the end; ``None`` = the newest) with its history."""
    count = len(turns)
    if turn is None:
        turn = count
    if turn == 0 or abs(turn) > count or (turn > 0 and turn > count):
        raise SessionError(f"turn {turn} is out of range: the file has {count} turn(s)", f"use --turn 1..{count} or -1..-{count}", path)
    index = turn - 1 if turn > 0 else count + turn
    chosen = turns[index]
    if chosen.source_format != "tokenbox":
        return chosen  # foreign turns carry their own context; no cache replay over earlier turns
    if count == 1 and chosen.turn == 1 and chosen.turn_count == 1 and not chosen.history:
        return chosen  # already as asked for (the same object: the engine's caches know it)
    return _with_history(chosen, TurnHistory(turns, index), index + 1, count)


def _with_path(session: Session, path: str) -> Session:
    from dataclasses import replace

    return replace(session, path=path)


def _make_with_history() -> Callable[[Session, Sequence[Session], int, int], Session]:
    """``dataclasses.replace(session, history=…, turn=…, turn_count=…)`` without ``__init__``: every field
    copied by an explicit assignment (a log's turns are re-tagged with the new count on every append)."""
    changed = {"history": "history", "turn": "turn", "turn_count": "count"}
    lines = ["def _with_history(session, history, turn, count):", "    new = _new(Session)"]
    for name in Session.__dataclass_fields__:
        lines.append(f"    _set(new, {name!r}, {changed.get(name, 'session.' + name)})")
    lines.append("    return new")
    scope: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "Session": Session}
    exec("\n".join(lines), scope)  # generated from the dataclass's own field names
    function = scope["_with_history"]
    function.__doc__ = _make_with_history.__doc__
    return function


_with_history = _make_with_history()


def load_session(
    path: str | os.PathLike[str],
    turn: int | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    thread: str | None = None,
) -> Session:
    """Load one turn of a session file (the newest by default), validated, with earlier turns as history.

    ``thread`` picks a sub-agent's thread of a log (CONTRACT §7; ``load_threads`` lists them); the
    default is the main thread. Loads go through the package's default ``loader.Loader``, which
    follows a growing file at the cost of what was appended.
    """
    from tokenbox.core.loader import DEFAULT_LOADER

    return DEFAULT_LOADER.load_session(path, turn, max_bytes=max_bytes, thread=thread)


def turns_of(text: str, path: str) -> list[Session]:
    """Every turn in ``text`` (read from ``path``), each with its history: ``load_turns`` without the read."""
    turns = parse_turns(text, path)
    return [_with_history(t, tuple(turns[:i]), i + 1, len(turns)) for i, t in enumerate(turns)]


def load_turns(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> list[Session]:
    """Every turn of a session file, each with its history, oldest first (through the package's
    default ``loader.Loader``: loading a growing log again parses only the lines appended since)."""
    from tokenbox.core.loader import DEFAULT_LOADER

    return DEFAULT_LOADER.load_turns(path, max_bytes=max_bytes)


def forget_loaded(path: str | os.PathLike[str] | None = None) -> None:
    """Drop what the default loader remembers of ``path`` (of every file by default): the next load of
    it is cold (benchmarks compare cold loads with followed ones)."""
    from tokenbox.core.loader import DEFAULT_LOADER

    DEFAULT_LOADER.forget(path)
