"""The context-size timeline of a log with recorded usage (an agent's requests): two series.

Per request, ``rec`` is the context the provider recorded (input + cache write + cache read tokens)
and ``file`` the part of it the file itself shows (the request's visible parts, calibrated: ``≈``),
each row scaled from its own lowest to its highest value (a sparkline shows the trend; the numbers
beside it give the size). The gap between the two rows is what the file does not hold (the system
prompt, tool definitions, memory files). The current request is marked ``▲``; a sub-agent's requests
are grey and marked ``○``. Below: the current request's split between the file and the rest, or its
prediction when it is not sent yet.
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
LABEL = 5  # "rec  " / "file "
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


def heading(t: Text, points: tuple[TurnPoint, ...], current: int, following: bool, word: str = "Turns") -> int:
    """The first row of a timeline ("Turns 3/9 following newest") appended to ``t``; the turn count."""
    count = points[-1].turn
    t.append(f"{word} ", "bold")
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
    points: tuple[TurnPoint, ...], current: int, following: bool, width: int, approx: str, styles: Styles = PLAIN,
    pending: bool = False,
) -> Text:
    """The two-series timeline, ``width`` cells wide, coloured with ``styles`` (the usage timeline's classes)."""
    side = styles["usage--sidechain"]
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    if not points:
        return t
    count = heading(t, points, current, following, "Requests")
    bars = max(4, width - LABEL - VALUE - 1)
    window = window_of(points, current, bars)
    cell = max(1, min(3, bars // max(1, len(window))))
    shown = next((p for p in points if p.turn == current), points[-1])
    for label, value_of, style, value in (
        ("rec", lambda p: p.recorded, styles["usage--recorded"], "—" if shown.recorded is None else fmt(shown.recorded)),
        ("file", _in_file, styles["usage--estimate"], "—" if _in_file(shown) is None else fmt(_in_file(shown) or 0, "≈")),
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
            mark, style = "○", side
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
    visible = _in_file(shown)
    if pending and shown.recorded is None:
        t.append("not sent yet: predicted ", "dim")
        t.append(fmt(shown.tokens_after, "≈"), Style(bold=True))
    elif shown.recorded is not None and visible is not None and shown.estimated:
        t.append("in the file ", "dim")
        t.append(fmt(visible, "≈"), Style(bold=True))
        share = 100 * visible / max(1, shown.recorded)
        t.append(f" ({share:.0f}%)" if share >= 1 or not visible else f" ({share:.1f}%)", "dim")
        t.append("\n")
        t.append("not in it   ", "dim")
        t.append(fmt(shown.recorded - visible, "≈"), Style(bold=True))
    elif shown.recorded is not None:
        t.append("recorded; the file's share is still being counted", "dim")
    else:
        t.append("no usage recorded for this request", "dim")
    t.append("\n")
    # the request keys only where they apply, as in the footer
    legend = "▲ shown" + ("  ○ sub-agent" if any(p.sidechain for p in window) else "")
    t.append(legend + ("  [ ] requests" if count > 1 else ""), "dim")
    return t


def _in_file(point: TurnPoint) -> int | None:
    """What the file shows of a request: its estimate less the part it does not hold (None: not counted yet)."""
    if not point.estimated:
        return None
    return point.tokens_before - (point.hidden or 0)


class UsageTimeline(Themed, FittedStatic):
    """Shown for logs with recorded usage, in place of the usage-percent sparkline."""

    DEFAULT_CSS = "UsageTimeline { height: auto; margin-bottom: 1; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "usage--recorded", "usage--estimate", "usage--sidechain", "usage--current", "usage--broken",
    }
    FALLBACK_WIDTH = 37
    _shown: tuple[tuple[TurnPoint, ...], int, bool, str, bool] = ((), 0, False, "", False)

    def show(self, points: tuple[TurnPoint, ...], current: int, following: bool, approx: str, pending: bool = False) -> None:
        self._shown = (points, current, following, approx, pending)
        self.display = bool(points)
        styles = self.component_styles()
        self.show_fitted(lambda width: usage_text(points, current, following, width, approx, styles, pending))

    def restyle(self) -> None:
        self.show(*self._shown)
