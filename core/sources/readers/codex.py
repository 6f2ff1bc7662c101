"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (the session id, ``cwd``, the
CLI version and the instructions: ``base_instructions`` / ``instructions``), ``turn_context`` (the
model, ``cwd``, policies of the next turn), ``response_item`` (the conversation items as the Responses
API takes them: messages, reasoning, tool calls and their outputs), ``event_msg`` (UI events; the
``token_count`` event carries ``info.last_token_usage`` of the request that just finished and
``model_context_window``) and ``compacted`` (the history was replaced by a summary).

One turn per model request: a ``token_count`` event with new usage closes a request, whose context
is every item before the model's own output of that request (reasoning, assistant messages and tool
calls written since the previous request). ``Session.recorded`` is that event's
``last_token_usage``: the context is ``input_tokens`` (cached tokens included,
``cached_input_tokens`` as the cache read). User input or tool outputs after the last request make a
**pending** turn (no recorded usage): the request about to be sent. The window
(``model_context_window``) is the session's ``budget.max_ctx``; counts are exact ``o200k_base`` for
the text the file holds; the tool definitions are not in rollouts (``meta["not_recorded"]``).

README, "Real agents": a recorded turn's headline (``Session.context_tokens``) is its recorded context, with an
``inferred`` part for what the rollout does not hold (tool definitions, message framing) that the
engine sizes to the rest; a pending turn is predicted as the last recorded context plus the exact
count of what was added since (never across a compaction). ``pending``, ``thread`` ("main") and
``warnings`` (lines that could not be placed, one line each) are set on the session and in its meta.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tokenbox.core.model.errors import SessionError, TokenizerError
from tokenbox.core.model.llms import lookup_model
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.session import BudgetSpec, RecordedUsage, Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers.common import (
    TEXT,
    Block,
    Conversation,
    Message,
    SectionCache,
    build_session,
    inferred_section,
    link_tool_names,
    with_recorded_headline,
)
from tokenbox.core.sources.readers.openai_responses import OUTPUT_ITEM_TYPES, append_merged, item_message
from tokenbox.core.tokens.tokenizers import default_registry

SOURCE = "codex-rollout"
LINE_TYPES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")
EXACT_TOKENIZER = "o200k_base"  # every Codex model (gpt-5*, codex-*, o3/o4) uses o200k_base
NOT_RECORDED = "the tool definitions (Codex does not write them to rollouts)"
HIDDEN_LABEL = "tool definitions and message framing (not in the rollout)"
THREAD = MAIN_THREAD
_USAGE_MAX = 10**12


def detect(nodes: list[Node]) -> bool:
    """Whether a JSON-lines file is a Codex rollout: ``{type, payload}`` lines of the rollout types."""
    seen = 0
    for node in nodes[:50]:
        value = node.value
        if not isinstance(value, dict) or "tokenbox" in value:
            return False
        kind = value.get("type")
        if kind is not None and kind.value in LINE_TYPES and "payload" in value:
            seen += 1
    return seen > 0


@dataclass
class _State:
    """What the reader knows at a point of the file."""

    path: str
    history: list[Message] = field(default_factory=list)
    instructions: list[Block] = field(default_factory=list)
    model: str | None = None
    window: int | None = None
    cwd: str | None = None
    outputs_since: int = 0  # items of the model's output since the last request's context was taken
    new_input: bool = False  # input items after the last request
    last_total: Any = None
    epoch: int = 0  # compactions so far: a prediction never spans one
    warnings: list[str] = field(default_factory=list)


def convert(nodes: list[Node], path: str) -> list[Session]:
    """One session per model request (plus a pending one when input follows the last request)."""
    state = _State(path)
    base_meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}}
    turns: list[tuple[list[Message], RecordedUsage | None, dict[str, Any]]] = []
    compactions: list[dict[str, Any]] = []
    item_count = 0
    for node in nodes:
        value = node.value
        kind = value.get("type") if isinstance(value, dict) else None
        kind = kind.value if kind is not None else None
        payload = value.get("payload") if isinstance(value, dict) else None
        if kind not in LINE_TYPES or payload is None or not isinstance(payload.value, dict):
            state.warnings.append(f"line {node.line}: not a rollout record ({_label(kind)}), skipped")
            continue
        fields = payload.value
        if kind == "session_meta":
            _session_meta(state, fields, payload, base_meta)
        elif kind == "turn_context":
            model = _string(fields, "model")
            state.model = model or state.model
            state.cwd = _string(fields, "cwd") or state.cwd
        elif kind == "response_item":
            try:
                msg = item_message(payload, path, f"line {node.line}", item_count)
            except SessionError as exc:
                state.warnings.append(f"line {node.line}: unreadable item skipped ({exc.problem})")
                continue
            item_count += 1
            for block in msg.blocks:
                block.meta["line"] = node.line
                block.meta.pop("path", None)
            _add_item(state, msg, payload.plain())
        elif kind == "compacted":
            _compacted(state, payload, node.line)
            # the ledger's record (analysis.compactions), as Claude Code's transcripts give theirs
            compactions.append({"line": node.line, "pre_tokens": None, "trigger": None, "after_request": len(turns)})
        else:  # event_msg
            event = _string(fields, "type")
            if event == "token_count":
                turn = _token_count(state, fields, node.line)
                if turn is not None:
                    turns.append(turn)
            elif event == "task_started":
                window = _count(fields.get("model_context_window"))
                state.window = window or state.window
    if state.new_input or (not turns and state.history):
        turns.append((list(state.history), None, {"pending": True, "line": nodes[-1].line if nodes else 1,
                                                  "_model": state.model, "_window": state.window,
                                                  "_epoch": state.epoch}))
    if not turns:
        raise SessionError(
            "the Codex rollout has no conversation yet",
            "import it again once the session has a message, or follow it with tokenbox-tui --codex",
            path,
            1,
            1,
        )
    if compactions:
        base_meta["compactions"] = compactions
    return _sessions(state, turns, base_meta)


def _label(kind: Any) -> str:
    return repr(kind) if isinstance(kind, str) else "no type"


def _string(fields: dict[str, Node], key: str) -> str | None:
    node = fields.get(key)
    return node.value if node is not None and isinstance(node.value, str) else None


def _count(node: Node | None) -> int | None:
    if node is None or isinstance(node.value, bool) or not isinstance(node.value, int):
        return None
    return node.value if 0 <= node.value <= _USAGE_MAX else None


def _session_meta(state: _State, fields: dict[str, Node], payload: Node, meta: dict[str, Any]) -> None:
    for key, label in (("id", "session_id"), ("cli_version", "version"), ("originator", "originator")):
        text = _string(fields, key)
        if text:
            meta[label] = text
    state.cwd = _string(fields, "cwd") or state.cwd
    if state.cwd:
        meta["cwd"] = state.cwd
    state.model = _string(fields, "model") or state.model
    for key in ("base_instructions", "instructions"):
        node = fields.get(key)
        if node is None:
            continue
        text = node.value if isinstance(node.value, str) else None
        if isinstance(node.value, dict) and isinstance(node.value.get("text"), Node):
            inner = node.value["text"]
            text = inner.value if isinstance(inner.value, str) else None
        if text:
            state.instructions.append(Block(key, TEXT, text, meta={"line": payload.line, "role": "system"},
                                            line=node.line, col=node.col))


def _add_item(state: _State, msg: Message, value: dict[str, Any]) -> None:
    output = value.get("type") in OUTPUT_ITEM_TYPES or msg.role == "assistant"
    if output:
        state.outputs_since += 1
    else:
        state.new_input = True
        state.outputs_since = 0
    append_merged(state.history, msg)


def _compacted(state: _State, payload: Node, line: int) -> None:
    """The history replaced: by ``replacement_history`` when the file has it, else by the summary alone."""
    fields = payload.value
    replacement = fields.get("replacement_history")
    history: list[Message] = []
    if replacement is not None and isinstance(replacement.value, list):
        for index, item in enumerate(replacement.value):
            try:
                msg = item_message(item, state.path, f"line {line}.replacement_history[{index}]", index)
            except SessionError:
                state.warnings.append(f"line {line}: an unreadable item of the compacted history skipped")
                continue
            for block in msg.blocks:
                block.meta["line"] = line
                block.meta.pop("path", None)
            append_merged(history, msg)
    else:
        summary = _string(fields, "message") or ""
        history.append(Message("user", [Block("compaction_summary", TEXT, summary, meta={"line": line, "compacted": True},
                                              line=payload.line, col=payload.col)], 0, {}, payload.line, payload.col))
        state.warnings.append(
            f"line {line}: compacted history rebuilt from the summary only (Codex also keeps recent user messages)"
        )
    state.history = history
    state.outputs_since = 0
    state.new_input = True
    state.epoch += 1


def _usage(node: Node | None) -> RecordedUsage | None:
    if node is None or not isinstance(node.value, dict):
        return None
    fields = node.value
    numbers = {}
    for key in ("input_tokens", "cached_input_tokens", "output_tokens"):
        value = _count(fields.get(key)) if key in fields else 0
        if value is None:
            return None
        numbers[key] = value
    if "input_tokens" not in fields:
        return None
    return RecordedUsage(
        context_tokens=numbers["input_tokens"],
        input_tokens=numbers["input_tokens"],
        cache_creation_input_tokens=0,
        cache_read_input_tokens=numbers["cached_input_tokens"],
        output_tokens=numbers["output_tokens"],
    )


def _token_count(state: _State, fields: dict[str, Node], line: int) -> tuple[list[Message], RecordedUsage, dict[str, Any]] | None:
    """The request a ``token_count`` event closes, or ``None`` (no usage yet, or a repeat of the last one)."""
    info = fields.get("info")
    if info is None or not isinstance(info.value, dict):
        return None
    window = _count(info.value.get("model_context_window"))
    state.window = window or state.window
    total = info.value.get("total_token_usage")
    total_plain = total.plain() if total is not None else None
    last = info.value.get("last_token_usage")
    usage = _usage(last)
    if usage is None:
        if last is not None:
            state.warnings.append(f"line {line}: a token_count without readable last_token_usage, skipped")
        return None
    if total_plain is not None and total_plain == state.last_total:
        return None  # Codex repeats the last usage (e.g. with new rate limits): not a new request
    state.last_total = total_plain
    # The request's context: everything before the model's output written since the last request.
    cut = len(state.history)
    outputs = state.outputs_since
    while outputs > 0 and cut > 0 and state.history[cut - 1].role == "assistant":
        cut -= 1
        outputs = 0  # consecutive output items are merged into one assistant message
    context = state.history[:cut]
    state.outputs_since = 0
    state.new_input = False
    return context, usage, {"line": line, "_model": state.model, "_window": state.window, "_epoch": state.epoch}


def _drop_repeated_instructions(state: _State, turns: list[tuple[list[Message], Any, Any]]) -> None:
    """Leave out ``session_meta.instructions`` when the conversation already holds them.

    Codex writes the user's instructions (AGENTS.md) to ``session_meta.instructions`` and, in newer
    versions, also sends them as a user message (``# AGENTS.md instructions for …``): counted once.
    """
    texts = [b.text for turn in turns for m in turn[0][:6] for b in m.blocks if b.role == TEXT]
    kept = []
    for block in state.instructions:
        probe = block.text.strip()[:400]
        if block.type == "instructions" and probe and any(probe in text for text in texts):
            continue
        kept.append(block)
    state.instructions = kept


def tokenizer_for(model: str | None) -> tuple[str | None, str | None]:
    """``(session.model, session.tokenizer)``: the table's model when it knows it, else ``o200k_base`` by name."""
    if model:
        try:
            info = lookup_model(model)
        except TokenizerError:
            return None, EXACT_TOKENIZER
        if info.tokenizer:
            return model, None
    return None, EXACT_TOKENIZER


def _sessions(
    state: _State, turns: list[tuple[list[Message], RecordedUsage | None, dict[str, Any]]], base_meta: dict[str, Any]
) -> list[Session]:
    path = state.path
    _drop_repeated_instructions(state, turns)
    meta = dict(base_meta)
    meta["thread"] = THREAD
    meta["not_recorded"] = NOT_RECORDED if state.instructions else "the instructions and " + NOT_RECORDED
    if state.window is None:
        state.warnings.append("no model_context_window in the file: the window is the model's or the default")
    link_tool_names(list({id(m): m for turn in turns for m in turn[0]}.values()))  # each message once
    name = f"Codex session {meta.get('session_id', os.path.basename(path))}"
    cache: SectionCache = {}
    sessions = []
    previous: tuple[list[Message], RecordedUsage, int] | None = None
    for messages, usage, extra in turns:
        # The model and window in force when the request was sent (a session can switch models).
        model = extra.pop("_model", None) or state.model
        window = extra.pop("_window", None) or state.window
        epoch = extra.pop("_epoch", 0)
        session_model, tokenizer = tokenizer_for(model)
        turn_meta = dict(meta)
        if model and session_model is None:
            turn_meta["model"] = model
        turn_meta.update(extra)
        turn_meta["pending"] = bool(extra.get("pending"))
        turn_meta["warnings"] = list(state.warnings)
        conv = Conversation(
            source_format=SOURCE,
            system=list(state.instructions),
            messages=messages,
            name=name,
            model=session_model,
            tokenizer=tokenizer,
            meta=turn_meta,
            recorded=usage,
            line=extra.get("line", 1),
        )
        session = build_session(conv, path, cache)
        if window is not None:
            session = replace(session, budget=BudgetSpec(max_ctx=window, reserve_out=session.budget.reserve_out))
        session = with_recorded_headline(session, HIDDEN_LABEL, state.warnings)
        if usage is None and previous is not None and previous[2] == epoch:
            session = _predicted(session, messages, *previous[:2])
        if usage is not None:
            previous = (messages, usage, epoch)
        sessions.append(session)
    return sessions


def _predicted(session: Session, messages: list[Message], before: list[Message], usage: RecordedUsage) -> Session:
    """A pending turn's headline: the last recorded context plus the exact count of what was added since
    (that request's reply and the new input); the hidden part is the one that request recorded."""
    added = [b.text for m in messages[len(before):] for b in m.blocks if b.text]
    tokenizer = default_registry().get(session.tokenizer or EXACT_TOKENIZER)
    delta = tokenizer.count("\n\n".join(added)) if added else 0
    target = usage.context_tokens + delta
    note = (f"pending: predicted as the last recorded context ({usage.context_tokens}) plus {delta} tokens added "
            "since (message framing not included)")
    return replace(session, sections=(inferred_section(0, HIDDEN_LABEL), *session.sections),
                   context_tokens=target, warnings=(*session.warnings, note))


@dataclass(frozen=True, slots=True)
class Glance:
    """The newest request a rollout's tail records (``tail_glance``): what a board shows before it reads the
    whole rollout."""

    context: int  # its recorded context (``last_token_usage.input_tokens``)
    window: int | None  # ``model_context_window`` as recorded with it
    model: str | None  # the newest ``turn_context``'s model in the tail
    pending: bool  # input (or a compaction) follows it: the next request is about to be sent


def tail_glance(lines: Sequence[str]) -> Glance | None:
    """The newest request recorded in the complete ``lines`` of a rollout's tail, read as ``convert`` reads
    them (``None``: no ``token_count`` with usage among them)."""
    pending = False
    found: tuple[int, int | None] | None = None
    model = None
    for text in reversed(lines):
        try:
            value = json.loads(text)
        except ValueError:
            continue
        payload = value.get("payload") if isinstance(value, dict) else None
        if not isinstance(payload, dict):
            continue
        kind = value.get("type")
        if kind == "turn_context" and model is None and isinstance(payload.get("model"), str):
            model = payload["model"]
        if found is not None:
            if model is not None:
                break
            continue
        if kind == "compacted" or (kind == "response_item" and payload.get("type") not in OUTPUT_ITEM_TYPES
                                   and payload.get("role") != "assistant"):
            pending = True  # as ``_add_item``: an item that is not the model's output is new input
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else {}
            context, window = last.get("input_tokens"), info.get("model_context_window")
            if _plain_count(context) is not None:
                found = (context, _plain_count(window) or None)
    return Glance(found[0], found[1], model, pending) if found is not None else None


def _plain_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _USAGE_MAX else None

