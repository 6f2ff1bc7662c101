"""Gemini CLI chat logs (``~/.gemini/tmp/<project_hash>/chats/session-*.json`` or ``.jsonl``).

Two layouts of one record: a JSON document ``{sessionId, projectHash, startTime, lastUpdated,
messages: [...]}``, and the JSON-lines form (a first line with the session fields, then one message
record per line, ``{"$set": {...}}`` updates of the session fields, and a message written again under
the same ``id`` once its tool calls finished: the last copy wins, in the first copy's place).

Messages are ``user`` (content a string or parts), ``gemini`` (the reply text, ``toolCalls`` with
their ``args`` and ``result`` parts, ``thoughts``, ``tokens`` {input, output, cached, thoughts, tool,
total} and ``model``), and ``info``/``error``/``warning`` notes of the UI, which are never sent.
One turn per ``gemini`` reply: its context is every earlier user message, reply and tool result
(thoughts are not sent back); ``Session.recorded`` is its ``tokens`` (context ``input``, cached
included). User input after the last reply is a pending turn. Gemini's tokenizer is not public: the
sessions use the ``heuristic`` approximation (``≈``), and the window is the model's.

A chat's turns are kept record by record (``Chat``, with ``ChatLines`` for the JSON-lines form's updates,
rewinds and messages written again), each built when read: a followed chat (``gemini_follow``) adds an
appended message's own parts, whatever the chat's length.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.names import MAIN_THREAD, SEPARATOR
from tokenbox.core.model.records import dataclass, replace
from tokenbox.core.model.session import Calibration, RecordedUsage, Session
from tokenbox.core.parse.nodes import Node, parse_json
from tokenbox.core.sources.files import read_text
from tokenbox.core.sources.readers.common import (
    CALL,
    HEURISTIC,
    MEDIA,
    OTHER,
    RESULT,
    TEXT,
    Block,
    Conversation,
    Message,
    SectionCache,
    build_session,
    call_argument,
    compact,
    forget_messages,
    inferred_section,
    link_tool_names,
    pick_model,
    with_recorded_headline,
)
from tokenbox.core.sources.readers.openai_responses import append_merged
from tokenbox.core.sources.turns import LazyTurns
from tokenbox.core.tokens.tokenizers import default_registry

SOURCE = "gemini-cli"
THREAD = MAIN_THREAD
NOT_RECORDED = "the system prompt and the tool definitions (Gemini CLI does not write them to chat logs)"
HIDDEN_LABEL = "system prompt and tool definitions (not in the chat log)"
_SESSION_KEYS = ("sessionId", "projectHash")
_SENT = ("user", "gemini")
_USAGE_MAX = 10**12


def detect_document(node: Node) -> bool:
    """A JSON chat log: an object with ``sessionId``, ``projectHash`` and a ``messages`` list."""
    value = node.value if isinstance(node, Node) else None
    return (isinstance(value, dict) and "tokenbox" not in value and all(k in value for k in _SESSION_KEYS)
            and "messages" in value and isinstance(value["messages"].value, list))


def is_gemini_record(value: Any) -> bool:
    """Whether one parsed (plain) JSON-lines record is a Gemini CLI chat record: the session line
    (``sessionId`` + ``projectHash``), a ``gemini`` reply or a ``$set`` update."""
    if not isinstance(value, dict):
        return False
    if all(k in value for k in _SESSION_KEYS) and "type" not in value:
        return True
    return value.get("type") == "gemini" or ("$set" in value and len(value) == 1)


def detect_lines(nodes: list[Node]) -> bool:
    """A JSON-lines chat log: a session line (``sessionId`` + ``projectHash``) or Gemini message records."""
    for node in nodes[:20]:
        value = node.value
        if not isinstance(value, dict) or "tokenbox" in value:
            return False
        if all(k in value for k in _SESSION_KEYS) and "type" not in value:
            return True
        kind = value.get("type")
        if kind is not None and kind.value == "gemini" and "id" in value and "content" in value:
            return True
    return False


def convert_document(node: Node, path: str) -> Sequence[Session]:
    """The turns of a JSON chat log."""
    fields = node.value
    chat = Chat(path)
    for record in fields["messages"].value:
        chat.add(record)
    return chat.turns({k: v.value for k, v in fields.items() if k != "messages"}, [])


def convert_lines(nodes: list[Node], path: str) -> Sequence[Session]:
    """The turns of a JSON-lines chat log (updates applied, re-written messages replaced)."""
    lines = ChatLines(path, reparse=lambda node: node, item_source=lambda _line, _index, item: item)
    for node in nodes:
        lines.add(node, node)
    return lines.turns()


class ChatLines:
    """The records of a JSON-lines chat as they stand after each line, and the chat's turns (``Chat``) kept
    in step: a line's ``$set`` updates the session fields (with ``messages``: the history rewritten —
    masking, compression — the new list replaces the records), ``$rewindTo`` drops that message and
    everything after it (an unknown id: all), and a message written again under its id replaces the earlier
    copy in its place (the last copy wins).

    A new record is added to the turns as it comes; a record written again or cut off takes the turns back
    to where it stood (``Chat.truncate``) and adds it and the records after it again, each got again from
    its ``source`` by ``reparse`` (a follower keeps the line's text, not its positioned tree). Gemini CLI
    writes its newest reply again as its tool calls finish: that costs the one record."""

    def __init__(self, path: str, reparse: Callable[[Any], Node], item_source: Callable[[Any, int, Node], Any]) -> None:
        self.path = path
        self.reparse = reparse  # a record's node from its source
        self.item_source = item_source  # (the $set line's source, index, item) -> that item's source
        self.header: dict[str, Any] = {}
        self.warnings: list[str] = []  # the lines that are not records
        self.keys: list[str] = []  # the records, in order, by id
        self.where: dict[str, int] = {}  # id -> its place in ``keys``
        self.sources: list[Any] = []  # each record's source (its newest copy)
        self.anonymous = 0
        self.chat = Chat(path)
        self.replayed = 0  # records added again after one before them was written again or cut (tests count it)
        self.reshaped = False  # whether a line changed a record added before (``save`` clears it)

    def add(self, node: Node, source: Any) -> None:
        """One line of the file (a parsed node; ``source`` gets it again)."""
        value = node.value
        if not isinstance(value, dict):
            self.warnings.append(f"line {node.line}: not an object, skipped")
            return
        if "$rewindTo" in value:
            # the user rewound: that message and everything after it are gone (an unknown id clears all)
            target = value["$rewindTo"].value
            self._cut(self.where[target] if isinstance(target, str) and target in self.where else 0)
            return
        if "$set" in value:
            update = value["$set"].value
            if isinstance(update, dict):
                self.header.update({k: v.value for k, v in update.items() if not isinstance(v.value, (dict, list))})
                replacement = update.get("messages")
                if replacement is not None and isinstance(replacement.value, list) and replacement.value:
                    self._cut(0)  # the history rewritten (masking, compression): the new list replaces the messages
                    for index, item in enumerate(replacement.value):
                        ident = item.value.get("id") if isinstance(item.value, dict) else None
                        self._record(self._key(ident), item, self.item_source(source, index, item))
            return
        if "type" not in value:
            self.header.update({k: v.value for k, v in value.items() if not isinstance(v.value, (dict, list))})
            return
        self._record(self._key(value.get("id")), node, source)

    def turns(self) -> LazyTurns:
        """The chat's turns as the lines so far give them."""
        return self.chat.turns(self.header, self.warnings)

    def _key(self, ident: Node | None) -> str:
        key = ident.value if ident is not None and isinstance(ident.value, str) else f"#{self.anonymous}"
        self.anonymous += ident is None
        return key

    def _record(self, key: str, node: Node, source: Any) -> None:
        place = self.where.get(key)
        if place is None:
            self.where[key] = len(self.keys)
            self.keys.append(key)
            self.sources.append(source)
            self.chat.add(node)
            return
        self.reshaped = True
        self.sources[place] = source
        self.chat.truncate(place)
        self.chat.add(node)
        for later in range(place + 1, len(self.keys)):
            self.replayed += 1
            self.chat.add(self.reparse(self.sources[later]))

    def _cut(self, cut: int) -> None:
        if cut < len(self.keys):
            self.reshaped = True
        for key in self.keys[cut:]:
            del self.where[key]
        del self.keys[cut:], self.sources[cut:]
        self.chat.truncate(cut)

    def save(self) -> tuple:
        """What ``restore`` needs to take back the lines added after this call."""
        self.reshaped = False
        return list(self.keys), list(self.sources), dict(self.header), len(self.warnings), self.anonymous, len(self.chat.marks)

    def restore(self, saved: tuple) -> None:
        """The records as ``save`` found them: the chat cut back when only records were added since, else
        made again from the records' sources."""
        keys, sources, header, warnings, anonymous, records = saved
        self.keys, self.sources, self.header, self.anonymous = keys, sources, header, anonymous
        self.where = {key: place for place, key in enumerate(keys)}
        del self.warnings[warnings:]
        if not self.reshaped:
            self.chat.truncate(records)
        else:
            self.chat = Chat(self.path)
            for source in sources:
                self.chat.add(self.reparse(source))
        self.reshaped = False


# Gemini CLI's hidden part (system prompt, GEMINI.md memory, tool declarations) before a chat records
# it: the median of the first requests of the real chats of issue 26's corpus (6.7k, 8.7k, 9.6k beyond
# their visible turn; it grows with the tools and memory a project loads).
TYPICAL_HIDDEN = 8_700
PRIOR_SCALE, PRIOR_WEIGHT = 1.0, 400.0  # the heuristic count against recorded growth, until pairs say otherwise
PAIR_RATIO = (0.5, 3.0)  # a pair outside this is a jump the chat does not show, not a scale
RECENT_PAIRS = 16  # the pairs a prediction's scale is fitted over
_UNSET = object()


@dataclass(frozen=True, slots=True)
class _Turn:
    """One turn as the chat kept it: its messages (the first ``count`` of the history: all but the last as
    they stand, the last as it was then), its visible parts' heuristic count and its prediction."""

    count: int
    last: Message | None
    visible: int
    usage: RecordedUsage | None
    extra: dict[str, Any]
    model: str | None  # the newest model named so far
    fit: tuple[int, int] | None  # recorded: (recorded, hidden part kept), fitted when the turn is built
    guess: tuple[int, int, str, tuple[str, ...], float] | None  # else: (target, hidden, how, notes, scale)


class Chat:
    """A chat's turns, added to record by record (``add``) and taken back to any earlier record
    (``truncate``): one turn per ``gemini`` reply (its context every earlier user message, reply and tool
    result: thoughts are not sent back), and a pending turn for user input or tool results after the last.

    What a turn's prediction needs is kept as the records come (README, "Real agents"): the visible parts'
    heuristic count summed per message, the pairs of recorded growth against counted growth, the newest
    recorded turn and the hidden part it implied; a turn's ``Session`` is built only when read, so each
    record costs its own parts, whatever the chat's length. Tool results are named after their calls as
    their blocks are made (a result before its call, which only a read of all the messages names as a cold
    read does, makes ``turns`` name them all again)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = default_registry().get(HEURISTIC).count
        self.history: list[Message] = []
        self.kept: list[_Turn] = []  # one per reply
        self.marks: list[tuple] = []  # per record added: the state before it (``truncate``)
        self.lines: list[int] = []  # per record added: its line
        self.visible = 0  # the history's visible parts, counted
        self.notes = 0
        self.since_reply = False
        self.warnings: list[str] = []
        self.pairs: list[tuple[int, int]] = []
        self.last: tuple[int, int, str | None] | None = None  # (recorded, visible, model) of the newest recorded turn
        self.hidden_kept = 0  # the hidden part of the newest recorded turn whose visible parts fit what it recorded
        self.model: str | None = None
        self.calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, argument) of the calls so far
        self.call_log: list[tuple[str, Any]] = []  # (call id, what it named before) per call, to take back
        self.unanswered: list[str] = []  # the ids of results made before any call of theirs, in order
        self.unanswered_ids: set[str] = set()
        self.reordered: int | None = None  # the first record whose call answers a result made before it
        self.counted = 0  # texts counted (tests count the work of an append)
        self.cache: SectionCache = {}

    def add(self, record: Node) -> None:
        """One message record."""
        value = record.value
        kind = value.get("type").value if isinstance(value, dict) and value.get("type") is not None else None
        history = self.history
        self.marks.append((len(history), history[-1] if history else None, len(self.kept), self.visible, self.notes,
                           self.since_reply, len(self.warnings), len(self.pairs), self.last, self.hidden_kept,
                           self.model, len(self.call_log), len(self.unanswered)))
        self.lines.append(record.line)
        if kind not in _SENT:
            if kind in ("info", "error", "warning"):
                self.notes += 1
            else:
                self.warnings.append(f"line {record.line}: a record of type {kind!r} was not placed")
            return
        if kind == "user":
            self._append("user", _content(value.get("content"), record), record)
            self.since_reply = True
            return
        model = value["model"].value if "model" in value and isinstance(value["model"].value, str) else None
        self.model = model or self.model
        self._keep(_usage(value.get("tokens")), {"line": record.line, "message_id": _id(value)})
        reply = _content(value.get("content"), record)
        reply = [b for b in reply if b.text or b.role != TEXT]
        results: list[Block] = []
        calls = value.get("toolCalls")
        for index, call in enumerate(calls.value if calls is not None and isinstance(calls.value, list) else []):
            call_block, result_blocks = _tool_call(call, index)
            if call_block is not None:
                reply.append(call_block)
                results.extend(result_blocks)
        if reply:
            self._append("assistant", reply, record)
        if results:
            self._append("tool", results, record)
        self.since_reply = bool(results)

    def truncate(self, records: int) -> None:
        """The chat as it was before its record ``records`` (0-based) was added."""
        if records >= len(self.marks):
            return
        (length, last, kept, self.visible, self.notes, self.since_reply, warnings, pairs, self.last, self.hidden_kept,
         self.model, calls, unanswered) = self.marks[records]
        history = self.history
        gone = history[max(0, length - 1):]
        del history[length:]
        if last is not None:
            history[-1] = last
        forget_messages(self.cache, [m for m in gone if m is not last])
        for call_id, before in reversed(self.call_log[calls:]):
            if before is _UNSET:
                del self.calls[call_id]
            else:
                self.calls[call_id] = before
        if unanswered < len(self.unanswered):
            del self.unanswered[unanswered:]
            self.unanswered_ids = set(self.unanswered)
        del self.call_log[calls:], self.kept[kept:], self.warnings[warnings:]
        del self.pairs[pairs:], self.marks[records:], self.lines[records:]
        if self.reordered is not None and self.reordered >= records:
            self.reordered = None

    def _append(self, role: str, blocks: list[Block], record: Node) -> None:
        self._link(blocks)
        visible = 0
        for block in blocks:
            if block.text:  # each text part as the turn counts its section (CONTRACT §7)
                self.counted += 1
                visible += self.count(block.text)
        append_merged(self.history, Message(role, blocks, 0, {}, record.line, record.col))
        self.visible += visible

    def _link(self, blocks: list[Block]) -> None:
        """Each tool result named after the call it answers, as ``link_tool_names`` names them."""
        for block in blocks:
            call_id = block.meta.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            if block.role == CALL and block.tool:
                if call_id in self.unanswered_ids and self.reordered is None:
                    self.reordered = len(self.marks) - 1
                self.call_log.append((call_id, self.calls.get(call_id, _UNSET)))
                self.calls[call_id] = (block.tool, call_argument(block.tool, block.meta.get("tool_input")))
            elif block.role == RESULT and call_id in self.calls:
                tool, argument = self.calls[call_id]
                if block.tool is None:
                    block.tool = tool
                    block.meta["tool"] = tool
                if argument:
                    block.meta["call_argument"] = argument
            elif block.role == RESULT:
                self.unanswered.append(call_id)
                self.unanswered_ids.add(call_id)

    def _keep(self, usage: RecordedUsage | None, extra: dict[str, Any]) -> None:
        """A reply's turn: the history so far, with its prediction's parameters."""
        history, shown, model = self.history, self.visible, self.model
        if usage is None:
            self.kept.append(self._predicted(usage, extra, False))
            return
        recorded = usage.context_tokens
        last = self.last
        if last is not None and last[2] == model and shown > last[1] and recorded > last[0] \
                and PAIR_RATIO[0] <= (recorded - last[0]) / (shown - last[1]) <= PAIR_RATIO[1]:
            self.pairs.append((recorded - last[0], shown - last[1]))
        self.last = (recorded, shown, model)
        if recorded >= shown:
            self.hidden_kept = recorded - shown
        # else the hidden part the requests before implied is kept (the system prompt and tools do not shrink)
        self.kept.append(_Turn(len(history), history[-1] if history else None, shown, usage, extra, model,
                               (recorded, self.hidden_kept), None))

    def _predicted(self, usage: RecordedUsage | None, extra: dict[str, Any], pending: bool) -> _Turn:
        """A turn without a recorded usage (the pending request, a reply whose tokens are all zero): its
        headline predicted from the recorded ones — the last recorded context plus what was added since at
        the fitted scale (the growth of the recorded input against that of the heuristic count, over pairs
        of one model); after a context restart, the hidden part that request implies plus the visible parts;
        before any recorded request, Gemini CLI's typical hidden part (≈)."""
        shown, last = self.visible, self.last
        recent = self.pairs[-RECENT_PAIRS:]
        scale = (sum(p[0] for p in recent) + PRIOR_SCALE * PRIOR_WEIGHT) / (sum(p[1] for p in recent) + PRIOR_WEIGHT)
        notes: tuple[str, ...]
        if last is None:
            target, hidden = TYPICAL_HIDDEN + shown, TYPICAL_HIDDEN
            how = (f"predicted: no request of this chat recorded its usage yet: Gemini CLI's typical hidden part "
                   f"{TYPICAL_HIDDEN} (≈) plus the visible parts")
            notes = (f"the system prompt and tool declarations are not in the chat log and no request has recorded their "
                     f"size yet: counted as Gemini CLI's typical {TYPICAL_HIDDEN} (≈)",)
        else:
            hidden = last[0] - round(scale * last[1])
            if shown >= last[1]:
                target = last[0] + round(scale * (shown - last[1]))
                how = f"predicted: the last recorded {last[0]} plus what was added since, ×{scale:.3f}"
            else:
                target = hidden + round(scale * shown)
                how = f"predicted: hidden part {hidden} plus the visible parts ×{scale:.3f} (the history was replaced)"
            notes = ()
        if not pending:
            notes += ("the reply's tokens are all zero (a failed or cancelled call): not a recorded 0; its context "
                      "is estimated",)
        history = self.history
        return _Turn(len(history), history[-1] if history else None, shown, usage, extra, self.model, None,
                     (target, hidden, how, notes, scale))

    def turns(self, header: dict[str, Any], line_warnings: list[str]) -> LazyTurns:
        """Every turn so far, each built when read (``header``: the session's fields; ``line_warnings``: the
        file's own, before the records')."""
        specs = list(self.kept)
        if self.since_reply and self.history:
            specs.append(self._predicted(None, {"line": self.lines[-1], "pending": True}, True))
        if not specs:
            raise SessionError(
                "the Gemini CLI chat has no message yet", "import it again once the chat has a message", self.path, 1, 1
            )
        history = list(self.history)  # as it stands now: a later record may replace its last message
        if self.reordered is not None:
            self._relink(specs, history)
        warnings = [*line_warnings, *self.warnings]
        path = self.path
        meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "thread": THREAD,
                                "not_recorded": NOT_RECORDED}
        for key, label in (("sessionId", "session_id"), ("projectHash", "project_hash"), ("kind", "kind")):
            if isinstance(header.get(key), str):
                meta[label] = header[key]
        if self.notes:
            meta["ui_notes"] = self.notes
        name = f"Gemini CLI session {meta.get('session_id', os.path.basename(path))}"
        total = len(specs)
        count = self.count
        chat = self

        def build(index: int) -> Session:
            # a recorded turn's parts are fitted to what it recorded only when the turn is read: fitting makes a
            # section per part, and a long chat's every turn holds every earlier part (O(turns × parts) if eager)
            turn = specs[index]
            messages = [*history[:turn.count - 1], turn.last] if turn.last is not None else []
            session_model, tokenizer = pick_model(turn.model)
            turn_meta = dict(meta)
            turn_meta.update(turn.extra)
            turn_meta["pending"] = bool(turn.extra.get("pending"))
            turn_meta["warnings"] = list(warnings)
            if turn.model and session_model is None:
                turn_meta["model"] = turn.model
            conv = Conversation(SOURCE, messages=messages, name=name, model=session_model, tokenizer=tokenizer,
                                meta=turn_meta, recorded=turn.usage, line=turn.extra["line"],
                                window=resolve_window(turn.model))
            session = with_recorded_headline(build_session(conv, path, chat.cache), HIDDEN_LABEL, warnings)
            if turn.fit is not None:
                session = fitted_to_recorded(session, turn.fit[0], count, turn.fit[1])
            elif turn.guess is not None:
                target, hidden, how, notes, scale = turn.guess
                session = replace(session, sections=(inferred_section(0, HIDDEN_LABEL), *session.sections),
                                  context_tokens=max(0, target), calibration=Calibration(how, round(scale, 4), hidden),
                                  warnings=(*session.warnings, *notes))
            return replace(session, turn=index + 1, turn_count=total)

        def info(index: int) -> dict[str, Any]:
            turn = specs[index]  # the facts a turn's build does not change (``LazyTurns.info``)
            pending = bool(turn.extra.get("pending"))
            return {"thread": THREAD, "pending": pending, "line": turn.extra["line"],
                    "request": None if pending else index + 1, "recorded": turn.usage,
                    "model": pick_model(turn.model)[0] or turn.model or None}

        return LazyTurns(total, build, info)

    def _relink(self, specs: list[_Turn], history: list[Message]) -> None:
        """Name every tool result as a cold read does (``link_tool_names`` over each turn's messages once, in
        order): a result made before its call is named only by a later pass over its message. The sections
        built from the names before are dropped."""
        seen: dict[int, Message] = {}
        before = 0
        for turn in specs:
            messages = [*history[:turn.count - 1], turn.last] if turn.last is not None else []
            for message in messages[max(0, before - 1):]:
                seen.setdefault(id(message), message)
            before = turn.count
        for message in seen.values():
            for block in message.blocks:
                if block.role == RESULT and "tool" in block.meta:  # named by a link (a result's own name is not in meta)
                    block.tool = None
                    del block.meta["tool"]
                    block.meta.pop("call_argument", None)
        link_tool_names(list(seen.values()))
        self.cache = {}

def fitted_to_recorded(session: Session, recorded: int, count: Callable[[str], int], hidden_before: int = 0) -> Session:
    """A recorded turn whose visible parts count more with the heuristic than the request recorded (a long
    shell output the model's tokenizer packs tighter): each counted text part gets a fixed size, its count
    ``count`` scaled down by one factor, so that the parts add up to the recorded headline instead of the
    hidden part going below 0 and the headline above what was recorded (CONTRACT §7); a warning says so.
    The parts fit what is left of the recorded context once ``hidden_before`` (the hidden part the request
    before implied) is kept, when that leaves anything."""
    heuristic = default_registry().get(HEURISTIC)
    counted = [i for i, section in enumerate(session.sections) if section.kind != "inferred"
               and section.meta.get("category") != "reply" and section.tokens is None and section.text]
    fixed = sum(section.tokens or 0 for section in session.sections
                if section.kind != "inferred" and section.meta.get("category") != "reply")
    room = recorded - fixed
    joined = heuristic.count_joined([session.sections[i].text or "" for i in counted], SEPARATOR)  # as the engine counts
    if not counted or joined <= room:
        return session
    sizes = {i: count(session.sections[i].text or "") for i in counted}
    estimated = sum(sizes.values())
    keeps_hidden = 0 < hidden_before < room  # else the parts take the whole of what is left
    room = room - hidden_before if keeps_hidden else max(0, room)
    sections = list(session.sections)
    for i, size in sizes.items():
        sections[i] = replace(sections[i], tokens=size * room // estimated)  # floored: they add up to room at most
    factor = room / estimated
    kept = f" less the hidden part an earlier request implied ({hidden_before})" if keeps_hidden else ""
    note = (f"the visible parts count {joined} tokens with {HEURISTIC}, more than the {recorded} the request "
            f"recorded: their counts are scaled ×{factor:.4f} to fit it{kept}")
    return replace(session, sections=tuple(sections), warnings=(*session.warnings, note))


def _id(value: dict[str, Node]) -> str | None:
    node = value.get("id")
    return node.value if node is not None and isinstance(node.value, str) else None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _USAGE_MAX:
        return None
    return value


def _usage(node: Node | None) -> RecordedUsage | None:
    """``tokens`` as recorded usage: ``input`` is the prompt (cached included), ``cached`` its cache read."""
    if node is None or not isinstance(node.value, dict):
        return None
    plain = node.plain()
    numbers = {key: _count(plain.get(key, 0)) for key in ("input", "output", "cached")}
    if "input" not in plain or any(v is None for v in numbers.values()) or not any(numbers.values()):
        return None  # all zero: a failed or cancelled call, not a recorded 0
    return RecordedUsage(
        context_tokens=numbers["input"],  # type: ignore[arg-type]
        input_tokens=numbers["input"],  # type: ignore[arg-type]
        cache_creation_input_tokens=0,
        cache_read_input_tokens=numbers["cached"],  # type: ignore[arg-type]
        output_tokens=numbers["output"],  # type: ignore[arg-type]
    )


def _content(node: Node | None, record: Node) -> list[Block]:
    """A message's content: a string, or Gemini parts (text, inline data, function calls/responses)."""
    meta = {"line": record.line}
    if node is None or node.value is None:
        return [Block("text", TEXT, "", meta=dict(meta), line=record.line, col=record.col)]
    if isinstance(node.value, str):
        return [Block("text", TEXT, node.value, meta=dict(meta), line=node.line, col=node.col)]
    parts = node.value if isinstance(node.value, list) else [node]
    blocks = []
    for part in parts:
        value = part.plain() if isinstance(part, Node) else part
        pos = dict(line=part.line, col=part.col)
        if isinstance(value, dict) and isinstance(value.get("text"), str):
            if value.get("thought") is True:
                continue  # thought parts are not sent back to the model
            blocks.append(Block("text", TEXT, value["text"], meta=dict(meta), **pos))
        elif isinstance(value, dict) and ("inlineData" in value or "fileData" in value):
            data = value.get("inlineData") or value.get("fileData") or {}
            mime = data.get("mimeType", "unknown type") if isinstance(data, dict) else "unknown type"
            blocks.append(Block("media", MEDIA, f"[media: {mime}]", meta=dict(meta), **pos))
        elif isinstance(value, dict) and isinstance(value.get("functionResponse"), dict):
            blocks.append(_response_block(value["functionResponse"], part))
        elif isinstance(value, dict) and isinstance(value.get("functionCall"), dict):
            call = value["functionCall"]
            name = call.get("name") if isinstance(call.get("name"), str) else "function"
            block_meta = dict(meta)
            if isinstance(call.get("id"), str):
                block_meta["tool_use_id"] = call["id"]
            blocks.append(Block("functionCall", CALL, f"[tool_call {name}]\n{compact(call.get('args', {}))}", name,
                                block_meta, **pos))
        else:
            blocks.append(Block("part", OTHER, compact(value), meta={**meta, "unknown": True}, **pos))
    return blocks


def _response_block(response: dict[str, Any], where: Node) -> Block:
    name = response.get("name") if isinstance(response.get("name"), str) else None
    body = response.get("response")
    if isinstance(body, dict) and isinstance(body.get("output"), str) and len(body) == 1:
        text = body["output"]
    elif isinstance(body, dict) and isinstance(body.get("error"), str) and len(body) == 1:
        text = body["error"]
    else:
        text = compact(body) if body is not None else ""
    meta: dict[str, Any] = {"line": where.line}
    if isinstance(response.get("id"), str):
        meta["tool_use_id"] = response["id"]
    if isinstance(body, dict) and "error" in body:
        meta["is_error"] = True
    return Block("functionResponse", RESULT, text, name, meta, None, where.line, where.col)


def _tool_call(call: Node, index: int) -> tuple[Block | None, list[Block]]:
    """A ``toolCalls`` entry: the call the reply made and the result parts sent back after it."""
    value = call.plain() if isinstance(call, Node) else None
    if not isinstance(value, dict):
        return None, []
    name = value.get("name") if isinstance(value.get("name"), str) else "function"
    meta: dict[str, Any] = {"line": call.line, "tool_call": index}
    if isinstance(value.get("id"), str):
        meta["tool_use_id"] = value["id"]
    block = Block("toolCall", CALL, f"[tool_call {name}]\n{compact(value.get('args', {}))}", name, meta, None,
                  call.line, call.col)
    results: list[Block] = []
    result = call.value.get("result")
    parts = result.value if result is not None and isinstance(result.value, list) else []
    for part in parts:
        plain = part.plain()
        if isinstance(plain, dict) and isinstance(plain.get("functionResponse"), dict):
            results.append(_response_block(plain["functionResponse"], part))
        elif isinstance(plain, dict) and isinstance(plain.get("text"), str):
            results.append(Block("text", RESULT, plain["text"], name, {"line": part.line}, None, part.line, part.col))
    if not results and value.get("status") in ("success", "error", "cancelled"):
        text = value.get("error") if isinstance(value.get("error"), str) else ""
        extra = {"tool_use_id": meta["tool_use_id"]} if "tool_use_id" in meta else {}
        results.append(Block("functionResponse", RESULT, text, name, {"line": call.line, **extra}, None, call.line, call.col))
    return block, results


def subagent_threads(path: str, max_bytes: int | None, main: Sequence[Session]) -> dict[str, Sequence[Session]]:
    """The sub-agent chats of a Gemini CLI session, each a thread: ``chats/<session id>/<sub-agent>.jsonl``
    beside the session's own file (their header says ``kind: subagent``). One that cannot be read leaves
    its thread out, not the session."""
    if not main or main[0].source_format != SOURCE:
        return {}
    session_id = main[0].meta.get("session_id")
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), session_id) if isinstance(session_id, str) else ""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith((".jsonl", ".json")))
    except OSError:
        return {}
    threads: dict[str, Sequence[Session]] = {}
    for name in names:
        child = os.path.join(folder, name)
        try:
            text = read_text(child, max_bytes)
            nodes = [parse_json(line, child, number, 1, unit="line") for number, line in enumerate(text.split("\n"), 1)
                     if line.strip()]
            turns = convert_lines(nodes, child) if name.endswith(".jsonl") else convert_document(nodes[0], child)
        except (OSError, SessionError):
            continue
        thread = "subagent-" + os.path.splitext(name)[0][:12]
        threads[thread] = [replace(t, thread=thread, meta={**t.meta, "thread": thread}) for t in turns]
    return threads
