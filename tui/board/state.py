"""The board's view state: one frozen ``BoardState`` — the rows the worker last published, the clock, the
order, the selected session — replaced by pure transitions; the screen is drawn from it.

The selection is a session (its key), not a line: rows move as sessions grow and others appear, and the
one chosen stays chosen (or, when it fades away, its neighbour is). Rows older than ``since`` by the
state's clock are not shown: an idle session fades out without the worker being asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.tui.board.sessions import Row
from tokenbox.tui.view import Levels

DEFAULT_SINCE = 2 * 3600.0  # seconds: sessions idle longer leave the board (``--since``)


class Order(StrEnum):
    """How the rows are sorted (key ``s`` switches)."""

    ACTIVITY = "activity"  # the newest activity first
    PRESSURE = "pressure"  # the nearest to compaction (or to the window's end) first


def by_activity(row: Row) -> tuple:
    return (-row.mtime, row.key)


def by_pressure(row: Row) -> tuple:
    figures = row.figures
    pressure = figures.pressure if figures is not None and figures.error is None else -1.0
    return (-pressure, -row.mtime, row.key)


@dataclass(frozen=True)
class BoardState:
    """Everything the board shows."""

    rows: tuple[Row, ...] = ()  # every session the worker published (newest first)
    now: float = 0.0  # the clock of the last tick (seconds since the epoch)
    since: float = DEFAULT_SINCE
    order: Order = Order.ACTIVITY
    selected: str | None = None  # the key of the chosen session
    listed: bool = False  # the agents' storage has been listed once
    busy: bool = True  # first looks or plans still to come
    places: int = 0  # places that exist among those looked at
    skipped: int = 0  # folders skipped (``tokenbox doctor`` says why)
    warn_levels: Levels = DEFAULT_WARN_LEVELS
    shown: tuple[Row, ...] = field(default=(), compare=False)  # ``rows`` within ``since``, in ``order`` (derived)

    def __post_init__(self) -> None:
        horizon = self.now - self.since
        rows = [row for row in self.rows if row.mtime >= horizon]
        rows.sort(key=by_pressure if self.order is Order.PRESSURE else by_activity)
        object.__setattr__(self, "shown", tuple(rows))
        keys = [row.key for row in rows]
        if self.selected not in keys:
            object.__setattr__(self, "selected", keys[0] if keys else None)

    @property
    def cursor(self) -> int | None:
        """The index of the selected row among those shown."""
        for index, row in enumerate(self.shown):
            if row.key == self.selected:
                return index
        return None

    @property
    def selected_row(self) -> Row | None:
        index = self.cursor
        return self.shown[index] if index is not None else None

    def with_rows(self, rows: tuple[Row, ...], *, busy: bool, places: int, skipped: int) -> BoardState:
        """The worker's new rows; the selected session stays selected, or its neighbour when it left."""
        return self._keeping(replace(self, rows=rows, busy=busy, listed=True, places=places, skipped=skipped))

    def at(self, now: float) -> BoardState:
        """The state at the clock's ``now``: rows idle longer than ``since`` fade out."""
        return self if now == self.now else self._keeping(replace(self, now=now))

    def moved(self, delta: int) -> BoardState:
        """The selection ``delta`` rows down (up when negative), within the rows shown."""
        if not self.shown:
            return self
        index = self.cursor or 0
        index = max(0, min(len(self.shown) - 1, index + delta))
        return replace(self, selected=self.shown[index].key)

    def moved_to(self, index: int) -> BoardState:
        """The selection on row ``index`` (negative: from the end)."""
        if not self.shown:
            return self
        index = index if index >= 0 else len(self.shown) + index
        return replace(self, selected=self.shown[max(0, min(len(self.shown) - 1, index))].key)

    def reordered(self) -> BoardState:
        """The other order (activity ⇄ pressure), the same session selected."""
        return replace(self, order=Order.PRESSURE if self.order is Order.ACTIVITY else Order.ACTIVITY)

    def _keeping(self, new: BoardState) -> BoardState:
        """``new`` with this state's selection, or the row now where it was when it is gone."""
        if self.selected is None or not new.shown or new.selected == self.selected:
            return new
        index = self.cursor or 0
        return replace(new, selected=new.shown[min(index, len(new.shown) - 1)].key)
