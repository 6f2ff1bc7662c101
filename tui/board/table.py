"""The board's table: one row per session — agent, project, model, context used, a small gauge, the room
before compaction, sub-agents running, last activity — drawn by one line-API widget (``LineView``).

Rows are pure functions of a ``Row``, the clock and the column widths (``Columns.fit``): the same state
draws the same text. Colours are the stylesheet's (``board--*`` component classes in ``app.tcss``): a
session near compaction (its pressure past the second warning level) is drawn in the error colour, past
the first in the warning colour; an idle one is muted. Untrusted names (projects, models, titles) are
inert text (``safe.plain``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.core.commands.statusline import short
from tokenbox.tui.board.figures import Figures
from tokenbox.tui.board.sessions import Row
from tokenbox.tui.board.state import BoardState
from tokenbox.tui.lines import LazyRows, LineView
from tokenbox.tui.safe import plain
from tokenbox.tui.styles import GAP, PLAIN, Styles, Themed
from tokenbox.tui.view import Levels, fmt

ACTIVE_SECONDS = 60  # a session that changed this recently is marked active (●)
IDLE_SECONDS = 600  # one idle longer is drawn muted (it leaves after ``since``)
MODEL_MAX = 26  # columns of the model at most (what is left goes to the project)
PROJECT_MAX = 48  # columns of the project at most: the numbers stay near the names on wide terminals
WIDE = 140  # columns from which numbers are written whole and the gauge is longer
GAUGE_CELLS = {"used": "█", "free": "·", "mark": "┊"}
SHORT_AGENTS = {"claude": "claude", "codex": "codex", "gemini": "gemini", "copilot": "copilot", "cline": "cline",
                "roo": "roo", "kilo": "kilo", "opencode": "opencode", "aider": "aider", "record": "record"}


@dataclass(frozen=True)
class Columns:
    """The widths of the columns at a given width (0: the column is left out)."""

    agent: int
    project: int
    model: int
    context: int
    gauge: int
    room: int
    wide: bool

    @classmethod
    def fit(cls, width: int) -> Columns:
        wide = width >= WIDE
        agent, context, gauge, room = (18, 9, 20, 9) if wide else (8, 6, 8, 5)
        fixed = 2 + agent + 1 + 1 + context + 1 + 4 + 1 + gauge + 1 + room + 1 + 3 + 1 + 5  # …, project, model gaps
        rest = max(0, width - fixed - 1)
        model = min(MODEL_MAX, max(0, rest - 12))
        if model < 8:
            model = 0
        project = min(PROJECT_MAX, max(6, rest - (model + 1 if model else 0)))
        return cls(agent, project, model, context, gauge, room, wide)


def ago(seconds: float) -> str:
    """How long ago: ``now`` (under 10 s), ``12s``, ``3m``, ``1h05``, ``2d``."""
    seconds = max(0, int(seconds))
    if seconds < 10:
        return "now"
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}"
    return f"{seconds // 86400}d"


def _count(value: int, columns: Columns, approx: bool = False) -> str:
    mark = "≈" if approx else ""
    return fmt(value, mark) if columns.wide else mark + short(value)


def _put(t: Text, text: str, width: int, style: Style | str = "", *, right: bool = False) -> None:
    """``text`` in a column ``width`` wide (cut with "…"), its blanks a segment of their own (``GAP``)."""
    if len(text) > width:
        text = text[: max(0, width - 1)] + "…"
    pad = " " * (width - len(text))
    if right:
        t.append(pad, GAP)
    t.append(text, style)
    if not right:
        t.append(pad, GAP)


def level(figures: Figures | None, levels: Levels) -> str:
    """``ok``, ``warn`` or ``crit``: how near compaction (or the window's end) a session is."""
    if figures is None or figures.tokens is None or figures.limit is None:
        return "ok"
    percent = 100 * figures.pressure
    return "crit" if percent >= levels[1] else "warn" if percent >= levels[0] else "ok"


def project_name(row: Row, columns: Columns) -> str:
    """The project's folder name (its path from the home folder on wide terminals), else the title."""
    if row.project:
        if columns.wide:
            home = os.path.expanduser("~")
            return "~" + row.project[len(home):] if row.project.startswith(home + os.sep) else row.project
        return os.path.basename(row.project.rstrip("/\\")) or row.project
    return row.title or "–"


def gauge(figures: Figures, width: int) -> list[tuple[str, str]]:
    """The small gauge as ``(text, kind)`` runs: used, free, and the compaction point marked."""
    if not figures.window:  # an unknown window: nothing to measure against
        return [(GAUGE_CELLS["free"] * width, "free")]
    window = figures.window
    used = min(width, round(width * (figures.tokens or 0) / window))
    mark = None
    if figures.compact_at is not None and figures.window:
        mark = min(width - 1, round(width * figures.compact_at / window))
    out: list[tuple[str, str]] = []
    for cell in range(width):
        part = "mark" if cell == mark and cell >= used else "used" if cell < used else "free"
        if out and out[-1][1] == part:
            out[-1] = (out[-1][0] + GAUGE_CELLS[part], part)
        else:
            out.append((GAUGE_CELLS[part], part))
    return out


def header(columns: Columns, state: BoardState) -> Text:
    """The column titles; the sort column says so."""
    pressure = state.order == "pressure"
    t = Text(no_wrap=True, end="")
    t.append("  ", GAP)
    cells: list[tuple[str, int, bool]] = [("agent", columns.agent, False), ("project", columns.project, False)]
    if columns.model:
        cells.append(("model", columns.model, False))
    cells += [("used", columns.context, True), ("%", 4, True), (("pressure▼" if columns.wide else "press▼") if pressure else "", columns.gauge, False),
              ("room", columns.room, True), ("sub", 3, True), ("last" if pressure else "last▼", 5, True)]
    for index, (title, width, right) in enumerate(cells):
        if index:
            t.append(" ", GAP)
        _put(t, title, width, right=right)
    return t


def row_text(row: Row, columns: Columns, now: float, levels: Levels, styles: Styles = PLAIN) -> Text:
    """One session's row."""
    figures = row.figures
    idle = now - row.mtime >= IDLE_SECONDS
    kind = level(figures, levels)
    base = styles["board--idle"] if idle else styles["board--crit"] if kind == "crit" else styles["board--name"]
    muted = styles["board--muted"]
    t = Text(no_wrap=True, end="")
    if now - row.mtime < ACTIVE_SECONDS:
        t.append("●", styles["board--active"])
        t.append(" ", GAP)
    else:
        t.append("  ", GAP)
    agent = row.label if columns.wide else SHORT_AGENTS.get(row.agent, row.agent)
    _put(t, plain(agent), columns.agent, base + styles["board--agent"])
    t.append(" ", GAP)
    _put(t, plain(project_name(row, columns)), columns.project, base)
    if columns.model:
        t.append(" ", GAP)
        _put(t, plain(figures.model if figures is not None and figures.model else ""), columns.model, base if idle else muted)
    t.append(" ", GAP)
    rest = columns.context + 1 + 4 + 1 + columns.gauge + 1 + columns.room + 1 + 3
    if figures is None:
        _put(t, "…", columns.context, muted, right=True)
        t.append(" " * (rest - columns.context), GAP)
    elif figures.error is not None or figures.tokens is None:
        _put(t, f"⚠ {plain(figures.error or 'no request yet')}", rest, styles["board--error"])
    else:
        colour = styles[f"board--{kind}"]
        _put(t, _count(figures.tokens, columns, figures.approx), columns.context, colour, right=True)
        t.append(" ", GAP)
        percent = figures.percent
        _put(t, f"{percent}%" if percent is not None else "", 4, colour, right=True)
        t.append(" ", GAP)
        for text, part in gauge(figures, columns.gauge):
            t.append(text, colour if part == "used" else styles[f"board--gauge-{part}"])
        t.append(" ", GAP)
        room = figures.room
        if room is None:
            _put(t, "–", columns.room, muted, right=True)
        elif room <= 0:
            _put(t, "due" if figures.compact_at is not None else "full", columns.room, styles["board--crit"], right=True)
        else:
            # the room left from an estimate or a prediction is one too (the inspector's gauge marks it so)
            _put(t, _count(room, columns, figures.approx), columns.room, colour if kind != "ok" else base, right=True)
        t.append(" ", GAP)
        sub = "–" if figures.subagents is None else str(figures.subagents)
        _put(t, sub, 3, styles["board--active"] if figures.subagents else muted, right=True)
    t.append(" ", GAP)
    _put(t, ago(now - row.mtime), 5, styles["board--idle"] if idle else base, right=True)
    return t


class BoardTable(Themed, LineView):
    """The rows of the board; the selected session is the cursor row."""

    ELLIPSIS = True
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "board--name", "board--agent", "board--muted", "board--idle", "board--active", "board--error",
        "board--ok", "board--warn", "board--crit", "board--gauge-free", "board--gauge-mark",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._state: BoardState | None = None
        # each row's text by what it is drawn from (the row, its "last", the columns and styles): a new
        # state redraws only the rows that changed
        self._built: dict[tuple, Text] = {}

    def show(self, state: BoardState) -> None:
        """Draw the rows of ``state`` (only those on screen are built, and only when they changed)."""
        self._state = state
        columns = Columns.fit(self.scrollable_content_region.width or self.size.width or 80)
        styles = self.component_styles()
        rows = state.shown
        built: dict[tuple, Text] = {}
        before = self._built

        def line(index: int) -> Text:
            row = rows[index]
            key = (row, ago(state.now - row.mtime), state.now - row.mtime < ACTIVE_SECONDS,
                   state.now - row.mtime >= IDLE_SECONDS, columns, state.warn_levels, id(styles))
            text = before.get(key)
            if text is None:
                text = row_text(row, columns, state.now, state.warn_levels, styles)
            built[key] = text
            return text.copy()  # a copy: the line view takes the same object for a changed one

        self._built = built
        self.set_lines(LazyRows(len(rows), line), state.cursor)

    def restyle(self) -> None:
        if self._state is not None:
            self.show(self._state)

    def on_lines_resized(self) -> None:
        self.restyle()
