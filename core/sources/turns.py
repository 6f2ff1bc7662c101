"""Turns of a log as the loaders hand them out: one picked by number, each with the turns before it as
history, built lazily when a log has thousands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from tokenbox.core.model.errors import NotYetComplete, SessionError
from tokenbox.core.model.names import MAIN_THREAD, NATIVE_FORMAT
from tokenbox.core.model.records import dataclass, fields_of, replace
from tokenbox.core.model.session import RecordedUsage, Session, TurnHistory

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, overload


def no_complete_line(path: str) -> NotYetComplete:
    """A JSON-lines file without one complete line yet: a state to wait in (the agent is writing it)."""
    return NotYetComplete("no complete session line", "append one JSON session object per line", path, 1, 1,
                          awaiting="the first complete line")


def select_turn(turns: list[Session], turn: int | None, path: str) -> Session:
    """Pick turn ``turn`` (1-based; negative counts from the end; ``None`` = the newest) with its history."""
    count = len(turns)
    if turn is None:
        turn = count
    if turn == 0 or abs(turn) > count or (turn > 0 and turn > count):
        raise SessionError(f"turn {turn} is out of range: the file has {count} turn(s)", f"use --turn 1..{count} or -1..-{count}", path)
    index = turn - 1 if turn > 0 else count + turn
    chosen = turns[index]
    if chosen.source_format != NATIVE_FORMAT:
        return chosen  # foreign turns carry their own context; no cache replay over earlier turns
    if count == 1 and chosen.turn == 1 and chosen.turn_count == 1 and not chosen.history:
        return chosen  # already as asked for (the same object: the engine's caches know it)
    return with_history(chosen, TurnHistory(turns, index), index + 1, count)


def with_path(session: Session, path: str) -> Session:
    """``session`` as read from ``path`` (a line validated once serves every path it was read under)."""
    return replace(session, path=path)


def _make_with_history() -> Callable[[Session, Sequence[Session], int, int], Session]:
    """``dataclasses.replace(session, history=…, turn=…, turn_count=…)`` without ``__init__``: every field
    copied by an explicit assignment (a log's turns are re-tagged with the new count on every append)."""
    changed = {"history": "history", "turn": "turn", "turn_count": "count"}
    lines = ["def _with_history(session, history, turn, count):", "    new = _new(Session)"]
    for name in (each.name for each in fields_of(Session)):
        lines.append(f"    _set(new, {name!r}, {changed.get(name, 'session.' + name)})")
    lines.append("    return new")
    scope: dict[str, Any] = {"_new": object.__new__, "_set": object.__setattr__, "Session": Session}
    exec("\n".join(lines), scope)  # generated from the dataclass's own field names
    function = scope["_with_history"]
    function.__doc__ = _make_with_history.__doc__
    return function


with_history = _make_with_history()


def with_histories(turns: list[Session]) -> list[Session]:
    """``turns`` each with the turns before it as history (a shared view), its number and the count."""
    count = len(turns)
    return [with_history(turn, TurnHistory(turns, index), index + 1, count) for index, turn in enumerate(turns)]


class LazyTurns(Sequence[Session]):
    """The turns of one thread, built on first access (a transcript of thousands of requests plans its
    newest turn without materialising every earlier one). ``info(i)`` is cheap per-turn metadata."""

    def __init__(self, count: int, build: Callable[[int], Session], infos: Callable[[int], dict] | None = None) -> None:
        self._count = count
        self._build = build
        self._infos = infos
        self._built: dict[int, Session] = {}

    def __len__(self) -> int:
        return self._count

    if TYPE_CHECKING:  # the overloads are for type checkers only
        @overload
        def __getitem__(self, index: int) -> Session: ...
        @overload
        def __getitem__(self, index: slice) -> list[Session]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        session = self._built.get(index)
        if session is None:
            session = self._build(index)
            if len(self._built) >= 8:
                self._built.pop(next(iter(self._built)))
            self._built[index] = session
        return session

    def __iter__(self) -> Iterator[Session]:
        for i in range(self._count):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        # equal to a list, a tuple or another lazy sequence of the same turns, as a list of them would be
        if not isinstance(other, list | tuple | LazyTurns):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  (mutable-looking, as a list)

    def __repr__(self) -> str:
        return f"<{self._count} turns, built when read>"

    def info(self, index: int) -> dict:
        """Per-turn facts known without building the turn: recorded usage, pending, thread, line."""
        return self._infos(index) if self._infos is not None else {}


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What is known of a turn of a lazy sequence without building it."""

    identity: tuple  # its thread, request and first line: the same for the same completed request
    recorded: RecordedUsage | None
    sidechain: bool  # a sub-agent's turn


def turn_facts(turns: Sequence[Session], number: int) -> TurnFacts | None:
    """What a lazy sequence of a transcript's turns knows of turn ``number`` (0-based) without building it;
    ``None`` for other sequences (a log's turns are built already) and for a pending request."""
    if not isinstance(turns, LazyTurns):
        return None
    facts = turns.info(number)
    if facts.get("request") is None:
        return None
    thread = facts.get("thread")
    return TurnFacts(("request", thread, facts["request"], facts.get("line")), facts.get("recorded"),
                     thread not in (None, MAIN_THREAD))


def turn_identity(turn: Session) -> tuple:
    """A cheap identity of a turn's content: its sections' ids and text lengths, and its history length."""
    return (len(turn.history), tuple((s.id, len(s.text or "")) for s in turn.sections))
