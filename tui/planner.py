"""Loading and planning, done off the UI thread: one ``Planner`` owns the one ``Engine``.

The app runs at most one request at a time (``Planner.run`` in a thread worker) and queues at most
one follow-up (the newest); a running load is never cancelled, so every finished load reaches the
screen. Errors cross into the UI typed (``PlanError``: a kind decided by the exception's class,
never by its text). The last good turns are kept: a broken file reports its error while the last
good plan stays on screen, and what-if changes still work on it. What-if budgets are core's
(``Engine.plan(what_if=k)``); the timeline's per-turn points are cached by turn identity and
settings (a completed turn never changes) and estimates of uncached turns are filled in by
``Planner.fill_timeline`` after the newest plan is on screen: newest turn first, one turn per hold of
the planner's lock, so that a newer request (an append, a key) waits for one turn's plan at most and
the fill it interrupts is taken up again, from its cached points, after that request's plan is shown.
An agent's session comes with what core's analysis says of it (``AgentFacts``: its threads and their
cost, the compactions of the thread shown, the auto-compact threshold and the forecast); the
request's ``thread`` picks a sub-agent's thread (the main one by default).
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from tokenbox.core import BadInput, Engine, Plan, Session, TokenizerError
from tokenbox.core.analysis.compactions import Compaction, Forecast, auto_compact_at, forecast, ledger, since_last
from tokenbox.core.analysis.threads import SessionCost, SessionTotals, ThreadSummary, session_cost
from tokenbox.core.commands.thresholds import compact_buffer
from tokenbox.core.model.errors import ConfigError, ErrorKind, NotYetComplete, error_kind
from tokenbox.core.model.names import ESTIMATE, MAIN_THREAD, NATIVE_FORMAT
from tokenbox.core.model.plan import PrefixCache
from tokenbox.core.model.textsafe import printable
from tokenbox.core.planning.config import config_path, load_settings
from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.turns import LazyTurns, turn_facts, turn_identity

MAX_TIMELINE = 200
TIMELINE_CACHE = 4 * MAX_TIMELINE  # points kept across reloads (a few settings' worth)
FILL_WAIT_SECONDS = 0.5  # the most a fill waits for the plan before it to be drawn
FILL_PROGRESS_SECONDS = 0.25  # a partly filled timeline is handed to the screen this often while the fill runs
FREEZE_BYTES = 4 << 20  # a file this big loaded (and each doubling since): what it built is moved out of the collector's sight


@dataclass(frozen=True)
class PlanRequest:
    """What to plan. ``what_if`` counts ``WHAT_IF_STEP_PERCENT`` steps of the file's ``max_ctx``; ``turn`` None = newest."""

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
    thread: str | None = None  # a thread of an agent's log (None: the default, its main thread)


@dataclass(frozen=True)
class TurnPoint:
    """One turn of a ``.jsonl`` log, for the timeline sparkline."""

    turn: int
    usage: int | None
    tokens_before: int
    tokens_after: int
    prefix_cache: PrefixCache | str  # "" while only the recorded usage is known
    ok: bool
    recorded: int | None = None  # the context size the file recorded for the turn (Claude Code usage)
    sidechain: bool = False  # a sub-agent's turn
    estimated: bool = True  # False: only the recorded usage is known yet (the estimate fills in later)
    hidden: int | None = None  # the part of the request the file does not hold (an agent's turn; None: unknown)


@dataclass(frozen=True)
class AgentFacts:
    """What core's analysis says of an agent's session, beside the plan of the turn shown."""

    thread: str  # the thread shown
    threads: tuple[ThreadSummary, ...]  # every thread of the session (main first)
    cost: SessionCost | None  # every priced request of every thread
    compactions: tuple[Compaction, ...]  # of the thread shown, up to the turn shown
    compact_at: int | None  # the auto-compact threshold (None: the agent's rule is not known, or it is off)
    forecast: Forecast | None  # room before compaction at the turn shown, and how long it lasts


@dataclass(frozen=True)
class PlanError:
    """An error crossing into the UI, of a kind core decides by the exception's class (``ErrorKind``:
    ``load``, ``waiting`` — a state, not a fault —, ``what_if``, ``settings``, ``internal``)."""

    kind: ErrorKind
    message: str
    remedy: str = ""
    waiting_for: str = ""  # ``waiting``: what the file still lacks (from the error, never its text)

    @classmethod
    def of(cls, exc: BaseException, *, loading: bool) -> PlanError:
        kind = error_kind(exc, loading=loading)
        if isinstance(exc, NotYetComplete):
            return cls(kind, str(exc), waiting_for=exc.awaiting)
        if kind is ErrorKind.WHAT_IF:
            return cls(kind, "what-if budget too small — press 0", str(exc))
        if kind is ErrorKind.INTERNAL:
            return cls(kind, f"internal error: {printable(repr(exc))}")
        return cls(kind, str(exc))


@dataclass(frozen=True)
class Outcome:
    """The result of one request: a plan (maybe of the last good turns) and/or an error."""

    request: PlanRequest
    plan: Plan | None
    failure: PlanError | None = None  # what went wrong (with a plan: the file broke, the last good plan stays)
    timeline: tuple[TurnPoint, ...] = ()
    turn_count: int = 0
    base_max_ctx: int | None = None
    tokenizers: tuple[str, ...] = ()
    skipped_tokenizers: tuple[str, ...] = ()
    loaded: bool = False
    plan_seconds: float = 0.0
    stale: bool = False  # the plan is of the last good turns: the file failed to load since
    timeline_complete: bool = True  # False: some turns show recorded usage only, estimates to follow
    warnings: tuple[str, ...] = ()  # skipped log lines, and the plan's own warnings
    agent: AgentFacts | None = None  # an agent's session: threads, cost, compactions (None: a tokenbox session)

    @property
    def error(self) -> str | None:
        return self.failure.message if self.failure else None

    @property
    def error_kind(self) -> ErrorKind | None:
        return self.failure.kind if self.failure else None

    @property
    def waiting_for(self) -> str:
        """What the file still lacks while waiting for its first turn ("" otherwise)."""
        return self.failure.waiting_for if self.failure is not None and self.failure.kind is ErrorKind.WAITING else ""

    @property
    def file_error(self) -> str | None:
        """The error of the file itself (loading, or waiting for its first turn), not of a setting."""
        return self.error if self.error_kind in (ErrorKind.LOAD, ErrorKind.WAITING) else None


class Planner:
    """Loads and plans on behalf of the app; one request at a time, from a worker thread."""

    def __init__(self, engine_factory: Callable[[], Engine] | None = None) -> None:
        self._engine_factory = engine_factory
        self._engine: Engine | None = None
        self._loader = Loader()  # this planner's own: what it read of the file followed
        self._settings_stamp: object = None
        self._turns: Sequence[Session] | None = None
        self._warnings: tuple[str, ...] = ()  # lines of the last load that were skipped, and why
        self._points: dict[tuple, TurnPoint] = {}  # timeline points by (turn identity, settings)
        self._point_settings: tuple = ()  # the settings of the points' keys made last (``_timeline``)
        self._threads: dict[str, Sequence[Session]] = {}  # every thread of a transcript, as last loaded
        self._totals = SessionTotals()  # the threads' requests and costs, summed as the file grows
        # the engine is used by one thread at a time: a follow-up run can start while the worker
        # before it still fills in its timeline (the fill holds the lock for one turn at a time)
        self._lock = threading.Lock()
        self._generation = 0  # runs started: a fill stops as soon as a newer run has started
        self.fill_plans = 0  # past turns planned by fills (tests pin the fill's work with it)
        self._frozen_at = 0  # the file's size when what was loaded was last frozen (``_freeze``)
        self._newest: tuple[tuple, object, TurnPoint] | None = None  # (key, recorded usage, point) of the newest turn planned
        self._names_listed: tuple[str, ...] = ()  # the tokenizers the last outcome listed

    def look_up_tokenizers(self) -> bool:
        """Look the installed tokenizer plug-ins up (plans list only those found already); whether the
        last outcome listed fewer tokenizers than there are (a plan again lists them for the tokenizer key).
        Called once the first plan is drawn; takes no lock, so a request made meanwhile is not held up."""
        engine = self._engine
        if engine is None:
            return False
        return tuple(engine.registry.names()) != self._names_listed

    def run(self, request: PlanRequest) -> Outcome:
        """Plan ``request`` (never raises: failures come back as ``Outcome.failure``)."""
        started = time.perf_counter()
        self._generation += 1  # a fill in progress stops after its current turn and lets this run in
        try:
            with self._lock:
                outcome = self._run(request)
        except Exception as exc:  # the app must never die of a planning problem
            outcome = Outcome(request, None, PlanError.of(exc, loading=False))
        return replace(outcome, plan_seconds=time.perf_counter() - started)

    def yield_fill(self) -> None:
        """A newer request is on its way (the file changed; called from the watcher's thread): a fill in
        progress starts no other turn, so the request waits for the turn being planned at most, not for
        the one after it too (its run takes up the fill from the points cached so far)."""
        self._generation += 1  # (two threads adding at once lose an increment: either still stops the fill)

    def _freeze_if_big(self, path: str) -> None:
        """``_freeze`` after the first load of a big file, and again each time it has doubled since."""
        size = _size(path)
        if size >= FREEZE_BYTES and size >= 2 * self._frozen_at:
            self._frozen_at = size
            _freeze()

    def _engine_for(self, config_stamp: object) -> Engine:
        """The engine; a new one when the config file changed (a broken config recovers once fixed)."""
        if self._engine is None or config_stamp != self._settings_stamp:
            factory = self._engine_factory
            self._engine = factory() if factory is not None else Engine(settings=load_settings())
            self._settings_stamp = config_stamp
            self._points.clear()
        return self._engine

    def _run(self, request: PlanRequest) -> Outcome:
        try:
            engine = self._engine_for(config_stamp())
        except BadInput as exc:
            self._engine = None
            return Outcome(request, None, PlanError.of(exc, loading=False))
        load_error: PlanError | None = None
        loaded = False
        warnings: tuple[str, ...] = self._warnings
        if request.reload or self._turns is None:
            try:
                # a big file's first read with the cyclic collector paused: its full passes walked the heap the
                # read was building (three times over a 50 MB transcript, ≈0.2 s of ≈1.2 s); what the read
                # built is frozen right after it (``_freeze_if_big``), so none walks it again
                with _collector_paused(self._turns is None and _size(request.path) >= FREEZE_BYTES):
                    self._turns, warnings = self._loader.load_turns_skipping(request.path,
                                                                             max_bytes=engine.settings.max_file_size)
                loaded = True
                self._freeze_if_big(request.path)
            except BadInput as exc:
                load_error = PlanError.of(exc, loading=True)
            except (OSError, RecursionError, MemoryError, ValueError) as exc:
                load_error = PlanError(ErrorKind.LOAD, f"{printable(request.path)}: cannot load: {printable(str(exc))}")
        self._warnings = warnings
        if loaded:
            self._threads = self._load_threads(request.path, engine)
        # the plug-ins are looked up for the tokenizer key only (``look_up_tokenizers`` does it once the first
        # plan is drawn): importing importlib.metadata to find them took ≈50 ms of every first plan
        names = tuple(engine.registry.names(plugins=request.cycle_tokenizer))
        self._names_listed = names
        if self._turns is None:
            return Outcome(request, None, load_error, tokenizers=names)
        thread, turns = self._thread_turns(request)
        index = len(turns) - 1 if request.turn is None else max(0, min(request.turn, len(turns)) - 1)
        session = turns[index]
        options = dict(budget=request.budget, trimming=request.trimming, reserve_out=request.reserve_out,
                       what_if=request.what_if)
        try:
            tokenizer, skipped = self._tokenizer(engine, request, names)
            options["tokenizer"] = tokenizer
            plan = engine.plan(session, **options)
        except BadInput as exc:
            return Outcome(request, None, load_error or PlanError.of(exc, loading=False), tokenizers=names,
                           turn_count=len(turns), loaded=loaded)
        timeline: tuple[TurnPoint, ...] = ()
        complete = True
        if len(turns) > 1 or request.path.lower().endswith(".jsonl"):
            timeline, complete = self._timeline(turns, index, plan, options, estimate=None)
        return Outcome(
            request,
            plan,
            load_error,
            timeline=timeline,
            turn_count=len(turns),
            base_max_ctx=plan.base_max_ctx or plan.budget.max_ctx,
            tokenizers=names,
            skipped_tokenizers=skipped,
            loaded=loaded,
            stale=load_error is not None,
            timeline_complete=complete,
            warnings=warnings + plan.warnings,
            agent=self._agent_facts(engine, plan, turns, index, thread),
        )

    def _thread_turns(self, request: PlanRequest) -> tuple[str, Sequence[Session]]:
        """The thread the request asks for (the main one when it is not there) and its turns."""
        assert self._turns is not None
        if request.thread is not None and request.thread != MAIN_THREAD and request.thread in self._threads:
            return request.thread, self._threads[request.thread]
        return MAIN_THREAD, self._turns

    def _load_threads(self, path: str, engine: Engine) -> dict[str, Sequence[Session]]:
        """Every thread of a transcript (``{}`` for other files: their one thread is ``_turns``); the
        sub-agents' files are followed, so a reload reads what was appended to them."""
        if not isinstance(self._turns, LazyTurns):
            return {}
        try:
            return dict(self._loader.load_threads(path, max_bytes=engine.settings.max_file_size))
        except BadInput:
            return {}

    def _agent_facts(self, engine: Engine, plan: Plan, turns: Sequence[Session], index: int, thread: str) -> AgentFacts | None:
        """Core's analysis of an agent's session at the turn shown (``None`` for a tokenbox session)."""
        if plan.session.source_format == NATIVE_FORMAT:
            return None
        threads = self._threads or {MAIN_THREAD: self._turns or turns}
        summaries = self._totals.update(threads, engine.settings.config_prices)
        contexts = self._totals.contexts(thread)
        if len(contexts) != len(turns):  # a thread the totals do not hold (they always should)
            contexts = [None] * len(turns)
        # each summary sized as the parts table sizes it: with the plan's tokenizer, unless that is the estimate
        count = None if plan.tokenizer.name == ESTIMATE else engine.counter(plan.tokenizer.name).count
        records = tuple(c for c in ledger(turns, contexts, count) if c.after_request <= index)
        window = plan.base_max_ctx or plan.budget.max_ctx
        try:
            buffer = compact_buffer(None, os.environ)
        except ConfigError:
            buffer = None  # the config file's mistake is the engine's to report
        threshold = auto_compact_at(plan.session, window, os.environ, buffer)
        outlook = None
        if threshold is not None:
            outlook = forecast([*since_last(contexts, records, index), plan.tokens_after], threshold)
        return AgentFacts(thread, summaries, session_cost(summaries), records, threshold, outlook)

    def fill_timeline(self, outcome: Outcome, progress: Callable[[Outcome], None] | None = None,
                      after: threading.Event | None = None) -> Outcome | None:
        """``outcome`` with every timeline point estimated (``None`` when there was nothing to fill, or
        when a newer request started meanwhile: its own fill takes up from the points cached so far).

        The turns are planned newest first, each under the planner's lock on its own, so a request made
        meanwhile waits for one turn's plan at most. ``progress`` is handed the partly filled outcome
        every ``FILL_PROGRESS_SECONDS`` (from this thread), so the screen fills in as the work goes. With
        ``after``, the fill starts once it is set (the plan drawn), or after ``FILL_WAIT_SECONDS``.
        """
        if outcome.timeline_complete or outcome.plan is None or self._turns is None or self._engine is None:
            return None
        generation = self._generation
        request = outcome.request
        _, turns = self._thread_turns(request)
        index = len(turns) - 1 if request.turn is None else max(0, min(request.turn, len(turns)) - 1)
        tokenizer = outcome.plan.tokenizer.name if request.cycle_tokenizer else request.tokenizer
        options = dict(budget=request.budget, trimming=request.trimming, reserve_out=request.reserve_out,
                       what_if=request.what_if, tokenizer=tokenizer)
        engine = self._engine
        settings = tuple(sorted(options.items()))
        if after is not None:
            after.wait(FILL_WAIT_SECONDS)
        shown = time.monotonic()
        try:
            for number in reversed(range(max(0, len(turns) - MAX_TIMELINE), len(turns))):
                if number == index:
                    continue  # the plan on screen
                with self._lock:
                    if (self._generation != generation or self._engine is not engine
                            or self._thread_turns(request)[1] is not turns):
                        return None  # a newer request: its run has the lock next, its fill goes on from here
                    key = self._point_key(turns, number, settings)
                    if key in self._points:
                        continue
                    point = self._settled(turns, number, key)
                    if point is not None:  # planned as the newest turn, and complete since
                        self._remember(key, point)
                        continue
                    point = _point(number, engine.plan(turns[number], **options))
                    self.fill_plans += 1
                    if number != len(turns) - 1:  # the newest turn may still grow
                        self._remember(key, point)
                if progress is not None and time.monotonic() - shown >= FILL_PROGRESS_SECONDS:
                    with self._lock:
                        if self._generation != generation:
                            return None
                        timeline, _ = self._timeline(turns, index, outcome.plan, options, estimate=None)
                    progress(replace(outcome, timeline=timeline, timeline_complete=False))
                    shown = time.monotonic()
                time.sleep(0)  # the GIL to the screen's thread between two turns
            with self._lock:
                if self._generation != generation:
                    return None
                timeline, _ = self._timeline(turns, index, outcome.plan, options,
                                             estimate=lambda turn: engine.plan(turn, **options))
        except BadInput:
            return None
        return replace(outcome, timeline=timeline, timeline_complete=True)

    def _settle_newest(self, turns: Sequence[Session]) -> None:
        """The newest turn planned before, remembered as a past turn if a newer request has settled it."""
        newest = self._newest
        if newest is not None and newest[0][0] < len(turns) - 1 and newest[0] not in self._points:
            point = self._settled(turns, newest[0][0], newest[0])
            if point is not None:
                self._remember(newest[0], point)

    def _settled(self, turns: Sequence[Session], number: int, key: tuple) -> TurnPoint | None:
        """The point of turn ``number`` planned while it was the newest, if it still holds: the same
        request at the same place with the same recorded usage (what a request records comes with its
        reply; the lines after it belong to the next one). A newer request then settles it, and the
        fill need not plan a whole chain's turn again for every append."""
        newest = self._newest
        if newest is None or newest[0] != key:
            return None
        facts = turn_facts(turns, number)
        return newest[2] if facts is not None and facts.recorded == newest[1] else None

    @staticmethod
    def _point_key(turns: Sequence[Session], number: int, settings: tuple) -> tuple:
        """The cache key of turn ``number``'s point: its place, what it holds and the plan's settings
        (a lazy transcript's turn is known by its request without being built)."""
        facts = turn_facts(turns, number)
        return (number, facts.identity if facts else turn_identity(turns[number]), settings)

    def _timeline(
        self,
        turns: Sequence[Session],
        index: int,
        current: Plan,
        options: dict,
        estimate: Callable[[Session], Plan] | None,
    ) -> tuple[tuple[TurnPoint, ...], bool]:
        """The timeline points; turns not cached yet get their recorded usage only unless ``estimate``."""
        settings = tuple(sorted(options.items()))
        if settings == self._point_settings:
            # the tuple every point cached with these settings has in its key: not an equal one per append
            # (≈360 bytes each, kept by the cache's keys)
            settings = self._point_settings
        else:
            self._point_settings = settings
        self._settle_newest(turns)
        points = []
        complete = True
        for number in range(max(0, len(turns) - MAX_TIMELINE), len(turns)):
            # a completed turn never changes: its identity is its place and what it holds (a lazy
            # transcript's turn is known by its request without being built: a cached point costs nothing)
            facts = turn_facts(turns, number)
            key = (number, facts.identity if facts else turn_identity(turns[number]), settings)  # as _point_key
            point = self._points.get(key) if number != index else None
            if point is None and facts and number != index and estimate is None:
                complete = False  # recorded usage only, from the facts: the turn is not built
                recorded = facts.recorded.context_tokens if facts.recorded is not None else None
                point = TurnPoint(number + 1, None, 0, 0, "", True, recorded, facts.sidechain, estimated=False)
            if point is None:
                turn = turns[number]
                plan = current if number == index else estimate(turn) if estimate is not None else None
                if plan is None:
                    complete = False
                    recorded = turn.recorded.context_tokens if turn.recorded is not None else None
                    point = TurnPoint(number + 1, None, 0, 0, "", True, recorded, turn.meta.get("sidechain") is True,
                                      estimated=False)
                else:
                    point = _point(number, plan)
                    if number != len(turns) - 1:  # the newest turn may still grow
                        self._remember(key, point)
                    elif facts:  # kept aside: once a newer request has come, it is settled (``_settled``)
                        self._newest = (key, facts.recorded, point)
            points.append(point)
        return tuple(points), complete

    def _remember(self, key: tuple, point: TurnPoint) -> None:
        while len(self._points) >= TIMELINE_CACHE:
            self._points.pop(next(iter(self._points)))
        self._points[key] = point

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


def _point(number: int, plan: Plan) -> TurnPoint:
    recorded = plan.recorded.context_tokens if plan.recorded is not None else None
    inferred = plan.kind_tokens("inferred")  # known without making every section's result
    return TurnPoint(number + 1, plan.usage_percent, plan.tokens_before, plan.tokens_after, plan.prefix_cache, plan.ok,
                     recorded, plan.session.meta.get("sidechain") is True, hidden=sum(inferred) if inferred else None)


@contextlib.contextmanager
def _collector_paused(paused: bool) -> Iterator[None]:
    """The cyclic collector off while the block runs (``paused``), as it was after it."""
    was = gc.isenabled()
    if paused and was:
        gc.disable()
    try:
        yield
    finally:
        if paused and was:
            gc.enable()


def _size(path: str) -> int:
    """The file's size in bytes (0 when it cannot be read)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _freeze() -> None:
    """Move every object alive now out of the cyclic collector's sight (``gc.freeze``).

    A followed 20 MB transcript is millions of objects that live as long as the app follows it; each of
    the collector's full passes walked them all (≈150 ms, every few appends: most of an append's cost).
    They are freed as usual by reference counting; a cycle among them is left for good (a file
    followed before ``follow_file``: little, and only on a switch)."""
    gc.collect()
    gc.freeze()


def config_stamp() -> object:
    """What identifies the config file's state (path, size, mtime); a change makes a new engine."""
    path = config_path(os.environ)
    try:
        st = os.stat(path)
    except OSError:
        return (path, None)
    return (path, st.st_ino, st.st_size, st.st_mtime_ns)
