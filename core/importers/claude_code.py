"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Claude Code appends one line per content block: ``user`` lines (the prompt, slash-command expansions
marked ``isMeta``, tool results) and ``assistant`` lines. The lines of one API request share
``message.id`` and repeat its ``usage``; each such request is one turn, in the order the requests
first appear. Turn k's session is the context as it was sent for that request: the lines reached by
following ``parentUuid`` back from the request's first line (so a sub-agent's sidechain holds only its
own conversation, and a compaction boundary ends the walk), with consecutive lines of one role merged
into one message, as Claude Code does when it builds the request.

``Session.recorded`` is the request's ``usage`` counted once (the last line of the request, since
Claude Code rewrites ``output_tokens`` while the reply streams); its context is
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``. Transcripts do not contain
the system prompt or the tool definitions, so the estimate covers the messages only; the difference
to the recorded context is that unrecorded prefix (see ``breakdown.turn_usages``).

``summary`` lines name the session; lines of other types (``system``, ``file-history-snapshot``, and
whatever newer versions add) are counted in the session meta and walked through, never fatal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tokenbox.core.errors import SessionError
from tokenbox.core.importers.anthropic import message_blocks
from tokenbox.core.importers.common import (
    Block,
    Conversation,
    Message,
    SectionCache,
    as_dict,
    build_session,
    fail,
    link_tool_names,
    pick_model,
)
from tokenbox.core.model import RecordedUsage, Session
from tokenbox.core.nodes import Node

SOURCE = "claude-code"
NOT_RECORDED = "the system prompt and the tool definitions (Claude Code does not write them to transcripts)"
_MESSAGE_TYPES = ("user", "assistant")
_USAGE_MAX = 10**12


@dataclass
class _Line:
    """One user/assistant line of the transcript."""

    node: Node
    role: str
    uuid: str | None
    parent: str | None
    sidechain: bool
    blocks: list[Block]
    request: str | None = None  # message.id (or requestId) of an assistant line
    request_id: str | None = None
    model: str | None = None
    usage: RecordedUsage | None = None
    flags: dict[str, Any] = field(default_factory=dict)


def detect(nodes: list[Node]) -> bool:
    """Whether a JSON-lines file is a Claude Code transcript (by content, whatever its name)."""
    if any(isinstance(n.value, dict) and "tokenbox" in n.value for n in nodes):
        return False
    return any(_is_transcript_line(n) for n in nodes)


def _is_transcript_line(node: Node) -> bool:
    value = node.value
    if not isinstance(value, dict) or "type" not in value or not isinstance(value["type"].value, str):
        return False
    if "sessionId" in value or "uuid" in value or "leafUuid" in value:
        return True
    message = value.get("message")
    return message is not None and isinstance(message.value, dict) and "role" in message.value


def convert(nodes: list[Node], path: str) -> list[Session]:
    """One session per assistant request, oldest first."""
    lines: list[_Line] = []
    links: dict[str, str | None] = {}  # uuid -> parentUuid, for every line that has one
    by_uuid: dict[str, _Line] = {}
    summaries: list[str] = []
    others: dict[str, int] = {}
    session_id = version = None
    for node in nodes:
        fields = as_dict(node, path, "a transcript line")
        kind = fields["type"].value if "type" in fields and isinstance(fields["type"].value, str) else None
        uuid = _string(fields, "uuid")
        if uuid is not None:
            links[uuid] = _string(fields, "parentUuid")
        session_id = session_id or _string(fields, "sessionId")
        version = version or _string(fields, "version")
        if kind in _MESSAGE_TYPES and "message" in fields:
            line = _read_line(node, fields, kind, path)
            lines.append(line)
            if uuid is not None:
                by_uuid[uuid] = line
        elif kind == "summary" and _string(fields, "summary") is not None:
            summaries.append(_string(fields, "summary"))  # type: ignore[arg-type]
        else:
            label = kind or "untyped"
            others[label] = others.get(label, 0) + 1
    requests: dict[str, list[_Line]] = {}
    for line in lines:
        if line.role == "assistant" and line.request is not None:
            requests.setdefault(line.request, []).append(line)
    if not requests:
        raise SessionError(
            "the Claude Code transcript has no assistant request yet",
            "import it again once the agent has replied, or import a request body instead",
            path,
            1,
            1,
        )
    base_meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}}
    if session_id:
        base_meta["session_id"] = session_id
    if version:
        base_meta["version"] = version
    if summaries:
        base_meta["summaries"] = summaries
    if others:
        base_meta["other_records"] = {k: others[k] for k in sorted(others)}
    base_meta["not_recorded"] = NOT_RECORDED
    name = summaries[-1] if summaries else f"Claude Code session {session_id or os.path.basename(path)}"
    link_tool_names([Message(line.role, line.blocks, 0) for line in lines])  # tool_use ids are unique per file
    contexts = _Contexts(lines, links, by_uuid)
    cache: SectionCache = {}
    sessions = []
    for key, request_lines in requests.items():
        conv = _conversation(contexts.before(request_lines[0]), request_lines, key, base_meta, name)
        sessions.append(build_session(conv, path, cache))
    return sessions


def _string(fields: dict[str, Node], key: str) -> str | None:
    node = fields.get(key)
    return node.value if node is not None and isinstance(node.value, str) else None


def _read_line(node: Node, fields: dict[str, Node], kind: str, path: str) -> _Line:
    message = as_dict(fields["message"], path, "`message`")
    role_node = message.get("role")
    role = role_node.value if role_node is not None and isinstance(role_node.value, str) else kind
    if "content" not in message:
        raise fail(
            fields["message"], path, "a transcript message has no `content`", "each user/assistant line carries message.content"
        )
    blocks = message_blocks(message["content"], path, "message.content")
    for block in blocks:
        block.meta["line"] = node.line
        block.meta.pop("path", None)
    line = _Line(
        node=node,
        role=role,
        uuid=_string(fields, "uuid"),
        parent=_string(fields, "parentUuid"),
        sidechain=fields["isSidechain"].value is True if "isSidechain" in fields else False,
        blocks=blocks,
    )
    for flag in ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage"):
        if flag in fields and fields[flag].value is True:
            line.flags[flag] = True
            for block in blocks:
                block.meta[_snake(flag)] = True
    if kind == "assistant":
        model = _string(message, "model")
        line.model = model
        line.request_id = _string(fields, "requestId")
        if model == "<synthetic>":
            return line  # written by Claude Code itself (e.g. an API error), not a request
        line.request = _string(message, "id") or line.request_id or f"line-{node.line}"
        usage = message.get("usage")
        if usage is not None and isinstance(usage.value, dict):
            line.usage = _usage(usage.value)
    return line


def _usage(fields: dict[str, Node]) -> RecordedUsage | None:
    """The usage numbers, or ``None`` when ``input_tokens`` is missing or any number is malformed."""
    numbers = {}
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        node = fields.get(key)
        value = 0 if node is None or node.value is None else node.value
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _USAGE_MAX:
            return None
        numbers[key] = value
    if "input_tokens" not in fields:
        return None
    context = numbers["input_tokens"] + numbers["cache_creation_input_tokens"] + numbers["cache_read_input_tokens"]
    return RecordedUsage(context_tokens=context, **numbers)


class _Contexts:
    """The messages sent with each request, memoised so that turns sharing a history share its work.

    ``before(first)`` follows ``parentUuid`` up from the request's first line, merging consecutive lines
    of one role into one message, until it reaches a line whose context is already known. ``Message``
    objects are never changed once built (a merge makes a new one), so turns can share them.
    """

    def __init__(self, lines: list[_Line], links: dict[str, str | None], by_uuid: dict[str, _Line]) -> None:
        self.lines = lines
        self.links = links
        self.by_uuid = by_uuid
        self.memo: dict[str, list[Message]] = {}  # uuid -> the messages up to and including that line

    def before(self, first: _Line) -> list[Message]:
        if first.uuid is None:
            # No uuids (an older or hand-made transcript): every earlier line of the same chain kind.
            earlier = self.lines[: self.lines.index(first)]
            messages: list[Message] = []
            for line in earlier:
                if line.sidechain == first.sidechain:
                    _append(messages, line)
            return messages
        start = first.parent
        if start is None:
            return []
        pending = []
        seen = {first.uuid}
        current = start
        while current is not None and current in self.links and current not in seen and current not in self.memo:
            seen.add(current)
            pending.append(current)
            current = self.links[current]
        messages = list(self.memo.get(current, [])) if current is not None else []
        for uuid in reversed(pending):
            line = self.by_uuid.get(uuid)
            if line is not None:
                _append(messages, line)
        self.memo[start] = messages
        return messages


def _append(messages: list[Message], line: _Line) -> None:
    """Add a line to the context: a new message, or merged into the last one when the role repeats."""
    if line.role == "assistant" and line.request is None and line.model == "<synthetic>":
        return  # Claude Code does not send its own synthetic messages
    if messages and messages[-1].role == line.role:
        last = messages[-1]
        messages[-1] = Message(last.role, last.blocks + line.blocks, last.index, {}, last.line, last.col)
    else:
        messages.append(Message(line.role, list(line.blocks), len(messages), {}, line.node.line, line.node.col))


def _conversation(
    messages: list[Message], request_lines: list[_Line], key: str, base_meta: dict[str, Any], name: str
) -> Conversation:
    first = request_lines[0]
    usage = next((line.usage for line in reversed(request_lines) if line.usage is not None), None)
    model, tokenizer = pick_model(first.model)
    meta = dict(base_meta)
    meta["message_id"] = key
    if first.request_id:
        meta["request_id"] = first.request_id
    meta["line"] = first.node.line
    meta["lines"] = [line.node.line for line in request_lines]
    if first.sidechain:
        meta["sidechain"] = True
    if first.model and model is None:
        meta["model"] = first.model
    return Conversation(
        source_format=SOURCE,
        messages=messages,
        name=name,
        model=model,
        tokenizer=tokenizer,
        meta=meta,
        recorded=usage,
        line=first.node.line,
    )


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)
