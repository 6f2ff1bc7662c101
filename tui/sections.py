"""Section bars: one row per section in file order, drawn by ONE line-API widget.

Columns: id, kind, priority, critical mark, tokens before → after, a bar scaled to the available
budget (kept part solid, trimmed part shaded, reported expansion dotted), action, lenses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.tui.bars import ACTIONS, bar_scale, bar_text, scale_tokens
from tokenbox.tui.figures import PART_CLASSES
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.lines import LazyRows, LineView
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import BAR_CLASSES, PLAIN, Styles, Themed
from tokenbox.tui.view import View, bar_class, fmt


@dataclass(frozen=True)
class Columns:
    """Column widths for a given widget width and set of sections.

    The id, tokens before → after and the action are always shown; kind, priority and lenses are
    dropped (lenses first) when the width is short, so numbers are never clipped. Ids get wider on
    wide terminals and end in "…" when cut.
    """

    id: int
    kind: int  # 0: column hidden
    prio: bool
    number: int  # width of the before and after counts
    bar: int
    lenses: int  # 0: column hidden

    @classmethod
    def fit(cls, view: View | None, width: int) -> Columns:
        sections = view.plan.sections if view else ()
        approx = view.approx if view else ""
        id_cap = max(18, width // 4)
        id_w = min(id_cap, max([2] + [len(plain(s.id, id_cap)) for s in sections]))
        kind_w = min(10, max([4] + [len(plain(s.kind, 10)) for s in sections]))
        lens_w = min(14, max([6] + [len(plain(",".join(s.lenses), 14)) for s in sections]))
        number = max([6] + [len(fmt(max(s.tokens_before, s.tokens_after), approx)) for s in sections])
        always = 2 + id_w + 1 + 2 + number + 3 + number + 1 + 1 + 10  # marks, id, !, before → after, bar gap, action
        kind, prio, lenses = kind_w, True, lens_w
        for drop in ("lenses", "kind", "prio"):
            if width - always - (kind + 1 if kind else 0) - (5 if prio else 0) - (lenses + 1 if lenses else 0) >= 12:
                break
            if drop == "lenses":
                lenses = 0
            elif drop == "kind":
                kind = 0
            else:
                prio = False
        rest = always + (kind + 1 if kind else 0) + (5 if prio else 0) + (lenses + 1 if lenses else 0)
        if width - rest < 8:  # still short: ids give way (they end in "…"), never the numbers
            shorter = max(4, id_w - (8 - (width - rest)))
            rest -= id_w - shorter
            id_w = shorter
        return cls(id_w, kind, prio, number, max(4, width - rest - 1), lenses)


def lenses_until(view: View, section_id: str) -> list[str]:
    """The lenses applied to ``section_id`` in the steps shown (up to the current step)."""
    out: list[str] = []
    for step in view.plan.steps[: view.step]:
        if step.section == section_id and step.op == "lens" and step.detail not in out:
            out.append(step.detail)
    return out


def lenses_by_section(view: View) -> dict[str, list[str]]:
    """``lenses_until`` of every section at once (one pass over the steps shown)."""
    out: dict[str, list[str]] = {}
    for step in view.plan.steps[: view.step]:
        if step.op == "lens":
            applied = out.setdefault(step.section, [])
            if step.detail not in applied:
                applied.append(step.detail)
    return out


def header_text(view: View | None, cols: Columns) -> Text:
    t = Text(no_wrap=True, end="", style="bold")
    scale = bar_scale(max(1, -(-scale_tokens(view) // cols.bar)), cols.bar) if view else "bar"
    t.append(f"  {'id':<{cols.id}} ")
    if cols.kind:
        t.append(f"{'kind':<{cols.kind}} ")
    if cols.prio:
        t.append(f"{'prio':>4} ")
    t.append(f"! {'before':>{cols.number}} → {'after':<{cols.number}} ")
    t.append(f"{scale[: cols.bar]:<{cols.bar}} ")
    t.append(f"{'action':<10}")
    if cols.lenses:
        t.append(" lenses")
    return t


def row_text(
    view: View, index: int, cols: Columns, styles: Styles = PLAIN, scale: int | None = None,
    lenses: dict[str, list[str]] | None = None,
) -> Text:
    """Section ``index``'s row, coloured with ``styles`` (the section bars' component classes).

    ``scale`` and ``lenses`` (``scale_tokens`` and ``lenses_by_section`` of the view) are passed in
    when drawing many rows, so that each row costs the same however many there are."""
    plan = view.plan
    result, state = plan.sections[index], view.state.sections[index]
    current = view.step and plan.steps[view.step - 1].section == result.id
    t = Text(no_wrap=True, end="")
    t.append("◀" if current else " ", styles["section--current"])
    t.append("▌", styles[bar_class(index)])
    ident = plain(result.id, FIELD_LIMIT)
    if len(ident) > cols.id:
        ident = ident[: cols.id - 1] + "…"
    t.append(f"{ident:<{cols.id}} ", "bold")
    if cols.kind:
        t.append(f"{plain(result.kind, cols.kind)[: cols.kind]:<{cols.kind}} ", "dim")
    if cols.prio:
        t.append(f"{result.section.priority:>4} ")
    t.append("◆" if result.critical else " ", styles["section--critical"])
    t.append(" ")
    approx = view.approx
    before, after = fmt(result.tokens_before, approx), fmt(state.tokens, approx)
    changed = state.tokens != result.tokens_before
    t.append(f"{before:>{cols.number}} → ", "dim" if changed else "")
    t.append(f"{after:<{cols.number}} ", Style(bold=True) if changed else "")
    t.append_text(bar_text(view, index, cols.bar, styles, scale))
    t.append(" ")
    t.append(f"{plain(state.action, 10):<10}", styles[f"section--{state.action}"] if state.action in ACTIONS else "")
    if cols.lenses:
        applied = lenses.get(result.id, []) if lenses is not None else lenses_until(view, result.id)
        shown = ",".join(plain(x, FIELD_LIMIT) for x in applied)
        t.append(" ")
        t.append(shown if len(shown) <= cols.lenses else shown[: cols.lenses - 1] + "…", "dim")
    return t


class SectionHeader(FittedStatic):
    """The column titles above the section bars (made for the table's width: ``show_text``)."""

    OFFSETS = True

    DEFAULT_CSS = "SectionHeader { height: 1; }"


class SectionBars(Themed, LineView, inherit_bindings=False):
    """One row per section; the selected row is the cursor. Keys are handled by the app.

    Rows are built when drawn (``LazyRows``) and fit the width (``Columns.fit``), so a new plan costs
    the rows on screen, not every section of a long transcript.
    """

    ELLIPSIS = True

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"section--{action}" for action in ACTIONS),
        "section--trimmed", "section--grown", "section--current", "section--critical", *BAR_CLASSES, *PART_CLASSES,
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: View | None = None
        self.header: SectionHeader | None = None
        self.agent = False  # an agent's request: its parts (``tui/parts.py``), not a layout's sections
        self.trimmed = False  # with ``agent``: packed into a what-if budget (the trim columns join)

    def show(self, view: View | None, selected: int | None, *, agent: bool = False, trimmed: bool = False) -> None:
        self.view = view
        self.agent, self.trimmed = agent and view is not None, trimmed
        self._rebuild(selected)

    def _rebuild(self, selected: int | None) -> None:
        width = self.scrollable_content_region.width or 80
        if self.agent:
            self._rebuild_parts(selected, width)
            return
        cols = Columns.fit(self.view, width)
        if self.header is not None:
            self.header.show_text(header_text(self.view, cols))
        if self.view is None:
            self.set_lines([Text("no sections", "dim")])
            return
        view, styles = self.view, self.component_styles()
        scale, lenses = scale_tokens(view), lenses_by_section(view)
        rows = LazyRows(len(view.plan.sections), lambda i: row_text(view, i, cols, styles, scale, lenses))
        self.set_lines(rows, selected)

    def _rebuild_parts(self, selected: int | None, width: int) -> None:
        from tokenbox.tui import parts  # start-up: an agent's table only when an agent's session is shown

        view, styles = self.view, self.component_styles()
        assert view is not None
        cols = parts.PartColumns.fit(view, width, self.trimmed)
        if self.header is not None:
            self.header.show_text(parts.header_text(view, cols))
        scale = scale_tokens(view)
        rows = LazyRows(len(view.plan.sections), lambda i: parts.row_text(view, i, cols, styles, scale))
        self.set_lines(rows, selected)

    def on_lines_resized(self) -> None:
        self._rebuild(self.cursor)

    def restyle(self) -> None:
        self._rebuild(self.cursor)
