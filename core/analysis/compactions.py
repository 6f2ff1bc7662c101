"""Compaction of an agent's context: when the next one comes, and what each one before did.

* ``forecast(contexts, threshold)``: the room left before the agent compacts automatically and, at the
  recent growth per request, about how many requests that room lasts (the status line's rule for the
  threshold: ``tokenbox.core.model.compaction``).
* ``ledger(turns)``: every compaction of a thread (Claude Code's ``compact_boundary`` records, which
  the reader keeps in each turn's ``meta["compactions"]``): where it happened, the context before and
  after it, how many requests it summarised and how large the summary is.
* ``recorded_contexts(turns)``: the recorded context of each request of a thread, read without
  building the turns of a transcript.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tokenbox.core.model.compaction import compact_threshold
from tokenbox.core.model.session import RecordedUsage, Session
from tokenbox.core.sources.readers.claude_code import SOURCE as CLAUDE_CODE
from tokenbox.core.sources.readers.claude_truth import visible_tokens
from tokenbox.core.sources.turns import LazyTurns

RECENT = 10  # requests the growth per request is measured over (the newest, since the last compaction)
COMPACTING = (CLAUDE_CODE,)  # the formats of agents whose auto-compact rule is known (model.compaction)


def auto_compact_at(session: Session, window: int, environ: Mapping[str, str], buffer: int | None = None) -> int | None:
    """The context at which the agent that wrote ``session`` compacts automatically, by the status line's
    rule (``None``: an agent whose rule is not known, or auto-compaction turned off)."""
    if session.source_format not in COMPACTING:
        return None
    return compact_threshold(window, environ, buffer)


@dataclass(frozen=True, slots=True)
class Forecast:
    """The room before compaction and how long it lasts at the recent growth."""

    threshold: int
    used: int
    growth: float | None  # tokens per request over the recent requests (None: fewer than two)
    basis: int  # how many requests the growth was measured over

    @property
    def room(self) -> int:
        """Tokens left before the agent compacts (negative: past the threshold, compaction is due)."""
        return self.threshold - self.used

    @property
    def requests(self) -> int | None:
        """About how many more requests fit before compaction (0 when due; ``None``: the context is not
        growing, or there is too little history to say)."""
        if self.room <= 0:
            return 0
        if self.growth is None or self.growth <= 0:
            return None
        return max(1, int(self.room // self.growth))


def forecast(contexts: Sequence[int], threshold: int) -> Forecast:
    """The forecast for a thread whose requests since its last compaction had ``contexts`` (oldest first,
    the newest last: the request shown, recorded or predicted)."""
    series = list(contexts[-RECENT:])
    growth = (series[-1] - series[0]) / (len(series) - 1) if len(series) >= 2 else None
    return Forecast(threshold, series[-1] if series else 0, growth, len(series))


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction of a thread."""

    number: int  # 1-based within the thread
    line: int | None  # its record's line in the file
    trigger: str | None  # "auto" or "manual" as the agent recorded it
    after_request: int  # the requests of the thread before it
    before: int | None  # the context it started from (the agent's own figure, else the last recorded)
    after: int | None  # the first recorded context after it (None: no request since)
    summarised: int  # requests whose history it replaced (since the compaction before)
    summary: int | None  # the summary's size, ≈ (None: the summary is not in the file)

    @property
    def freed(self) -> int | None:
        return None if self.before is None or self.after is None else self.before - self.after


def recorded_contexts(turns: Sequence[Session]) -> list[int | None]:
    """The recorded context of each turn (``None`` for a turn without recorded usage); a transcript's
    turns are read from their facts, not built."""
    out: list[int | None] = []
    for index in range(len(turns)):
        usage = _recorded(turns, index)
        out.append(usage.context_tokens if usage is not None else None)
    return out


def _recorded(turns: Sequence[Session], index: int) -> RecordedUsage | None:
    if isinstance(turns, LazyTurns):
        found = turns.info(index).get("recorded")
        return found if isinstance(found, RecordedUsage) else None
    return turns[index].recorded


def compaction_records(turns: Sequence[Session]) -> list[dict]:
    """The compaction records the newest turn of ``turns`` carries (oldest first)."""
    if not len(turns):
        return []
    records = turns[-1].meta.get("compactions")
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def ledger(turns: Sequence[Session], contexts: Sequence[int | None] | None = None,
           count: Callable[[str], int] | None = None) -> tuple[Compaction, ...]:
    """Every compaction of the thread whose turns are ``turns`` (``contexts``: their recorded contexts,
    when the caller has them already). Each summary is sized as the plan of the request after the
    compaction sizes it: ``count`` is the tokenizer's count of a text when the plans count with a
    tokenizer (a Codex rollout's ``o200k_base``, a tokenizer chosen with ``t``), ``None`` when they count
    with the calibrated estimate (a Claude Code transcript's)."""
    records = compaction_records(turns)
    if not records:
        return ()
    contexts = recorded_contexts(turns) if contexts is None else contexts
    out: list[Compaction] = []
    previous = 0
    for number, record in enumerate(records, start=1):
        after_request = record.get("after_request")
        if not isinstance(after_request, int) or after_request < 0:
            continue
        pre = record.get("pre_tokens")
        before = pre if isinstance(pre, int) and not isinstance(pre, bool) else _last(contexts, after_request)
        after = next((c for c in contexts[after_request:] if c is not None), None) if after_request < len(contexts) else None
        out.append(Compaction(number, record.get("line") if isinstance(record.get("line"), int) else None,
                              record.get("trigger") if isinstance(record.get("trigger"), str) else None,
                              after_request, before, after, after_request - previous,
                              _summary(turns, after_request, count)))
        previous = after_request
    return tuple(out)


def _last(contexts: Sequence[int | None], upto: int) -> int | None:
    return next((c for c in reversed(contexts[:upto]) if c is not None), None)


def _summary(turns: Sequence[Session], index: int, count: Callable[[str], int] | None) -> int | None:
    """The size of the compaction summary in turn ``index`` (the first after a compaction): the
    tokenizer's ``count`` of each part, or their calibrated estimate (``ledger``)."""
    if index >= len(turns):
        return None
    turn = turns[index]
    parts = [s for s in turn.sections if s.meta.get("is_compact_summary") is True or s.meta.get("compacted") is True]
    if not parts:
        return None
    if count is not None:  # what the engine counts each part as: a fixed size, else its text's count
        return sum(s.tokens if s.tokens is not None else count(s.text) if s.text else 0 for s in parts)
    scale = turn.calibration.scale if turn.calibration is not None else 1.0
    return visible_tokens(parts, scale)


def since_last(contexts: Sequence[int | None], records: Sequence[Compaction], upto: int) -> list[int]:
    """The recorded contexts of the requests before ``upto`` (0-based, excluded) and after the last
    compaction before it."""
    start = max((r.after_request for r in records if r.after_request <= upto), default=0)
    return [c for c in contexts[start:upto] if c is not None]
