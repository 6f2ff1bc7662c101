"""The trim trace: step 0 (untrimmed) and every step, the current one highlighted."""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from tokenbox.tui.lines import LineView
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import PLAIN, Styles, Themed
from tokenbox.tui.view import View, fmt

OPS = ("lens", "truncate", "drop")  # styled by trace--<op>


TIER_CHANGE = re.compile(r"(?P<name>.*): (?P<change>\w+ → \w+)", re.DOTALL)


def note_text(note: str) -> str:
    """A step's note for one trace row. Demote notes (``name: Full → Summary``) quote a behaviour's
    name, which is untrusted and may be long: the tier change comes first so the row's cut-off
    end never hides it, and the name is escaped and capped."""
    match = TIER_CHANGE.fullmatch(note)
    if match is None:
        return plain(note, FIELD_LIMIT)
    return f"{match['change']}  {plain(match['name'], FIELD_LIMIT)}"


def _fit(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` characters, ending in ``…`` when cut (ids and lens names only)."""
    return text if len(text) <= cells else text[: max(0, cells - 1)] + "…"


def trace_lines(view: View, styles: Styles = PLAIN, width: int | None = None) -> tuple[list[Text], list[int]]:
    """The trace rows and, for step 0..n and one past the end, the row where each step starts.

    With ``width``, a step too long for one row puts its numbers (tokens before → after, the deficit
    left) on a second row, so they always show whole; an id and lens longer than a row end in ``…``."""
    plan, approx = view.plan, view.approx
    fits = styles["trace--fits"]
    first = Text(no_wrap=True, end="")
    first.append("  0 ", "bold")
    first.append("untrimmed ", "dim")
    first.append(f"total {fmt(plan.tokens_before, approx)} ")
    deficit = plan.tokens_before - plan.budget.available
    first.append(f"Δ{fmt(deficit, approx)}" if deficit > 0 else "fits", "dim" if deficit > 0 else fits)
    lines = [first]
    starts = [0]
    for step in plan.steps:
        starts.append(len(lines))
        t = Text(no_wrap=True, end="")
        t.append(f"{step.index:>3} ", "bold")
        section = plain(step.section, FIELD_LIMIT)
        what = plain(step.detail, FIELD_LIMIT) if step.op == "lens" and step.detail else plain(step.op)
        if step.op == "truncate" and step.detail:
            what = f"truncate {plain(step.detail, FIELD_LIMIT)}"
        numbers = f"{fmt(step.tokens_before, approx)}→{fmt(step.tokens_after, approx)} "
        left = f"Δ{fmt(step.deficit_after, approx)}" if step.deficit_after > 0 else "fits"
        wrapped = width is not None and 4 + len(section) + len(what) + 2 + len(numbers) + len(left) > width
        if wrapped and width is not None:
            room = width - 5  # the step number and a blank
            if len(section) + len(what) > room:
                keep_what = min(len(what), max(room // 2, room - len(section)))
                what = _fit(what, max(1, keep_what))
                section = _fit(section, max(1, room - len(what)))
        t.append(f"{section} ")
        t.append(f"{what} ", styles[f"trace--{step.op}"] if step.op in OPS else "")
        if wrapped:  # the numbers on a row of their own, under the step
            lines.append(t)
            t = Text("    ↳ ", no_wrap=True, end="")
        t.append(numbers)
        t.append(left, "dim" if step.deficit_after > 0 else fits)
        lines.append(t)
        for note in step.note.split("; ") if step.note else ():
            lines.append(Text(f"    {note_text(note)}", "italic dim", no_wrap=True, end=""))
    starts.append(len(lines))
    if not plan.ok:
        lines.append(Text("no steps: the critical sections alone overflow", styles["trace--overflow"]))
    elif not plan.steps:
        lines.append(Text("no steps: everything fits", "dim"))
    return lines, starts


class TraceView(Themed, LineView, inherit_bindings=False, can_focus=False):
    """Steps of the trace; the cursor marks the step whose result the whole view shows."""

    ELLIPSIS = True
    COMPONENT_CLASSES: ClassVar[set[str]] = {*(f"trace--{op}" for op in OPS), "trace--fits", "trace--overflow"}
    _view: View | None = None

    def show(self, view: View | None) -> None:
        self._view = view
        if view is None:
            self.set_lines([Text("no plan", "dim")])
            return
        lines, starts = trace_lines(view, self.component_styles(), self.scrollable_content_region.width or None)
        start, end = starts[view.step], starts[view.step + 1]
        self.set_lines(lines, start, cursor_height=end - start)

    def restyle(self) -> None:
        self.show(self._view)

    def on_lines_resized(self) -> None:
        self.show(self._view)
