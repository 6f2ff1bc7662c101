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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.names import MAIN_THREAD, SEPARATOR
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
    compact,
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
    records = list(fields["messages"].value)
    return _turns(records, {k: v.value for k, v in fields.items() if k != "messages"}, path, [])


def convert_lines(nodes: list[Node], path: str) -> Sequence[Session]:
    """The turns of a JSON-lines chat log (updates applied, re-written messages replaced)."""
    header: dict[str, Any] = {}
    order: list[str] = []
    by_id: dict[str, Node] = {}
    anonymous = 0
    warnings: list[str] = []
    for node in nodes:
        value = node.value
        if not isinstance(value, dict):
            warnings.append(f"line {node.line}: not an object, skipped")
            continue
        if "$rewindTo" in value:
            # the user rewound: that message and everything after it are gone (an unknown id clears all)
            target = value["$rewindTo"].value
            cut = order.index(target) if isinstance(target, str) and target in order else 0
            for key in order[cut:]:
                by_id.pop(key, None)
            del order[cut:]
            continue
        if "$set" in value:
            update = value["$set"].value
            if isinstance(update, dict):
                header.update({k: v.value for k, v in update.items() if not isinstance(v.value, (dict, list))})
                replacement = update.get("messages")
                if replacement is not None and isinstance(replacement.value, list) and replacement.value:
                    # the history rewritten (masking, compression): the new list replaces the messages
                    order, by_id = [], {}
                    for item in replacement.value:
                        ident = item.value.get("id") if isinstance(item.value, dict) else None
                        key = ident.value if ident is not None and isinstance(ident.value, str) else f"#{anonymous}"
                        anonymous += ident is None
                        if key not in by_id:
                            order.append(key)
                        by_id[key] = item
            continue
        if "type" not in value:
            header.update({k: v.value for k, v in value.items() if not isinstance(v.value, (dict, list))})
            continue
        ident = value.get("id")
        key = ident.value if ident is not None and isinstance(ident.value, str) else f"#{anonymous}"
        anonymous += ident is None
        if key not in by_id:
            order.append(key)
        by_id[key] = node
    return _turns([by_id[key] for key in order], header, path, warnings)


def _turns(records: list[Node], header: dict[str, Any], path: str, warnings: list[str]) -> Sequence[Session]:
    history: list[Message] = []
    turns: list[tuple[list[Message], RecordedUsage | None, dict[str, Any], str | None]] = []
    notes = 0
    since_reply = False
    for record in records:
        value = record.value
        kind = value.get("type").value if isinstance(value, dict) and value.get("type") is not None else None
        if kind not in _SENT:
            if kind in ("info", "error", "warning"):
                notes += 1
            else:
                warnings.append(f"line {record.line}: a record of type {kind!r} was not placed")
            continue
        if kind == "user":
            append_merged(history, Message("user", _content(value.get("content"), record), 0, {}, record.line, record.col))
            since_reply = True
            continue
        model = value["model"].value if "model" in value and isinstance(value["model"].value, str) else None
        turns.append((list(history), _usage(value.get("tokens")), {"line": record.line, "message_id": _id(value)}, model))
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
            append_merged(history, Message("assistant", reply, 0, {}, record.line, record.col))
        if results:
            append_merged(history, Message("tool", results, 0, {}, record.line, record.col))
        since_reply = bool(results)
    if since_reply and history:
        turns.append((list(history), None, {"line": records[-1].line, "pending": True}, None))
    if not turns:
        raise SessionError(
            "the Gemini CLI chat has no message yet", "import it again once the chat has a message", path, 1, 1
        )
    meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "thread": THREAD,
                            "not_recorded": NOT_RECORDED}
    for key, label in (("sessionId", "session_id"), ("projectHash", "project_hash"), ("kind", "kind")):
        if isinstance(header.get(key), str):
            meta[label] = header[key]
    if notes:
        meta["ui_notes"] = notes
    name = f"Gemini CLI session {meta.get('session_id', os.path.basename(path))}"
    link_tool_names(list({id(m): m for turn in turns for m in turn[0]}.values()))  # each message once
    cache: SectionCache = {}
    sessions = []
    last_model = None
    models: list[str | None] = []
    for messages, usage, extra, model in turns:
        last_model = model or last_model
        models.append(last_model)
        session_model, tokenizer = pick_model(last_model)
        turn_meta = dict(meta)
        turn_meta.update(extra)
        turn_meta["pending"] = bool(extra.get("pending"))
        turn_meta["warnings"] = list(warnings)
        if last_model and session_model is None:
            turn_meta["model"] = last_model
        conv = Conversation(SOURCE, messages=messages, name=name, model=session_model, tokenizer=tokenizer,
                            meta=turn_meta, recorded=usage, line=extra["line"], window=resolve_window(last_model))
        sessions.append(with_recorded_headline(build_session(conv, path, cache), HIDDEN_LABEL, warnings))
    return predicted(sessions, models)


# Gemini CLI's hidden part (system prompt, GEMINI.md memory, tool declarations) before a chat records
# it: the median of the first requests of the real chats of issue 26's corpus (6.7k, 8.7k, 9.6k beyond
# their visible turn; it grows with the tools and memory a project loads).
TYPICAL_HIDDEN = 8_700
PRIOR_SCALE, PRIOR_WEIGHT = 1.0, 400.0  # the heuristic count against recorded growth, until pairs say otherwise
PAIR_RATIO = (0.5, 3.0)  # a pair outside this is a jump the chat does not show, not a scale


def predicted(sessions: list[Session], models: list[str | None]) -> LazyTurns:
    """Every turn without a recorded usage (the pending request, a reply whose tokens are all zero) gets
    its headline predicted from the recorded ones (README, "Real agents"): the last recorded context plus
    what was added since at the fitted scale (the growth of the recorded input against that of the
    heuristic count, over pairs of one model); after a context restart, the hidden part that request
    implies plus the visible parts; before any recorded request, Gemini CLI's typical hidden part (≈)."""
    count = default_registry().get(HEURISTIC).count
    sizes: dict[int, int] = {}

    def visible(session: Session) -> int:
        total = 0
        for section in session.sections:
            if section.kind == "inferred" or section.meta.get("category") == "reply":
                continue
            if section.tokens is not None:
                total += section.tokens
            elif section.text:
                key = id(section.text)
                if key not in sizes:
                    sizes[key] = count(section.text)
                total += sizes[key]
        return total

    out: list[Session] = []
    fits: dict[int, tuple[int, int]] = {}  # a recorded turn's (recorded, hidden part kept): fitted when built
    pairs: list[tuple[float, float]] = []
    last: tuple[int, int, str | None] | None = None  # (recorded, visible, model) of the newest recorded turn
    hidden_kept = 0  # the hidden part of the newest recorded turn whose visible parts fit what it recorded
    for index, (session, model) in enumerate(zip(sessions, models, strict=True)):
        shown = visible(session)
        recorded = session.recorded.context_tokens if session.recorded is not None else None
        if recorded is not None:
            if last is not None and last[2] == model and shown > last[1] and recorded > last[0] \
                    and PAIR_RATIO[0] <= (recorded - last[0]) / (shown - last[1]) <= PAIR_RATIO[1]:
                pairs.append((recorded - last[0], shown - last[1]))
            last = (recorded, shown, model)
            if recorded >= shown:
                hidden_kept = recorded - shown
            # else the hidden part the requests before implied is kept (the system prompt and tools do not shrink)
            out.append(session)
            fits[index] = (recorded, hidden_kept)
            continue
        recent = pairs[-16:]
        scale = (sum(p[0] for p in recent) + PRIOR_SCALE * PRIOR_WEIGHT) / (sum(p[1] for p in recent) + PRIOR_WEIGHT)
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
        if not session.pending:
            notes += ("the reply's tokens are all zero (a failed or cancelled call): not a recorded 0; its context "
                      "is estimated",)
        out.append(replace(session, sections=(inferred_section(0, HIDDEN_LABEL), *session.sections),
                           context_tokens=max(0, target), calibration=Calibration(how, round(scale, 4), hidden),
                           warnings=(*session.warnings, *notes)))
    total = len(out)

    def build(index: int) -> Session:
        # a recorded turn's parts are fitted to what it recorded only when the turn is read: fitting makes a
        # section per part, and a long chat's every turn holds every earlier part (O(turns × parts) if eager)
        session = out[index]
        fit = fits.get(index)
        if fit is not None:
            session = fitted_to_recorded(session, fit[0], count, fit[1])
        return replace(session, turn=index + 1, turn_count=total)

    def info(index: int) -> dict[str, Any]:
        session = out[index]  # the facts a turn's fit does not change (``LazyTurns.info``)
        return {"thread": session.thread, "pending": session.pending, "line": session.line,
                "request": None if session.pending else index + 1, "recorded": session.recorded,
                "model": session.model_name}

    return LazyTurns(total, build, info)


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
