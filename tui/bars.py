"""Bars of a section or part: what a full bar stands for, and one bar's cells (kept, trimmed, allotment)."""

from __future__ import annotations

from rich.text import Text
from tokenbox.tui.styles import PLAIN, Styles
from tokenbox.tui.view import View, bar_class, fmt

ACTIONS = ("kept", "compressed", "truncated", "dropped", "skipped")  # styled by section--<action>


def scale_tokens(view: View) -> int:
    """What a full bar stands for: the largest part (its size before trimming or its allotment).

    Scaled to the largest part, not the budget, so bars stay informative when the window dwarfs the
    content; the header names the scale and the gauge shows the budget.
    """
    return view.figures.scale  # worked out once per view (``tui/figures.py``)


def bar_scale(tokens: int, width: int) -> str:
    """What one bar cell stands for, in the longest form that fits ``width`` (never a cut number)."""
    compact = f"{tokens / 1000:.0f}k" if tokens < 999_500 else f"{tokens / 1_000_000:.1f}M"
    unit = "token" if tokens == 1 else "tokens"
    for text in (f"█ = {fmt(tokens)} tok · full bar = largest part", f"█ = {fmt(tokens)} {unit}",
                 f"█ = {fmt(tokens)} tok", f"█={fmt(tokens)}", f"█={compact}"):
        if len(text) <= width:
            return text
    return "█"


def bar_text(view: View, index: int, width: int, styles: Styles = PLAIN, scale: int | None = None) -> Text:
    """The bar of section ``index``: kept part, trimmed part, reported expansion (``scale``: the
    view's ``scale_tokens``, passed in when drawing many rows)."""
    plan = view.plan
    result, state = plan.sections[index], view.state.sections[index]
    scale = scale_tokens(view) if scale is None else scale

    def cells(tokens: int) -> int:
        return 0 if tokens <= 0 else max(1, (tokens * width + scale - 1) // scale)

    kept = min(width, cells(state.tokens))
    whole = min(width, max(kept, cells(result.tokens_before)))
    t = Text(no_wrap=True, end="")
    t.append("█" * kept, styles[bar_class(index)])
    t.append("░" * (whole - kept), styles["section--trimmed"])
    if view.step == view.last_step and result.allotment > result.tokens_after:
        grown = min(width, cells(result.allotment)) - whole
        t.append("┄" * max(0, grown), styles["section--grown"])
    t.append(" " * (width - t.cell_len))
    return t
