"""The turn timeline of a ``.jsonl`` log: a usage sparkline, prefix-cache breaks, the current turn."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.core.model.plan import PrefixCache
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.planner import TurnPoint
from tokenbox.tui.styles import PLAIN, Styles, Themed
from tokenbox.tui.usage import heading, window_of
from tokenbox.tui.view import Levels, level

BLOCKS = "▁▂▃▄▅▆▇█"
LABELS = 9  # columns beside the sparkline: its range label (" 14–29%")


def timeline_text(
    points: tuple[TurnPoint, ...], current: int, following: bool, width: int, styles: Styles = PLAIN,
    levels: Levels = DEFAULT_WARN_LEVELS,
) -> Text:
    """The usage sparkline of the turns around ``current``, coloured with ``styles`` (the timeline's classes)
    by the warning ``levels``."""
    t = Text(no_wrap=True, end="")
    if not points:
        return t
    count = heading(t, points, current, following)
    width = max(4, width)
    window = window_of(points, current, width)  # at most ``width`` turns, the current one among them
    cell = max(1, min(3, width // max(1, len(window))))
    top = max(1, max((p.usage or 0) for p in window))
    for p in window:
        usage = p.usage or 0
        char = BLOCKS[min(len(BLOCKS) - 1, usage * len(BLOCKS) // (top + 1))] if usage else " "
        t.append(char * cell, styles[f"timeline--{level(usage, levels)}"])
    low = min((p.usage or 0) for p in window)
    t.append(f" {low}–{top}%", "dim")
    t.append("\n")
    for p in window:
        if p.turn == current:
            mark, style = "▲", styles["timeline--current"]
        elif p.turn > 1 and p.prefix_cache == PrefixCache.MISS:
            mark, style = "×", styles["timeline--break"]
        elif not p.ok:
            mark, style = "!", styles["timeline--break"]
        else:
            mark, style = " ", Style()
        t.append(mark.center(cell), style)
    t.append("\n")
    # the turn keys only where they apply, as in the footer; shorter words where the sidebar is narrow
    keys = "  [ ] turns" if count > 1 else ""
    legend = "× cache break  ▲ shown" + keys
    if len(legend) > width + LABELS:
        legend = "× break ▲ shown" + keys.replace("  ", " ")
    t.append(legend, "dim")
    return t


class Timeline(Themed, FittedStatic):
    """Shown only for multi-turn logs."""

    DEFAULT_CSS = "Timeline { height: auto; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {"timeline--ok", "timeline--warn", "timeline--crit", "timeline--current", "timeline--break"}
    _shown: tuple[tuple[TurnPoint, ...], int, bool, Levels] = ((), 0, False, DEFAULT_WARN_LEVELS)

    def show(self, points: tuple[TurnPoint, ...], current: int, following: bool, levels: Levels = DEFAULT_WARN_LEVELS) -> None:
        self._shown = (points, current, following, levels)
        self.display = bool(points)
        styles = self.component_styles()
        self.show_fitted(lambda width: timeline_text(points, current, following, width - LABELS, styles, levels))

    def restyle(self) -> None:
        self.show(*self._shown)
