"""The validated session: what an agent is about to send, as sections with layout rules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import StrEnum

from tokenbox.core.model.llms import Window
from tokenbox.core.model.names import MAIN_THREAD, NATIVE_FORMAT
from tokenbox.core.model.records import dataclass, field

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, overload

SENSORS = ("user-input", "tool-output", "heartbeat", "delegation")


class Trimming(StrEnum):
    """The trimming policies (README, "How the layout works"): tokenbox's own order, or the agent's progressive one."""

    TOKENBOX = "tokenbox"
    PROGRESSIVE = "progressive"


TRIMMING_POLICIES: tuple[str, ...] = tuple(policy.value for policy in Trimming)  # plain strings: flag choices, messages
KEEP_ENDS = ("head", "tail")
BEHAVIOR_KINDS = ("constraint", "directive", "procedure", "preference")


@dataclass(frozen=True, slots=True)
class Behavior:
    """One learned behaviour of a ``behaviors`` section (floop)."""

    name: str
    kind: str
    activation: float
    content: str
    summary: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Section:
    """One part of the prompt with its layout attributes (presets already applied)."""

    id: str
    kind: str
    priority: int = 0
    min: int = 0
    grow: float = 0
    shrink: float = 1
    strategy: tuple[str, ...] = ()
    keep: str = "head"
    summary: str | None = None
    text: str | None = None
    assistant_name: str = ""
    identity: str = ""
    feedback: str = ""
    tools: str = ""
    foveal_focus: str | None = None
    scope: str | None = None
    memory: tuple[str, ...] = ()
    budget: int | None = None
    items: tuple[Behavior, ...] = ()
    # A fixed size for a part the file does not hold (kind ``inferred``): no text, this many tokens.
    tokens: int | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    line: int = 0
    col: int = 0

    @property
    def critical(self) -> bool:
        """Critical sections (``shrink == 0``) are never compressed, truncated or dropped."""
        return self.shrink == 0


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """Budget values as written in the session file; ``None`` means not set there."""

    max_ctx: int | None = None
    reserve_out: int | None = None
    headroom: float | None = None


@dataclass(frozen=True, slots=True)
class RecordedUsage:
    """Token usage a provider reported for this turn (importers fill it in)."""

    context_tokens: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    # of the cache writes, those written for an hour (Anthropic's ``cache_creation.ephemeral_1h_input_tokens``):
    # they cost 2× input where a 5-minute write costs 1.25×
    cache_creation_1h_input_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        data = {
            "context_tokens": self.context_tokens,
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cache_creation_1h_input_tokens:  # only where the provider said so: older files stay as they were
            data["cache_creation_1h_input_tokens"] = self.cache_creation_1h_input_tokens
        return data


@dataclass(frozen=True, slots=True)
class Calibration:
    """How the estimates of a real agent's turn were fitted to what its provider recorded (README, "Real agents").

    ``scale`` multiplies the base estimate of each visible part; ``hidden`` is the part of the request
    the file does not hold (the ``inferred`` section) as the fit implies it; ``turns`` are the requests
    of the thread the fit used (1-based, within the thread); ``method`` says in words how. ``residual``
    (a recorded request) is what it recorded less what the requests before it predicted: a jump the
    file does not show (plan mode, an attachment, a model switch) is shown, not hidden, and the next
    prediction starts from the recorded figure.
    """

    method: str
    scale: float
    hidden: int | None
    turns: tuple[int, ...] = ()
    source: str = ""
    residual: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "method": self.method,
            "scale": round(self.scale, 4),
            "hidden": self.hidden,
            "turns": list(self.turns),
            "source": self.source,
        }
        if self.residual is not None:
            data["residual"] = self.residual
        return data


@dataclass(frozen=True, slots=True)
class Session:
    """One turn of a prompt session; ``history`` holds the earlier turns of a ``.jsonl`` log."""

    sections: tuple[Section, ...]
    path: str = "<session>"
    name: str | None = None
    model: str | None = None
    tokenizer: str | None = None
    budget: BudgetSpec = BudgetSpec()
    sensor: str = "user-input"
    trimming: str = Trimming.TOKENBOX.value
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    turn: int = 1
    turn_count: int = 1
    line: int = 1
    history: Sequence[Session] = field(default=(), compare=False, hash=False)
    recorded: RecordedUsage | None = None
    source_format: str = NATIVE_FORMAT
    # README, "Real agents": what the request costs (recorded, or predicted when ``pending``), the thread it
    # belongs to, how its estimates were calibrated, and what the reader could not place.
    context_tokens: int | None = None
    pending: bool = False
    thread: str = MAIN_THREAD
    calibration: Calibration | None = None
    warnings: tuple[str, ...] = ()
    positions: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, hash=False)
    # CONTRACT §11: a foreign log's (or request body's) context window and where it came from; ``None``
    # for a tokenbox session, whose window is its budget (or the 16384 default)
    window: Window | None = None

    @property
    def model_name(self) -> str | None:
        """The model the request went to, as the file names it: ``model``, else the name a reader kept in
        ``meta`` (a model the table does not know), else the request body's own ``model`` setting."""
        if self.model:
            return self.model
        named = self.meta.get("model")
        if isinstance(named, str) and named:
            return named
        request = self.meta.get("request")
        named = request.get("model") if isinstance(request, dict) else None
        return named if isinstance(named, str) and named else None

    def position(self, key: str) -> tuple[int | None, int | None]:
        """Line and column of a top-level key as written (``None`` when unknown)."""
        line, col = self.positions.get(key, (None, None))
        return line, col


class TurnHistory(Sequence["Session"]):
    """The first ``upto`` turns of a log, as a read-only view of the loader's list of turns.

    Every turn of a log has the turns before it as ``history``; a view shares the one list instead
    of copying it per turn (n turns would otherwise hold n²/2 references). The list must only ever
    grow (a loader starts a new list when the file is re-read from the top). It reads as a tuple:
    ``len``, indexing, iteration, ``==`` with tuples and other views; a prefix slice is a view too.
    """

    __slots__ = ("_turns", "_upto")

    def __init__(self, turns: list[Session], upto: int) -> None:
        if not 0 <= upto <= len(turns):
            raise ValueError("a history holds turns the list has")
        self._turns = turns
        self._upto = upto

    def __len__(self) -> int:
        return self._upto

    if TYPE_CHECKING:  # the overloads are for type checkers only
        @overload
        def __getitem__(self, index: int) -> Session: ...
        @overload
        def __getitem__(self, index: slice) -> Sequence[Session]: ...

    def __getitem__(self, index: int | slice) -> Session | Sequence[Session]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._upto)
            if start == 0 and step == 1:
                return TurnHistory(self._turns, max(stop, 0))
            return tuple(self._turns[: self._upto][index])
        if index < 0:
            index += self._upto
        if not 0 <= index < self._upto:
            raise IndexError("history index out of range")
        return self._turns[index]

    def __iter__(self) -> Iterator[Session]:
        turns = self._turns
        for index in range(self._upto):
            yield turns[index]

    def same(self, other: object) -> bool:
        """Whether ``other`` is a view of the same list and length (equal without comparing turns)."""
        return isinstance(other, TurnHistory) and other._turns is self._turns and other._upto == self._upto

    def __eq__(self, other: object) -> bool:
        if self.same(other):
            return True
        if isinstance(other, (TurnHistory, tuple, list)):
            return len(other) == self._upto and all(a is b or a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TurnHistory({self._upto} turns)"
