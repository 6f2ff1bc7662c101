"""The parts of an agent's request, one row each: what a person asks about a request.

Columns: the part (message, tool call, tool result, thinking, image, hidden part, reply…), its label
(``assistant → Bash(git status)``), its tokens and share of the request, and a bar (a full bar is the
largest part). Under a what-if budget the request is packed like a layout and the tokens after the
step shown and the action join them. Labels take the room the numbers leave and end in "…" only when
the table is too narrow for them; the selected part's whole label heads the detail below.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from tokenbox.tui.agentview import label_of, part_colour, part_of
from tokenbox.tui.bars import ACTIONS, bar_scale, bar_text, scale_tokens
from tokenbox.tui.styles import GAP, PLAIN, Styles
from tokenbox.tui.view import View, fmt

SHARE = 6  # "100.0%"
ACTION = 10
MIN_LABEL = 12  # the label keeps this much before the bar gives way
MAX_BAR = 30
PART_MAX = 12  # "MCP tool def"


@dataclass(frozen=True)
class PartColumns:
    """Column widths of the parts table for a width; ``trimmed``: the what-if columns are shown."""

    part: int
    label: int
    number: int
    bar: int  # 0: no bar
    trimmed: bool

    @classmethod
    def fit(cls, view: View | None, width: int, trimmed: bool) -> PartColumns:
        plan = view.plan if view is not None else None
        approx = view.approx if view is not None else ""
        count = len(plan.sections) if plan is not None else 0
        # the widest part's word, up to PART_MAX; a count's width grows with the count: the largest one's
        # is the column's (both kept per view: ``tui/figures.py``)
        part = min(PART_MAX, max(4, view.figures.widest_word)) if view is not None else 4
        most = view.figures.most_before if view is not None else None
        number = max(6, len(fmt(most, approx))) if most is not None and count else 6
        fixed = 2 + part + 1 + 1 + number + 1 + SHARE
        if trimmed:
            fixed += 3 + number + 1 + ACTION
        room = width - fixed - 1
        bar = 0 if room < MIN_LABEL + 8 else min(MAX_BAR, max(4, (room - MIN_LABEL) // 3))
        label = max(4, room - (bar + 1 if bar else 0))
        return cls(part, label, number, bar, trimmed)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _cells(t: Text, text: str, width: int, style: Style | str = "", *, right: bool = False) -> None:
    """``text`` in a column ``width`` cells wide: a left-aligned text keeps its padding in its own style, a
    right-aligned one's padding is a ``GAP`` (a run of blanks never starts an element of an SVG screenshot)."""
    text = _cut(text, width)
    pad = " " * (width - len(text))
    if right:
        if pad:
            t.append(pad, GAP)
        t.append(text, style)
    else:
        t.append(text + pad, style)


def header_text(view: View | None, cols: PartColumns) -> Text:
    """The column titles (the bar's title says what a cell stands for)."""
    t = Text(no_wrap=True, end="", style="bold")
    t.append("  ")
    _cells(t, "part", cols.part)
    t.append(" ", GAP)
    _cells(t, "label", cols.label)
    t.append(" ", GAP)
    _cells(t, "before" if cols.trimmed else "tokens", cols.number, right=True)
    if cols.trimmed:
        t.append(" ", GAP)
        t.append("→ ")
        _cells(t, "after", cols.number)
    t.append(" ", GAP)
    _cells(t, "share", SHARE, right=True)
    if cols.trimmed:
        t.append(" ", GAP)
        _cells(t, "action", ACTION)
    if cols.bar:
        t.append(" ", GAP)
        scale = bar_scale(max(1, -(-scale_tokens(view) // cols.bar)), cols.bar) if view is not None else "bar"
        _cells(t, scale, cols.bar)
    return t


def row_text(view: View, index: int, cols: PartColumns, styles: Styles = PLAIN, scale: int | None = None) -> Text:
    """Part ``index``'s row, coloured by its category (the colour of its row in the categories panel)."""
    plan = view.plan
    result, state = plan.sections[index], view.state.sections[index]
    current = cols.trimmed and view.step and plan.steps[view.step - 1].section == result.id
    colour = part_colour(view, index)
    reply = view.figures.kinds.kinds[index] == "reply"
    t = Text(no_wrap=True, end="")
    t.append("◀" if current else " ", styles["section--current"])
    t.append("▌", styles[colour])
    _cells(t, part_of(view, index), cols.part, "dim")
    t.append(" ", GAP)
    _cells(t, label_of(view, index), cols.label, "bold" if result.kind == "inferred" else "")
    t.append(" ", GAP)
    approx = view.approx
    if reply:  # the request's own output: no context tokens (it is context from the next request on)
        _cells(t, "output", cols.number, "dim", right=True)
    else:
        _cells(t, fmt(result.tokens_before if cols.trimmed else state.tokens, approx), cols.number, right=True)
    if cols.trimmed:
        t.append(" ", GAP)
        t.append("→ ")
        changed = state.tokens != result.tokens_before
        _cells(t, "" if reply else fmt(state.tokens, approx), cols.number, Style(bold=True) if changed else "")
    t.append(" ", GAP)
    total = max(1, view.total)
    _cells(t, "" if reply else f"{100 * state.tokens / total:.1f}%", SHARE, "dim", right=True)
    if cols.trimmed:
        t.append(" ", GAP)
        _cells(t, state.action, ACTION, styles[f"section--{state.action}"] if state.action in ACTIONS else "")
    if cols.bar:
        t.append(" ", GAP)
        bar = bar_text(view, index, cols.bar, styles, scale)
        bar.stylize(styles[colour], 0, state.tokens and len(bar.plain.rstrip("░┄ ")))
        t.append_text(bar)
    return t
