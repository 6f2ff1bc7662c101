"""aider's chat history (``.aider.chat.history.md``) and LLM history (``--llm-history-file``).

**The chat history** is markdown aider appends to: ``# aider chat started at …`` opens a session,
``#### `` lines are the user's message, ``> `` lines aider's own output (the model line, files added,
edits applied, and after each model call ``> Tokens: 2.4k sent, 104 received. …``), other lines the
model's reply. One turn per ``Tokens:`` line: that call sent the session's messages so far (its reply
is shown with it, at 0 tokens). **The recorded figure is rounded**: aider prints ``sent`` as the exact
number below 1 000, with one decimal in thousands below 10 000 (``2.4k``: 2 350–2 449) and in whole
thousands above (``152k``: 151 500–152 499). The headline is the figure as printed — what the
file records, so headline == recorded holds for it — and each turn's warnings say the range the true
context lies in. ``sent`` is the call's prompt tokens plus the cache writes (aider adds them for
providers that report them), so it is the whole context. The system prompt, the repo map and the
files added to the chat are not in the file: they are the ``inferred`` part. A message after the last
``Tokens:`` line is the pending turn. What aider writes as ``####`` but never sends is no message: an
in-chat command (input starting with ``/`` or ``!``: ``/add``, ``/copy-context``, …; ``/ask <q>``,
``/code``, ``/architect`` and ``/context`` write ``<q>`` again as the message they send), an empty input
(``<blank>``) and the echo of a "(S)kip all" / "(A)ll" answer; ``/clear`` and ``/reset`` empty the history.

**The LLM history** holds the whole prompt of each call (``TO LLM <time>``, then ``-------`` and
``ROLE line`` lines per message; ``LLM RESPONSE <time>`` and the reply), but no usage: its turns are
counted whole (nothing inferred). When the chat history sits beside it, its last ``Tokens:`` lines are
paired with the calls (only when every pair agrees within the rounding and the message framing),
which gives them recorded headlines.
"""

from __future__ import annotations

import os
import re
from typing import Any

from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.probe import Probe
from tokenbox.core.sources.readers.agentlog import AgentLog, HistoryPrefix, Request, exact_tokenizer
from tokenbox.core.sources.readers.common import TEXT, Block, Message
from tokenbox.core.sources.tail import FileTail
from tokenbox.core.tokens.tokenizers import default_registry

SOURCE = "aider-chat-history"
LLM_SOURCE = "aider-llm-history"
CHAT_FILE = ".aider.chat.history.md"
HIDDEN_LABEL = "system prompt, repo map and files in the chat (not in the chat history)"
NOT_RECORDED = "aider's system prompt, the repo map and the files added to the chat (the history holds the messages only)"
STARTED = "# aider chat started at"
_TOKENS = re.compile(r"^> Tokens: (?P<sent>[\d.]+k?) sent(?:, (?P<write>[\d.]+k?) cache write)?"
                     r"(?:, (?P<hit>[\d.]+k?) cache hit)?, (?P<received>[\d.]+k?) received")
_MODEL = re.compile(r"^> (?:Main )?[Mm]odel: (?P<model>\S+)")
_LLM_HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) \d{4}-\d{2}-\d{2}T")
_SESSION_KEY = re.compile(r'^\s*"?tokenbox"?\s*:', re.M)
_ROLE = re.compile(r"^(SYSTEM|USER|ASSISTANT|TOOL|FUNCTION)(?: |$)")
# aider's ``io.confirm_ask`` echoes an answer given for a whole group as input: "<question> (Y)es/(N)o/…[Yes]: skip"
_GROUP_ANSWER = re.compile(r" \(Y\)es/\(N\)o(?:/\(A\)ll)?/\(S\)kip all(?:/\(D\)on't ask again)? \[[^\]]*\]: (?:all|skip)$")
CLEARS = ("/clear", "/reset")  # the commands that empty aider's chat history (``Commands._clear_chat_history``)
BLANK = "<blank>"  # what ``io.user_input`` writes for an empty input


def detect_chat(found: Probe) -> bool:
    """An aider chat history: text that starts with ``# aider chat started at`` (and is no tokenbox session
    that happens to start so: no ``tokenbox:`` key)."""
    head = found.text_head()
    return (not found.is_dir and found.selector is None and head.lstrip().startswith(STARTED)
            and not _SESSION_KEY.search(head))


def detect_llm(found: Probe) -> bool:
    """An aider LLM history: text that starts with a ``TO LLM <time>`` line."""
    return not found.is_dir and found.selector is None and bool(_LLM_HEADER.match(found.text_head().lstrip()))


def rounding(text: str) -> tuple[int, int, int]:
    """``(figure as printed, lowest, highest)`` of a number aider printed with ``format_tokens``."""
    if not text.endswith("k"):
        value = int(text)
        return value, value, value
    number = text[:-1]
    if "." in number:  # one decimal: below 10 000
        value = round(float(number) * 1000)
        return value, max(1000, value - 50), min(9999, value + 49)
    value = int(number) * 1000
    return value, max(10000, value - 500), value + 499


@dataclass
class _ChatState:
    """The chat history read so far."""

    history: list[Message] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    user: list[str] = field(default_factory=list)  # lines of the user message being read
    user_line: int = 0
    reply: list[str] = field(default_factory=list)  # lines of the reply being read
    reply_line: int = 0
    model: str | None = None
    epoch: int = 0
    sessions: int = 0
    waiting: bool = False  # a user message since the last call


class ChatFollower:
    """Follows a chat history: each ``read`` parses only the lines appended since."""

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        self.path = path
        self.tail = FileTail(path, max_bytes=max_bytes)
        self.state = _ChatState()
        self.log: AgentLog | None = None

    def read(self) -> AgentLog:
        chunk = self.tail.read()
        if chunk.reset:
            self.state = _ChatState()
        for number, line in chunk.numbered():
            _feed(self.state, number, line)
        log = _chat_log(self.path, self.state)
        if self.log is not None:
            log.cache, log.bases = self.log.cache, self.log.bases
        self.log = log
        return log


def _feed(state: _ChatState, number: int, line: str) -> None:
    """One complete line of the chat history."""
    line = line.removesuffix("\r")
    if line.startswith(STARTED):
        _flush(state)
        state.history, state.epoch, state.sessions = [], state.epoch + (1 if state.sessions else 0), state.sessions + 1
        state.waiting = False
        return
    if line.startswith("####"):
        if state.reply:
            _flush(state)
        if not state.user:
            state.user_line = number
        state.user.append(line[4:].removeprefix(" ").removesuffix("  "))
        return
    if state.user:
        _flush_user(state)
    if line.startswith(">"):
        model = _MODEL.match(line)
        if model:
            state.model = model.group("model")
        tokens = _TOKENS.match(line)
        if tokens:
            _call(state, number, tokens)
        return
    if state.reply or line.strip():
        if not state.reply:
            state.reply_line = number
        state.reply.append(line)


def _not_sent(text: str) -> bool:
    """Input aider writes as ``####`` but never sends: a command (``Commands.is_command``: its first character
    is ``/`` or ``!``), an empty input, an answer echoed for a group of questions."""
    return text[:1] in ("/", "!") or text == BLANK or bool(_GROUP_ANSWER.search(text))


def _clears(text: str) -> bool:
    """Whether the command ``text`` empties the chat history."""
    return text.split(maxsplit=1)[0] in CLEARS


def _flush_user(state: _ChatState) -> None:
    text = "\n".join(state.user)
    if _not_sent(text):
        state.user = []
        if _clears(text):  # a context restart: a prediction never spans it
            state.history, state.epoch, state.waiting = [], state.epoch + 1, False
        return
    state.history.append(Message("user", [Block("text", TEXT, text, meta={"line": state.user_line}, line=state.user_line)],
                                 len(state.history), {"line": state.user_line}, state.user_line))
    state.user = []
    state.waiting = True


def _reply_block(state: _ChatState) -> Block | None:
    text = "\n".join(state.reply).strip("\n")
    line = state.reply_line
    state.reply = []
    return Block("text", TEXT, text, meta={"line": line}, line=line) if text.strip() else None


def _flush(state: _ChatState) -> None:
    """A reply with no ``Tokens:`` line (an interrupted call, or a model without usage): part of the history."""
    if state.user:
        _flush_user(state)
    block = _reply_block(state)
    if block is not None:
        state.history.append(Message("assistant", [block], len(state.history), {"line": block.line}, block.line))


def _call(state: _ChatState, number: int, tokens: re.Match[str]) -> None:
    """A ``Tokens:`` line: the call that sent the history so far; its reply is the text just before it."""
    sent, low, high = rounding(tokens.group("sent"))
    write = rounding(tokens.group("write"))[0] if tokens.group("write") else 0
    hit = rounding(tokens.group("hit"))[0] if tokens.group("hit") else 0
    received = rounding(tokens.group("received"))[0]
    usage = RecordedUsage(sent, max(0, sent - write - hit), write, hit, received)
    reply = _reply_block(state)
    note = (f"aider prints this figure rounded: the request cost between {low} and {high} tokens" if high > low else None)
    state.requests.append(Request(HistoryPrefix(state.history), usage, number, state.model, state.epoch,
                                  reply=[reply] if reply is not None else [], key=f"line {number}",
                                  notes=(note,) if note else (), meta={"sent_as_printed": tokens.group("sent")}))
    if reply is not None:
        state.history.append(Message("assistant", [reply], len(state.history), {"line": reply.line}, reply.line))
    state.waiting = False


def _chat_log(path: str, state: _ChatState) -> AgentLog:
    requests = list(state.requests)
    pending_user, waiting, history = state.user, state.waiting, state.history
    if pending_user and _not_sent("\n".join(pending_user)):  # the last input, a command: nothing to send
        if _clears("\n".join(pending_user)):
            waiting, history = False, []
        pending_user = []
    if pending_user or waiting:
        history = list(history)
        if pending_user:
            text = "\n".join(pending_user)
            history.append(Message("user", [Block("text", TEXT, text, line=state.user_line)], len(history), {}, state.user_line))
        requests.append(Request(history, None, state.user_line or 1, state.model, state.epoch, pending=True))
    meta: dict[str, Any] = {"sessions": state.sessions}
    if state.model:
        meta["aider_model"] = state.model
    return AgentLog(SOURCE, path, f"aider chat {os.path.basename(os.path.dirname(os.path.abspath(path)))}", HIDDEN_LABEL,
                    NOT_RECORDED, {"main": requests}, [], meta)


def follow_chat(path: str, max_bytes: int | None = None) -> ChatFollower:
    """The follower of a chat history."""
    return ChatFollower(path, max_bytes)


def convert_chat(found: Probe, path: str) -> Any:
    return follow_chat(path).read().main_turns()


# ---------------------------------------------------------------- the LLM history


@dataclass
class _Call:
    """One ``TO LLM`` block: its messages (role, lines) and where it starts."""

    line: int
    messages: list[tuple[str, list[str], int]] = field(default_factory=list)
    reply: list[str] = field(default_factory=list)
    answered: bool = False


class LlmFollower:
    """Follows an LLM history: each ``read`` parses only the lines appended since."""

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        self.path = path
        self.tail = FileTail(path, max_bytes=max_bytes)
        self.calls: list[_Call] = []
        self.in_reply = False
        self.made: dict[tuple[str, str], Message] = {}  # (role, text) -> the message: the same object in every call
        self.log: AgentLog | None = None

    def read(self) -> AgentLog:
        chunk = self.tail.read()
        if chunk.reset:
            self.calls, self.in_reply = [], False
        for number, line in chunk.numbered():
            self._feed(number, line.removesuffix("\r"))
        log = self._log()
        if self.log is not None:
            log.cache, log.bases = self.log.cache, self.log.bases
        self.log = log
        return log

    def _feed(self, number: int, line: str) -> None:
        header = _LLM_HEADER.match(line)
        if header:
            if header.group(1) == "TO LLM":
                self.calls.append(_Call(number))
                self.in_reply = False
            elif self.calls:
                self.calls[-1].answered = True
                self.in_reply = True
            return
        if not self.calls:
            return
        call = self.calls[-1]
        if self.in_reply:
            call.reply.append(line.split(" ", 1)[1] if _ROLE.match(line) and " " in line else "")
            return
        if line == "-------":
            call.messages.append(("", [], number + 1))
            return
        role = _ROLE.match(line)
        if role and call.messages:
            name, lines, start = call.messages[-1]
            text = line[len(role.group(1)) + 1:]
            call.messages[-1] = (name or role.group(1).lower(), [*lines, text], start)

    def _message(self, role: str, text: str, line: int, index: int) -> Message:
        key = (role, text)
        message = self.made.get(key)
        if message is None:
            kind = "user" if role not in ("system", "assistant", "tool") else role
            block = Block("system" if role == "system" else "text", TEXT, text, meta={"line": line}, line=line)
            message = self.made[key] = Message(kind, [block], index, {"line": line}, line)
        return message

    def _log(self) -> AgentLog:
        chat = os.path.join(os.path.dirname(os.path.abspath(self.path)), CHAT_FILE)
        recorded, model = _chat_figures(chat)
        requests = []
        for number, call in enumerate(self.calls):
            messages = [self._message(role or "user", "\n".join(lines), start, i)
                        for i, (role, lines, start) in enumerate(call.messages) if role or lines]
            reply = [Block("text", TEXT, "\n".join(call.reply).strip("\n"))] if call.reply else []
            requests.append(Request(messages, None, call.line, model, reply=reply, pending=not call.answered,
                                    key=f"line {call.line}" if call.answered else None, hidden=0,
                                    hidden_how="the log holds the whole prompt; message framing not counted", scale=1.0,
                                    meta={"call": number + 1}))
        warnings = _pair(requests, recorded, chat)
        return AgentLog(LLM_SOURCE, self.path, f"aider LLM history {os.path.basename(self.path)}", "message framing",
                        "nothing but the message framing (the log holds every message of each call)",
                        {"main": requests}, warnings, {})


def _chat_figures(chat: str) -> tuple[list[Request], str | None]:
    """The calls of the chat history beside an LLM history (for their recorded figures), and its model."""
    if not os.path.isfile(chat):
        return [], None
    state = _ChatState()
    try:
        with open(chat, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                _feed(state, number, line.rstrip("\n"))
    except OSError:
        return [], None
    return state.requests, state.model


def _pair(requests: list[Request], recorded: list[Request], chat: str) -> list[str]:
    """Give the last calls the chat history's last recorded figures, when every pair agrees."""
    answered = [r for r in requests if not r.pending]
    if not answered or len(recorded) < len(answered):
        return []
    figures = recorded[-len(answered):]
    _, tokenizer = exact_tokenizer(answered[0].model)
    counter = default_registry().get(tokenizer or "o200k_base")
    for request, figure in zip(answered, figures, strict=True):
        visible = counter.count("\n\n".join(b.text for m in request.messages for b in m.blocks))
        usage = figure.usage
        assert usage is not None
        framing = 4 * len(request.messages) + 3
        if not (visible <= usage.context_tokens + 600 and usage.context_tokens <= visible + framing + 600 + visible // 5):
            return [f"the Tokens: lines of {CHAT_FILE} do not match these calls: their figures are left out"]
    for request, figure in zip(answered, figures, strict=True):
        request.usage, request.notes, request.hidden = figure.usage, figure.notes, None
        request.meta["paired_with"] = f"{CHAT_FILE} {figure.key}"
    return [f"recorded figures paired in order with the last {len(answered)} Tokens: lines of {CHAT_FILE}"]


def follow_llm(path: str, max_bytes: int | None = None) -> LlmFollower:
    """The follower of an LLM history."""
    return LlmFollower(path, max_bytes)


def convert_llm(found: Probe, path: str) -> Any:
    return follow_llm(path).read().main_turns()
