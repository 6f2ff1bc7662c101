"""The threads of an agent's session (the main conversation and each sub-agent) and what they cost.

``SessionTotals.update(threads)`` sums, per thread, its requests, its newest and largest recorded
context and its cost in dollars (each request priced for the model it went to, ``model.prices``);
the session's cost is the sum over its threads. A followed transcript grows at its end: only the
requests past the last one summed before are read again (a transcript's turns by their facts, never
built), so a reload costs what was appended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.prices import Overrides, price_for, usage_cost
from tokenbox.core.model.session import RecordedUsage, Session
from tokenbox.core.sources.turns import LazyTurns


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """One request of a thread as the totals need it."""

    identity: object  # the same for the same completed request
    context: int | None  # recorded context
    usd: float | None  # its cost (None: no recorded usage, or no price for its model)
    model: str | None  # the priced model's key (or the name as recorded when unpriced)
    as_of: str | None  # the date of the price used
    pending: bool  # a request about to be sent (not sent yet)


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """A thread at a glance: requests, context now and at its peak, and its cost."""

    name: str
    requests: int  # requests sent (a pending one not counted)
    pending: bool  # the thread ends with input not sent yet
    current: int | None  # the newest recorded context
    peak: int | None  # the largest recorded context
    usd: float | None  # the cost of its priced requests (None: none priced)
    unpriced: tuple[str, ...]  # models with recorded usage but no price
    models: tuple[str, ...]  # the models its requests went to, in order of first use
    prices_as_of: str | None  # the oldest date of the prices used

    @property
    def main(self) -> bool:
        return self.name == MAIN_THREAD


@dataclass(frozen=True, slots=True)
class SessionCost:
    """The session's cost: every priced request of every thread."""

    usd: float | None
    unpriced: tuple[str, ...]
    prices_as_of: str | None


def _facts(turns: Sequence[Session], index: int, overrides: Overrides | None) -> RequestFacts:
    if isinstance(turns, LazyTurns):
        info = turns.info(index)
        usage = info.get("recorded")
        usage = usage if isinstance(usage, RecordedUsage) else None
        model = info.get("model") if isinstance(info.get("model"), str) else None
        pending = info.get("request") is None
        identity: object = (info.get("thread"), info.get("request"), info.get("line"), usage)
    else:
        turn = turns[index]
        usage, model, pending = turn.recorded, turn.model_name, turn.pending
        identity = (id(turn), usage)
    found = price_for(model, overrides) if usage is not None else None
    usd = usage_cost(usage, found[1].price) if found is not None and usage is not None else None
    key = found[0] if found is not None else model
    return RequestFacts(identity, usage.context_tokens if usage is not None else None, usd, key,
                        found[1].as_of if found is not None else None, pending)


class SessionTotals:
    """The threads' summaries, kept up to date as the session grows (one per followed file)."""

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides
        self._facts: dict[str, list[RequestFacts]] = {}
        self._sums: dict[str, _ThreadSums] = {}  # per thread, its facts added up (what its summary reads)
        # per thread, the turns summed last and their summary: a lazy sequence is a snapshot (the same
        # object always holds the same turns), so handed the very same one again nothing is read
        self._seen: dict[str, tuple[Sequence[Session], ThreadSummary]] = {}

    def update(self, threads: Mapping[str, Sequence[Session]], overrides: Overrides | None = None) -> tuple[ThreadSummary, ...]:
        """The summary of every thread of ``threads`` (main first, then in file order)."""
        if overrides is not None and overrides is not self.overrides:
            self.overrides = overrides
            self._facts.clear()  # other prices: every request is priced again
            self._sums.clear()
            self._seen.clear()
        out = []
        main = None  # where the main thread's summary is in ``out``
        for name, turns in threads.items():
            if name == MAIN_THREAD:
                main = len(out)
            seen = self._seen.get(name)
            if seen is not None and seen[0] is turns and isinstance(turns, LazyTurns):
                out.append(seen[1])  # the very turns summed last (a thread no line has touched since)
                continue
            known = self._facts.setdefault(name, [])
            count = len(turns)
            # completed requests never change: start again at the last one known (it may still have
            # been written), or from the top when the thread is not the one it was
            start = max(0, min(len(known), count) - 1)
            if start and _facts(turns, start - 1, self.overrides).identity != known[start - 1].identity:
                start = 0
            del known[start:]
            known.extend(_facts(turns, i, self.overrides) for i in range(start, count))
            sums = self._sums.get(name)
            if sums is None:
                sums = self._sums[name] = _ThreadSums()
            sums.cut(start)
            for index in range(start, count):
                sums.add(index, known[index])
            summary = sums.summary(name, known)
            self._seen[name] = (turns, summary)
            out.append(summary)
        for gone in [name for name in self._facts if name not in threads]:
            del self._facts[gone]
            self._sums.pop(gone, None)
            self._seen.pop(gone, None)
        if main:
            out.insert(0, out.pop(main))  # main first: the rest keep the file's order
        return tuple(out)


    def contexts(self, thread: str) -> list[int | None]:
        """The recorded context of each turn of ``thread`` as last summed (``[]`` for a thread not known)."""
        sums = self._sums.get(thread)
        return list(sums.contexts) if sums is not None else []


class _ThreadSums:
    """A thread's request facts added up as they come (each list holds the figure after the first i
    facts; the dicts each key's first fact, in that order), cut back with them: a followed thread's
    summary costs the requests appended, not every request of the thread."""

    __slots__ = ("contexts", "current", "dates", "models", "peak", "priced_at", "priced_usd", "requests", "unpriced")

    def __init__(self) -> None:
        self.contexts: list[int | None] = []  # each fact's recorded context
        self.requests = [0]  # requests sent
        self.current: list[int | None] = [None]  # the newest recorded context
        self.peak: list[int | None] = [None]  # the largest
        self.priced_at: list[int] = []  # the priced facts, and their cost in order
        self.priced_usd: list[float] = []
        self.unpriced: dict[str, int] = {}  # models with recorded usage but no price
        self.models: dict[str, int] = {}
        self.dates: dict[str, int] = {}  # dates of the prices used

    def cut(self, keep: int) -> None:
        """Keep what the first ``keep`` facts gave."""
        del self.contexts[keep:], self.requests[keep + 1:], self.current[keep + 1:], self.peak[keep + 1:]
        while self.priced_at and self.priced_at[-1] >= keep:
            self.priced_at.pop()
            self.priced_usd.pop()
        for firsts in (self.unpriced, self.models, self.dates):
            for key in [key for key, index in firsts.items() if index >= keep]:
                del firsts[key]

    def add(self, index: int, fact: RequestFacts) -> None:
        """Add fact ``index`` (the next one)."""
        context = fact.context
        self.contexts.append(context)
        self.requests.append(self.requests[-1] + (not fact.pending))
        self.current.append(context if context is not None else self.current[-1])
        peak = self.peak[-1]
        self.peak.append(context if context is not None and (peak is None or context > peak) else peak)
        if fact.usd is not None:
            self.priced_at.append(index)
            self.priced_usd.append(fact.usd)
            if fact.as_of:
                self.dates.setdefault(fact.as_of, index)
        elif context is not None:
            self.unpriced.setdefault(fact.model or "unknown model", index)
        if fact.model:
            self.models.setdefault(fact.model, index)

    def summary(self, name: str, facts: Sequence[RequestFacts]) -> ThreadSummary:
        """The summary of the thread whose facts (all added) are ``facts``."""
        return ThreadSummary(
            name=name,
            requests=self.requests[-1],
            pending=bool(facts) and facts[-1].pending,
            current=self.current[-1],
            peak=self.peak[-1],
            usd=sum(self.priced_usd) if self.priced_usd else None,  # in order, as one sum: the same float
            unpriced=tuple(self.unpriced),
            models=tuple(self.models),
            prices_as_of=min(self.dates) if self.dates else None,
        )


def session_cost(summaries: Sequence[ThreadSummary]) -> SessionCost:
    """The cost of every thread together."""
    priced = [s.usd for s in summaries if s.usd is not None]
    unpriced = tuple(dict.fromkeys(m for s in summaries for m in s.unpriced))
    dates = sorted({s.prices_as_of for s in summaries if s.prices_as_of})
    return SessionCost(sum(priced) if priced else None, unpriced, dates[0] if dates else None)
