"""The result of planning one turn: per-section outcome, the step trace, the rendered context.

``Plan.to_dict()`` is the plan JSON (README, "The headless command"); ``Plan.state_at(k)`` is the layout after step k
(k = 0 is untrimmed), which the TUI scrubs through.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any, TypeVar, overload

from tokenbox.core.model.errors import ConfigError
from tokenbox.core.model.llms import Window
from tokenbox.core.model.names import NATIVE_FORMAT, SEPARATOR
from tokenbox.core.model.prices import Cost
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import Calibration, RecordedUsage, Section, Session

PLAN_SCHEMA = "tokenbox.plan/1"
# Request bodies whose headline is counted by the provider's rules (framing included), not recorded.
COUNTED_FORMATS = ("openai-chat", "openai-responses")
_NO_LABEL = object()  # a section meta without a label (``SectionResult.to_dict``)


class HeadlineKind(StrEnum):
    """What a plan's headline (``tokens_after``) is (see ``Plan.headline_kind``)."""

    EXACT = "exact"  # the tokenizer's own count of the rendered context
    RECORDED = "recorded"  # what the provider recorded for the request
    COUNTED = "counted"  # a request body counted by the provider's published rules
    PREDICTED = "predicted"  # a request about to be sent
    ESTIMATED = "estimated"

    @property
    def approximate(self) -> bool:
        """Whether the figure is shown with ``≈``."""
        return self not in (HeadlineKind.EXACT, HeadlineKind.RECORDED, HeadlineKind.COUNTED)


class PrefixCache(StrEnum):
    """The state of the prompt prefix cache for a turn (``caches.prefix`` in the plan JSON)."""

    HIT = "hit"
    MISS = "miss"
    NONE = "none"  # no prefix section


class ContextCache(StrEnum):
    """The state of the assembled context for a turn (``caches.context`` in the plan JSON)."""

    REUSED = "reused"
    REBUILT = "rebuilt"
    SKIPPED = "skipped"  # the sensor skips context assembly
    NONE = "none"  # no context section


class PlanFailure(StrEnum):
    """``error.kind`` of a plan that is not ``ok`` (the plan JSON's spelling)."""

    CONTEXT_CRITICAL_OVERFLOW = "ContextCriticalOverflow"


@dataclass(frozen=True, slots=True)
class TokenizerInfo:
    name: str
    exact: bool
    version: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "exact": self.exact, "version": self.version}


@dataclass(frozen=True, slots=True)
class Budget:
    """The resolved budget: ``available = floor(max_ctx * (1 - headroom)) - reserve_out``."""

    max_ctx: int
    reserve_out: int
    headroom: float
    available: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_ctx": self.max_ctx,
            "reserve_out": self.reserve_out,
            "headroom": _number(self.headroom),
            "available": self.available,
        }


@dataclass(frozen=True, slots=True)
class Step:
    """One trimming step: a lens application, a truncation or a drop."""

    index: int
    section: str
    op: str  # lens | truncate | drop
    detail: str
    tokens_before: int
    tokens_after: int
    deficit_after: int
    total_after: int
    # the section's text after the step, or a function that rebuilds it (long demote traces)
    text_source: str | Callable[[], str] = field(repr=False, compare=False)
    note: str = ""

    @property
    def text_after(self) -> str:
        """The section's text after this step."""
        source = self.text_source
        return source if isinstance(source, str) else source()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "section": self.section,
            "op": self.op,
            "detail": self.detail,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "deficit_after": self.deficit_after,
        }


@dataclass(frozen=True, slots=True)
class SectionResult:
    """How one section came out of the layout."""

    section: Section
    tokens_before: int
    tokens_after: int
    allotment: int
    action: str  # kept | compressed | truncated | dropped | skipped
    lenses: tuple[str, ...]
    text_before: str = field(repr=False)
    text_after: str = field(repr=False)
    cut: str = field(default="", repr=False)

    @property
    def id(self) -> str:
        return self.section.id

    @property
    def kind(self) -> str:
        return self.section.kind

    @property
    def critical(self) -> bool:
        return self.section.critical

    def to_dict(self) -> dict[str, Any]:
        s = self.section
        label = s.meta.get("label", _NO_LABEL)  # (one look: a transcript's meta is a ``Mapping`` whose reads are Python calls)
        return {
            "id": s.id,
            "kind": s.kind,
            "critical": s.critical,
            "priority": s.priority,
            "shrink": _number(s.shrink),
            "grow": _number(s.grow),
            "min": s.min,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "allotment": self.allotment,
            "action": self.action,
            "lenses": list(self.lenses),
            **({"label": label} if label is not _NO_LABEL else {}),
        }


@dataclass(frozen=True, slots=True)
class SectionState:
    """A section as it stands after some step of the trace."""

    id: str
    text: str
    tokens: int
    action: str


@dataclass(frozen=True, slots=True)
class LayoutState:
    """The whole layout after step ``step`` (0 = untrimmed)."""

    step: int
    sections: Sequence[SectionState]  # a tuple, or ``Built`` (made when read; it reads as a tuple)
    total: int
    deficit: int


_T = TypeVar("_T")


class Built(Sequence[_T]):
    """A tuple whose items are made when first read (``make(index)``), each once.

    A plan of a session that never compacted holds every part of the chain: its results are made for
    the rows a reader asks for, not for all of them at each plan. It reads as the tuple of its items:
    equal to it, hashed and pickled as it.
    """

    __slots__ = ("_all", "_count", "_items", "_make")

    def __init__(self, count: int, make: Callable[[int], _T]) -> None:
        self._count = count
        self._make = make
        self._items: dict[int, _T] = {}  # the items made, by index (until all are: ``_all``)
        self._all: list[_T] | None = None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[_T, ...]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._count)))
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("index out of range")
        if self._all is not None:
            return self._all[index]
        item = self._items.get(index)
        if item is None:
            item = self._items[index] = self._make(index)  # two readers at once make equal items: either is kept
        return item

    def __iter__(self) -> Iterator[_T]:
        everything = self._all
        if everything is None:  # read whole: every item made at once (those made before kept)
            items, make = self._items, self._make
            everything = self._all = [items[i] if i in items else make(i) for i in range(self._count)]
            self._items = {}
        return iter(everything)

    @property
    def made(self) -> int:
        """How many items have been made so far."""
        return self._count if self._all is not None else len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Built | tuple):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return repr(tuple(self))


class SectionResults(Built[SectionResult]):
    """A plan's section results made when read, with what a plan sums of them known without making them:
    the results' ``tokens_after`` added up, the places of the sections of some kinds and, for an agent's
    request, its rows as ``/context`` lists them (``groups``: key -> (label, tokens, parts), in the order
    of their first section; see ``analysis.breakdown.context_use``)."""

    __slots__ = ("groups", "kinds", "tokens_after", "untrimmed_counts", "untrimmed_sections")

    def __init__(self, count: int, make: Callable[[int], SectionResult], *, tokens_after: int,
                 kinds: Mapping[str, tuple[int, ...]], groups: Mapping[str, tuple[str, int, int]] | None = None,
                 untrimmed: tuple[Sequence[Section], Callable[[], list[int]]] | None = None) -> None:
        super().__init__(count, make)
        self.tokens_after = tokens_after
        self.kinds = kinds
        self.groups = groups
        # ``untrimmed``: the results are a layout as it is (each part kept whole: its count before, after and
        # allotted are one), and what a reader of every part needs is known without making the results: the
        # sections in order and a function of their counts (a followed chain's parts, thousands of them, each
        # counted at a scale its thread refits with every request)
        self.untrimmed_sections, self.untrimmed_counts = untrimmed if untrimmed is not None else (None, None)


def sections_of(results: Sequence[SectionResult]) -> list[Section]:
    """The sections of ``results`` in order; an untrimmed ``SectionResults``' without making its results."""
    known = getattr(results, "untrimmed_sections", None)
    return list(known) if known is not None else [result.section for result in results]


def counts_of(results: Sequence[SectionResult]) -> list[int]:
    """Each result's ``tokens_before``; an untrimmed ``SectionResults``' without making its results."""
    counts = getattr(results, "untrimmed_counts", None)
    return counts() if counts is not None else [result.tokens_before for result in results]


def texts_of(results: Sequence[SectionResult], start: int, end: int) -> list[str]:
    """``text_before`` of ``results[start:end]``; an untrimmed ``SectionResults``' (each section's text, as its
    results hold it) without making its results."""
    known = getattr(results, "untrimmed_sections", None)
    if known is not None:
        return [section.text or "" for section in known[start:end]]
    return [result.text_before for result in results[start:end]]


def texts_differ(old: Sequence[SectionResult], new: Sequence[SectionResult], start: int, end: int) -> bool:
    """Whether ``text_before`` differs between ``old[start:end]`` and ``new[start:end]``, two plans' results whose
    sections there are equal (``==``, their texts included). An untrimmed result's text is its section's, so two
    untrimmed results are not read at all (a followed session's every part, at each append); a trimmed one's
    text may be cut by its lens, and is compared."""
    if getattr(old, "untrimmed_sections", None) is not None and getattr(new, "untrimmed_sections", None) is not None:
        return False
    return texts_of(old, start, end) != texts_of(new, start, end)


def allotments_of(results: Sequence[SectionResult], counts: list[int] | None = None) -> list[int]:
    """Each result's ``allotment``; an untrimmed ``SectionResults``' without making its results: its counts
    (``counts``, when its ``counts_of`` is at hand)."""
    untrimmed = getattr(results, "untrimmed_counts", None)
    if untrimmed is not None:
        return counts if counts is not None else untrimmed()
    return [result.allotment for result in results]


@dataclass(frozen=True)
class Plan:
    """A planned turn. Build it with ``Engine.plan``."""

    session: Session
    tokenizer: TokenizerInfo
    budget: Budget
    sections: Sequence[SectionResult]  # a tuple, or ``SectionResults`` made when read (it reads as a tuple)
    steps: tuple[Step, ...]
    tokens_before: int
    tokens_after: int
    prefix_cache: PrefixCache
    context_cache: ContextCache
    trimming: str
    error: dict[str, str] | None = None
    fixed_load: int = 0
    recorded: RecordedUsage | None = None
    base_max_ctx: int | None = None  # max_ctx before a what-if change (None: no what-if)
    what_if: int = 0  # what-if steps of ``WHAT_IF_STEP_PERCENT`` % applied to ``base_max_ctx``
    warnings: tuple[str, ...] = ()
    # CONTRACT §11: the context window of a foreign log's request (or body) and where it came from; the
    # budget's ``max_ctx`` is the room its layout used, which a prediction above the window exceeds
    window: Window | None = None

    @property
    def window_tokens(self) -> int | None:
        """The window the headline is measured against: a foreign request's window (``None`` when unknown),
        else ``max_ctx``."""
        if self.window is None:
            return self.budget.max_ctx
        return self.window.tokens

    @property
    def window_percent(self) -> int | None:
        """``floor(100 * tokens.after / window)``, not clamped (a prediction may exceed the window);
        ``None`` when the window is unknown or there are no sections."""
        window = self.window_tokens
        if not window or not self.sections:
            return None
        return (100 * self.tokens_after) // window

    @property
    def exceeds_window(self) -> bool:
        """Whether a prediction (a pending request, a counted body) is larger than its window: it would not
        be sent as it is (the agent compacts first), which is not an overflow of the layout."""
        window = self.window_tokens
        return self.window is not None and window is not None and self.tokens_after > window
    cost: Cost | None = None  # what the request cost, priced from its recorded usage (agent sessions only)

    @property
    def pending(self) -> bool:
        """Whether this is a request about to be sent (its headline is a prediction, README, "Real agents")."""
        return self.session.pending

    @property
    def thread(self) -> str:
        """The thread of the log this turn belongs to (``main`` or a sub-agent's)."""
        return self.session.thread

    @property
    def calibration(self) -> Calibration | None:
        """How the estimates of a real agent's turn were fitted to its recorded usage."""
        return self.session.calibration

    @property
    def headline_kind(self) -> HeadlineKind:
        """What ``tokens_after`` is: ``exact`` (the tokenizer's count of the render), ``recorded`` (what the
        provider recorded), ``counted`` (a request body counted by the provider's published rules),
        ``predicted`` (a pending request) or ``estimated``."""
        if self.session.context_tokens is not None:
            if self.recorded is not None and not self.pending:
                # the recorded figure only when the parts add up to it: visible parts an exact tokenizer of
                # another family counts above what the request cost (hidden part 0, a warning) are not it
                if self.tokens_before == self.session.context_tokens:
                    return HeadlineKind.RECORDED
                return HeadlineKind.ESTIMATED
            if not self.pending and self.session.source_format in COUNTED_FORMATS:
                # a request body counted by the provider's published rules (exact unless a warning says)
                return HeadlineKind.COUNTED if not self.warnings else HeadlineKind.ESTIMATED
            return HeadlineKind.PREDICTED
        if self.session.calibration is not None:
            return HeadlineKind.ESTIMATED
        return HeadlineKind.EXACT if self.tokenizer.exact else HeadlineKind.ESTIMATED

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def joins(self) -> int:
        """What the separators (and merges across them) add to the sections' own counts."""
        sections = self.sections
        after = sections.tokens_after if isinstance(sections, SectionResults) else sum(s.tokens_after for s in sections)
        return self.tokens_after - after

    def kind_tokens(self, kind: str) -> tuple[int, ...]:
        """The untrimmed tokens of the sections of ``kind``, in order (``"inferred"``: the part of an agent's
        request its file does not hold)."""
        sections = self.sections
        if isinstance(sections, SectionResults) and kind in sections.kinds:
            return tuple(sections[i].tokens_before for i in sections.kinds[kind])
        return tuple(s.tokens_before for s in sections if s.kind == kind)

    @property
    def usage_percent(self) -> int | None:
        """``floor(100 * tokens.after / max_ctx)`` clamped to 0..100; ``None`` with no sections, or when a
        foreign file's window is unknown (its budget is only the room its headline takes)."""
        if not self.sections or (self.window is not None and not self.window.known):
            return None
        return max(0, min(100, (100 * self.tokens_after) // self.budget.max_ctx))

    @property
    def deficit(self) -> int:
        return self.tokens_before - self.budget.available

    def render(self) -> str:
        """The rendered context: kept texts joined by one blank line, in file order."""
        return SEPARATOR.join(s.text_after for s in self.sections if s.text_after)

    @property
    def fingerprint(self) -> str:
        """``sha256:`` + the hex digest of the rendered context (UTF-8); see ``fingerprint_of``."""
        return fingerprint_of(s.text_after for s in self.sections)

    def section(self, section_id: str) -> SectionResult:
        for s in self.sections:
            if s.id == section_id:
                return s
        raise KeyError(section_id)

    def state_at(self, step: int) -> LayoutState:
        """The layout after the first ``step`` steps (clamped to the trace)."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise ConfigError(f"step={step!r} is not a whole number", f"pass 0..{len(self.steps)}")
        step = max(0, min(step, len(self.steps)))
        if not step:  # every section as the layout found it: each state made when read
            results = self.sections
            return LayoutState(0, Built(len(results), lambda i: _state_before(results[i])), self.tokens_before,
                               self.tokens_before - self.budget.available)
        states = {s.id: _state_before(s) for s in self.sections}
        for entry in self.steps[:step]:
            old = states[entry.section]
            if entry.op == "drop" or (entry.op == "lens" and not entry.text_after):
                action = "dropped"
            elif entry.op == "truncate":
                action = "truncated"
            else:
                action = "truncated" if old.action == "truncated" else "compressed"
            states[entry.section] = SectionState(old.id, entry.text_after, entry.tokens_after, action)
        total = self.steps[step - 1].total_after if step else self.tokens_before
        return LayoutState(step, tuple(states[s.id] for s in self.sections), total, total - self.budget.available)

    def to_dict(self) -> dict[str, Any]:
        """The plan JSON (README, "The headless command")."""
        data: dict[str, Any] = {
            "schema": PLAN_SCHEMA,
            "ok": self.ok,
            "error": self.error,
            "tokenizer": self.tokenizer.to_dict(),
            "budget": self.budget.to_dict(),
            "tokens": {"before": self.tokens_before, "after": self.tokens_after, "joins": self.joins},
            "usage_percent": self.usage_percent,
            "fingerprint": self.fingerprint,
            "caches": {"prefix": self.prefix_cache, "context": self.context_cache},
            "sections": [s.to_dict() for s in self.sections],
            "steps": [s.to_dict() for s in self.steps],
        }
        data["pending"] = self.pending
        data["thread"] = self.thread
        data["calibration"] = self.calibration.to_dict() if self.calibration is not None else None
        data["warnings"] = list(self.warnings)
        if self.session.source_format != NATIVE_FORMAT or self.recorded is not None:
            data["recorded"] = self.recorded.to_dict() if self.recorded else None
        if self.window is not None:
            data["window"] = {"tokens": self.window.tokens, "source": str(self.window.source),
                              "percent": self.window_percent}
        if self.session.source_format != NATIVE_FORMAT:
            data["cost"] = self.cost.to_dict() if self.cost is not None else None
        return data


def _state_before(result: SectionResult) -> SectionState:
    """A section as the layout found it (step 0)."""
    return SectionState(result.id, result.text_before, result.tokens_before, "skipped" if result.action == "skipped" else "kept")


def fingerprint_of(texts: Iterable[str]) -> str:
    """``sha256:`` + the digest of the non-empty ``texts`` joined by ``SEPARATOR``, hashed piece by piece
    so that a large context is never held twice in memory (the plan's and the TUI's one definition)."""
    digest = hashlib.sha256()
    separator = SEPARATOR.encode("utf-8")
    first = True
    for text in texts:
        if text:
            if not first:
                digest.update(separator)
            digest.update(text.encode("utf-8", "surrogatepass"))  # an importer's lone surrogate: hashed, not fatal
            first = False
    return "sha256:" + digest.hexdigest()


def _number(value: float) -> int | float:
    """Whole numbers as ints, so ``1.0`` prints as ``1`` in JSON."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
