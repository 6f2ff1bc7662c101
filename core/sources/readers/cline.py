"""Cline, Roo Code and Kilo Code (before 5.x) task folders: one turn per model request.

A task folder (``<VS Code user dir>/globalStorage/<extension>/tasks/<task id>/``, or Cline's
``~/.cline/data/tasks/<task id>/``) holds ``api_conversation_history.json`` — a JSON array of
Anthropic-shaped messages ``{role, content, ts?, modelInfo?, metrics?}`` — and ``ui_messages.json``,
what the chat panel shows: ``{ts, type: say|ask, say?, text?, images?, conversationHistoryIndex?}``.
Each request has a ``say: api_req_started`` message whose ``text`` is JSON with ``tokensIn``,
``tokensOut``, ``cacheWrites`` and ``cacheReads``: the request's **context is tokensIn + cacheWrites +
cacheReads** (tokensIn excludes the cache). Newer Cline also writes each reply's usage on the assistant
message (``metrics.tokens{prompt, completion, cached}``, cached = writes + reads); the two agree.

The reader takes the folder or either file (the other is read from beside it). Requests come from,
in this order: the replies' ``metrics``; ``api_req_started`` with ``conversationHistoryIndex`` (the
request sent ``api[0 … index + 1]``); ``api_req_started`` paired in order with the replies; and, for a
``ui_messages.json`` alone, the ``request`` text each ``api_req_started`` carries (the user turn as
sent) with the replies the panel shows. An ``api_req_started`` without usage yet is the request in
flight (pending); user input after the last request is a pending turn; a request that recorded no
tokens (a failed call) is estimated, with a warning. Roo Code condenses a long conversation
(``condenseParent``/``truncationParent`` on the messages it replaced): later requests leave those out,
and its sub-tasks (``history_item.json`` ``childIds``, folders beside this one) are threads. The
system prompt and the tool definitions are not in the folder: they are the ``inferred`` part.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.files import decode_text, read_bytes
from tokenbox.core.sources.probe import Probe
from tokenbox.core.sources.readers import anthropic, images
from tokenbox.core.sources.readers.agentlog import AgentLog, HistoryPrefix, Request, message_estimate
from tokenbox.core.sources.readers.common import MEDIA, TEXT, Block, Message, link_tool_names
from tokenbox.core.tokens.charclass import BaseEstimates

SOURCE = "cline-task"
API_FILE = "api_conversation_history.json"
UI_FILE = "ui_messages.json"
HISTORY_ITEM = "history_item.json"  # Roo Code: the task's summary, with its sub-tasks
METADATA = "task_metadata.json"  # Cline: files in context and the models used
HIDDEN_LABEL = "system prompt and tool definitions (not in the task folder)"
NOT_RECORDED = "the system prompt and the tool definitions (the task folder does not hold them)"
_API_HEAD = re.compile(rb'^\s*\[\s*\{\s*"(role|content)"\s*:')
# a Gemini CLI saved chat is also an array of role messages, of ``parts`` (Cline's have ``content``)
_GEMINI_HEAD = re.compile(rb'^\s*\[\s*\{\s*"role"\s*:\s*"(user|model)"\s*,\s*"parts"\s*:')
_UI_HEAD = re.compile(rb'^\s*\[\s*\{\s*"(ts|type|say|ask)"\s*:')
_USAGE_MAX = 10**12
_REPLACED = ("condenseParent", "truncationParent")  # Roo Code: a message a summary or truncation replaced


def detect(found: Probe) -> bool:
    """A task folder (it holds either file), or either file (a JSON array of messages of that shape)."""
    if found.selector is not None:
        return False
    if found.is_dir:
        return API_FILE in found.names or UI_FILE in found.names
    return bool((_API_HEAD.match(found.head) and not _GEMINI_HEAD.match(found.head)) or _UI_HEAD.match(found.head))


def task_files(path: str) -> tuple[str, str | None, str | None]:
    """``(task folder, api history file or None, ui messages file or None)`` for a folder or either file."""
    if os.path.isdir(path):
        folder = path
    else:
        folder = os.path.dirname(os.path.abspath(path))
        with open(path, "rb") as handle:  # which of the two files this is, by its content
            head = handle.read(256)
        if _API_HEAD.match(head):
            ui = os.path.join(folder, UI_FILE)
            return folder, path, ui if os.path.isfile(ui) else None
        api = os.path.join(folder, API_FILE)
        return folder, api if os.path.isfile(api) else None, path
    api = os.path.join(folder, API_FILE)
    ui = os.path.join(folder, UI_FILE)
    return folder, api if os.path.isfile(api) else None, ui if os.path.isfile(ui) else None


def _stamp(path: str | None) -> tuple[int, int, int, int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class TaskFollower:
    """Follows one task folder: a read parses again only a file that changed, and keeps every message
    that is the same as before (its sections are not built again)."""

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.stamps: tuple[Any, ...] | None = None
        self.log: AgentLog | None = None
        self.task = _Task(path)

    def read(self) -> AgentLog:
        folder, api, ui = task_files(self.path)
        children = _children(folder)
        stamps = (_stamp(api), _stamp(ui), tuple(_stamp(os.path.join(c, API_FILE)) for c in children))
        if self.log is not None and stamps == self.stamps:
            return self.log
        self.log = self.task.read(folder, api, ui, children, self.max_bytes)
        self.stamps = stamps
        return self.log


def follow(path: str, max_bytes: int | None = None) -> TaskFollower:
    """The follower of a task folder (or of either of its files)."""
    return TaskFollower(path, max_bytes)


def convert(found: Probe, path: str) -> Any:
    """The main thread's turns of one cold read."""
    return follow(path).read().main_turns()


def _load(path: str, max_bytes: int | None) -> list[Any]:
    """A task file as JSON (a list); every problem a ``SessionError`` naming the file."""
    data = read_bytes(path, max_bytes)
    text = decode_text(data, path)
    try:
        value = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        col = getattr(exc, "colno", None)
        raise SessionError(f"not valid JSON ({getattr(exc, 'msg', exc)})",
                           "the task file is cut short or was being written: read it again", path, line, col) from None
    if not isinstance(value, list):
        raise SessionError("a Cline task file is a JSON array", "name the task folder or one of its files", path, 1, 1)
    return value


def _children(folder: str) -> list[str]:
    """Roo Code sub-task folders of this task (``history_item.json`` ``childIds``, beside it)."""
    try:
        with open(os.path.join(folder, HISTORY_ITEM), "rb") as handle:
            item = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return []
    ids = item.get("childIds") if isinstance(item, dict) else None
    if not isinstance(ids, list):
        return []
    parent = os.path.dirname(folder)
    return [os.path.join(parent, i) for i in ids if isinstance(i, str) and os.path.isdir(os.path.join(parent, i))]


@dataclass
class _Memo:
    """One file's messages as last read: the raw values and what was made of them (kept when unchanged)."""

    raw: list[Any] = field(default_factory=list)
    made: list[Message | None] = field(default_factory=list)


class _Task:
    """Reads a task folder; keeps the messages of the last read to reuse the unchanged ones."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.memos: dict[str, _Memo] = {}
        self.log: AgentLog | None = None
        self.bases = BaseEstimates()

    def read(self, folder: str, api: str | None, ui: str | None, children: list[str], max_bytes: int | None) -> AgentLog:
        warnings: list[str] = []
        threads: dict[str, list[Request]] = {}
        api_values = _load(api, max_bytes) if api else None
        ui_values = _load(ui, max_bytes) if ui else []
        threads[MAIN_THREAD] = self._requests(api or ui or folder, api_values, ui_values, warnings)
        for child in children:
            child_api = os.path.join(child, API_FILE)
            child_ui = os.path.join(child, UI_FILE)
            try:
                values = _load(child_api, max_bytes) if os.path.isfile(child_api) else None
                ui_child = _load(child_ui, max_bytes) if os.path.isfile(child_ui) else []
            except SessionError as exc:
                warnings.append(f"sub-task {os.path.basename(child)}: {exc.problem}, skipped")
                continue
            threads[f"subtask-{os.path.basename(child)[:8]}"] = self._requests(child_api, values, ui_child, warnings)
        meta: dict[str, Any] = {"task_id": os.path.basename(folder.rstrip(os.sep))}
        used = _models_used(folder)
        if used:
            meta["models_used"] = used
        if api_values is None:
            warnings.append("no api_conversation_history.json beside ui_messages.json: the messages are what the "
                            "panel shows of each request, the rest is counted in the hidden part")
        previous = self.log
        log = AgentLog(SOURCE, self.path, f"Cline task {meta['task_id']}", HIDDEN_LABEL, NOT_RECORDED, threads,
                       warnings, meta)
        if previous is not None:  # the sections of unchanged messages are reused
            log.cache = previous.cache
        log.bases = self.bases
        self.log = log
        return log

    def _messages(self, path: str, values: list[Any], make: Callable[[int, Any], Message | None]) -> list[Message | None]:
        memo = self.memos.setdefault(path, _Memo())
        made: list[Message | None] = []
        same = True
        for index, value in enumerate(values):
            if same and index < len(memo.raw) and memo.raw[index] == value:
                made.append(memo.made[index])
                continue
            same = False
            made.append(make(index, value))
        memo.raw, memo.made = values, made
        return made

    def _requests(self, path: str, api: list[Any] | None, ui: list[Any], warnings: list[str]) -> list[Request]:
        started = [(i, v) for i, v in enumerate(ui) if isinstance(v, dict) and v.get("say") == "api_req_started"]
        if api is None:
            return self._ui_requests(path, ui, started, warnings)
        messages = self._messages(path, api, lambda i, v: _message(i, v, warnings))
        link_tool_names([m for m in messages if m is not None])
        replies = [i for i, v in enumerate(api) if isinstance(v, dict) and v.get("role") == "assistant"]
        requests: list[Request] = []
        if any(_metrics_usage(api[i]) is not None for i in replies):
            split = [_started_usage(v)[0] for _, v in started] if len(started) == len(replies) else []
            for number, i in enumerate(replies):
                usage = _metrics_usage(api[i])
                if split and usage is not None and split[number] is not None and split[number].context_tokens == usage.context_tokens:
                    usage = split[number]  # the same figure, with the cache split into writes and reads
                requests.append(_request(api, messages, i, usage, _model(api[i]), f"message {i + 1}", i))
        elif started and all(isinstance(v.get("conversationHistoryIndex"), int) for _, v in started):
            for number, (_, value) in enumerate(started):
                end = min(len(api), max(0, value["conversationHistoryIndex"] + 2))
                usage, done = _started_usage(value)
                pending = not done and number == len(started) - 1
                requests.append(_request(api, messages, end, usage, _model(value), f"ui {number + 1}", end, pending))
        else:
            for number, i in enumerate(replies):
                usage = _started_usage(started[number][1])[0] if number < len(started) else None
                requests.append(_request(api, messages, i, usage, _model(api[i]), f"message {i + 1}", i))
        for number, request in enumerate(requests, start=1):
            if request.usage is None and not request.pending:
                request.notes = (f"request {number} recorded no usage (a failed or cancelled call): estimated",)
        end = requests[-1].meta["messages_sent"] + (0 if requests[-1].pending else 1) if requests else 0
        if not (requests and requests[-1].pending) and any(
                isinstance(v, dict) and v.get("role") == "user" for v in api[end:]):
            requests.append(_request(api, messages, len(api), None, requests[-1].model if requests else None,
                                     "pending", len(api), pending=True))
        if not _epochs(api, requests):
            _truncations(requests, self.bases)
        return requests

    def _ui_requests(self, path: str, ui: list[Any], started: list[tuple[int, Any]], warnings: list[str]) -> list[Request]:
        """Requests of a ``ui_messages.json`` alone: each request's ``request`` text, the panel's replies.

        The ``request`` text is the user turn as sent, so it already holds what the user typed since the
        previous request (``<feedback>…</feedback>``, the task): those panel messages are left out once it
        comes. A request that got no reply is sent again as a longer turn that starts with its text (Cline
        takes the unanswered user message back and adds the resumption and new feedback to it): the new
        turn replaces the old one instead of following it.
        """
        made = self._messages(path, ui, lambda i, v: _ui_message(i, v))
        history: list[Message] = []
        requests: list[Request] = []
        order = {i: n for n, (i, _) in enumerate(started)}
        typed: list[Message] = []  # the user's panel messages since the last request
        unanswered: Message | None = None  # the last request's turn while no reply followed it
        for index, value in enumerate(ui):
            message = made[index]
            if index in order:
                usage, done = _started_usage(value)
                if message is not None:
                    sent = _text(message)
                    kept = {id(m): _unsaid(m, sent) for m in typed}
                    if unanswered is not None and sent.startswith(_text(unanswered)):
                        kept[id(unanswered)] = None
                    history = [kept.get(id(m), m) for m in history]
                    history = [m for m in history if m is not None]
                    history.append(message)
                unanswered, typed = message, []
                pending = not done and order[index] == len(started) - 1
                requests.append(Request(HistoryPrefix(history), usage, index + 1, _model(value), pending=pending,
                                        key=f"ui {index + 1}", meta={"messages_sent": len(history)}))
            elif message is not None and requests:
                history.append(message)
                if message.role == "user":
                    typed.append(message)
                else:
                    unanswered = None
        return requests


def _text(message: Message) -> str:
    return "".join(b.text for b in message.blocks if b.role == TEXT)


def _unsaid(message: Message, sent: str) -> Message | None:
    """A typed panel message without the text a request's ``request`` text already holds (its images stay)."""
    blocks = [b for b in message.blocks if not (b.role == TEXT and b.text in sent)]
    if len(blocks) == len(message.blocks):
        return message
    return Message(message.role, blocks, message.index, message.meta) if blocks else None


def _request(api: list[Any], messages: list[Message | None], end: int, usage: RecordedUsage | None, model: str | None,
             key: str, line: int, pending: bool = False) -> Request:
    """The request that sent ``api[:end]``; its reply is ``api[end]`` when that is the assistant's."""
    sent = [m for m in messages[:end] if m is not None]
    reply = messages[end] if end < len(messages) and not pending else None
    reply_blocks = reply.blocks if reply is not None and reply.role == "assistant" else []
    return Request(sent, usage, line + 1, model, reply=list(reply_blocks), pending=pending,
                   key=None if pending else key, meta={"messages_sent": end})


def _epochs(api: list[Any], requests: list[Request]) -> bool:
    """Roo Code's condensing: a request after a summary leaves out the messages it replaced (a new context).
    Whether the history says so (else Cline's own truncation is looked for)."""
    replaced = {i for i, v in enumerate(api) if isinstance(v, dict) and any(v.get(k) for k in _REPLACED)}
    if not replaced:
        return False
    markers = sorted(i for i, v in enumerate(api) if isinstance(v, dict) and (v.get("isSummary") or v.get("isTruncationMarker")))
    for request in requests:
        end = request.meta["messages_sent"]
        epoch = sum(1 for m in markers if m < end)
        request.epoch = epoch
        if epoch:
            request.messages = [m for m in request.messages if m.index not in replaced]
    return True


def _truncations(requests: list[Request], bases: BaseEstimates) -> None:
    """Cline's context truncation, inferred: Cline leaves out a range of messages after the first exchange
    (``messages[2:end]``, growing at each truncation) but keeps the range in the editor's state, not in
    the task folder. A recorded context that falls while the history grows is a truncation: the end of
    the range is fitted so that the hidden part (from the first request) plus the scaled visible
    estimate comes closest to what the request recorded. Later requests keep the range; a new epoch
    starts at each truncation (no prediction spans one)."""
    recorded = [(i, r) for i, r in enumerate(requests) if r.usage is not None]
    if len(recorded) < 2:
        return
    memo: dict[int, float] = {}

    def size(message: Message) -> float:
        return message_estimate(message, bases, memo)

    growth = [(b.usage.context_tokens - a.usage.context_tokens, sum(map(size, b.messages)) - sum(map(size, a.messages)))  # type: ignore[union-attr]
              for (_, a), (_, b) in pairwise(recorded)]
    rising = [(dr, dv) for dr, dv in growth if dr > 0 and dv > 0]
    scale = min(max(sum(dr for dr, _ in rising) / sum(dv for _, dv in rising), 0.3), 5.0) if rising else 1.3
    first = recorded[0][1]
    hidden = first.usage.context_tokens - scale * sum(map(size, first.messages))  # type: ignore[union-attr]
    end = 0  # the range left out is messages[2:end] (none while end <= 2)
    epoch = 0
    last = first.usage.context_tokens  # type: ignore[union-attr]
    for request in requests:
        context = request.usage.context_tokens if request.usage is not None else None
        if context is not None and context < 0.9 * last and len(request.messages) > 4:
            sizes = [size(m) for m in request.messages]
            total = sum(sizes)
            want = (context - hidden) / scale
            best, best_gap = end, None
            removed = sum(sizes[2:end]) if end > 2 else 0.0
            for stop in range(max(end, 2), len(sizes) - 1):
                if stop > max(end, 2):
                    removed += sizes[stop - 1]
                if stop % 2:
                    continue  # a range of whole exchanges: the next message kept is a user message
                gap = abs(total - removed - want)
                if best_gap is None or gap < best_gap:
                    best, best_gap = stop, gap
            if best > end:
                end = best
                epoch += 1
        if context is not None:
            last = context
        if end > 2:
            kept = [m for m in request.messages if not 2 <= m.index < end]
            if len(kept) < len(request.messages):
                request.messages = kept
                request.notes += (f"messages 3–{end} are left out: Cline truncated the conversation (the range is fitted to "
                                  "the recorded context; Cline keeps it outside the task folder)",)
        request.epoch = epoch


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _USAGE_MAX:
        return None
    return value


def _started_usage(value: dict[str, Any]) -> tuple[RecordedUsage | None, bool]:
    """An ``api_req_started``'s usage and whether the request is over (usage written, or cancelled)."""
    try:
        info = json.loads(value.get("text") or "{}")
    except ValueError:
        return None, True
    if not isinstance(info, dict):
        return None, True
    numbers = [_count(info.get(k, 0)) for k in ("tokensIn", "cacheWrites", "cacheReads", "tokensOut")]
    over = "tokensIn" in info or "cancelReason" in info or "streamingFailedMessage" in info
    if "tokensIn" not in info or any(n is None for n in numbers):
        return None, over
    tokens_in, writes, reads, out = numbers  # type: ignore[misc]
    if tokens_in + writes + reads == 0:  # type: ignore[operator]
        return None, True  # a call that failed before the provider counted anything
    return RecordedUsage(tokens_in + writes + reads, tokens_in, writes, reads, out), True  # type: ignore[operator]


def _metrics_usage(value: Any) -> RecordedUsage | None:
    """A reply's ``metrics.tokens`` (newer Cline): context = prompt + cached; or the Cline CLI's
    ``metrics{inputTokens, cacheReadTokens, cacheWriteTokens, outputTokens}`` (input without the cache)."""
    metrics = value.get("metrics") if isinstance(value, dict) and isinstance(value.get("metrics"), dict) else {}
    if "inputTokens" in metrics:
        numbers = [_count(metrics.get(k, 0)) for k in ("inputTokens", "cacheWriteTokens", "cacheReadTokens", "outputTokens")]
        if any(n is None for n in numbers) or not sum(numbers[:3]):  # type: ignore[arg-type]
            return None
        inp, write, read, out = numbers  # type: ignore[misc]
        return RecordedUsage(inp + write + read, inp, write, read, out)  # type: ignore[operator]
    tokens = metrics.get("tokens")
    if not isinstance(tokens, dict):
        return None
    prompt, cached, out = (_count(tokens.get(k, 0)) for k in ("prompt", "cached", "completion"))
    if prompt is None or cached is None or out is None or prompt + cached == 0:
        return None
    return RecordedUsage(prompt + cached, prompt, 0, cached, out)


def _model(value: Any) -> str | None:
    info = value.get("modelInfo") if isinstance(value, dict) else None
    model = info.get("modelId") if isinstance(info, dict) else None
    return model if isinstance(model, str) and model else None


def _message(index: int, value: Any, warnings: list[str]) -> Message | None:
    """One message of the api history (Anthropic's shape), or ``None`` with a warning."""
    if not isinstance(value, dict) or value.get("role") not in ("user", "assistant"):
        warnings.append(f"message {index + 1}: not a user or assistant message, skipped")
        return None
    content = value.get("content")
    blocks: list[Block] = []
    if isinstance(content, str):
        blocks.append(Block("text", TEXT, content))
    elif isinstance(content, list):
        for number, item in enumerate(content):
            if isinstance(item, dict) and isinstance(item.get("type"), str):
                blocks.append(anthropic.plain_block(item))
            else:
                warnings.append(f"message {index + 1}: content block {number + 1} has no type, skipped")
    else:
        warnings.append(f"message {index + 1}: no content")
    meta = {"ts": value["ts"]} if isinstance(value.get("ts"), int) else {}
    return Message(value["role"], blocks, index, meta)


def _ui_message(index: int, value: Any) -> Message | None:
    """What the panel shows that was sent or said: a request's text, the user's words, the replies."""
    if not isinstance(value, dict):
        return None
    say = value.get("say") if value.get("type") == "say" else None
    text = value.get("text") if isinstance(value.get("text"), str) else ""
    if say == "api_req_started":
        try:
            info = json.loads(text or "{}")
        except ValueError:
            info = {}
        request = info.get("request") if isinstance(info, dict) else None
        return Message("user", [Block("text", TEXT, request)], index) if isinstance(request, str) and request else None
    if say in ("task", "user_feedback"):
        blocks = [Block("text", TEXT, text)] if text else []
        for url in value.get("images") or []:
            blocks.append(_image(url))
        return Message("user", blocks, index) if blocks else None
    if say == "text" and text:
        return Message("assistant", [Block("text", TEXT, text)], index)
    if say == "tool" and text:
        return Message("assistant", [Block("tool", TEXT, text, meta={"ui_tool": True})], index)
    return None


def _image(url: Any) -> Block:
    """A pasted image (a data URL): its cost by Anthropic's rule when its size can be read."""
    meta: dict[str, Any] = {}
    size = images.data_url_size(url) if isinstance(url, str) else None
    if size is not None:
        meta["width"], meta["height"] = size
        meta["tokens"] = images.anthropic_tokens(*size)
    mime = url[5:url.find(";")] if isinstance(url, str) and url.startswith("data:") and ";" in url else "image"
    return Block("image", MEDIA, f"[image: {mime}, {len(url) if isinstance(url, str) else 0} characters]", None, meta)


def _models_used(folder: str) -> list[str]:
    """Cline's ``task_metadata.json`` ``model_usage``: the models the task ran with, in order."""
    try:
        with open(os.path.join(folder, METADATA), "rb") as handle:
            meta = json.loads(handle.read(4 << 20))
    except (OSError, ValueError):
        return []
    usage = meta.get("model_usage") if isinstance(meta, dict) else None
    seen: list[str] = []
    for item in usage if isinstance(usage, list) else []:
        model = item.get("model_id") if isinstance(item, dict) else None
        if isinstance(model, str) and model not in seen:
            seen.append(model)
    return seen


# ---------------------------------------------------------------- the Cline CLI's sessions


def detect_cli_session(node: Any) -> bool:
    """A Cline CLI session (``~/.cline/data/sessions/<id>/<id>.messages.json``): ``{version, agent, sessionId,
    messages, system_prompt}``; its messages are Anthropic-shaped, so it is claimed before the request rows."""
    value = node.value if hasattr(node, "value") else None
    return (isinstance(value, dict) and "tokenbox" not in value and {"sessionId", "messages"} <= set(value)
            and ("system_prompt" in value or "agent" in value))


def convert_cli_session(node: Any, path: str) -> Any:
    """A Cline CLI session: one turn per reply with usage (``metrics``), the system prompt as written."""
    value = node.plain()
    warnings: list[str] = []
    api = value.get("messages") if isinstance(value.get("messages"), list) else []
    messages = [_message(i, v, warnings) for i, v in enumerate(api)]
    link_tool_names([m for m in messages if m is not None])
    system = value.get("system_prompt")
    blocks = [Block("system_prompt", TEXT, system)] if isinstance(system, str) and system else []
    requests = []
    for i, item in enumerate(api):
        if isinstance(item, dict) and item.get("role") == "assistant":
            requests.append(_request(api, messages, i, _metrics_usage(item), _model(item), f"message {i + 1}", i))
    if api and isinstance(api[-1], dict) and api[-1].get("role") == "user":
        requests.append(_request(api, messages, len(api), None, requests[-1].model if requests else None, "pending", len(api),
                                 pending=True))
    for request in requests:
        request.system = list(blocks)
    hidden = "tool definitions (not in the session file)" if blocks else HIDDEN_LABEL
    log = AgentLog(SOURCE, path, f"Cline CLI session {value.get('sessionId')}", hidden, NOT_RECORDED,
                   {"main": requests}, warnings, {"session_id": value.get("sessionId")})
    return log.main_turns()
