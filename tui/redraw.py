"""Skip redraws that would draw the same thing.

A new plan replaces every widget's content, but an edit usually changes a few rows: the rest of
the screen need not be worked out again (``LineView.set_lines`` keeps unchanged rows, ``show_text``
leaves a one-line widget alone).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def same_text(a: Text | None, b: Text) -> bool:
    """Whether ``a`` draws as ``b``: rich's ``==`` compares only the characters and their spans.

    The same object counts as changed: it may have been changed in place since it was drawn.
    """
    return (a is not None and a is not b and a == b and a.style == b.style and a.justify == b.justify
            and a.overflow == b.overflow and a.no_wrap == b.no_wrap and a.end == b.end and a.tab_size == b.tab_size)


def show_text(widget: Static, text: Text, *, layout: bool = True) -> bool:
    """``widget.update(text)`` unless it shows the same text already; whether it was updated.

    A layout pass (``layout``) is left out when it cannot change anything: the stylesheet does not
    wrap the widget's text (``text-wrap: nowrap``), so its height is its number of lines, and that
    number is what it was. (A layout pass also repaints every scrollbar on screen.)
    """
    shown = widget.content
    if isinstance(shown, Text):
        if same_text(shown, text):
            return False
        if layout and widget.styles.text_wrap == "nowrap" and row_count(shown) == row_count(text):
            layout = False
    widget.update(text, layout=layout)
    return True


def row_count(text: Text) -> int:
    """How many rows ``text`` draws (its lines, unwrapped)."""
    return text.plain.count("\n") + 1


def runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Ascending ``indexes`` as ``(start, count)`` runs of consecutive rows."""
    found: list[tuple[int, int]] = []
    for index in indexes:
        if found and found[-1][0] + found[-1][1] == index:
            found[-1] = (found[-1][0], found[-1][1] + 1)
        else:
            found.append((index, 1))
    return found
