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
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from tokenbox.core.model.errors import SessionError, TokenizerError
from tokenbox.core.model.llms import lookup_model, resolve_window
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import dataclass, field, replace
from tokenbox.core.model.session import RecordedUsage, Session, TurnHistory
from tokenbox.core.parse.nodes import Node, json_line
from tokenbox.core.sources.readers.common import (
    TEXT,
    THINKING,
    Block,
    Conversation,
    Message,
    SectionCache,
    ToolDef,
    build_session,
    compact,
    forget_changed,
    inferred_section,
    link_tool_names,
    tool_text,
    with_recorded_headline,
)
from tokenbox.core.sources.readers.openai_responses import OUTPUT_ITEM_TYPES, append_merged, item_message
from tokenbox.core.sources.turns import LazyTurns, with_history
from tokenbox.core.tokens.tokenizers import default_registry

SOURCE = "codex-rollout"
LINE_TYPES = ("session_meta", "response_item", "turn_context", "event_msg", "compacted", "world_state",
              "token_usage_record", "inter_agent_communication_metadata")
# Items a rollout records that are not sent to the model (Codex's own undo snapshots).
UNSENT_ITEMS = ("ghost_snapshot",)
EXACT_TOKENIZER = "o200k_base"  # every Codex model (gpt-5*, codex-*, o3/o4) uses o200k_base
NOT_RECORDED = "the tool definitions (Codex does not write them to rollouts)"
HIDDEN_LABEL = "tool definitions and message framing (not in the rollout)"
THREAD = MAIN_THREAD
_USAGE_MAX = 10**12
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")  # a request's recorded usage
HEAD_MESSAGES = 6  # a request's first messages, where Codex repeats the instructions (``_kept_instructions``)
BUILT_KEPT = 8  # recorded requests' sessions a rollout keeps built (the first one besides)


def detect(values: list[Any]) -> bool:
    """Whether a JSON-lines file is a Codex rollout, by the parsed values of its first lines
    (``formats.head_values``): ``{type, payload}`` lines of the rollout types, and no line of another kind."""
    seen = 0
    for value in values[:50]:
        if not isinstance(value, dict) or "tokenbox" in value:
            return False
        kind = value.get("type")
        if kind is not None and kind in LINE_TYPES and "payload" in value:
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
    reasoning_since: list[Block] = field(default_factory=list)  # reasoning output since the last request
    world: dict[str, Any] = field(default_factory=dict)  # the world state, as its last full line and diffs make it
    world_block: Block | None = None
    tools: list[ToolDef] = field(default_factory=list)  # session_meta.dynamic_tools
    retained: dict[str, Any] = field(default_factory=dict)  # the last compaction's window ids


class _Turn(NamedTuple):
    """One request of the rollout, without a copy of its context: ``history[:cut]`` as it was when the
    request was closed. Between two compactions the history only grows, and only its last message is
    ever replaced (a merged item, ``append_merged``): that message is kept as it was (``tail``)."""

    history: list[Message]
    cut: int
    tail: Message | None
    usage: RecordedUsage | None
    line: int
    model: str | None
    window: int | None
    epoch: int

    def messages(self) -> list[Message]:
        """The request's context, in order (a new list)."""
        messages = self.history[: self.cut]
        if messages:
            messages[-1] = self.tail  # type: ignore[assignment]
        return messages

    def head(self) -> list[Message]:
        """Its first ``HEAD_MESSAGES`` messages (where Codex repeats the instructions as a user message)."""
        head = self.history[: min(self.cut, HEAD_MESSAGES)]
        if self.cut <= HEAD_MESSAGES and head:
            head[-1] = self.tail  # type: ignore[assignment]
        return head


def _turn(state: _State, cut: int, usage: RecordedUsage | None, line: int) -> _Turn:
    history = state.history
    return _Turn(history, cut, history[cut - 1] if cut else None, usage, line, state.model, state.window, state.epoch)


class Rollout:
    """A rollout read so far, fed one line at a time (``feed``); ``main_turns()`` gives its turns, each
    built when asked for. What it keeps is the conversation once (each request refers to the history it
    had) and, per request, its numbers: a line costs what it adds, whatever the length of the history.

    Every turn carries what the whole file says (its instructions, world state, warnings, compactions),
    as a read of the whole file gives it: the turns handed out after a line changed one of those are
    built again (a turn already handed out is never changed).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.state = _State(path)
        self.meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}}
        self.requests: list[_Turn] = []
        self.compactions: list[dict[str, Any]] = []
        self.items = 0
        self.lines_read = 0  # non-blank lines fed
        self.last_line: int | None = None
        self.cache: SectionCache = {}
        # the tool calls' names and arguments met so far (``link_tool_names``, fed request by request), and per
        # history list the messages linked: how many, and the last one (it may be merged with the next item)
        self._calls: tuple[dict[str, str], dict[str, str]] = ({}, {})
        self._linked: dict[int, tuple[int, Message | None]] = {}
        self._heads: dict[int, Message] = {}  # every request's first messages, once each
        self._settled = 0  # requests linked and their first messages collected
        self._turns: LazyTurns | None = None  # the turns last handed out, until a line is fed
        self._built: dict[int, Session] = {}  # recorded requests built (before their number in the file is set)
        self._built_key: tuple | None = None
        self._unsized_built = False  # a pending turn was built while its reasoning had no size yet

    # ------------------------------------------------------------------ reading

    def feed(self, number: int, node: Node) -> None:
        """Read the parsed line ``number`` (a line that is not blank)."""
        state = self.state
        self._turns = None
        self.lines_read += 1
        self.last_line = number
        value = node.value
        kind = value.get("type") if isinstance(value, dict) else None
        kind = kind.value if kind is not None else None
        payload = value.get("payload") if isinstance(value, dict) else None
        if kind not in LINE_TYPES or payload is None or not isinstance(payload.value, dict):
            state.warnings.append(f"line {number}: not a rollout record ({_label(kind)}), skipped")
            return
        fields = payload.value
        if kind == "session_meta":
            _session_meta(state, fields, payload, self.meta)
        elif kind == "turn_context":
            model = _string(fields, "model")
            state.model = model or state.model
            state.cwd = _string(fields, "cwd") or state.cwd
        elif kind == "world_state":
            _world_state(state, fields, payload)
        elif kind == "token_usage_record":
            # newer builds record a request's usage on a line of its own (a thread's, by ``thread_id``)
            self._request(_token_count, state, {"info": payload}, number, record=True)
        elif kind == "inter_agent_communication_metadata":
            return
        elif kind == "response_item":
            if _string(fields, "type") in UNSENT_ITEMS:
                return
            try:
                msg = item_message(payload, self.path, f"line {number}", self.items)
            except SessionError as exc:
                state.warnings.append(f"line {number}: unreadable item skipped ({exc.problem})")
                return
            self.items += 1
            for block in msg.blocks:
                block.meta["line"] = number
                block.meta.pop("path", None)
            history = state.history
            last = history[-1] if history else None
            _add_item(state, msg, payload.plain())
            if last is not None and history[-1] is not last and not (self.requests and self.requests[-1].tail is last):
                forget_changed(self.cache, [last], len(history) - 1)  # merged into a new one: no turn holds it now
        elif kind == "compacted":
            _compacted(state, payload, number)
            # the ledger's record (analysis.compactions), as Claude Code's transcripts give theirs
            self.compactions.append({"line": number, "pre_tokens": None, "trigger": None,
                                     "after_request": len(self.requests)})
        else:  # event_msg
            event = _string(fields, "type")
            if event == "token_count":
                self._request(_token_count, state, fields, number)
            elif event == "task_started":
                window = _count(fields.get("model_context_window"))
                state.window = window or state.window
            elif event == "thread_settings_applied":
                settings = fields.get("thread_settings")
                model = _string(settings.value, "model") if settings is not None and isinstance(settings.value, dict) else None
                state.model = model or state.model

    def _request(self, read: Any, *args: Any, **kwargs: Any) -> None:
        """A line that may close a request (``read``: ``_token_count``)."""
        reasoning = self.state.reasoning_since
        turn = read(*args, **kwargs)
        if turn is not None:
            self.requests.append(turn)
            if self._unsized_built and reasoning:
                self._sized(reasoning)

    def feed_text(self, number: int, text: str) -> None:
        """Parse the line ``number`` and read it (a blank line is skipped; a line that does not parse raises
        the positional parser's ``SessionError``, placed in the file)."""
        if text.strip():
            self.feed(number, json_line(text, self.path, number))

    # ------------------------------------------------------------------ the turns

    def main_turns(self) -> LazyTurns:
        """One turn per model request (plus a pending one when input follows the last request), each built
        when read; ``SessionError`` when the rollout holds no conversation yet."""
        if self._turns is not None:
            return self._turns
        state = self.state
        turns = list(self.requests)
        if state.new_input or (not turns and state.history):
            turns.append(_turn(state, len(state.history), None, self.last_line or 1))
        if not turns:
            raise SessionError(
                "the Codex rollout has no conversation yet",
                "import it again once the session has a message, or follow it with tokenbox-tui --codex",
                self.path,
                1,
                1,
            )
        self._settle(turns)
        whole = _Whole(self, turns)
        key = whole.key()
        if key != self._built_key:
            self._built, self._built_key = {}, key
        whole.built = self._built  # turns handed out earlier keep their own (built from what the file said then)
        count = len(turns)
        lazy: LazyTurns

        def build(index: int) -> Session:
            return with_history(self._session(whole, index), TurnHistory(lazy, index), index + 1, count)  # type: ignore[arg-type]

        def info(index: int) -> dict[str, Any]:
            turn = turns[index]
            return {"thread": THREAD, "pending": turn.usage is None, "line": turn.line,
                    "request": None if turn.usage is None else f"line {turn.line}", "recorded": turn.usage,
                    "model": turn.model or state.model}

        lazy = LazyTurns(count, build, info)
        self._turns = lazy
        return lazy

    def main_turns_only(self) -> LazyTurns:
        """``main_turns()`` (a one-shot read's turns: a rollout has no other thread)."""
        return self.main_turns()

    def all_threads(self, max_bytes: int | None = None) -> dict[str, Sequence[Session]]:
        """A rollout has one thread, ``main``."""
        return {THREAD: self.main_turns()}

    def release(self) -> None:
        """Let go of the turns handed out (they refer back to this rollout)."""
        self._turns = None
        self._built = {}

    def _settle(self, turns: list[_Turn]) -> None:
        """Link the tool results of the requests not linked yet to their calls, and collect their first
        messages (``link_tool_names`` and the instructions' check over every request, in order, as a whole
        read does them): the recorded requests once, a pending one for this read only."""
        names, arguments = self._calls
        for turn in self.requests[self._settled :]:
            link_tool_names(self._unlinked(turn, advance=True), names, arguments)
            self._heads.update((id(m), m) for m in turn.head())
        self._settled = len(self.requests)
        if len(turns) > len(self.requests):  # the pending turn: its messages may yet go (a compaction)
            link_tool_names(self._unlinked(turns[-1], advance=False), dict(names), dict(arguments))

    def _unlinked(self, turn: _Turn, *, advance: bool) -> list[Message]:
        """The messages of ``turn`` no request before it held (a merged message is a new one)."""
        cut = turn.cut
        done, last = self._linked.get(id(turn.history), (0, None))
        if cut < done or cut == 0:
            return []
        messages = turn.history
        new = []
        if done and (messages[done - 1] if done < cut else turn.tail) is not last:
            new.append(messages[done - 1] if done < cut else turn.tail)
        if cut > done:
            new.extend(messages[done : cut - 1])
            new.append(turn.tail)  # type: ignore[arg-type]
        if advance:
            self._linked[id(turn.history)] = (cut, turn.tail)
        return new  # type: ignore[return-value]

    def _session(self, whole: _Whole, index: int) -> Session:
        """Turn ``index`` as a whole read builds it (a recorded request is built once per ``_Whole.key``)."""
        turn = whole.turns[index]
        if turn.usage is not None:
            built = whole.built
            found = built.get(index)
            if found is None:
                found = built[index] = whole.build(turn)
                if len(built) > BUILT_KEPT:
                    built.pop(next(k for k in built if k not in (0, index)))  # the first stays: a prediction reads it
            return found
        session = self._pending(whole, turn)
        records = whole.turns[:-1]  # the requests recorded before it (the pending turn is the last)
        if not records:
            return session
        last = len(records) - 1
        recorded = self._session(whole, last)
        if records[last].epoch == turn.epoch:
            return _predicted(session, turn.messages(), records[last].messages(), records[last].usage, recorded)  # type: ignore[arg-type]
        return _restarted(session, records[0].usage, self._session(whole, 0))  # type: ignore[arg-type]


    def _pending(self, whole: _Whole, turn: _Turn) -> Session:
        """The pending turn's session as the file is now. The reasoning written since the last request is
        sized in place when the next request is recorded (``_size_reasoning``): what is built of it now is
        dropped then (``_sized``)."""
        self._unsized_built = self._unsized_built or bool(self.state.reasoning_since)
        return whole.build(turn)

    def _sized(self, blocks: list[Block]) -> None:
        """``blocks`` (reasoning) were just sized in place: drop what was built from the messages holding them
        while they were not (a pending turn), as a whole read never builds them before."""
        self._unsized_built = False
        wanted = {id(block) for block in blocks}
        history = self.state.history
        changed = []
        position = len(history)
        while wanted and position > 0:  # written since the last request: near the end
            position -= 1
            found = {id(block) for block in history[position].blocks} & wanted
            if found:
                changed.append(history[position])
                wanted -= found
        forget_changed(self.cache, changed, position)


class _Whole:
    """What every turn of a read carries from the whole file: the session's meta, the instructions that
    are not repeated in the conversation, the world state, the tools, the warnings."""

    def __init__(self, rollout: Rollout, turns: list[_Turn]) -> None:
        state = rollout.state
        self.rollout = rollout
        self.turns = turns
        heads = dict(rollout._heads)
        if len(turns) > len(rollout.requests):
            heads.update((id(m), m) for m in turns[-1].head())
        self.instructions = _kept_instructions(state.instructions, heads.values())
        meta = dict(rollout.meta)
        if rollout.compactions:
            meta["compactions"] = [dict(record) for record in rollout.compactions]
        meta["thread"] = THREAD
        meta["not_recorded"] = NOT_RECORDED if self.instructions else "the instructions and " + NOT_RECORDED
        self.meta = meta
        self.name = f"Codex session {meta.get('session_id', os.path.basename(rollout.path))}"
        self.warnings = list(state.warnings)
        self.world_block = state.world_block
        self.tools = list(state.tools)
        self.model = state.model
        self.window = state.window
        self.built: dict[int, Session] = {}  # its recorded requests' sessions (shared by reads of the same key)

    def key(self) -> tuple:
        """What a recorded request's session depends on besides the request itself."""
        return (tuple(map(id, self.instructions)), repr(self.meta), len(self.warnings), id(self.world_block),
                tuple(map(id, self.tools)), self.model, self.window)

    def build(self, turn: _Turn, messages: list[Message] | None = None) -> Session:
        """The request's session before its number in the file is set (``with_history``); ``messages``: its
        context when not the request's own."""
        # The model and window in force when the request was sent (a session can switch models).
        model = turn.model or self.model
        window = turn.window or self.window
        session_model, tokenizer = tokenizer_for(model)
        turn_meta = dict(self.meta)
        if model and session_model is None:
            turn_meta["model"] = model
        if turn.usage is None:
            turn_meta["pending"] = True
        turn_meta["line"] = turn.line
        turn_meta["pending"] = turn.usage is None
        turn_meta["warnings"] = list(self.warnings)
        conv = Conversation(
            source_format=SOURCE,
            system=[*self.instructions, *([self.world_block] if self.world_block is not None else [])],
            tools=list(self.tools),
            messages=turn.messages() if messages is None else messages,
            name=self.name,
            model=session_model,
            tokenizer=tokenizer,
            meta=turn_meta,
            recorded=turn.usage,
            line=turn.line,
            window=resolve_window(model, window),
        )
        session = build_session(conv, self.rollout.path, self.rollout.cache)
        return with_recorded_headline(session, HIDDEN_LABEL, self.warnings)


def convert(text: str, path: str) -> LazyTurns:
    """The turns of a whole rollout's text (a file that is not followed: a pipe, another name): every line
    read as ``RolloutFollower`` reads it, the unterminated last one only when it parses."""
    rollout = Rollout(path)
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if number == len(lines):
            _feed_partial(rollout, number, line)
        else:
            rollout.feed_text(number, line)
    return rollout.main_turns()


def _feed_partial(rollout: Rollout, number: int, text: str) -> bool:
    """Read the unterminated last line when it is complete JSON already (an agent may be writing it);
    whether it was read."""
    if not text.strip():
        return False
    try:
        node = json_line(text, rollout.path, number)
    except SessionError:
        return False  # still being written
    rollout.feed(number, node)
    return True


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
    dynamic = fields.get("dynamic_tools")
    if dynamic is not None:
        state.tools = _dynamic_tools(dynamic.plain(), payload.line)
    if any(key in fields for key in ("base_instructions", "instructions")):
        state.instructions = []  # a later session_meta (a resumed or forked thread) states them again
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
        state.reasoning_since.extend(b for b in msg.blocks if b.type == "reasoning")
    else:
        state.new_input = True
        state.outputs_since = 0
    append_merged(state.history, msg)


def _dynamic_tools(value: Any, line: int) -> list[ToolDef]:
    """``session_meta.dynamic_tools`` (a group with ``tools``, or a list of them) as tool definitions: the
    only tool definitions a rollout writes, sent with every request."""
    groups = value if isinstance(value, list) else [value]
    tools = []
    for group in groups:
        members = group.get("tools") if isinstance(group, dict) and isinstance(group.get("tools"), list) else [group]
        for tool in members:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                extra = [(k, v) for k, v in tool.items() if k not in ("name", "description")]
                description = tool.get("description") if isinstance(tool.get("description"), str) else None
                tools.append(ToolDef(tool["name"], tool_text(tool["name"], description, extra),
                                     {"line": line, "dynamic": True}, None, line, 1))
    return tools


def _merge(into: dict[str, Any], diff: dict[str, Any]) -> None:
    for key, value in diff.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _world_state(state: _State, fields: dict[str, Node], payload: Node) -> None:
    """A ``world_state`` line: the environment Codex sends with each request (AGENTS.md, environments,
    skills, permissions, …), whole (``full``) or as a change of the last one."""
    new = fields.get("state")
    if new is None or not isinstance(new.value, dict):
        return
    plain = new.plain()
    full = fields.get("full")
    if full is not None and full.value is True:
        state.world = plain
    else:
        _merge(state.world, plain)
    model = state.world.get("model")
    if isinstance(model, str):
        state.model = model
    kept = {k: v for k, v in state.world.items() if v not in (None, False, {}, [])}
    state.world_block = Block("world_state", TEXT, compact(kept), meta={"line": payload.line, "role": "system",
                                                                         "label": "world state (environment, AGENTS.md, skills)"},
                              line=payload.line, col=payload.col)


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
    state.reasoning_since = []
    state.retained = {k: fields[k].value for k in ("window_id", "window_number", "previous_window_id", "first_window_id")
                      if k in fields and isinstance(fields[k].value, (str, int))}


def _usage(node: Node | None) -> RecordedUsage | None:
    if node is None or not isinstance(node.value, dict):
        return None
    fields = node.value
    numbers = {}
    for key in USAGE_KEYS:
        value = _count(fields.get(key)) if key in fields else 0
        if value is None:
            return None
        numbers[key] = value
    if "input_tokens" not in fields or not any(numbers.values()):
        return None  # all zero: a failed call or Codex's own bookkeeping (after a compaction), not a request of 0
    return RecordedUsage(
        context_tokens=numbers["input_tokens"],
        input_tokens=numbers["input_tokens"],
        cache_creation_input_tokens=0,
        cache_read_input_tokens=numbers["cached_input_tokens"],
        output_tokens=numbers["output_tokens"],
    )


def _token_count(state: _State, fields: dict[str, Node], line: int, record: bool = False) -> _Turn | None:
    """The request a ``token_count`` event (or a ``token_usage_record`` line) closes, or ``None`` (no usage
    yet, or a repeat of the last one: newer rollouts write each token_count twice)."""
    info = fields.get("info")
    if info is None or not isinstance(info.value, dict):
        return None
    window = _count(info.value.get("model_context_window"))
    state.window = window or state.window
    total = info.value.get("total_token_usage")
    total_plain = total.plain() if total is not None else None
    last = info.value.get("last_token_usage")
    if last is None and record:
        last = info.value.get("usage") or info.value.get("token_usage")
        inner = info.value.get("info")
        if last is None and inner is not None and isinstance(inner.value, dict):
            last = inner.value.get("last_token_usage")
    usage = _usage(last)
    if usage is None:
        if last is not None and isinstance(last.value, dict) and not any(
                isinstance(v.value, int) and v.value for k, v in last.value.items() if k != "total_tokens"):
            return None  # all zero: not a request (README, "Real agents")
        if last is not None:
            state.warnings.append(f"line {line}: a token_count without readable last_token_usage, skipped")
        return None
    if total_plain is not None and total_plain == state.last_total:
        return None  # Codex repeats the last usage (e.g. with new rate limits): not a new request
    if total_plain is None and record and last is not None and last.plain() == state.last_total:
        return None
    state.last_total = total_plain if total_plain is not None else (last.plain() if record and last is not None else None)
    _size_reasoning(state, _count(last.value.get("reasoning_output_tokens")) if isinstance(last.value, dict) else None)
    # The request's context: everything before the model's output written since the last request.
    cut = len(state.history)
    outputs = state.outputs_since
    while outputs > 0 and cut > 0 and state.history[cut - 1].role == "assistant":
        cut -= 1
        outputs = 0  # consecutive output items are merged into one assistant message
    state.outputs_since = 0
    state.new_input = False
    return _turn(state, cut, usage, line)


def _size_reasoning(state: _State, recorded: int | None) -> None:
    """Give the encrypted reasoning a request produced the size that request recorded
    (``reasoning_output_tokens``, shared by length when it wrote several items): the model reads it
    back inside the same tool loop, and it is left out at the next user message."""
    blocks, state.reasoning_since = state.reasoning_since, []
    if not recorded or not blocks:
        return
    weights = [max(1, int(b.meta.get("encrypted_chars") or len(b.text) or 1)) for b in blocks]
    total = sum(weights)
    given = 0
    for index, (block, weight) in enumerate(zip(blocks, weights, strict=True)):
        share = recorded - given if index == len(blocks) - 1 else round(recorded * weight / total)
        given += share
        block.meta["tokens"] = share
        block.meta["sized_from"] = "recorded reasoning_output_tokens"
        block.meta.pop("approximate", None)


def _kept_instructions(instructions: list[Block], heads: Iterable[Message]) -> list[Block]:
    """``session_meta.instructions`` unless the conversation already holds them (``heads``: the first
    messages of every request, each once).

    Codex writes the user's instructions (AGENTS.md) to ``session_meta.instructions`` and, in newer
    versions, also sends them as a user message (``# AGENTS.md instructions for …``): counted once.
    """
    texts = [b.text for m in heads for b in m.blocks if b.role == TEXT]
    kept = []
    for block in instructions:
        probe = block.text.strip()[:400]
        if block.type == "instructions" and probe and any(probe in text for text in texts):
            continue
        kept.append(block)
    return kept


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


def _predicted(session: Session, messages: list[Message], before: list[Message], usage: RecordedUsage,
               recorded: Session) -> Session:
    """A pending turn's headline: the last recorded context plus the exact count of what was added since
    (that request's reply and the new input), plus the reasoning now sent and less the reasoning that
    left (at a new user message the earlier reasoning is dropped); the hidden part is that request's."""
    added = [b.text for m in messages[len(before):] for b in m.blocks if b.text and b.role != THINKING]
    tokenizer = default_registry().get(session.tokenizer or EXACT_TOKENIZER)
    delta = tokenizer.count("\n\n".join(added)) if added else 0
    reasoning = _reasoning_tokens(session) - _reasoning_tokens(recorded)
    target = max(0, usage.context_tokens + delta + reasoning)
    left = f", {-reasoning} of reasoning left the request (a new user message)" if reasoning < 0 else (
        f", {reasoning} of reasoning read back" if reasoning else "")
    note = (f"pending: predicted as the last recorded context ({usage.context_tokens}) plus {delta} tokens added "
            f"since{left} (message framing not included)")
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
        if model is None:
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                model = payload["model"]
            elif kind == "event_msg" and payload.get("type") == "thread_settings_applied":
                settings = payload.get("thread_settings")
                if isinstance(settings, dict) and isinstance(settings.get("model"), str):
                    model = settings["model"]
        if found is not None:
            if model is not None:
                break
            continue
        if kind == "compacted" or (kind == "response_item" and payload.get("type") not in OUTPUT_ITEM_TYPES
                                   and payload.get("type") not in UNSENT_ITEMS and payload.get("role") != "assistant"):
            pending = True  # as ``_add_item``: an item that is not the model's output is new input
        elif (kind == "event_msg" and payload.get("type") == "token_count") or kind == "token_usage_record":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            if kind == "token_usage_record":
                info = payload
            last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else {}
            if not last and kind == "token_usage_record":  # as ``_token_count`` reads such a line
                inner = info.get("info") if isinstance(info.get("info"), dict) else {}
                last = next((v for v in (info.get("usage"), info.get("token_usage"), inner.get("last_token_usage"))
                             if isinstance(v, dict)), {})
            context, window = last.get("input_tokens"), info.get("model_context_window")
            # all zero is not a request (as ``_usage``): a failed call or Codex's own bookkeeping
            if _plain_count(context) is not None and any(_plain_count(last.get(k)) for k in USAGE_KEYS):
                found = (context, _plain_count(window) or None)
    return Glance(found[0], found[1], model, pending) if found is not None else None


def _plain_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _USAGE_MAX else None


def _restarted(session: Session, usage: RecordedUsage, recorded: Session) -> Session:
    """A pending turn after a compaction: the hidden part the first request implies (its recorded context
    less the exact count of what the rollout shows of it: the tool definitions and framing, which do not
    change) plus the exact count of the new context."""
    tokenizer = default_registry().get(session.tokenizer or EXACT_TOKENIZER)

    def shown(turn: Session) -> int:
        texts = [s.text for s in turn.sections if s.text and s.tokens is None and s.meta.get("category") != "reply"]
        return (tokenizer.count("\n\n".join(texts)) if texts else 0) + _reasoning_tokens(turn)

    hidden = max(0, usage.context_tokens - shown(recorded))
    target = hidden + shown(session)
    note = (f"pending after a compaction: the hidden part of the first request ({hidden}: its recorded "
            f"{usage.context_tokens} less what the rollout shows of it) plus the new context, counted")
    return replace(session, sections=(inferred_section(0, HIDDEN_LABEL), *session.sections),
                   context_tokens=target, warnings=(*session.warnings, note))


def _reasoning_tokens(session: Session) -> int:
    """The sized reasoning a turn sends (earlier turns' reasoning is stripped from its sections)."""
    return sum(s.tokens or 0 for s in session.sections if s.meta.get("block") == "reasoning" and s.meta.get("category") != "reply")
