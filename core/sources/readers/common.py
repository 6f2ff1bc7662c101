"""What every importer shares: positioned-node helpers, a neutral conversation model and the layout rules.

An importer reads its format into a ``Conversation`` (system blocks, tool definitions, messages made
of content blocks); ``build_session`` turns that into a tokenbox ``Session`` with the same layout rules
for every format:

* tool definitions and system blocks: critical prefix sections (``shrink: 0``), one section per tool;
* earlier messages: history sections whose ``priority`` is the message's position (older = lower =
  trimmed first); tool results carry a head/tail-lines lens pipeline and thinking a ``drop`` lens, and
  the session uses the ``progressive`` policy, so every lens runs before any whole block is cut;
* the latest input (the trailing run of user/tool messages): critical.

Each section's ``meta`` says where it came from: ``category`` (see ``CATEGORIES``), ``role``, ``block``
(the block type as written), ``part`` (its role: ``TEXT``, ``CALL``, ``RESULT``, ``THINKING``, ``MEDIA``,
``OTHER``), ``message`` (index in the file's message list), ``tool``, ``tool_use_id``,
``cache_control`` and ``cache_breakpoint``, and a ``path``/``line`` locating it in the source file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping

from tokenbox.core.model.errors import SessionError, TokenizerError
from tokenbox.core.model.llms import Window, keeps_prior_thinking, lookup_model, resolve_window
from tokenbox.core.model.names import ESTIMATE, MAIN_THREAD
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.records import dataclass, field, replace
from tokenbox.core.model.session import BudgetSpec, RecordedUsage, Section, Session, Trimming

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from tokenbox.core.parse.nodes import Node

# id(message) -> (message, latest?, thinking stripped?, its sections, their cache-mark ids): the variant
# last built, one per message (a message's older variants — the latest input it was, the thinking it
# kept before a newer prompt — are rebuilt if a past turn asks again, never piled up)
# (and, under ``_BUILT``, what the last conversations' messages gave: ``_messages_built``)
SectionCache = dict[int | str, object]

# Section categories (``section.meta["category"]``): what the file does not hold (``inferred``), the
# prefix (tools and system; Anthropic puts tools first, OpenAI the system messages), then history, tool
# results, unknown blocks, the latest input, and a request's own reply (0 context tokens).
CATEGORIES = ("inferred", "tool", "system", "history", "tool_result", "other", "latest", "reply")

# Block roles in the layout.
TEXT, CALL, RESULT, THINKING, MEDIA, OTHER = "text", "call", "result", "thinking", "media", "other"

# Lens pipelines: tool results shrink in two steps before anything is truncated or dropped.
RESULT_LINES = (40, 10)
# Output of tools whose name contains one of these keeps its end (errors and summaries come last).
TAIL_TOOL_WORDS = ("bash", "shell", "terminal", "exec", "command", "test", "lint", "build")
HEURISTIC = "heuristic"
# Formats whose provider strips earlier turns' thinking blocks from the context: Anthropic's API, and
# OpenAI's for reasoning items before the last user input (a recorded Responses request with 1 920
# reasoning tokens before a new user message counted 314 in all; inside a tool loop they are counted).
THINKING_STRIPPED = ("claude-code", "anthropic-messages", "openai-responses", "codex-rollout")
ANTHROPIC_FORMATS = ("claude-code", "anthropic-messages")  # newer Claude models keep it (``llms.keeps_prior_thinking``)
TRIMMING = Trimming.PROGRESSIVE.value
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_ID_MAX = 80
_ID_PIECES: dict[str, str] = {}  # a part of an id as made safe (``m05``, ``result``, tool names: few distinct ones)
_ID_PIECES_KEPT = 4096


def _id_piece(part: str) -> str:
    """``part`` made safe for a section id (each distinct part made once: a transcript repeats them)."""
    piece = _ID_PIECES.get(part)
    if piece is None:
        piece = _ID_UNSAFE.sub("_", part).strip("_.-")
        if len(_ID_PIECES) >= _ID_PIECES_KEPT:
            _ID_PIECES.clear()
        _ID_PIECES[part] = piece
    return piece


# ---------------------------------------------------------------- positioned nodes


def one_hour_writes(usage: dict[str, Any], writes: int) -> int:
    """Of an Anthropic usage's ``writes`` cache-creation tokens, those written for an hour
    (``cache_creation.ephemeral_1h_input_tokens``; 0 when absent or malformed, never more than ``writes``)."""
    detail = usage.get("cache_creation")
    hour = detail.get("ephemeral_1h_input_tokens") if isinstance(detail, dict) else None
    if isinstance(hour, bool) or not isinstance(hour, int) or hour < 0:
        return 0
    return min(hour, writes)


def fail(node: Node | None, path: str, problem: str, remedy: str) -> SessionError:
    """A ``SessionError`` at ``node``'s position."""
    if node is None:
        return SessionError(problem, remedy, path)
    return SessionError(problem, remedy, path, node.line, node.col)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def as_dict(node: Node, path: str, what: str) -> dict[str, Node]:
    if not isinstance(node.value, dict):
        raise fail(node, path, f"{what} must be an object, not {type_name(node.value)}", "check the file's structure")
    return node.value


def as_list(node: Node, path: str, what: str) -> list[Node]:
    if not isinstance(node.value, list):
        raise fail(node, path, f"{what} must be a list, not {type_name(node.value)}", "check the file's structure")
    return node.value


def as_str(node: Node, path: str, what: str) -> str:
    if not isinstance(node.value, str):
        raise fail(node, path, f"{what} must be a string, not {type_name(node.value)}", "check the file's structure")
    return node.value


def opt_str(fields: dict[str, Node], key: str) -> str | None:
    """``fields[key]`` when it is a string, else ``None`` (for optional, informative fields)."""
    node = fields.get(key)
    return node.value if node is not None and isinstance(node.value, str) else None


def opt_int(fields: dict[str, Node], key: str) -> int | None:
    node = fields.get(key)
    if node is None or isinstance(node.value, bool) or not isinstance(node.value, int):
        return None
    return node.value


# ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``'s encoder, made once: ``json.dumps`` given any
# option makes a new ``JSONEncoder`` for each value (a tool call's non-string arguments, a long session's thousands)
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def compact(value: Any) -> str:
    """Compact JSON in the file's own key order (what was sent, deterministically)."""
    return _COMPACT(value)


def call_text(btype: str, name: str, arguments: Any) -> str:
    """A tool call as text: a ``[tool_use NAME]`` line, then each argument as ``key: value`` with string
    values as written (a command reads as the command), other values as compact JSON (``HeldInput`` reads
    an input back from this text)."""
    lines = [f"[{btype} {name}]"]
    if isinstance(arguments, dict):
        for key, item in arguments.items():
            lines.append(f"{key}: {item if isinstance(item, str) else compact(item)}")
    else:
        lines.append(compact(arguments))
    return "\n".join(lines)


class HeldInput(Mapping):  # (str → the values: typing is not imported at run time here)
    """A tool call's input object as the Claude Code transcript reader keeps it, with the argument its
    labels show (``argument``, worked out when the call was read).

    A followed session that never compacts keeps every call it read, and its call's text (``call_text``) already
    holds the input: each key and each string value as written, each other value as compact JSON. The
    input is kept as that text (the block's own string, shared) and the lengths of its keys and values
    (``spans``: a value's negative when it is JSON). It reads as the dict it stands for (a ``Mapping``,
    equal to it; ``value()`` makes the dict, keys in order), made again only when read: a pack, an export,
    a caller of the API; never to label or link a part. ``hold_input`` makes one.
    """

    __slots__ = ("argument", "spans", "text")

    def __init__(self, text: str, spans: tuple[int, ...], argument: str) -> None:
        self.text, self.spans, self.argument = text, spans, argument

    def value(self) -> dict[str, Any]:
        """The input as the line held it (a new dict at each call)."""
        text, out = self.text, {}
        place = text.find("\n") + 1  # after the header line (no line at all: an empty input)
        for index in range(0, len(self.spans), 2):
            end = place + self.spans[index]
            key = text[place:end]
            length = self.spans[index + 1]
            place = end + 2 + abs(length)
            item = text[end + 2:place]
            out[key] = item if length >= 0 else json.loads(item)
            place += 1
        return out

    def __getitem__(self, key: str) -> Any:
        return self.value()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value())

    def __len__(self) -> int:
        return len(self.spans) // 2

    def __eq__(self, other: object) -> bool:
        # equal to the input it stands for, as a section's meta read back from an export holds it
        return self.value() == (other.value() if isinstance(other, HeldInput) else other)

    __hash__ = None  # type: ignore[assignment]  # as the dict it stands for

    def __repr__(self) -> str:
        return f"HeldInput({self.value()!r})"


def hold_input(value: Any, text: str, header: str, argument: str) -> HeldInput | None:
    """``value`` (a call's input) held by its call's ``text`` (``call_text``, first line ``header``), or
    ``None`` when it is not an object or the text is laid out otherwise (it is then kept as it is)."""
    if not isinstance(value, dict):
        return None
    spans: list[int] = []
    size = len(header)
    for key, item in value.items():
        spans.append(len(key))
        spans.append(len(item) if isinstance(item, str) else -len(compact(item)))
        size += len(key) + 2 + abs(spans[-1]) + 1  # "\n" "key" ": " "value"
    if size != len(text) or not text.startswith(header):
        return None
    return HeldInput(text, tuple(spans), argument)


# the key tuples of sections' metas, each with its keys' places: one per set of keys in their order (a block
# type, a tool call or result, a cache mark…), shared by every section whose meta has them. Bounded: a reader
# whose blocks carried keys of their own past it makes a section's places for that section alone.
_META_SHAPES: dict[tuple[str, ...], dict[str, int]] = {}
_META_SHAPES_MAX = 4096


class SectionMeta(Mapping):  # (str → the values: typing is not imported at run time here)
    """A section's ``meta`` as ``build_session`` keeps it for a message's block: its values, and the places
    of its keys in a dict shared by every section whose meta has the same keys in the same order. A followed
    Claude Code transcript keeps its blocks' metas so too, once complete (``claude_code._extend``).

    A followed session that never compacts keeps every message's sections, each with a meta of about a
    dozen keys: as a dict, ≈470 bytes of hash table a section, the same keys over and over. It reads as the
    dict it was made from (a read-only ``Mapping``, equal to it, keys in order); ``dict(meta)`` makes that
    dict. ``section_meta`` makes one.
    """

    __slots__ = ("_places", "_values")

    def __init__(self, places: dict[str, int], values: tuple[Any, ...]) -> None:
        self._places, self._values = places, values

    def __getitem__(self, key: str) -> Any:
        return self._values[self._places[key]]

    def get(self, key: str, default: Any = None) -> Any:
        # (``Mapping.get`` goes through a raised KeyError for each key a meta lacks: the screen asks often)
        place = self._places.get(key)
        return default if place is None else self._values[place]

    def __contains__(self, key: object) -> bool:
        return key in self._places

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SectionMeta):
            return self._values == other._values if self._places is other._places else dict(self) == dict(other)
        return dict(self) == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as the dict it stands for

    def __repr__(self) -> str:
        return f"SectionMeta({dict(self)!r})"


def section_meta(meta: dict[str, Any]) -> SectionMeta:
    """``meta`` kept as a ``SectionMeta`` (its keys' places shared with every meta of the same keys)."""
    keys = tuple(meta)
    places = _META_SHAPES.get(keys)
    if places is None:
        places = {key: place for place, key in enumerate(keys)}
        if len(_META_SHAPES) < _META_SHAPES_MAX:  # mutation: equivalent (the bound of a cache of places: the same metas)
            places = _META_SHAPES.setdefault(keys, places)
    return SectionMeta(places, tuple(meta.values()))


def tool_input(meta: dict[str, Any]) -> Any:
    """A block's or section's ``tool_input`` as its call gave it (``None``: not a call with an input)."""
    value = meta.get("tool_input")
    return value.value() if isinstance(value, HeldInput) else value


def is_mapping_with(node: Any, *keys: str) -> bool:
    from tokenbox.core.parse.nodes import Node  # start-up: the document parser only for a document (not the status line)

    value = node.value if isinstance(node, Node) else node
    return isinstance(value, dict) and all(k in value for k in keys)


# ---------------------------------------------------------------- the neutral model


@dataclass(slots=True)  # a transcript holds one per content block: no attribute dict each
class Block:
    """One content block, already rendered to the text that stands for it."""

    type: str  # the block type as written (text, tool_use, tool_result, image, …, or an unknown one)
    role: str  # layout role: TEXT | CALL | RESULT | THINKING | MEDIA | OTHER
    text: str
    tool: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    cache_control: Any = None
    line: int = 0
    col: int = 0


@dataclass(slots=True)
class Message:
    """One provider message (consecutive transcript lines of one role are merged into one)."""

    role: str
    blocks: list[Block]
    index: int
    meta: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    col: int = 0


@dataclass
class ToolDef:
    """One tool definition."""

    name: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    cache_control: Any = None
    line: int = 0
    col: int = 0


@dataclass
class Conversation:
    """A request (or one request of a transcript) in provider-neutral form."""

    source_format: str
    system: list[Block] = field(default_factory=list)
    tools: list[ToolDef] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    tools_first: bool = False  # Anthropic builds its cache prefix as tools, system, messages
    name: str | None = None
    model: str | None = None
    tokenizer: str | None = None
    reserve_out: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    recorded: RecordedUsage | None = None
    line: int = 1
    # the request's context window (CONTRACT §11); ``None``: resolved from ``model`` by the model table
    window: Window | None = None


def link_tool_names(messages: list[Message], names: dict[str, str] | None = None,
                    arguments: dict[str, str] | None = None) -> None:
    """Give each tool result the name of the call it answers (matched by ``tool_use_id``). ``names`` and
    ``arguments`` (each call's, by id) carry the calls met before ``messages`` and are added to: a reader
    that links a growing conversation a request at a time gives the ones of its earlier calls."""
    names = {} if names is None else names
    arguments = {} if arguments is None else arguments
    for message in messages:
        for block in message.blocks:
            call_id = block.meta.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            if block.role == CALL and block.tool:
                names[call_id] = block.tool
                arguments[call_id] = input_argument(block.tool, block.meta)
            elif block.role == RESULT and call_id in names:
                if block.tool is None:
                    block.tool = names[call_id]
                    block.meta["tool"] = block.tool
                if arguments.get(call_id):
                    block.meta["call_argument"] = arguments[call_id]


# ---------------------------------------------------------------- sections


class IdMaker:
    """Section ids matching ``[A-Za-z0-9_.-]+``, unique within a session (``-2``, ``-3`` on repeats)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        # (base, cache) -> the number the last probe for it ended on: every smaller one is taken already
        # (``used`` only grows), so a base repeated n times costs n probes in all, not n² / 2
        self._next: dict[tuple[str, bool], int] = {}

    def make(self, *parts: str | None, cache: bool = False) -> str:
        pieces = [_id_piece(p) for p in parts if p]
        base = ".".join(p for p in pieces if p)[:_ID_MAX] or "section"
        number = self._next.get((base, cache), 1)
        candidate = base if number == 1 else f"{base}-{number}"
        while (candidate + ".cache" if cache else candidate) in self.used:
            number = max(number + 1, 2)
            candidate = f"{base}-{number}"
        self._next[(base, cache)] = number
        result = candidate + ".cache" if cache else candidate
        self.used.add(result)
        return result


def result_lenses(block: Block) -> tuple[tuple[str, ...], str]:
    """The lens pipeline and kept end of a tool result: command output keeps its tail, the rest its head."""
    name = (block.tool or "").lower()
    tail = block.meta.get("is_error") is True or any(word in name for word in TAIL_TOOL_WORDS)
    return (_TAIL_LENSES, "tail") if tail else (_HEAD_LENSES, "head")


# the two pipelines, made once (every result section of a long session shares one)
_TAIL_LENSES = tuple(f"tail_lines:{n}" for n in RESULT_LINES)
_HEAD_LENSES = tuple(f"head_lines:{n}" for n in RESULT_LINES)


def _latest_start(messages: list[Message]) -> int:
    """Index of the first message of the latest input: the last run of non-assistant messages."""
    last = len(messages) - 1
    while last >= 0 and messages[last].role == "assistant":  # from the end: a chain has thousands
        last -= 1
    if last < 0:
        return len(messages)
    start = last
    while start > 0 and messages[start - 1].role != "assistant":
        start -= 1
    return start


def _origin(conv: Conversation, extra: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"source": conv.source_format}
    meta.update(extra)
    return meta


def _with_cache(meta: dict[str, Any], cache_control: Any) -> dict[str, Any]:
    if cache_control is not None:
        meta["cache_control"] = cache_control
        meta["cache_breakpoint"] = True
    return meta


def build_session(conv: Conversation, path: str, cache: SectionCache | None = None) -> Session:
    """The tokenbox session for one request, with the layout rules of this module.

    ``cache`` lets the turns of one transcript share the sections of the messages they have in common
    (keyed by the ``Message`` object, which the caller keeps alive and never changes).
    """
    ids = IdMaker()
    prefix: list[Section] = []
    tools: list[Section] = []
    for block in conv.system:
        cached = block.cache_control is not None
        suffix = None if len(conv.system) == 1 else str(len(prefix) + 1)
        meta = _with_cache(
            _origin(conv, {"category": "system", "role": "system", "block": block.type, **block.meta}), block.cache_control
        )
        prefix.append(
            Section(
                id=ids.make("system", suffix, cache=cached),
                kind="text",
                priority=0,
                shrink=0,
                text=block.text,
                meta=meta,
                line=block.line,
                col=block.col,
            )
        )
    for tool in conv.tools:
        meta = _with_cache(
            _origin(conv, {"category": "tool", "role": "tool_definition", "tool": tool.name, **tool.meta}), tool.cache_control
        )
        tools.append(
            Section(
                id=ids.make("tool", tool.name, cache=tool.cache_control is not None),
                kind="text",
                priority=0,
                shrink=0,
                text=tool.text,
                meta=meta,
                line=tool.line,
                col=tool.col,
            )
        )
    sections = tools + prefix if conv.tools_first else prefix + tools
    breakpoints = [s.id for s in sections if s.meta.get("cache_breakpoint")]
    cache = {} if cache is None else cache
    latest = _latest_start(conv.messages)
    strip_before = _thinking_cut(conv) if _strips_thinking(conv) else 0
    built = _messages_built(conv, latest, strip_before, cache)
    sections.extend(built.sections)
    breakpoints.extend(built.breakpoints)
    stripped = built.stripped[-1]
    meta = dict(conv.meta)
    # what a block could not measure (an image of unknown size): one warning each, in order
    notes = tuple(dict.fromkeys(note for _, note in built.notes))
    if stripped:
        meta["stripped_thinking"] = stripped
    if breakpoints:
        meta["cache_breakpoints"] = breakpoints
    latest_results = any(b.role == RESULT for m in conv.messages[latest:] for b in m.blocks)
    window = conv.window if conv.window is not None else resolve_window(conv.model)
    return Session(
        sections=tuple(sections),
        path=path,
        name=conv.name,
        model=conv.model,
        tokenizer=conv.tokenizer,
        budget=BudgetSpec(max_ctx=window.tokens, reserve_out=conv.reserve_out),
        window=window,
        sensor="tool-output" if latest_results else "user-input",
        trimming=TRIMMING,
        meta=meta,
        line=conv.line,
        recorded=conv.recorded,
        source_format=conv.source_format,
        warnings=notes,
    )


@dataclass(slots=True)
class _Built:
    """The sections of a conversation's messages, with what was added up after each message."""

    messages: list[Message]
    latest: int  # where the latest input starts
    strip_before: int  # assistant messages before this one had their thinking stripped
    sections: list[Section] = field(default_factory=list)
    breakpoints: list[str] = field(default_factory=list)
    # after the first i messages: their sections, their breakpoints, the thinking blocks stripped
    ends: list[int] = field(default_factory=lambda: [0])
    marks: list[int] = field(default_factory=lambda: [0])
    stripped: list[int] = field(default_factory=lambda: [0])
    notes: list[tuple[int, str]] = field(default_factory=list)  # (message, note) of the blocks with a note

    def cut(self, keep: int) -> None:
        """Keep what the first ``keep`` messages gave."""
        del self.sections[self.ends[keep]:], self.breakpoints[self.marks[keep]:]
        del self.ends[keep + 1:], self.marks[keep + 1:], self.stripped[keep + 1:]
        while self.notes and self.notes[-1][0] >= keep:
            self.notes.pop()


_BUILT = "built"  # the key, in a ``SectionCache``, of the last conversations built (by their first message)
_BUILT_KEPT = 8  # a transcript's threads each have one (the main thread, sub-agents, a compacted context)


def _messages_built(conv: Conversation, latest: int, strip_before: int, cache: dict) -> _Built:
    """Every message's sections (``cache``'s, built once per message and variant), added up in order.

    The next request of a conversation holds the messages of the one before: what they gave is kept
    (in ``cache``, by the conversation's first message) up to where the messages differ, its latest
    input starts, or the thinking cut moved; only the messages after that are gone through again.
    """
    messages = conv.messages
    built_before: dict[int, _Built] = cache.setdefault(_BUILT, {})
    key = id(messages[0]) if messages else 0
    built = built_before.pop(key, None)
    keep = 0
    if built is not None and built.messages and messages and built.messages[0] is messages[0]:
        keep = min(shared_prefix(built.messages, messages), built.latest, latest)
        if built.strip_before != strip_before:
            keep = min(keep, built.strip_before, strip_before)
        built.cut(keep)
    else:
        built = _Built(messages, latest, strip_before)
    for position in range(keep, len(messages)):
        message = messages[position]
        strip = position < strip_before and message.role == "assistant"
        is_latest = position >= latest
        entry = cache.get(id(message))
        if entry is None or entry[0] is not message or entry[1] is not is_latest or entry[2] is not strip:
            if entry is not None and entry[0] is message and entry[1] is is_latest and _nothing_to_strip(message):
                # stripped or not, the same blocks: the same sections, not equal new ones (the engine keeps what it
                # made for a section by the section itself: an equal new one left that behind for good)
                entry = cache[id(message)] = (message, is_latest, strip, entry[3], entry[4])
            else:
                entry = cache[id(message)] = (message, is_latest, strip, *_message_sections(conv, message, is_latest, strip))
        built.sections.extend(entry[3])
        built.breakpoints.extend(entry[4])
        built.ends.append(len(built.sections))
        built.marks.append(len(built.breakpoints))
        thinking = sum(1 for b in message.blocks if b.role == THINKING) if strip else 0
        built.stripped.append(built.stripped[-1] + thinking)
        built.notes.extend((position, b.meta["note"]) for b in message.blocks if "note" in b.meta)
    built.messages, built.latest, built.strip_before = list(messages), latest, strip_before
    if len(built_before) >= _BUILT_KEPT:
        built_before.pop(next(iter(built_before)))
    built_before[key] = built
    return built


def _nothing_to_strip(message: Message) -> bool:
    """Whether stripping ``message``'s thinking leaves its blocks as they are (it has none)."""
    return all(block.role != THINKING for block in message.blocks)


def forget_messages(cache: SectionCache, messages: list[Message]) -> None:
    """Drop from ``cache`` the sections of ``messages`` and the conversations built from them (a reader that
    no longer keeps them: the entries would keep them alive)."""
    gone = {id(message): message for message in messages}
    for key, message in gone.items():  # by the messages, not the whole cache: a follower drops one or two
        entry = cache.get(key)
        if entry is not None and entry[0] is message:  # type: ignore[index]
            del cache[key]
    built_before = cache.get(_BUILT)
    if isinstance(built_before, dict):
        for key in [key for key, built in built_before.items() if built.messages and id(built.messages[0]) in gone]:
            del built_before[key]


def forget_changed(cache: SectionCache, messages: list[Message], position: int) -> None:
    """Drop from ``cache`` the sections of ``messages``, whose blocks changed in place after they were built
    (a reader that sizes a block once a later line says its size), and from every conversation built, what
    it holds from ``position`` on (the place of the first of them)."""
    for message in messages:
        entry = cache.get(id(message))
        if isinstance(entry, tuple) and entry[0] is message:
            del cache[id(message)]
    built_before = cache.get(_BUILT)
    if isinstance(built_before, dict):
        for built in built_before.values():
            del built.messages[position:]


def _strips_thinking(conv: Conversation) -> bool:
    """Whether the provider drops the thinking of assistant messages before the newest user text: OpenAI's
    reasoning items and older Claude models' thinking; newer Claude models keep it (``keeps_prior_thinking``)."""
    if conv.source_format not in THINKING_STRIPPED:
        return False
    if conv.source_format in ANTHROPIC_FORMATS:
        model = conv.model or conv.meta.get("model")
        return not keeps_prior_thinking(model if isinstance(model, str) else None)
    return True


def _thinking_cut(conv: Conversation) -> int:
    """Index of the last user message with content other than tool results: Anthropic's API strips the
    thinking blocks of assistant messages before it (they do not count toward the context)."""
    for position in range(len(conv.messages) - 1, -1, -1):
        message = conv.messages[position]
        if message.role == "user" and any(b.role != RESULT for b in message.blocks):
            return position
    return 0


def _message_sections(
    conv: Conversation, message: Message, is_latest: bool, strip_thinking: bool = False
) -> tuple[tuple[Section, ...], tuple[str, ...]]:
    """A message's sections and the ids of those with a cache mark. Ids start with ``m<index>.``, so
    they are unique across messages and need deduplicating only within one message. Tuples: a section
    cache keeps them for every message of a session followed (most have no cache mark: the empty tuple,
    not an empty list each)."""
    ids = IdMaker()
    blocks = [b for b in message.blocks if not (strip_thinking and b.role == THINKING)]
    sections = tuple([_block_section(conv, ids, message, block, is_latest) for block in blocks])
    # a section has a cache mark when its block has (``_with_cache``): asked of the block, not of the section's
    # meta (a transcript's ``SectionMeta``: a Python call for each section)
    return sections, tuple([s.id for s, b in zip(sections, blocks, strict=True) if b.cache_control is not None])


def reply_sections(conv: Conversation, blocks: list[Block], index: int) -> list[Section]:
    """A request's own reply, shown with its turn: it is output, not part of the request's context, so
    each part counts 0 context tokens (it becomes context on the next request)."""
    ids = IdMaker()
    message = Message("assistant", blocks, index)
    out = []
    for block in blocks:
        section = _block_section(conv, ids, message, block, False)
        meta = dict(section.meta)
        meta["category"] = "reply"
        meta["label"] = "reply " + meta.get("label", "")
        out.append(
            # ``m<index>`` becomes ``reply``; the rest of the id (unique within the message) is kept, and
            # may be empty when a block has neither a type nor a tool name
            Section(id="reply" + section.id.removeprefix(f"m{index:02d}"), kind="text", priority=0, shrink=0, tokens=0,
                    text=section.text, meta=section_meta(meta), line=section.line, col=section.col)
        )
    return out


_ROLE_WORDS = {CALL: "call", RESULT: "result", THINKING: "thinking"}
_LABEL_CHARS = 60


def _block_section(conv: Conversation, ids: IdMaker, message: Message, block: Block, is_latest: bool) -> Section:
    if is_latest:
        category = "latest"
    elif block.role == RESULT:
        category = "tool_result"
    elif block.role == OTHER:
        category = "other"
    else:
        category = "history"
    # _origin's dict, made at once
    meta: dict[str, Any] = {"source": conv.source_format, "category": category, "role": message.role, "block": block.type,
                            "message": message.index}
    if block.tool:
        meta["tool"] = block.tool
        if block.tool.startswith("mcp__") and block.tool.count("__") >= 2:
            meta["mcp_server"] = block.tool.split("__")[1]
    own = block.meta
    # (a followed transcript's block keeps a ``SectionMeta``: its keys and values read at once, not a Python
    # call per key as ``dict.update`` reads a ``Mapping``)
    meta.update(zip(own._places, own._values, strict=True) if type(own) is SectionMeta else own)
    meta.update(message.meta)
    meta.pop("estimate", None)
    meta["part"] = block.role  # what the block is in the request: text, call, result, thinking, media, other
    meta["label"] = block_label(message.role, block)
    _with_cache(meta, block.cache_control)
    kept = section_meta(meta)  # (kept with every message's sections for as long as a session is followed)
    if block.role in (TEXT,):
        word = message.role
    elif block.role == MEDIA:
        word = block.type
    else:
        word = _ROLE_WORDS.get(block.role, block.type)
    tool = block.tool if block.role in (CALL, RESULT) else None
    sid = ids.make(f"m{message.index:02d}", word, tool, cache=block.cache_control is not None)
    priority = message.index + 1
    fixed = block.meta.get("tokens") if block.role in (MEDIA, THINKING) else None
    if isinstance(fixed, int):
        # an image costs what the provider's size rule says, not what its placeholder text would; encrypted
        # reasoning what its request recorded (or its length implies), not its summary's text
        return Section(id=sid, kind="text", priority=priority, text="", meta=kept, line=block.line, col=block.col,
                       shrink=0 if is_latest else 1, tokens=fixed)
    if is_latest:
        return Section(id=sid, kind="text", priority=priority, text=block.text, meta=kept, line=block.line, col=block.col,
                       shrink=0)
    if block.role == RESULT:
        strategy, keep = result_lenses(block)
        return Section(id=sid, kind="text", priority=priority, text=block.text, meta=kept, line=block.line, col=block.col,
                       shrink=1, strategy=strategy, keep=keep)
    if block.role == THINKING:
        return Section(id=sid, kind="text", priority=priority, text=block.text, meta=kept, line=block.line, col=block.col,
                       shrink=1, strategy=("drop",))
    return Section(id=sid, kind="text", priority=priority, text=block.text, meta=kept, line=block.line, col=block.col,
                   shrink=1)


# where ``str.splitlines`` ends a line
_LINE_END = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _first_line(text: str, limit: int = _LABEL_CHARS) -> str:
    """The first line of ``text`` that is not blank, stripped, cut to ``limit`` characters. Found without
    splitting the whole text: every line end is white space, so it is the start of ``text.lstrip()`` up
    to its first line end (a file's content as a call's argument can be megabytes)."""
    rest = text.lstrip()
    end = _LINE_END.search(rest)
    line = (rest if end is None else rest[: end.start()]).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def call_argument(tool: str | None, arguments: Any) -> str:
    """The argument that says what a tool call does (a command, a file, a pattern), shortened."""
    if not isinstance(arguments, dict):
        return ""
    for key in ("command", "file_path", "notebook_path", "pattern", "url", "query", "description", "prompt", "path"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            if key in ("file_path", "path", "notebook_path"):
                value = value.rstrip("/").rsplit("/", 1)[-1] or value
            return _first_line(value, 48)
    if tool == "TodoWrite" and isinstance(arguments.get("todos"), list):
        return f"{len(arguments['todos'])} todos"
    first = next((v for v in arguments.values() if isinstance(v, str) and v.strip()), "")
    return _first_line(first, 48)


def input_argument(tool: str | None, meta: dict[str, Any]) -> str:
    """``call_argument`` of a call block's input, held (``HeldInput``: worked out when it was read, the
    input not parsed again) or as parsed."""
    value = meta.get("tool_input")
    return value.argument if isinstance(value, HeldInput) else call_argument(tool, value)


def block_label(role: str, block: Block) -> str:
    """A label a person recognises: ``user: /init …``, ``assistant → Bash(git status)``,
    ``tool result · Read app.py (42 lines)``, ``thinking``, ``image 1024×768``."""
    if block.role == CALL:
        return f"{role} → {block.tool or block.type}({input_argument(block.tool, block.meta)})"
    if block.role == RESULT:
        lines = block.text.count("\n") + 1 if block.text else 0
        argument = block.meta.get("call_argument") or ""
        error = " error" if block.meta.get("is_error") else ""
        return f"tool result{error} · {block.tool or block.type}{' ' + argument if argument else ''} ({lines} lines)"
    if block.role == THINKING:
        return "thinking"
    if block.role == MEDIA:
        if "width" in block.meta:
            return f"{block.type} {block.meta['width']}×{block.meta['height']}"
        return block.type
    if block.role == OTHER:
        return f"{block.type} block"
    if block.meta.get("is_compact_summary"):
        return f"compaction summary: {_first_line(block.text)}"
    if block.meta.get("is_meta"):
        return f"{role} (expanded command): {_first_line(block.text)}"
    return f"{role}: {_first_line(block.text)}"


def pick_model(model: str | None) -> tuple[str | None, str | None]:
    """``(session.model, session.tokenizer)`` for a request's model name.

    Models in the table keep their exact tokenizer; Claude's tokenizer is not public, so Claude models
    get the calibrated approximation ``claude-estimate`` and models the table does not know the named
    approximation ``heuristic``, either of which
    a ``--tokenizer`` flag or ``TOKENBOX_TOKENIZER`` still overrides. Unknown models are not set as
    ``model`` (the table would refuse them); the importer keeps the name in the session's meta.
    """
    fallback = ESTIMATE if model and model.startswith("claude") else HEURISTIC
    if not model:
        return None, HEURISTIC
    try:
        info = lookup_model(model)
    except TokenizerError:
        return None, fallback
    return model, None if info.tokenizer else fallback


def reserve_for(model: str | None, max_tokens: int | None) -> int | None:
    """``budget.reserve_out`` from a request's reply limit, when the model's window is known and larger.

    With an unknown window the default ``max_ctx`` could be smaller than the reply limit, which would
    leave no room at all; the limit then stays in the session meta (``request``) only.
    """
    if model is None or max_tokens is None or max_tokens < 0:
        return None
    try:
        window = lookup_model(model).max_ctx
    except TokenizerError:
        return None
    return max_tokens if max_tokens < window else None


def tool_text(name: str, description: str | None, extra: list[tuple[str, Any]]) -> str:
    """A tool definition as text: its name, its description, then each other field as compact JSON."""
    lines = [name]
    if description:
        lines.append(description)
    lines.extend(f"{key}: {compact(value)}" for key, value in extra)
    return "\n".join(lines)


def request_settings(fields: dict[str, Node]) -> dict[str, Any]:
    """The request's scalar parameters (model, max_tokens, temperature, stream, …) for the session meta."""
    return {
        key: node.value
        for key, node in fields.items()
        if key not in ("messages", "system", "tools") and (node.value is None or isinstance(node.value, (str, int, float, bool)))
    }


# ---------------------------------------------------------------- telling request formats apart

_OPENAI_ROLES = ("system", "developer", "tool", "function")
_OPENAI_PARTS = ("image_url", "input_audio", "file", "refusal")
_ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image", "search_result")
_OPENAI_KEYS = (
    "max_completion_tokens",
    "n",
    "response_format",
    "stream_options",
    "logprobs",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "parallel_tool_calls",
    "modalities",
    "reasoning_effort",
    "functions",
    "store",
    "prediction",
    "logit_bias",
    "user",
)
_ANTHROPIC_KEYS = ("system", "anthropic_version", "stop_sequences", "top_k", "thinking", "container", "mcp_servers")
_SCAN_LIMIT = 500


def request_format(node: Any) -> str | None:
    """``anthropic-messages``, ``openai-chat`` or ``None`` for a parsed document, judged by its content.

    A document with a ``messages`` key and no ``tokenbox`` key is a request body; the two formats are
    told apart by the signs only one of them has (``system``/``input_schema``/typed blocks with a
    ``source`` vs ``developer``/``tool`` roles, ``tool_calls``, ``function`` tools, ``image_url`` parts).
    A request with no distinguishing sign is read as OpenAI's, unless its model is a Claude model.
    """
    from tokenbox.core.parse.nodes import Node  # start-up: the document parser only for a document (not the status line)

    value = node.value if isinstance(node, Node) else None
    if not isinstance(value, dict) or "tokenbox" in value or "messages" not in value:
        return None
    plain = {k: v.value for k, v in value.items() if not isinstance(v.value, (dict, list))}
    anthropic = sum(2 for k in _ANTHROPIC_KEYS if k in value)
    openai = sum(1 for k in _OPENAI_KEYS if k in value)
    model = plain.get("model")
    tools = value.get("tools")
    if tools is not None and isinstance(tools.value, list):
        for tool in tools.value[:_SCAN_LIMIT]:
            if is_mapping_with(tool, "input_schema"):
                anthropic += 2
            if is_mapping_with(tool, "function") or is_mapping_with(tool, "custom"):
                openai += 2
    messages = value["messages"].value
    for item in messages[:_SCAN_LIMIT] if isinstance(messages, list) else ():
        if not isinstance(item.value, dict):
            continue
        fields = item.value
        role = fields.get("role")
        if role is not None and role.value in _OPENAI_ROLES:
            openai += 2
        if "tool_calls" in fields or "tool_call_id" in fields or "function_call" in fields:
            openai += 2
        content = fields.get("content")
        for part in content.value[:_SCAN_LIMIT] if content is not None and isinstance(content.value, list) else ():
            kind = part.value.get("type") if isinstance(part.value, dict) else None
            kind = kind.value if isinstance(kind, Node) else None
            if kind in _ANTHROPIC_BLOCKS or (isinstance(part.value, dict) and "cache_control" in part.value):
                anthropic += 2
            elif kind in _OPENAI_PARTS:
                openai += 2
    if anthropic == openai:
        return "anthropic-messages" if isinstance(model, str) and model.startswith("claude") else "openai-chat"
    return "anthropic-messages" if anthropic > openai else "openai-chat"


def with_recorded_headline(session: Session, hidden_label: str, warnings: list[str]) -> Session:
    """A foreign log's turn with the fields of README, "Real agents": ``pending``, ``thread``, ``warnings`` from its meta,
    and, when its usage was recorded, that context as the headline with an ``inferred`` part for what
    the file does not hold (the engine sizes it to what the counted sections leave of the total)."""
    fields: dict[str, Any] = dict(
        pending=bool(session.meta.get("pending")),
        thread=str(session.meta.get("thread", MAIN_THREAD)),
        warnings=(*warnings, *(w for w in session.warnings if w not in warnings)),
    )
    if session.recorded is not None:
        fields["sections"] = (inferred_section(0, hidden_label), *session.sections)
        fields["context_tokens"] = session.recorded.context_tokens
    return replace(session, **fields)


INFERRED_ID = "inferred"


def inferred_section(tokens: int, label: str, known: bool = True) -> Section:
    """The critical part a request held that its file does not."""
    return Section(
        id=INFERRED_ID,
        kind="inferred",
        priority=0,
        shrink=0,
        tokens=max(0, tokens),
        meta={"category": "inferred", "label": label, "known": known},
    )


def content_parts(node: Node, path: str, where: str, part: Callable[[Node, str], Block]) -> list[Block]:
    """A list of content parts (an API message's ``content``) as blocks, each read by ``part`` and
    marked with its place in the request (``where[i]``)."""
    blocks = []
    for index, item in enumerate(as_list(node, path, where)):
        block = part(item, path)
        block.meta["path"] = f"{where}[{index}]"
        blocks.append(block)
    return blocks
