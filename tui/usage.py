"""The context-size timeline of a log with recorded usage (Claude Code transcripts): two series.

Per turn, ``rec`` is the context the provider recorded (input + cache write + cache read tokens)
and ``est`` tokenbox's count of the same turn (the untrimmed context, ``≈`` when approximate),
each row scaled from its own lowest to its highest value (a sparkline shows the trend; the numbers
beside it give the size). The current turn is marked ``▲``; sub-agent (sidechain) turns are grey and
marked ``s``. Below: the current turn's ratio and the unaccounted rest (recorded - estimate: what the
file does not contain, for Claude Code the system prompt and the tool definitions).
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.planner import TurnPoint
from tokenbox.tui.styles import PLAIN, Styles, Themed
from tokenbox.tui.view import fmt

BLOCKS = "▁▂▃▄▅▆▇█"
LABEL = 4  # "rec " / "est "
VALUE = 9  # right column: the current turn's value


def has_recorded(points: tuple[TurnPoint, ...]) -> bool:
    """Whether the log recorded usage for any turn (then this timeline replaces the percent one)."""
    return any(p.recorded is not None for p in points)


def window_of(points: tuple[TurnPoint, ...], current: int, width: int) -> tuple[TurnPoint, ...]:
    """At most ``width`` turns around the current one."""
    end = len(points)
    if end <= width:
        return points
    index = next((i for i, p in enumerate(points) if p.turn == current), end - 1)
    start = min(max(0, index - width // 2), end - width)
    return points[start : start + width]


def heading(t: Text, points: tuple[TurnPoint, ...], current: int, following: bool) -> int:
    """The first row of a timeline ("Turns 3/9 following newest") appended to ``t``; the turn count."""
    count = points[-1].turn
    t.append("Turns ", "bold")
    t.append(f"{current}/{count} ", "bold")
    t.append("following newest" if following else "pinned (f: follow)", "dim")
    t.append("\n")
    return count


def _cell(value: int | None, low: int, high: int) -> str:
    """The block for ``value`` on a ``low``..``high`` scale (blank when there is no value)."""
    if value is None:
        return " "
    if high <= low:
        return BLOCKS[-1]
    return BLOCKS[min(len(BLOCKS) - 1, (value - low) * len(BLOCKS) // (high - low + 1))]


def usage_text(
    points: tuple[TurnPoint, ...], current: int, following: bool, width: int, approx: str, styles: Styles = PLAIN
) -> Text:
    """The two-series timeline, ``width`` cells wide, coloured with ``styles`` (the usage timeline's classes)."""
    side = styles["usage--sidechain"]
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    if not points:
        return t
    count = heading(t, points, current, following)
    bars = max(4, width - LABEL - VALUE - 1)
    window = window_of(points, current, bars)
    cell = max(1, min(3, bars // max(1, len(window))))
    shown = next((p for p in points if p.turn == current), points[-1])
    for label, value_of, style, value in (
        ("rec", lambda p: p.recorded, styles["usage--recorded"], "—" if shown.recorded is None else fmt(shown.recorded)),
        ("est", lambda p: p.tokens_before if p.estimated else None, styles["usage--estimate"], fmt(shown.tokens_before, approx)),
    ):
        values = [v for v in (value_of(p) for p in window) if v is not None]
        low, high = (min(values), max(values)) if values else (0, 0)
        t.append(f"{label:<{LABEL}}", "dim")
        for p in window:
            t.append(_cell(value_of(p), low, high) * cell, side if p.sidechain else style)
        t.append(" " * max(1, bars - cell * len(window) + 1 + VALUE - len(value)))  # blanks: a segment of their own
        t.append(value, style)
        t.append("\n")
    t.append(" " * LABEL)
    for p in window:
        if p.turn == current:
            mark, style = "▲", styles["usage--current"]
        elif p.sidechain:
            mark, style = "s", side
        elif not p.ok:
            mark, style = "!", styles["usage--broken"]
        else:
            mark, style = " ", Style()
        left = (cell - 1) // 2
        if left:
            t.append(" " * left)
        t.append(mark, style)
        if cell - 1 - left:
            t.append(" " * (cell - 1 - left))
    t.append("\n")
    if shown.recorded is not None and shown.estimated:
        unaccounted = shown.recorded - shown.tokens_before
        ratio = shown.tokens_before / shown.recorded if shown.recorded else 0.0
        t.append(f"est/rec {approx}{ratio:.3f}", "dim")
        t.append("  ")
        t.append("unaccounted ", "dim")
        t.append(fmt(unaccounted, approx), Style(bold=True))
    else:
        t.append("no usage recorded for this turn", "dim")
    t.append("\n")
    # the turn keys only where they apply, as in the footer
    t.append("▲ shown  s sub-agent" + ("  [ ] turns" if count > 1 else ""), "dim")
    return t


class UsageTimeline(Themed, FittedStatic):
    """Shown for logs with recorded usage, in place of the usage-percent sparkline."""

    DEFAULT_CSS = "UsageTimeline { height: auto; margin-bottom: 1; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "usage--recorded", "usage--estimate", "usage--sidechain", "usage--current", "usage--broken",
    }
    FALLBACK_WIDTH = 37
    _shown: tuple[tuple[TurnPoint, ...], int, bool, str] = ((), 0, False, "")

    def show(self, points: tuple[TurnPoint, ...], current: int, following: bool, approx: str) -> None:
        self._shown = (points, current, following, approx)
        self.display = bool(points)
        styles = self.component_styles()
        self.show_fitted(lambda width: usage_text(points, current, following, width, approx, styles))

    def restyle(self) -> None:
        self.show(*self._shown)
