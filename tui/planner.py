"""Loading and planning, done off the UI thread: one ``Planner`` owns the one ``Engine``.

``Planner.run`` is called from the app's exclusive thread worker. The engine is not thread-safe,
and an exclusive thread worker that was cancelled keeps running until it returns, so every use of
the engine happens under one lock; a cancelled request gives up as soon as it gets the lock, so
the newest request wins. The last good turns are kept: a broken file reports its error while
the last good plan stays on screen, and what-if changes still work on it.

Counters (``requests``, ``runs``, ``loads``, ``plans``) say how much work was really done: a burst of
file events or key presses coalesces into far fewer runs than requests (tests check this).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tokenbox.core import BadInput, Engine, Plan, Session, TokenizerError, load_turns
from tokenbox.core.textsafe import printable

WHAT_IF_STEP_PERCENT = 5
MAX_TIMELINE = 200


@dataclass(frozen=True)
class PlanRequest:
    """What to plan. ``what_if`` counts 5% steps of the file's ``max_ctx``; ``turn`` None = newest."""

    path: str
    reload: bool = True
    budget: int | None = None
    what_if: int = 0
    tokenizer: str | None = None
    cycle_tokenizer: bool = False
    trimming: str | None = None
    turn: int | None = None
    reason: str = "start"
    seq: int = 0
    reserve_out: int | None = None  # overrides the file's reserve_out (``--reserve-out``)


@dataclass(frozen=True)
class TurnPoint:
    """One turn of a ``.jsonl`` log, for the timeline sparkline."""

    turn: int
    usage: int | None
    tokens_before: int
    tokens_after: int
    prefix_cache: str
    ok: bool
    recorded: int | None = None  # the context size the file recorded for the turn (Claude Code usage)
    sidechain: bool = False  # a sub-agent's turn


@dataclass(frozen=True)
class Outcome:
    """The result of one request: a plan (maybe of the last good turns) and/or an error."""

    request: PlanRequest
    plan: Plan | None
    error: str | None = None
    error_kind: str | None = None  # load | settings | internal
    timeline: tuple[TurnPoint, ...] = ()
    turn_count: int = 0
    base_max_ctx: int | None = None
    tokenizers: tuple[str, ...] = ()
    skipped_tokenizers: tuple[str, ...] = ()
    loaded: bool = False
    plan_seconds: float = 0.0
    stale: bool = field(default=False)

    @property
    def file_error(self) -> str | None:
        """The error of the file itself (not of a what-if setting)."""
        return self.error if self.error_kind == "load" else None


class Planner:
    """Loads and plans on behalf of the app; use it from worker threads only."""

    def __init__(self, engine_factory: Callable[[], Engine] = Engine) -> None:
        self._engine_factory = engine_factory
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._turns: list[Session] | None = None
        self.requests = 0  # calls of run()
        self.runs = 0  # requests that were not cancelled before they started
        self.loads = 0  # reads of the session file
        self.plans = 0  # plans made of the shown turn (the timeline's other turns not counted)

    def run(self, request: PlanRequest, cancelled: Callable[[], bool] = lambda: False) -> Outcome | None:
        """Plan ``request``; ``None`` when it was cancelled (a newer request is on its way)."""
        with self._lock:
            self.requests += 1
            if cancelled():
                return None
            self.runs += 1
            started = time.perf_counter()
            try:
                outcome = self._run(request, cancelled)
            except Exception as exc:  # the app must never die of a planning problem
                outcome = Outcome(request, None, f"internal error: {printable(repr(exc), 300)}", "internal")
            if outcome is None:
                return None
            return _with_time(outcome, time.perf_counter() - started)

    def _run(self, request: PlanRequest, cancelled: Callable[[], bool]) -> Outcome | None:
        try:
            engine = self._engine = self._engine or self._engine_factory()
        except BadInput as exc:
            return Outcome(request, None, str(exc), "settings")
        load_error: str | None = None
        loaded = False
        if request.reload or self._turns is None:
            self.loads += 1
            try:
                self._turns = load_turns(request.path, max_bytes=engine.settings.max_file_size)
                loaded = True
            except BadInput as exc:
                load_error = str(exc)
            except (OSError, RecursionError, MemoryError, ValueError) as exc:
                load_error = f"{printable(request.path)}: cannot load: {printable(str(exc), 200)}"
        turns = self._turns
        names = tuple(engine.registry.names())
        if turns is None:
            return Outcome(request, None, load_error, "load", tokenizers=names)
        if cancelled():
            return None
        index = len(turns) - 1 if request.turn is None else max(0, min(request.turn, len(turns)) - 1)
        session = turns[index]
        try:
            tokenizer, skipped = self._tokenizer(engine, request, names)
            base = engine.resolve(session, budget=request.budget, tokenizer=tokenizer, trimming=request.trimming,
                                  reserve_out=request.reserve_out).max_ctx
            budget = request.budget
            if request.what_if:
                budget = max(1, base * (100 + WHAT_IF_STEP_PERCENT * request.what_if) // 100)
            options = dict(budget=budget, tokenizer=tokenizer, trimming=request.trimming, reserve_out=request.reserve_out)
            plan = engine.plan(session, **options)
            self.plans += 1
            timeline: tuple[TurnPoint, ...] = ()
            if len(turns) > 1 or request.path.lower().endswith(".jsonl"):
                timeline = self._timeline(engine, turns, index, plan, options, cancelled)
                if timeline is None:
                    return None
        except BadInput as exc:
            error = load_error or str(exc)
            return Outcome(request, None, error, "load" if load_error else "settings", tokenizers=names,
                           turn_count=len(turns), loaded=loaded)
        return Outcome(
            request,
            plan,
            load_error,
            "load" if load_error else None,
            timeline=timeline,
            turn_count=len(turns),
            base_max_ctx=base,
            tokenizers=names,
            skipped_tokenizers=skipped,
            loaded=loaded,
            stale=load_error is not None,
        )

    @staticmethod
    def _tokenizer(engine: Engine, request: PlanRequest, names: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
        """The tokenizer to use; when cycling, the requested one or the next that loads."""
        if not request.cycle_tokenizer or request.tokenizer not in names:
            return request.tokenizer, ()
        start = names.index(request.tokenizer)
        skipped: list[str] = []
        for offset in range(len(names)):
            name = names[(start + offset) % len(names)]
            try:
                engine.counter(name)
            except TokenizerError:
                skipped.append(name)
                continue
            return name, tuple(skipped)
        raise TokenizerError("no tokenizer could be loaded", "check the tokenizer plug-ins")

    @staticmethod
    def _timeline(
        engine: Engine,
        turns: list[Session],
        index: int,
        current: Plan,
        options: dict,
        cancelled: Callable[[], bool],
    ) -> tuple[TurnPoint, ...] | None:
        points = []
        for number in range(max(0, len(turns) - MAX_TIMELINE), len(turns)):
            if cancelled():
                return None
            plan = current if number == index else engine.plan(turns[number], **options)
            recorded = plan.recorded.context_tokens if plan.recorded is not None else None
            points.append(
                TurnPoint(number + 1, plan.usage_percent, plan.tokens_before, plan.tokens_after, plan.prefix_cache, plan.ok,
                          recorded, plan.session.meta.get("sidechain") is True)
            )
        return tuple(points)


def _with_time(outcome: Outcome, seconds: float) -> Outcome:
    from dataclasses import replace

    return replace(outcome, plan_seconds=seconds)
