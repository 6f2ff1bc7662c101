"""Load and validate session files (YAML, JSON, JSONL) into ``Session`` objects.

Every problem becomes a ``SessionError`` naming the file, line and column, the problem and a remedy.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from typing import Any

from tokenbox.core import kinds
from tokenbox.core.errors import FileTooLarge, SessionError
from tokenbox.core.lensspec import parse_lens
from tokenbox.core.model import (
    BEHAVIOR_KINDS,
    KEEP_ENDS,
    SENSORS,
    TRIMMING_POLICIES,
    Behavior,
    BudgetSpec,
    Section,
    Session,
)
from tokenbox.core.nodes import Node, parse_json, parse_yaml

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
SCHEMA_VERSION = 1
SESSION_KEYS = ("tokenbox", "name", "meta", "model", "tokenizer", "budget", "sensor", "trimming", "sections")
BUDGET_KEYS = ("max_ctx", "reserve_out", "headroom")
BEHAVIOR_KEYS = ("name", "kind", "activation", "content", "summary", "tags", "meta")
ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
MAX_COUNT = 10**9
MAX_WEIGHT = 10**6

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}


# ---------------------------------------------------------------- reading bytes


def read_text(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """Read ``path`` as UTF-8 text, refusing directories, oversized and binary files before parsing."""
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
    return decode_text(data, path, partial_tail=path.lower().endswith(".jsonl"))


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


class _Validator:
    """Turns positioned nodes into model objects, failing with the node's position."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: Node, problem: str, remedy: str) -> SessionError:
        return SessionError(problem, remedy, self.path, node.line, node.col)

    def mapping(self, node: Node, what: str, known: tuple[str, ...]) -> dict[str, Node]:
        """``node``'s fields, refusing any key not in ``known`` (a typo must not change a layout)."""
        if not isinstance(node.value, dict):
            raise self.fail(node, f"{what} must be a mapping, not {_type_name(node.value)}", "write `key: value` pairs")
        for key, value in node.value.items():
            if key not in known:
                hint = _suggest(key, known)
                line, col = (node.keys or {}).get(key, (value.line, value.col))
                raise SessionError(
                    f"unknown key {key!r} in {what}",
                    (f"did you mean {hint!r}? " if hint else "") + f"known keys: {', '.join(known)}" + ("; free-form data goes under meta" if "meta" in known else ""),
                    self.path,
                    line,
                    col,
                )
        return node.value

    def string(self, node: Node, what: str) -> str:
        if not isinstance(node.value, str):
            raise self.fail(node, f"{what} must be a string, not {_type_name(node.value)}", "quote the value")
        return node.value

    def integer(self, node: Node, what: str, low: int, high: int) -> int:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and low <= value <= high:
                return int(value)
            got = _short(value) if isinstance(value, float) else _type_name(value)
            raise self.fail(node, f"{what} must be a whole number, not {got}", f"use a number from {low} to {high}")
        if not low <= value <= high:
            raise self.fail(node, f"{what} is {_short(value)}, out of range", f"use a number from {low} to {high}")
        return value

    def number(self, node: Node, what: str, low: float, high: float, *, high_open: bool = False) -> float | int:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(node, f"{what} must be a number, not {_type_name(value)}", f"use a number from {low} to {high}")
        if value < low or value > high or (high_open and value >= high):
            bound = f"at least {low} and below {high}" if high_open else f"from {low} to {high}"
            raise self.fail(node, f"{what} is {_short(value)}, out of range", f"use a number {bound}")
        return value

    def choice(self, node: Node, what: str, choices: tuple[str, ...]) -> str:
        value = self.string(node, what)
        if value not in choices:
            raise self.fail(node, f"unknown {what} {value!r}", f"use one of: {', '.join(choices)}")
        return value

    def string_list(self, node: Node, what: str) -> tuple[str, ...]:
        if not isinstance(node.value, list):
            raise self.fail(node, f"{what} must be a list of strings, not {_type_name(node.value)}", "write `[a, b]`")
        return tuple(self.string(item, f"each item of {what}") for item in node.value)

    def meta(self, node: Node) -> dict[str, Any]:
        if not isinstance(node.value, dict):
            raise self.fail(node, f"meta must be a mapping, not {_type_name(node.value)}", "write `meta: {key: value}`")
        return node.plain()


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
            attrs[key] = None if item.value is None else v.string(item, key)
        elif key == "memory":
            attrs[key] = v.string_list(item, "memory")
        elif key == "budget":
            attrs[key] = v.integer(item, "behaviors budget", 0, MAX_COUNT)
        elif key == "items":
            attrs[key] = _behaviors(v, item)
        elif key == "meta":
            attrs[key] = v.meta(item)
    if kind in ("text", "user", "logs", "mandates") and "text" not in fields:
        raise v.fail(node, f"section {sid!r} (kind {kind}) has no text", "add `text: ...`; an empty string is allowed")
    return Section(**attrs)


def _strategy(v: _Validator, node: Node, kind: str) -> tuple[str, ...]:
    specs = (v.string(node, "strategy"),) if isinstance(node.value, str) else v.string_list(node, "strategy")
    result = []
    for index, spec in enumerate(specs):
        where = node.value[index] if isinstance(node.value, list) else node
        try:
            name, _ = parse_lens(spec)
        except SessionError as exc:
            raise exc.located(v.path, where.line, where.col) from None
        if name == "demote" and kind != "behaviors":
            raise v.fail(where, "lens 'demote' works only on sections of kind behaviors", "remove it or change the kind")
        result.append(spec.strip())
    return tuple(result)


def _behaviors(v: _Validator, node: Node) -> tuple[Behavior, ...]:
    if not isinstance(node.value, list):
        raise v.fail(node, f"items must be a list of behaviours, not {_type_name(node.value)}", "write `- {name: ..., content: ...}`")
    result = []
    seen: dict[str, Node] = {}
    for index, item in enumerate(node.value, start=1):
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


def session_from_node(node: Node, path: str) -> Session:
    """Validate one parsed session object (the whole file, or one line of a ``.jsonl`` log)."""
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
    return Session(
        sections=tuple(sections),
        path=path,
        name=v.string(fields["name"], "name") if "name" in fields else None,
        model=v.string(fields["model"], "model") if "model" in fields else None,
        tokenizer=v.string(fields["tokenizer"], "tokenizer") if "tokenizer" in fields else None,
        budget=budget,
        sensor=v.choice(fields["sensor"], "sensor", SENSORS) if "sensor" in fields else "user-input",
        trimming=v.choice(fields["trimming"], "trimming policy", TRIMMING_POLICIES) if "trimming" in fields else "tokenbox",
        meta=v.meta(fields["meta"]) if "meta" in fields else {},
        line=node.line,
        positions={key: (item.line, item.col) for key, item in fields.items()},
    )


# Importers register here: (detector, converter). A detector looks at the parsed document and says
# whether it is its format; the converter returns the list of turns as sessions.
DocumentImporter = tuple[Callable[[Any], bool], Callable[[Node, str], list[Session]]]
_IMPORTERS: list[DocumentImporter] = []
_LINE_IMPORTERS: list[tuple[Callable[[list[Node]], bool], Callable[[list[Node], str], list[Session]]]] = []


def register_importer(detect: Callable[[Any], bool], convert: Callable[[Node, str], list[Session]]) -> None:
    """Teach ``load_session`` a foreign single-document format (chosen by content)."""
    _IMPORTERS.append((detect, convert))


def register_line_importer(
    detect: Callable[[list[Node]], bool], convert: Callable[[list[Node], str], list[Session]]
) -> None:
    """Teach ``load_session`` a foreign line-per-record format (chosen by content)."""
    _LINE_IMPORTERS.append((detect, convert))


def _format_of(path: str, text: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext in FORMATS:
        return FORMATS[ext]
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" in stripped.rstrip():
        return "jsonl"
    if stripped.startswith(("{", "[")):
        return "json"
    return "yaml"


def _jsonl_nodes(text: str, path: str) -> list[Node]:
    """Parse a JSON-lines log: blank lines skipped, an unterminated last line ignored unless complete."""
    nodes = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last_unterminated = number == len(lines)
        try:
            nodes.append(parse_json(line, path, number, 1, unit="line"))
        except SessionError:
            if last_unterminated:
                break  # an agent is still writing this line
            raise
    return nodes


def parse_turns(text: str, path: str, fmt: str | None = None) -> list[Session]:
    """All turns in ``text`` (one for YAML/JSON, one per line for JSONL), oldest first."""
    import tokenbox.core.importers  # noqa: F401  (registers the foreign formats)

    fmt = fmt or _format_of(path, text)
    if fmt == "jsonl":
        nodes = _jsonl_nodes(text, path)
        if not nodes:
            raise SessionError("no complete session line", "append one JSON session object per line", path, 1, 1)
        for detect, convert in _LINE_IMPORTERS:
            if detect(nodes):
                return convert(nodes, path)
        return [session_from_node(node, path) for node in nodes]
    node = parse_json(text, path) if fmt == "json" else parse_yaml(text, path)
    for detect, convert in _IMPORTERS:
        if detect(node):
            return convert(node, path)
    return [session_from_node(node, path)]


def select_turn(turns: list[Session], turn: int | None, path: str) -> Session:
    """Pick turn ``turn`` (1-based; negative counts from the end; ``None`` = the newest) with its history."""
    count = len(turns)
    if turn is None:
        turn = count
    if turn == 0 or abs(turn) > count or (turn > 0 and turn > count):
        raise SessionError(f"turn {turn} is out of range: the file has {count} turn(s)", f"use --turn 1..{count} or -1..-{count}", path)
    index = turn - 1 if turn > 0 else count + turn
    chosen = turns[index]
    return _with_history(chosen, tuple(turns[:index]), index + 1, count)


def _with_history(session: Session, history: tuple[Session, ...], turn: int, count: int) -> Session:
    from dataclasses import replace

    return replace(session, history=history, turn=turn, turn_count=count)


def load_session(
    path: str | os.PathLike[str],
    turn: int | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Session:
    """Load one turn of a session file (the newest by default), validated, with earlier turns as history."""
    path = os.fspath(path)
    text = read_text(path, max_bytes)
    return select_turn(parse_turns(text, path), turn, path)


def load_turns(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> list[Session]:
    """Every turn of a session file, each with its history, oldest first."""
    path = os.fspath(path)
    turns = parse_turns(read_text(path, max_bytes), path)
    return [_with_history(t, tuple(turns[:i]), i + 1, len(turns)) for i, t in enumerate(turns)]
