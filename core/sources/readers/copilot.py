"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<id>/events.jsonl``), one turn per model request.

Every line is an event ``{type, data, id, timestamp, parentId}``: ``session.start`` (the session id, the
CLI version, the model, ``context.cwd``), ``system.message`` (the system prompt as sent),
``user.message`` (``transformedContent`` is what the model received, with the reminders the CLI adds),
``assistant.message`` (one API response: its text, ``reasoningText``, ``toolRequests``; a sub-agent's
carry ``parentToolCallId``), ``assistant.reasoning``, ``tool.execution_complete`` (``result.content``
is what the model sees), ``session.model_change``, ``session.truncation`` (``tokenLimit``, the window,
and the messages it removed), ``session.compaction_complete`` and ``session.shutdown`` (the context at
that moment: ``currentTokens`` = ``systemTokens`` + ``conversationTokens`` + ``toolDefinitionsTokens``).

Each ``assistant.message`` is one request; its context is the thread's messages before it. The
journal records no per-request input: that is in ``~/.copilot/session-store.db`` (a SQLite store,
table ``assistant_usage_events``, one row per request; ``input_tokens`` includes the cached tokens),
read read-only when it is there and paired in order with the requests of the session. Without it the
headline is predicted from what the journal records of the hidden part (the system and tool-definition
tokens of a compaction or of the shutdown) plus the visible parts, fitted to the conversation tokens
the shutdown recorded; without those either it is the visible parts alone, a floor, with a warning.
The tool definitions are never in the journal: they are the ``inferred`` part. Sub-agents (the
``task`` tool's agents) are threads; user input after the last request is the pending turn.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.database import query
from tokenbox.core.sources.readers.agentlog import AgentLog, HistoryPrefix, Request
from tokenbox.core.sources.readers.anthropic import call_text
from tokenbox.core.sources.readers.common import CALL, RESULT, TEXT, THINKING, Block, Message
from tokenbox.core.sources.tail import FileTail
from tokenbox.core.tokens.charclass import BaseEstimates

SOURCE = "copilot-cli"
HIDDEN_LABEL = "tool definitions and framing (not in the session journal)"
NOT_RECORDED = "the tool definitions (Copilot CLI does not write them to events.jsonl)"
STORE = "session-store.db"
USAGE_TABLE = "assistant_usage_events"
EVENT_TYPES = frozenset({"session.start", "session.resume", "user.message", "assistant.message", "assistant.turn_start",
                         "tool.execution_start", "tool.execution_complete", "system.message", "session.model_change"})
_USAGE_MAX = 10**12


def is_event(value: Any) -> bool:
    """Whether a parsed line is a Copilot CLI event: ``{type, data, …}`` of a Copilot event type."""
    return (isinstance(value, dict) and isinstance(value.get("data"), dict) and value.get("type") in EVENT_TYPES
            and "tokenbox" not in value)


def detect(values: list[Any]) -> bool:
    """A Copilot CLI journal: its first lines are Copilot events (``session.start`` from ``copilot-agent``, …)."""
    events = [v for v in values if isinstance(v, dict)]
    return bool(events) and is_event(events[0]) and sum(1 for v in events if is_event(v)) * 2 >= len(events)


def convert(text: str, path: str) -> Any:
    """The main thread's turns of a whole journal."""
    journal = _Journal(path)
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            journal.feed(number, line, last=False)
    return journal.log(_store_rows(path, journal.session_id, 0)).main_turns()


class EventsFollower:
    """Follows one journal: each ``read`` parses the appended lines only, and asks the session store
    (when there is one) for the rows added since."""

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        self.path = path
        self.tail = FileTail(path, max_bytes=max_bytes)
        self.journal = _Journal(path)
        self.rows: list[tuple[int, RecordedUsage, str | None]] = []
        self.cache: AgentLog | None = None

    def read(self) -> AgentLog:
        chunk = self.tail.read()
        if chunk.reset:
            self.journal = _Journal(self.path)
            self.rows = []
        for number, line in chunk.numbered():
            if line.strip():
                self.journal.feed(number, line, last=False)
        if chunk.partial.strip():
            self.journal.feed(chunk.first_line + len(chunk.lines), chunk.partial, last=True)
        after = self.rows[-1][0] if self.rows else 0
        self.rows.extend(_store_rows(self.path, self.journal.session_id, after))
        log = self.journal.log(self.rows)
        if self.cache is not None:
            log.cache, log.bases = self.cache.cache, self.cache.bases
        self.cache = log
        return log


def follow(path: str, max_bytes: int | None = None) -> EventsFollower:
    """The follower of a journal (and of its session store)."""
    return EventsFollower(path, max_bytes)


def store_path(path: str) -> str | None:
    """The session store beside the journal's ``session-state`` folder (``~/.copilot/session-store.db``)."""
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        candidate = os.path.join(folder, STORE)
        if os.path.isfile(candidate):
            return candidate
        folder = os.path.dirname(folder)
    return None


def _store_rows(path: str, session_id: str | None, after: int) -> list[tuple[int, RecordedUsage, str | None]]:
    """The store's usage rows of the session after row ``after``: ``(rowid, usage, initiator)``."""
    store = store_path(path)
    if store is None or session_id is None:
        return []
    try:
        columns = {row[1] for row in query(store, f"PRAGMA table_info({USAGE_TABLE})")}
        if not {"session_id", "input_tokens"} <= columns:
            return []
        wanted = [c if c in columns else "0" for c in ("cache_read_tokens", "cache_write_tokens", "output_tokens")]
        initiator = "initiator" if "initiator" in columns else "NULL"
        rows = query(store, f"SELECT rowid, input_tokens, {', '.join(wanted)}, {initiator} FROM {USAGE_TABLE} "
                                     "WHERE session_id = ? AND rowid > ? ORDER BY rowid", [session_id, after])
    except SessionError:
        return []
    found = []
    for rowid, inp, read, write, out, who in rows:
        if not all(isinstance(n, int) and 0 <= n <= _USAGE_MAX for n in (inp, read or 0, write or 0, out or 0)):
            continue
        # input_tokens counts the cached tokens too: it is the request's context
        found.append((rowid, RecordedUsage(inp, max(0, inp - (read or 0) - (write or 0)), write or 0, read or 0, out or 0),
                      who if isinstance(who, str) else None))
    return found


@dataclass
class _Thread:
    """One thread's conversation so far and its requests."""

    history: list[Message] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    reasoning: list[Block] = field(default_factory=list)  # ``assistant.reasoning`` waiting for its message
    waiting: bool = False  # input since the last request
    epoch: int = 0


class _Journal:
    """The state of a journal read so far (fed line by line)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.threads: dict[str, _Thread] = {MAIN_THREAD: _Thread()}
        self.thread_of_call: dict[str, str] = {}  # a sub-agent's tool call id -> its thread
        self.thread_model: dict[str, str] = {}  # a sub-agent's thread -> the model it ran (when the journal says)
        self.prompts: dict[str, str] = {}  # a tool call's ``prompt`` argument: a sub-agent's first message
        self.system: list[Block] = []
        self.model: str | None = None
        self.window: int | None = None
        self.session_id: str | None = None
        self.meta: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.recorded_parts: tuple[int, int, str] | None = None  # (system tokens, tool-definition tokens, where from)
        self.conversation: tuple[int, int] | None = None  # (conversation tokens, requests before) at a shutdown
        self.others: dict[str, int] = {}
        self.order: list[tuple[str, int]] = []  # every request, in file order: (thread, index)

    def feed(self, number: int, text: str, *, last: bool) -> None:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            if not last:
                self.warnings.append(f"line {number}: not JSON, skipped")
            return
        if not isinstance(value, dict) or not isinstance(value.get("data"), dict):
            if not last:
                self.warnings.append(f"line {number}: not a Copilot event, skipped")
            return
        if last:
            return  # a complete JSON line without its newline yet: read it once it has one
        self.event(number, str(value.get("type")), value["data"], value)

    def event(self, number: int, kind: str, data: dict[str, Any], envelope: dict[str, Any]) -> None:
        if kind in ("session.start", "session.resume"):
            self.session_id = _str(data.get("sessionId")) or self.session_id
            self.model = _str(data.get("selectedModel")) or self.model
            context = data.get("context") if isinstance(data.get("context"), dict) else {}
            for key, label in (("copilotVersion", "version"), ("sessionId", "session_id")):
                if _str(data.get(key)):
                    self.meta[label] = data[key]
            if _str(context.get("cwd")):
                self.meta["cwd"] = context["cwd"]
        elif kind == "session.model_change":
            self.model = _str(data.get("newModel")) or self.model
        elif kind == "system.message":
            content = data.get("content")
            if isinstance(content, str) and content:
                self.system = [Block("system", TEXT, content, meta={"line": number}, line=number)]
        elif kind == "user.message":
            self._user(number, data)
        elif kind == "assistant.reasoning":
            content = data.get("content")
            if isinstance(content, str) and content:
                self._thread(data).reasoning.append(Block("reasoning", THINKING, content, line=number))
        elif kind == "assistant.message":
            self._assistant(number, data)
        elif kind == "tool.execution_complete":
            self._result(number, data)
            if _str(data.get("parentToolCallId")) and _str(data.get("model")):
                self.thread_model[self._name(data)] = data["model"]
        elif kind in ("subagent.started", "subagent.completed", "subagent.failed"):
            call = _str(data.get("toolCallId"))
            if call:
                name = self.thread_of_call.setdefault(call, f"subagent-{_str(data.get('agentName')) or call[-8:]}")
                if _str(data.get("model")):
                    self.thread_model[name] = data["model"]
                prompt = self.prompts.pop(call, None)
                thread = self.threads.setdefault(name, _Thread())
                if kind == "subagent.started" and prompt and not thread.history:  # what the parent asked it
                    thread.history.append(Message("user", [Block("text", TEXT, prompt, meta={"line": number}, line=number)],
                                                  0, {"line": number}, number))
        elif kind == "session.truncation":
            self._truncation(number, data)
        elif kind == "session.compaction_complete":
            self._compaction(number, data)
        elif kind == "session.shutdown":
            self._shutdown(data)
        else:
            self.others[kind] = self.others.get(kind, 0) + 1

    def _name(self, data: dict[str, Any]) -> str:
        call = _str(data.get("parentToolCallId"))
        if call is None:
            return MAIN_THREAD
        return self.thread_of_call.setdefault(call, f"subagent-{call[-8:]}")

    def _thread(self, data: dict[str, Any]) -> _Thread:
        return self.threads.setdefault(self._name(data), _Thread())

    def _user(self, number: int, data: dict[str, Any]) -> None:
        text = data.get("transformedContent") if isinstance(data.get("transformedContent"), str) else data.get("content")
        blocks = [Block("text", TEXT, text if isinstance(text, str) else "", meta={"line": number}, line=number)]
        for item in data.get("attachments") or []:
            if isinstance(item, dict):
                name = _str(item.get("displayName")) or _str(item.get("path")) or "attachment"
                blocks.append(Block("attachment", TEXT, f"[attachment: {name}]", meta={"line": number}, line=number))
        thread = self._thread(data)
        thread.history.append(Message("user", blocks, len(thread.history), {"line": number}, number))
        thread.waiting = True

    def _assistant(self, number: int, data: dict[str, Any]) -> None:
        name = self._name(data)
        thread = self._thread(data)
        blocks = list(thread.reasoning)
        thread.reasoning = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"] and not blocks:
            blocks.append(Block("reasoning", THINKING, data["reasoningText"], line=number))
        if isinstance(data.get("content"), str) and data["content"]:
            blocks.append(Block("text", TEXT, data["content"], meta={"line": number}, line=number))
        for request in data.get("toolRequests") or []:
            if not isinstance(request, dict):
                continue
            tool = _str(request.get("name")) or "tool"
            arguments = request.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    pass
            meta: dict[str, Any] = {"line": number, "tool_input": arguments}
            if _str(request.get("toolCallId")):
                meta["tool_use_id"] = request["toolCallId"]
                if isinstance(arguments, dict) and isinstance(arguments.get("prompt"), str):
                    self.prompts[request["toolCallId"]] = arguments["prompt"]
            blocks.append(Block("tool_call", CALL, call_text("tool_use", tool, arguments), tool, meta, line=number))
        model = _str(data.get("model")) or (None if name != MAIN_THREAD else self.model)
        key = _str(data.get("apiCallId")) or _str(data.get("messageId")) or f"line {number}"
        thread.requests.append(Request(HistoryPrefix(thread.history), None, number, model, thread.epoch, reply=blocks,
                                       key=key, window=self.window, meta={"message_id": _str(data.get("messageId"))}))
        self.order.append((name, len(thread.requests) - 1))
        if blocks:
            thread.history.append(Message("assistant", blocks, len(thread.history), {"line": number}, number))
        thread.waiting = False

    def _result(self, number: int, data: dict[str, Any]) -> None:
        result = data.get("result") if isinstance(data.get("result"), dict) else {}
        content = result.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content is not None else ""
        meta: dict[str, Any] = {"line": number}
        if _str(data.get("toolCallId")):
            meta["tool_use_id"] = data["toolCallId"]
        if data.get("success") is False:
            meta["is_error"] = True
        thread = self._thread(data)
        block = Block("tool_result", RESULT, text, None, meta, line=number)
        last = thread.history[-1] if thread.history else None
        if last is not None and last.role == "tool":
            last.blocks.append(block)  # parallel calls: one tool message (not yet sent: no request holds it)
        else:
            thread.history.append(Message("tool", [block], len(thread.history), {"line": number}, number))
        thread.waiting = True

    def _truncation(self, number: int, data: dict[str, Any]) -> None:
        limit = data.get("tokenLimit")
        if isinstance(limit, int) and limit > 0:
            self.window = limit
        removed = data.get("messagesRemovedDuringTruncation")
        if isinstance(removed, int) and removed > 0:
            thread = self.threads[MAIN_THREAD]
            thread.history = thread.history[removed:]
            thread.epoch += 1
            self.warnings.append(f"line {number}: Copilot removed the {removed} oldest messages to fit the window")

    def _compaction(self, number: int, data: dict[str, Any]) -> None:
        if data.get("success") is False:
            return
        parts = _parts(data)
        if parts is not None:
            self.recorded_parts = (*parts, f"compaction at line {number}")
        thread = self.threads[MAIN_THREAD]
        post = data.get("postCompactionTokens")
        summary = (f"[compaction summary: {post} tokens as Copilot recorded them; the summary text is in the session's "
                   "checkpoints/ folder, not in the journal]" if isinstance(post, int) else "[compaction summary]")
        thread.history = [Message("user", [Block("compaction_summary", TEXT, summary, meta={"line": number}, line=number)],
                                  0, {"line": number}, number)]
        thread.epoch += 1

    def _shutdown(self, data: dict[str, Any]) -> None:
        parts = _parts(data)
        if parts is not None:
            self.recorded_parts = (*parts, "shutdown")
        conversation = data.get("conversationTokens")
        if isinstance(conversation, int) and conversation > 0:
            self.conversation = (conversation, len(self.threads[MAIN_THREAD].requests))
        for key in ("currentTokens", "systemTokens", "conversationTokens", "toolDefinitionsTokens"):
            if isinstance(data.get(key), int):
                self.meta.setdefault("shutdown", {})[key] = data[key]
        self.model = _str(data.get("currentModel")) or self.model

    def log(self, rows: list[tuple[int, RecordedUsage, str | None]]) -> AgentLog:
        """The journal's requests with the store's usage (paired in order), plus each thread's pending turn."""
        threads: dict[str, list[Request]] = {}
        warnings = list(self.warnings)
        usable = [usage for _, usage, who in rows if who != "compaction"]
        if usable and len(usable) != len(self.order):
            warnings.append(f"the session store has {len(usable)} usage rows for {len(self.order)} requests in the journal: "
                            "paired in order")
        paired = dict(zip(self.order, usable, strict=False))
        bases = BaseEstimates()
        hidden = self._hidden_part(bases)
        scale = self._scale(bases) if hidden is not None else None
        for name, thread in self.threads.items():
            requests = [Request(**{**r.__dict__, "usage": paired.get((name, i))}) for i, r in enumerate(thread.requests)]
            if thread.waiting and thread.history:
                requests.append(Request(HistoryPrefix(thread.history), None, thread.history[-1].line, self.model, thread.epoch,
                                        pending=True))
            for request in requests:
                request.model = request.model or self.thread_model.get(name) or self.model
                request.window = request.window or self.window
                if name == MAIN_THREAD:
                    request.system = list(self.system)
                    if hidden is not None:
                        request.hidden, request.hidden_how = hidden
                        request.scale = scale
            threads[name] = requests
        if self.others:
            self.meta["other_events"] = dict(sorted(self.others.items()))
        name = f"Copilot CLI session {self.meta.get('session_id', os.path.basename(os.path.dirname(self.path)))}"
        return AgentLog(SOURCE, self.path, name, HIDDEN_LABEL, NOT_RECORDED, threads, warnings, dict(self.meta))

    def _hidden_part(self, bases: BaseEstimates) -> tuple[int, str] | None:
        """What the journal records of the hidden part: the tool definitions' tokens, and what the system
        tokens hold beyond the system message's text (its estimate at the shutdown's scale); all of the
        system tokens when the journal does not hold that text."""
        if self.recorded_parts is None:
            return None
        system, tools, where = self.recorded_parts
        shown = sum(bases(b.text) for b in self.system) * (self._scale(bases) or 1.0)
        if shown:
            return tools + max(0, system - round(shown)), f"tool-definition and system tokens of the {where}, the system message's text aside"
        return system + tools, f"system and tool-definition tokens of the {where}"

    def _scale(self, bases: BaseEstimates) -> float | None:
        """The visible estimate's scale the shutdown implies: its conversation tokens over the estimate of
        the main thread's conversation at that point."""
        if self.conversation is None:
            return None
        tokens, before = self.conversation
        history = self.threads[MAIN_THREAD].history
        estimate = sum(bases(b.text) for m in history for b in m.blocks if b.text and b.role != THINKING)
        return round(min(max(tokens / estimate, 0.3), 5.0), 4) if estimate > 0 and before else None


def _parts(data: dict[str, Any]) -> tuple[int, int] | None:
    """``(systemTokens, toolDefinitionsTokens)`` of a compaction or a shutdown record."""
    system, tools = data.get("systemTokens"), data.get("toolDefinitionsTokens")
    if isinstance(system, int) and isinstance(tools, int) and system >= 0 and tools >= 0:
        return system, tools
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
