"""Capture logs of ``tokenbox record`` (format: ``capture_format``): one turn per captured request.

Each request's body is rebuilt from the deltas it was stored as and read by the importer of its API
(``anthropic``, ``openai_chat``, and ``openai_responses`` when that importer is installed), with the
usage its response reported as ``Session.recorded`` (Anthropic: input + cache creation + cache read
tokens; OpenAI: input tokens, cached ones included). What the agent sent is all there, so nothing is
left to infer: the system prompt, each tool (MCP tools ``mcp__SERVER__TOOL`` carry ``mcp_server`` in
their meta), and in user messages every ``<system-reminder>…</system-reminder>`` block and each memory
file inside one (``Contents of PATH (…):``, Claude Code's CLAUDE.md files) as a part of its own.

Requests are grouped into threads (README, "Real agents") by conversation: a request stored against an earlier one
whose messages it continues, with the same system prompt, instructions and tools, is in that one's
thread; the thread with the most requests is ``main``, the others are named ``request-N`` after their
first request. A request still waiting for its response is a turn without recorded usage. Requests that cannot be
read (a body that was not JSON, a broken delta, a body its importer refuses) are skipped and named in
the session meta (``capture.skipped``); a log with no readable request is refused.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import re
from typing import Any, NamedTuple

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import ESTIMATE, MAIN_THREAD
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import Calibration, RecordedUsage, Section, Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers import anthropic, openai_chat
from tokenbox.core.sources.readers.capture_format import FORMAT_KEY, FORMAT_VERSION, message_key, rebuild
from tokenbox.core.sources.readers.common import (
    CALL,
    RESULT,
    TEXT,
    Block,
    Conversation,
    Message,
    SectionCache,
    build_session,
    inferred_section,
    link_tool_names,
    one_hour_writes,
)
from tokenbox.core.tokens.charclass import base_estimate

SOURCE = "tokenbox-capture"
_USAGE_MAX = 10**12
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_MEMORY = re.compile(r"^Contents of (?P<path>[^\n]+?) \((?P<scope>[^\n]*)\):[ \t]*$", re.M)
_HEADING = re.compile(r"^# \S", re.M)
# Top-level fields that make a request another agent's (a sub-agent, a side request) when they change.
_AGENT_KEYS = frozenset({"system", "tools", "instructions"})
_LABELS = {"anthropic-messages": "Anthropic Messages", "openai-chat": "OpenAI Chat Completions", "openai-responses": "OpenAI Responses",
           "google-gemini": "Gemini generateContent"}


_TORN = json.dumps({FORMAT_KEY: FORMAT_VERSION, "kind": "torn"}, separators=(",", ":"))


def torn_line(first: str) -> str | None:
    """What a line that does not parse stands for in a capture log: a torn record, skipped with a warning.

    A capture is written one whole record at a time, but a crash (or a disk that filled up where the
    file could not be cut back) can leave a record cut short; the records around it are still whole.
    """
    return _TORN if f'"{FORMAT_KEY}"' in first[:200] else None


def detect(nodes: list[Node]) -> bool:
    """Whether a JSON-lines file is a capture log (its first line carries the format marker)."""
    return bool(nodes) and isinstance(nodes[0].value, dict) and FORMAT_KEY in nodes[0].value


def convert(nodes: list[Node], path: str) -> list[Session]:
    """One session per captured request, oldest first."""
    reader = CaptureReader(path)
    for node in nodes:
        reader.line(node)
    return reader.sessions()


class At(NamedTuple):
    """Where a record is in the file (the reader keeps this, not the line's parsed tree)."""

    line: int
    col: int = 1


class CaptureReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.bodies: dict[int, dict[str, Any]] = {}
        self.requests: list[tuple[At, dict[str, Any]]] = []
        self.responses: dict[int, dict[str, Any]] = {}
        self.skipped: list[dict[str, Any]] = []
        self.start: dict[str, Any] = {}
        self.messages: dict[tuple[int, int], Message] = {}  # (id of the message dict, index) -> Message
        self.keep_alive: list[Any] = []  # the dicts whose ids key ``messages``
        self.bases: dict[str, float] = {}
        self.tool_names: dict[str, str] = {}
        self.frames: dict[Any, Conversation] = {}
        self.roots: dict[int, int] = {}  # request id -> the first request of its conversation  # tool_use id -> tool name, over the whole capture
        self.last_fit: tuple[float, int] | None = None  # (scale, turn) of the last recorded Claude request
        self.torn: list[int] = []  # line numbers of torn records

    def line(self, node: Node) -> None:
        self.record(At(node.line, node.col), node.plain())

    def record(self, node: At, value: Any) -> bool:
        """One line's record (``node`` says where it is); whether it was a captured request."""
        if not isinstance(value, dict):
            raise SessionError("a capture line must be a JSON object", "this file is not a capture log of tokenbox record",
                               self.path, node.line, node.col)
        version = value.get(FORMAT_KEY)
        if version != FORMAT_VERSION:
            raise SessionError(f"capture format version {version!r} is not {FORMAT_VERSION}",
                               "read it with the tokenbox that recorded it", self.path, node.line, node.col)
        kind = value.get("kind")
        if kind == "start":
            self.start = value
        elif kind == "request" and isinstance(value.get("id"), int):
            self.requests.append((node, value))
            self._body(value)
            return True
        elif kind == "response" and isinstance(value.get("id"), int):
            self.responses[value["id"]] = value
        elif kind == "torn":
            self.torn.append(node.line)
        return False

    def _body(self, record: dict[str, Any]) -> None:
        api = record.get("api")
        if isinstance(record.get("body"), dict):
            self.bodies[record["id"]] = record["body"]
        elif isinstance(record.get("delta"), dict):
            delta = record["delta"]
            base = self.bodies.get(delta.get("base")) if isinstance(delta.get("base"), int) else None
            if base is not None and isinstance(api, str):
                self.bodies[record["id"]] = rebuild(base, delta, message_key(api, base))
                changed = set(delta.get("set") or {}) | set(delta.get("unset") or ())
                if isinstance(delta.get("keep"), int) and delta["keep"] > 0 and not changed & _AGENT_KEYS:
                    self.roots[record["id"]] = self.roots.get(delta["base"], delta["base"])  # the same conversation

    def sessions(self) -> list[Session]:
        cache: SectionCache = {}
        sessions = []
        for node, record in self.requests:
            try:
                session = self.turn(node, record, cache)
            except SessionError as exc:
                self._skip(record, exc.problem)
                continue
            if session is not None:
                sessions.append(self._headline(session, len(sessions) + 1))
        if not sessions:
            raise self.no_turn()
        count = len(sessions)
        roots = [self.roots.get(s.meta["capture"]["request"], s.meta["capture"]["request"]) for s in sessions]
        main = main_root(roots)
        torn = self._torn_warning()
        for index, session in enumerate(sessions):
            sessions[index] = self.finish(session, index, count, roots, main, torn)
        return sessions

    def no_turn(self) -> SessionError:
        """The error of a capture without a readable request."""
        problem = "the capture log has no captured request yet"
        remedy = "point an agent at the proxy and send a request; tokenbox-tui keeps following the file"
        if self.skipped:
            problem = f"no captured request could be read (request {self.skipped[0]['id']}: {self.skipped[0]['reason']})"
            remedy = "record again with this tokenbox"
        return SessionError(problem, remedy, self.path, 1, 1)

    def finish(self, session: Session, index: int, count: int, roots: list[int], main: int, torn: str | None) -> Session:
        """Turn ``index`` of ``count`` with its thread, the capture's skipped requests and torn lines."""
        meta = session.meta
        if self.skipped:
            meta = {**meta, "capture": dict(meta.get("capture", {}), skipped=list(self.skipped))}
        thread = MAIN_THREAD if roots[index] == main else f"request-{roots[index]}"
        warnings = (*session.warnings, torn) if torn else session.warnings
        return replace(session, meta=meta, turn=index + 1, turn_count=count, thread=thread, warnings=warnings)

    def _torn_warning(self) -> str | None:
        if not self.torn:
            return None
        lines = ", ".join(str(n) for n in self.torn[:5]) + (f" and {len(self.torn) - 5} more" if len(self.torn) > 5 else "")
        what = "line" if len(self.torn) == 1 else "lines"
        return f"skipped torn capture {what} {lines} (a record cut short, e.g. by a full disk; the others are whole)"

    def _headline(self, session: Session, number: int) -> Session:
        """README, "Real agents", for a captured request: with recorded usage, the headline is the recorded context.

        The capture holds the whole request, so nothing is hidden: the estimates of a tokenizer-less
        model (Claude) are scaled so that its parts come to the recorded total, and the ``inferred``
        part keeps only what the estimate leaves over (rounding, or what the provider adds unseen).
        A request without usage (in flight, or failed) is estimated at the scale of the last recorded one.
        """
        recorded = session.recorded
        estimated = session.tokenizer == ESTIMATE
        if recorded is None:
            if estimated and self.last_fit is not None:
                scale, turn = self.last_fit
                method = f"estimated at the scale fitted to request {turn} of the capture (no usage recorded for this one)"
                return replace(session, calibration=Calibration(method, scale, None, (turn,)))
            return session
        target = recorded.context_tokens
        if any(s.kind == "inferred" for s in session.sections):  # a counted framing part absorbs the rest
            return replace(session, context_tokens=target)
        fixed = sum(s.tokens for s in session.sections if s.tokens is not None)
        bases = [self._base(s) for s in session.sections if s.tokens is None and s.text and not s.text.isspace()]
        scale = 1.0
        if estimated and sum(bases) > 0 and target > fixed:
            scale = round((target - fixed) / sum(bases), 4)
            for _ in range(4):  # rounding can overshoot by a few tokens: step the scale down until it fits
                visible = fixed + sum(max(1, round(b * scale)) for b in bases)
                if visible <= target:
                    break
                scale = round(scale * (target - fixed) / (visible - fixed) - 0.0001, 4)
            self.last_fit = (scale, number)
        visible = fixed + sum(max(1, round(b * scale)) for b in bases)
        hidden = max(0, target - visible)
        method = (f"recorded: the capture holds the whole request; estimates scaled ×{scale:.4f} to its recorded context"
                  if estimated else "recorded: the capture holds the whole request, counted by its tokenizer")
        label = "what the provider counted beyond the parts' estimate"
        return replace(
            session,
            sections=(inferred_section(hidden, label), *session.sections),
            tokenizer=session.tokenizer or ESTIMATE,
            context_tokens=target,
            calibration=Calibration(method, scale, hidden, (number,)),
        )

    def _base(self, section: Section) -> float:
        """The base estimate of a section's text, once per text (turns repeat their system and tools)."""
        text = section.text or ""
        value = self.bases.get(text)
        if value is None:
            value = self.bases[text] = base_estimate(text)
        return value

    def _skip(self, record: dict[str, Any], reason: str) -> None:
        self.skipped.append({"id": record.get("id"), "reason": reason})

    def turn(self, node: At, record: dict[str, Any], cache: SectionCache, *, build: bool = True) -> Any:
        """The request's turn; with ``build`` false only whether it has one (a conversation), skipping it if not."""
        record_id = record["id"]
        api = record.get("api")
        body = self.bodies.get(record_id)
        if body is None:
            self._skip(record, record.get("body_error") or "its body or the request it builds on is missing")
            return None
        response = self.responses.get(record_id)
        if api == "anthropic-messages":
            conv = self._anthropic(body, node)
        elif api == "openai-chat":
            conv = self._chat(body, node)
        elif api == "openai-responses":
            conv = self._responses(body, node)
            if conv is None:
                self._skip(record, "reading OpenAI Responses requests needs a newer tokenbox")
                return None
        elif api == "google-gemini":  # peers' captures (claude-trace pairs, context-lens LHAR) carry these too
            from tokenbox.core.sources.readers import gemini_api  # start-up: only when a capture holds one

            conv = gemini_api.conversation(to_node(body, node.line), self.path)
            usage = response.get("usage") if response is not None else None
            if isinstance(usage, dict):
                gemini_api.apply_modalities(conv, usage)
                conv.tokenizer = ESTIMATE  # fitted to the recorded usage (Gemini's tokenizer is not public)
        else:
            self._skip(record, f"unknown API {api!r}")
            return None
        if not build:
            return conv
        if not isinstance(conv, Conversation):  # an importer without a neutral model: its session as is
            return replace(conv, recorded=recorded_usage(api, response), meta={**conv.meta, **self._meta(record, response, api)})
        for tool in conv.tools:
            server = mcp_server(tool.name)
            if server is not None:
                tool.meta["mcp_server"] = server
        if api == "openai-responses":
            link_tool_names(conv.messages)  # the other APIs' messages are linked once, as they are first read
        conv.recorded = recorded_usage(api, response)
        conv.meta = {**conv.meta, **self._meta(record, response, api)}
        model = body.get("model") if isinstance(body.get("model"), str) else "no model"
        conv.name = f"{_LABELS[api]} request {record_id} ({model}, {len(conv.messages)} messages)"
        conv.line = node.line
        session = build_session(conv, self.path, cache)
        if api == "anthropic-messages":
            session = anthropic.with_tool_prompt(session, body)
        elif api == "openai-chat":
            session = openai_chat.with_framing(session, body)
        return session

    def _meta(self, record: dict[str, Any], response: dict[str, Any] | None, api: str) -> dict[str, Any]:
        capture: dict[str, Any] = {"request": record["id"], "path": record.get("path"), "time": record.get("time")}
        if isinstance(record.get("headers"), dict) and record["headers"]:
            capture["headers"] = record["headers"]
        if response is None:
            capture["pending"] = True
        else:
            for key in ("status", "model", "stream", "error", "stop_reason", "duration_ms"):
                if response.get(key) is not None:
                    capture[key] = response[key]
        source = {"format": SOURCE, "api": api, "file": os.path.basename(self.path)}
        if isinstance(self.start.get("upstream"), str):
            source["upstream"] = self.start["upstream"]
        return {"source": source, "capture": capture}

    def _message(self, value: Any, index: int, line: int, read) -> Message:
        key = (id(value), index)
        message = self.messages.get(key)
        if message is None:
            message = split_reminders(read(to_node(value, line), self.path, index))
            self._link(message)
            self.messages[key] = message
            self.keep_alive.append(value)
        return message

    def _link(self, message: Message) -> None:
        """Name each tool result after its call (``link_tool_names`` done once per message, not per turn)."""
        for block in message.blocks:
            call_id = block.meta.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            if block.role == CALL and block.tool:
                self.tool_names[call_id] = block.tool
            elif block.role == RESULT and block.tool is None and call_id in self.tool_names:
                block.tool = self.tool_names[call_id]
                block.meta["tool"] = block.tool

    def _anthropic(self, body: dict[str, Any], node: At) -> Conversation:
        frame = {k: v for k, v in body.items() if k != "messages"}
        frame["messages"] = []
        conv = self._frame(frame, node, anthropic.conversation)
        items = body.get("messages")
        if not isinstance(items, list):
            raise SessionError("the request has no `messages` list", "an Anthropic Messages request lists its messages")
        conv.messages = [self._message(item, index, node.line, anthropic.message) for index, item in enumerate(items)]
        return conv

    def _chat(self, body: dict[str, Any], node: At) -> Conversation:
        items = body.get("messages")
        if not isinstance(items, list):
            raise SessionError("the request has no `messages` list", "an OpenAI Chat request lists its messages")
        leading = 0
        while leading < len(items) and isinstance(items[leading], dict) and items[leading].get("role") in ("system", "developer"):
            leading += 1
        frame = {k: v for k, v in body.items() if k != "messages"}
        frame["messages"] = items[:leading]
        conv = self._frame(frame, node, openai_chat.conversation)
        conv.messages = [
            self._message(item, index, node.line, openai_chat.message) for index, item in enumerate(items) if index >= leading
        ]
        return conv

    def _frame(self, frame: dict[str, Any], node: At, read) -> Conversation:
        """``read`` (an importer's ``conversation``) of a body without its conversation, once per distinct
        frame: rebuilt bodies share their unchanged fields' objects, so equal frames have equal ids.

        Returns a copy whose ``messages`` and ``meta`` the caller may replace; system blocks and tool
        definitions are shared (and only ever given the same ``mcp_server`` mark).
        """
        key = (read, tuple((k, tuple(map(id, v)) if k == "messages" else id(v)) for k, v in frame.items()))
        cached = self.frames.get(key)
        if cached is None:
            cached = self.frames[key] = read(to_node(frame, node.line), self.path)
            self.keep_alive.append(frame)  # the ids in the key stay those of live objects
        conv = copy.copy(cached)
        conv.meta = dict(cached.meta)
        return conv

    def _responses(self, body: dict[str, Any], node: At) -> Conversation | Session | None:
        module = responses_importer()
        if module is None:
            return None
        conv = getattr(module, "conversation", None)
        conv = conv(to_node(body, node.line), self.path) if conv is not None else None
        if isinstance(conv, Conversation):
            conv.messages = [split_reminders(m) for m in conv.messages]
            return conv
        return module.convert(to_node(body, node.line), self.path)[0]


def main_root(roots: list[int]) -> int:
    """The conversation with the most requests (the latest of equals): the ``main`` thread."""
    sizes: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, root in enumerate(roots):
        sizes[root] = sizes.get(root, 0) + 1
        last[root] = index
    return max(sizes, key=lambda root: (sizes[root], last[root]))


def responses_importer() -> Any:
    """The OpenAI Responses request importer module, or ``None`` when this tokenbox has none."""
    try:
        return importlib.import_module("tokenbox.core.sources.readers.openai_responses")
    except ImportError:
        return None


def to_node(value: Any, line: int, col: int = 1) -> Node:
    """A plain JSON value as positioned nodes, every one placed at ``line``."""
    if isinstance(value, dict):
        return Node({k: to_node(v, line, col) for k, v in value.items()}, line, col, {k: (line, col) for k in value})
    if isinstance(value, list):
        return Node([to_node(v, line, col) for v in value], line, col)
    return Node(value, line, col)


def mcp_server(tool: str) -> str | None:
    """The MCP server of a tool named ``mcp__SERVER__TOOL`` (Claude Code's naming), else ``None``."""
    if not tool.startswith("mcp__"):
        return None
    server, sep, _ = tool[5:].partition("__")
    return server if sep and server else None


def split_reminders(message: Message) -> Message:
    """The message with each user text block cut into its plain text, system reminders and memory files."""
    if message.role != "user" or not any(b.role == TEXT and "<system-reminder>" in b.text for b in message.blocks):
        return message
    blocks: list[Block] = []
    for block in message.blocks:
        if block.role == TEXT and block.type == "text" and "<system-reminder>" in block.text:
            blocks.extend(_split_block(block))
        else:
            blocks.append(block)
    return Message(message.role, blocks, message.index, message.meta, message.line, message.col)


def _split_block(block: Block) -> list[Block]:
    pieces: list[Block] = []

    def add(kind: str, text: str, **meta: Any) -> None:
        if text.strip():
            pieces.append(Block(kind, TEXT, text, None, {**block.meta, **meta}, None, block.line, block.col))

    position = 0
    for match in _REMINDER.finditer(block.text):
        add("text", block.text[position : match.start()])
        _split_reminder(match.group(0), add)
        position = match.end()
    add("text", block.text[position:])
    if pieces and block.cache_control is not None:
        pieces[-1].cache_control = block.cache_control  # the cache mark ends the block: it stays at its end
    return pieces or [block]


def _split_reminder(text: str, add) -> None:
    """A reminder with memory files (``Contents of PATH (scope):``) as reminder / memory / reminder parts."""
    matches = list(_MEMORY.finditer(text))
    if not matches:
        add("system_reminder", text, system_reminder=True)
        return
    add("system_reminder", text[: matches[0].start()], system_reminder=True)
    for number, match in enumerate(matches):
        end = matches[number + 1].start() if number + 1 < len(matches) else len(text)
        heading = _HEADING.search(text, match.end(), end)  # the next "# section" of the reminder ends the file
        stop = heading.start() if heading is not None else end
        add("memory", text[match.start() : stop], memory_file=match.group("path"), memory_scope=match.group("scope"))
        if stop < end:
            add("system_reminder", text[stop:end], system_reminder=True)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _USAGE_MAX:
        return None
    return value


def recorded_usage(api: str, response: dict[str, Any] | None) -> RecordedUsage | None:
    """The response's usage as ``RecordedUsage`` (``None`` when missing or malformed)."""
    usage = response.get("usage") if response is not None else None
    if not isinstance(usage, dict):
        return None
    if api == "google-gemini":  # usageMetadata: the prompt (cached included) plus what server tools added
        prompt, tool = _count(usage.get("promptTokenCount")), _count(usage.get("toolUsePromptTokenCount", 0))
        cached, out = _count(usage.get("cachedContentTokenCount", 0)), _count(usage.get("candidatesTokenCount", 0))
        if prompt is None or tool is None or cached is None or out is None:
            return None
        return RecordedUsage(prompt + tool, prompt + tool - min(cached, prompt), 0, min(cached, prompt), out)
    if api == "anthropic-messages":
        numbers = [usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")]
        counts = [_count(0 if n is None else n) for n in numbers]
        if "input_tokens" not in usage or any(c is None for c in counts):
            return None
        inp, write, read, out = counts  # type: ignore[misc]
        return RecordedUsage(inp + write + read, inp, write, read, out,  # type: ignore[operator]
                             one_hour_writes(usage, write))  # type: ignore[arg-type]
    chat = api == "openai-chat"
    total = _count(usage.get("prompt_tokens" if chat else "input_tokens"))
    details = usage.get("prompt_tokens_details" if chat else "input_tokens_details")
    cached = _count(details.get("cached_tokens", 0) if isinstance(details, dict) else 0) or 0
    out = _count(usage.get("completion_tokens" if chat else "output_tokens", 0)) or 0
    if total is None:
        return None
    cached = min(cached, total)
    return RecordedUsage(total, total - cached, 0, cached, out)
