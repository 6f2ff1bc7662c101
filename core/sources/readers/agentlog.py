"""Turns of an agent's session from the requests its reader found: what the newer agents' readers share.

A reader (GitHub Copilot CLI, Cline/Roo/Kilo, OpenCode, aider) finds the model requests of a session
and groups them into threads (``main`` and each sub-agent). For each request it gives a ``Request``:
the messages it sent (the same ``Message`` objects from one request to the next, so their sections are
built once), the usage its provider recorded when the storage holds it, its own reply, its model, and
what else the storage records (a window, the size of the hidden part). ``AgentLog`` makes the turns of
README "Real agents" from them, the same way for every agent:

* **recorded** — the headline is the recorded context; the visible parts are counted (exactly when the
  model has a public tokenizer, else the character-class estimate fitted per thread on the recorded
  growth, as for Claude Code: ``claude_truth``) and the ``inferred`` part is the rest, so they add up;
* **pending or not recorded** — predicted from the thread's last recorded request: its hidden part plus
  the visible parts now (or a hidden part the storage records, e.g. Copilot's system and tool tokens);
  without any, the figure is the visible parts alone and a warning says it is a floor;
* thinking of assistant messages before the latest user input is left out (Anthropic's API strips it,
  and OpenAI's drops reasoning at a new user turn); a request's own reply is shown at 0 tokens;
* the window is what the storage records, else the model's; when neither is known a warning says so
  and the gauge is drawn against the largest context the thread recorded.

``AgentLog.threads()`` gives each thread's turns as a lazy sequence (built when read, with cheap
``info``), and ``AgentLog`` is a ``formats.ThreadedLog`` (``main_turns``, ``all_threads``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from tokenbox.core.model.errors import NotYetComplete, TokenizerError
from tokenbox.core.model.llms import Window, WindowSource, lookup_model, resolve_window
from tokenbox.core.model.names import ESTIMATE, MAIN_THREAD
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.records import dataclass, field, replace
from tokenbox.core.model.session import BudgetSpec, Calibration, RecordedUsage, Session
from tokenbox.core.sources.readers.claude_truth import Fit, Observation, ScaleFits, with_truth
from tokenbox.core.sources.readers.common import (
    MEDIA,
    RESULT,
    THINKING,
    Block,
    Conversation,
    Message,
    SectionCache,
    ToolDef,
    build_session,
    inferred_section,
    reply_sections,
)
from tokenbox.core.sources.turns import LazyTurns
from tokenbox.core.tokens.charclass import BaseEstimates
from tokenbox.core.tokens.tokenizers import default_registry

DEFAULT_WINDOW = 16384  # what the engine falls back to: a recorded context above it must raise the window
FLOOR_NOTE = "no request of this thread recorded its usage yet: the hidden part is unknown and the context is larger than shown"


class HistoryPrefix(Sequence[Message]):
    """A request's messages: the messages its thread's history list held when the request was made (its
    first ``len(prefix)``), the list shared by every request of that history, not a copy each (a journal of
    n requests held n² references). A reader only
    appends to a history list; a compaction, a truncation or a rewrite starts a new list, so what a
    prefix reads never changes."""

    __slots__ = ("_history", "_length")

    def __init__(self, history: list[Message]) -> None:
        self._history = history
        self._length = len(history)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):  # type: ignore[override]  (an int gives a message, a slice a list)
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step == 1:  # (a negative step's stop can be -1, which a list's slice reads from its end)
                return self._history[start:max(start, stop)]
            history = self._history
            return [history[i] for i in range(start, stop, step)]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._history[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._history, self._length)

    def extends(self, other: Sequence[Message]) -> bool:
        """Whether ``other`` is a prefix of the same history list, no longer than this one."""
        return isinstance(other, HistoryPrefix) and other._history is self._history and other._length <= self._length

    def __eq__(self, other: object) -> bool:
        # equal to a list or a prefix of the same messages, as the copy it stands for would be
        if isinstance(other, HistoryPrefix):
            other = other[:]
        if not isinstance(other, list):
            return NotImplemented
        return self[:] == other

    __hash__ = None  # type: ignore[assignment]  (as the list it stands for)

    def __repr__(self) -> str:
        return f"HistoryPrefix({self[:]!r})"


@dataclass
class Request:
    """One model request of a session as its reader found it (or the pending one, about to be sent)."""

    messages: Sequence[Message]  # what it sent, oldest first (the same objects across requests; ``HistoryPrefix``)
    usage: RecordedUsage | None = None  # what the provider recorded
    line: int = 1  # where it is in the storage (a line, a row number)
    model: str | None = None
    epoch: int = 0  # context restarts (compactions) before it: a prediction never spans one
    reply: list[Block] = field(default_factory=list)  # its own output (0 context tokens)
    system: list[Block] = field(default_factory=list)  # system text the storage holds
    tools: list[ToolDef] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    pending: bool = False
    key: str | None = None  # a completed request's identity (message id, row id)
    window: int | None = None  # the window the storage records
    hidden: int | None = None  # the size of the hidden part the storage records (system prompt + tools)
    hidden_how: str = ""  # where that size comes from
    scale: float | None = None  # a scale of the visible estimate the storage implies (with ``hidden``)
    notes: tuple[str, ...] = ()  # warnings of this request alone


@dataclass
class AgentLog:
    """A session's requests by thread (``main`` first) and what every turn shares."""

    source: str  # ``Session.source_format`` and ``meta.source.format``
    path: str
    name: str
    hidden_label: str  # the ``inferred`` part's label: what the storage does not hold
    not_recorded: str  # the same in words, for ``meta.not_recorded``
    threads: dict[str, list[Request]]
    warnings: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    cache: SectionCache = field(default_factory=dict)  # sections of each message, built once
    bases: BaseEstimates = field(default_factory=BaseEstimates)
    awaiting: str = "the first request"

    # ---------------------------------------------------------------- formats.ThreadedLog

    def main_turns(self) -> Sequence[Session]:
        """The turns of the main thread (of the first thread when the main one has none)."""
        threads = self.turns()
        return threads.get(MAIN_THREAD) or next(iter(threads.values()))

    def all_threads(self, max_bytes: int | None = None) -> dict[str, Sequence[Session]]:
        """Every thread's turns, ``main`` first (``max_bytes`` is the loader's: the storage is read already)."""
        return self.turns()

    def turns(self) -> dict[str, Sequence[Session]]:
        """Every thread with a request, ``main`` first; none at all is ``NotYetComplete``."""
        found = {name: thread_turns(self, name) for name, requests in self.threads.items() if requests}
        if not found:
            raise NotYetComplete(f"the {self.name} has no model request yet", "it is read as soon as the agent sends one",
                                 self.path, 1, 1, awaiting=self.awaiting)
        ordered = {MAIN_THREAD: found.pop(MAIN_THREAD)} if MAIN_THREAD in found else {}
        ordered.update(found)
        return ordered


def exact_tokenizer(model: str | None) -> tuple[str | None, str | None]:
    """``(the model's name when the table knows it, its public tokenizer or None)``."""
    name = short_model(model)
    if not name:
        return None, None
    try:
        info = lookup_model(name)
    except TokenizerError:
        return None, None
    return name, info.tokenizer


def short_model(model: str | None) -> str | None:
    """A provider-routed model's own name (``openrouter/openai/gpt-4o-mini`` → ``gpt-4o-mini``)."""
    if not model:
        return None
    return model.rsplit("/", 1)[-1].strip() or None


def model_window(model: str | None) -> int | None:
    """The model's window from the table (family rules included), else ``None``."""
    name = short_model(model)
    if not name:
        return None
    try:
        return lookup_model(name).max_ctx
    except TokenizerError:
        return None


def _strip_cut(messages: Sequence[Message]) -> int:
    """Index of the latest user message with content other than tool results: earlier assistant
    messages' thinking is not part of the context."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role == "user" and any(b.role != RESULT for b in message.blocks):
            return position
    return 0


class _Stripped:
    """Each assistant message without its thinking blocks, made once (the same object every request)."""

    def __init__(self) -> None:
        self.made: dict[int, tuple[Message, Message]] = {}

    def __call__(self, message: Message) -> Message:
        entry = self.made.get(id(message))
        if entry is None:
            kept = [b for b in message.blocks if b.role != THINKING]
            bare = message if len(kept) == len(message.blocks) else Message(
                message.role, kept, message.index, {**message.meta, "thinking_left_out": True}, message.line, message.col)
            entry = self.made[id(message)] = (message, bare)  # the original is kept alive: its id stays unique
        return entry[1]


def sent_messages(messages: Sequence[Message], strip: _Stripped) -> list[Message]:
    """The messages as they count: thinking of assistant messages before the latest user input left out."""
    cut = _strip_cut(messages)
    if not cut:
        return messages if isinstance(messages, list) else list(messages)
    return [strip(m) if i < cut and m.role == "assistant" else m for i, m in enumerate(messages)]


def message_estimate(message: Message, bases: BaseEstimates, memo: dict[int, float]) -> float:
    """A message's base estimate (a media block at its fixed size), computed once per message object."""
    value = memo.get(id(message))
    if value is None:
        value = 0.0
        for block in message.blocks:
            fixed = block.meta.get("tokens") if block.role == MEDIA else None
            value += fixed if isinstance(fixed, int) else (bases(block.text) if block.text else 0.0)
        memo[id(message)] = value
    return value


def _qualifying_cut(messages: Sequence[Message], start: int) -> int | None:
    """``_strip_cut`` looked for in ``messages[start:]`` only (``None``: no such user message there)."""
    for position in range(len(messages) - 1, start - 1, -1):
        message = messages[position]
        if message.role == "user" and any(b.role != RESULT for b in message.blocks):
            return position
    return None


def visible_bases(requests: Sequence[Request], strip: _Stripped, bases: BaseEstimates,
                  memo: dict[int, float]) -> list[float]:
    """Each request's base estimate of what it shows: its system prompt, tools and messages as they count
    (``sent_messages``), each message's estimate computed once.

    A thread's requests each hold the history before them, so the sums of one request's messages are taken
    from the request before it as far as the two count the same messages (the same objects, stripped alike),
    and only the rest is added: O(messages) for a thread, not O(requests × messages). The sums are made in
    the same order as ``sum`` over each request's messages would make them (the same floats)."""
    out: list[float] = []
    previous: Sequence[Message] = []
    previous_cut = 0
    sums = [0.0]  # sums[j]: the estimates of the previous request's first j messages as they count, left to right
    for request in requests:
        messages = request.messages
        if isinstance(messages, HistoryPrefix) and messages.extends(previous):
            kept = len(previous)  # the same history, longer: no need to compare the messages
        else:
            kept = shared_prefix(previous, messages)
        found = _qualifying_cut(messages, kept)
        if found is not None:
            cut = found
        elif previous_cut < kept:  # the latest user input is in the shared messages: where it was
            cut = previous_cut
        else:
            cut = _strip_cut(messages)
        same = kept if cut == previous_cut else min(kept, cut, previous_cut)  # messages counted alike by both
        del sums[same + 1:]
        running = sums[-1]
        for position in range(same, len(messages)):
            message = messages[position]
            counted = strip(message) if position < cut and message.role == "assistant" else message
            running = running + message_estimate(counted, bases, memo)
            sums.append(running)
        total = sum(bases(b.text) for b in request.system if b.text) + sum(bases(t.text) for t in request.tools if t.text)
        out.append(total + (sums[-1] if messages else 0))
        previous, previous_cut = messages, cut
    return out


def thread_turns(log: AgentLog, thread: str) -> LazyTurns:
    """One thread's turns, built when read (see the module docstring)."""
    requests = log.threads[thread]
    strip = _Stripped()
    memo: dict[int, float] = {}
    visible = visible_bases(requests, strip, log.bases, memo)
    observations = [Observation(r.usage.context_tokens if r.usage is not None else None, visible[i], r.epoch)
                    for i, r in enumerate(requests)]

    def sent(index: int) -> list[Message]:
        """Request ``index``'s messages as they count (made when a turn is built: one request's, not all)."""
        return sent_messages(requests[index].messages, strip)
    scales = ScaleFits().update(observations)
    exact = [exact_tokenizer(r.model)[1] for r in requests]
    peaks: list[int] = []
    for r in requests:
        peaks.append(max(peaks[-1] if peaks else 0, r.usage.context_tokens if r.usage is not None else 0))
    count = len(requests)
    warnings = tuple(log.warnings)

    def infos(index: int) -> dict[str, Any]:
        request = requests[index]
        return {"thread": thread, "pending": request.pending, "line": request.line,
                "request": None if request.pending else (request.key or f"line {request.line}"),
                "recorded": request.usage, "model": request.model}

    def last_recorded(index: int) -> int | None:
        return next((j for j in range(index - 1, -1, -1) if requests[j].usage is not None), None)

    def build(index: int) -> Session:
        request = requests[index]
        messages = sent(index)
        tokenizer = exact[index]
        model = exact_tokenizer(request.model)[0]
        meta = dict(log.meta)
        meta.update(source={"format": log.source, "file": os.path.basename(log.path)}, thread=thread,
                    pending=request.pending, line=request.line, not_recorded=log.not_recorded)
        if request.key and not request.pending:
            meta["request"] = request.key
        if request.model and model is None:
            meta["model"] = request.model
        meta.update(request.meta)
        conv = Conversation(log.source, system=list(request.system), tools=list(request.tools), messages=messages,
                            name=log.name, model=model, tokenizer=tokenizer or ESTIMATE, meta=meta,
                            recorded=request.usage, line=request.line)
        session = build_session(conv, log.path, log.cache)
        notes = warnings + request.notes
        unknown_window = window_note(request)
        if unknown_window:
            notes += (unknown_window,)
        if tokenizer is not None:
            session = _exact_truth(session, index, tokenizer, notes)
        else:
            session = _estimated_truth(session, index, notes)
        sections = session.sections
        if request.reply and not request.pending:
            sections += tuple(reply_sections(conv, request.reply, len(messages)))
        return replace(session, sections=sections, turn=index + 1, turn_count=count,
                       budget=_budget(session, request, peaks[index]), window=_window(request))

    def _exact_truth(session: Session, index: int, tokenizer: str, notes: tuple[str, ...]) -> Session:
        """The headline of a request whose visible parts are counted exactly (the engine sizes the rest)."""
        request = requests[index]
        hidden: int | None = None
        if request.usage is not None:
            target: int | None = request.usage.context_tokens
            how = f"recorded context; the visible parts counted with {tokenizer}, the hidden part is the rest"
        else:
            counter = default_registry().get(tokenizer)
            visible = counter.count("\n\n".join(_texts(session)))
            hidden, how = _hidden_for(index, lambda j: requests[j].usage.context_tokens  # type: ignore[union-attr]
                                      - counter.count("\n\n".join(_texts(build_plain(j)))))
            target = None if hidden is None else hidden + visible
            if target is None:
                notes += (FLOOR_NOTE,)
        return replace(session, sections=(inferred_section(0, log.hidden_label, target is not None), *session.sections),
                       context_tokens=target, pending=request.pending, thread=thread, warnings=notes,
                       calibration=Calibration(how, 1.0, hidden, ()))

    def build_plain(index: int) -> Session:
        """Request ``index``'s visible sections alone (for counting what an earlier request showed)."""
        request = requests[index]
        conv = Conversation(log.source, system=list(request.system), tools=list(request.tools), messages=sent(index),
                            tokenizer=exact[index] or ESTIMATE, line=request.line)
        return build_session(conv, log.path, log.cache)

    def _hidden_for(index: int, hidden_of) -> tuple[int | None, str]:
        """The hidden part of an unrecorded request: the storage's own figure, else the last recorded
        request's (in the same context), else unknown."""
        request = requests[index]
        last = last_recorded(index)
        if request.hidden is not None and last is None:
            return request.hidden, f"predicted: hidden part {request.hidden} ({request.hidden_how}) plus the visible parts"
        if last is None:
            return None, "estimated: no request of this thread recorded its usage yet; the hidden part is unknown"
        hidden = max(0, hidden_of(last))
        return hidden, f"predicted: hidden part {hidden} (from request {last + 1}) plus the visible parts"

    def _estimated_truth(session: Session, index: int, notes: tuple[str, ...]) -> Session:
        """The headline of a request estimated by character class, fitted per thread (``claude_truth``)."""
        request = requests[index]
        visible = observations[index].visible
        if request.usage is not None:
            scale, used = scales[index]
            target: int | None = request.usage.context_tokens
            hidden = target - round(scale * visible)
            how = (f"recorded context; visible parts ×{scale:.3f} fitted on requests {used[0]}–{used[-1]} of the thread"
                   if used else f"recorded context; visible parts ×{scale:.3f}, the prior scale (no earlier request to fit)")
            fit = Fit(scale, hidden, used, how)
        else:
            target, fit = _prediction(index, visible)
            if target is None:
                notes += (FLOOR_NOTE,)
        return with_truth(session, target=target, fit=fit, pending=request.pending, thread=thread, warnings=notes,
                          hidden_label=log.hidden_label, bases=log.bases)

    def _prediction(index: int, visible: float) -> tuple[int | None, Fit]:
        request = requests[index]
        last = last_recorded(index)
        scale, used = scales[last] if last is not None else scales[index]
        if request.hidden is not None and last is None:
            scale = request.scale or scale
            target = request.hidden + round(scale * visible)
            return target, Fit(scale, request.hidden, used, f"predicted: hidden part {request.hidden} "
                               f"({request.hidden_how}) plus the visible parts ×{scale:.3f}")
        if last is None:
            return None, Fit(scale, None, (), "estimated: no request of this thread recorded its usage yet; "
                             "the hidden part is unknown")
        recorded = requests[last].usage.context_tokens  # type: ignore[union-attr]
        base = observations[last].visible
        hidden = recorded - round(scale * base)
        if requests[last].epoch == request.epoch and visible >= base:
            target = recorded + round(scale * (visible - base))
            how = f"predicted: request {last + 1}'s recorded {recorded} plus what was added since, ×{scale:.3f}"
        else:
            target = max(0, hidden) + round(scale * visible)
            how = f"predicted: hidden part {hidden} (from request {last + 1}) plus the visible parts ×{scale:.3f} (context restarted)"
        return target, Fit(scale, hidden, used or (last + 1,), how)

    return LazyTurns(count, build, infos)


def _texts(session: Session) -> list[str]:
    return [s.text for s in session.sections if s.text and s.tokens is None]


def _budget(session: Session, request: Request, peak: int) -> BudgetSpec:
    """The window: recorded, else the model's; unknown (``window_note`` says so), the largest context the
    thread recorded up to this turn, or this turn's own when larger (a recorded or predicted context is
    never trimmed for want of a known window)."""
    window = request.window or model_window(request.model)
    if window is None:
        largest = max(peak, session.context_tokens or 0)
        window = largest if largest > DEFAULT_WINDOW else None
    return replace(session.budget, max_ctx=window) if window is not None else session.budget


def _window(request: Request) -> Window:
    """The request's window for the plan (CONTRACT §11): recorded, else the model table or its family
    (said so), else unknown (``window_note`` says why): a recorded or predicted context is never trimmed."""
    if request.window:
        return Window(request.window, WindowSource.RECORDED)
    window = resolve_window(short_model(request.model))
    return window if window.known else Window(None, WindowSource.UNKNOWN)


def window_note(request: Request) -> str | None:
    """The warning of a request whose window is unknown (``None`` when it is known)."""
    if request.window or model_window(request.model):
        return None
    why = f"{request.model} is not in the model table" if request.model else "no model recorded"
    return f"window unknown ({why}): the gauge is drawn against the largest context the thread recorded so far"
