"""The token breakdown of the shown turn: tokens and share per group of sections.

``breakdown(view)`` groups imported sessions (Claude Code transcripts, Anthropic/OpenAI requests) by
the importer's category and native tokenbox sessions by section kind; counts are those of the shown
step, so the groups always add up: ``sum(groups) + joins == total``. The panel (``BreakdownView``)
draws a tokenbox session's groups by kind; an agent's request gets its own panel, the categories of
Claude Code's ``/context`` (``tui/categories.py``). Approximate counts carry ``≈``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.core.analysis.breakdown import (
    CATEGORY_LABELS,
    Total,
    cache_breakpoints,
    cached_prefix_tokens,
    category,
    sum_by,
    tool_totals,
)
from tokenbox.core.model.plan import sections_of
from tokenbox.tui.figures import PART_CLASSES
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.lines import LineView
from tokenbox.tui.planner import AgentFacts
from tokenbox.tui.safe import plain
from tokenbox.tui.styles import PLAIN, Styles, Themed
from tokenbox.tui.view import View, fmt

LABEL_WIDTH = 17  # "tool definitions" and a blank
COUNT_WIDTH = 8  # "≈200 000": rows (with " ✂") stay within 35 cells, the sidebar less a scrollbar
SHARE_WIDTH = 6  # "100.0%"
MIN_LABEL_WIDTH = 8  # the narrowest label column: "joins", "total" and a cut name stay legible


@dataclass(frozen=True)
class Group:
    """Tokens of one group of sections at the shown step (and untrimmed)."""

    key: str
    label: str
    sections: int
    tokens: int  # at the shown step
    tokens_before: int  # untrimmed


@dataclass(frozen=True)
class Breakdown:
    """The numbers of the breakdown panel for one view."""

    imported: bool  # grouped by importer category (else by section kind)
    groups: tuple[Group, ...]
    tools: tuple[Group, ...]  # one per tool definition, costliest first
    joins: int
    total: int
    total_before: int
    recorded: int | None  # the context the file recorded for this turn
    estimated: int  # the untrimmed context as tokenbox counts it
    cache_marks: int
    cache_prefix: int | None
    approx: str  # "≈" or ""

    @property
    def unaccounted(self) -> int | None:
        """Recorded minus estimated: what the recorded request held that the file does not contain."""
        return None if self.recorded is None else self.recorded - self.estimated

    @property
    def ratio(self) -> float | None:
        return None if not self.recorded else self.estimated / self.recorded


def is_imported(view: View | None) -> bool:
    """Whether the shown plan came from an importer (its sections carry categories)."""
    return view is not None and any(category(section) is not None for section in sections_of(view.plan.sections))


def breakdown(view: View) -> Breakdown:
    """Group the sections of ``view`` (at its step) by category, or by kind for native sessions (the sums
    are core's ``sum_by``)."""
    plan = view.plan
    imported = is_imported(view)
    shown = [state.tokens for state in view.state.sections]
    if imported:
        sums = sum_by(plan, lambda result: category(result.section) or "other", shown)
        order = [k for k in CATEGORY_LABELS if k in sums]
        labels = CATEGORY_LABELS
    else:
        sums = sum_by(plan, lambda result: result.kind, shown)
        order = list(sums)  # first appearance in file order
        labels = {}
    groups = tuple(_group(sums[k], labels.get(k, plain(k))) for k in order)
    costliest = sorted(enumerate(tool_totals(plan, shown)), key=lambda item: (-item[1].tokens_after, item[0])) if imported else []
    tools = tuple(_group(total, plain(total.label), plain(total.key)) for _, total in costliest)
    recorded = plan.recorded.context_tokens if plan.recorded is not None else None
    return Breakdown(
        imported=imported,
        groups=groups,
        tools=tools,
        joins=view.joins,
        total=view.total,
        total_before=plan.tokens_before,
        recorded=recorded,
        estimated=plan.tokens_before,
        cache_marks=len(cache_breakpoints(plan.session)) if imported else 0,
        cache_prefix=cached_prefix_tokens(plan) if imported else None,
        approx=view.approx,
    )


def _group(total: Total, label: str, key: str | None = None) -> Group:
    return Group(total.key if key is None else key, label, total.sections, total.tokens_after, total.tokens_before)


def share(tokens: int, total: int) -> str:
    """``tokens`` as a percentage of ``total`` with one decimal (``-`` for an empty total)."""
    return f"{100 * tokens / total:.1f}%" if total > 0 else "-"


def cells(t: Text, text: str, width: int, style: Style | str = "", *, right: bool = False) -> None:
    """Append ``text`` in a column ``width`` cells wide (cut with "…").

    The padding is a segment of its own, never the start of a text segment: SVG viewers drop
    leading blanks of a text element, which would shift the snapshot's columns.
    """
    if len(text) > width:
        text = text[: width - 1] + "…"
    pad = " " * (width - len(text))
    if right and pad:
        t.append(pad)
    t.append(text, style)
    if not right and pad:
        t.append(pad)


def label_width(width: int | None) -> int:
    """The label column for a panel ``width`` cells wide: narrower where the sidebar is, so that the
    counts and shares stay whole and the labels (names) take the ellipsis; ``LABEL_WIDTH`` at most."""
    if width is None:
        return LABEL_WIDTH
    return max(MIN_LABEL_WIDTH, min(LABEL_WIDTH, width - COUNT_WIDTH - 1 - SHARE_WIDTH - len(" ✂")))


def _row(label: str, count: str, tail: str = "", style: Style | str = "", tail_style: Style | str = "dim",
         labels: int = LABEL_WIDTH) -> Text:
    """`` label      count  tail``: the label left-aligned in ``labels`` cells, the count right-aligned,
    the tail after a blank."""
    t = Text(no_wrap=True, end="")
    cells(t, label, labels, style)
    cells(t, count, COUNT_WIDTH, style, right=True)
    if tail:
        t.append(" ")
        if tail.endswith("%"):  # a share: right-aligned in its column
            cells(t, tail, SHARE_WIDTH, tail_style, right=True)
        else:
            t.append(tail, tail_style)
    return t


def breakdown_lines(view: View, styles: Styles = PLAIN, width: int | None = None) -> list[Text]:
    """The panel's rows for a tokenbox session, ``width`` cells wide at most (a number is never cut): a
    header, one row per section kind, joins, the total (an agent's request has its own panel,
    ``tui/categories.py``)."""
    labels = label_width(width)
    b = breakdown(view)
    trimmed_style = styles["breakdown--trimmed"]
    approx = b.approx
    lines: list[Text] = []
    header = Text(no_wrap=True, end="")
    cells(header, "by category" if b.imported else "by section kind", labels, "dim")
    cells(header, "tokens", COUNT_WIDTH, "dim", right=True)
    header.append(" ")
    cells(header, "share", SHARE_WIDTH, "dim", right=True)
    lines.append(header)
    for group in b.groups:
        trimmed = group.tokens < group.tokens_before
        row = _row(group.label, fmt(group.tokens, approx), share(group.tokens, b.total), labels=labels)
        if trimmed:
            row.append(" ✂", trimmed_style)
        lines.append(row)
    lines.append(_row("joins", fmt(b.joins, approx), share(b.joins, b.total) if b.joins else "", labels=labels))
    total = _row("total" if b.recorded is None else "estimate", fmt(b.total, approx), share(b.total, b.total), "bold", "bold", labels=labels)
    lines.append(total)
    if b.total != b.total_before:
        lines.append(_row("untrimmed", fmt(b.total_before, approx), f"✂ {fmt(b.total_before - b.total, approx)}",
                          tail_style=trimmed_style, labels=labels))
    return lines


class BreakdownTitle(FittedStatic):
    """The title above the breakdown (the same look as the trim trace's; ``show_text``). It names the
    request, so a followed session redraws it at each one: drawn with the line API (``FittedStatic``) as a
    ``Static`` of the ``Text`` draws it (``OFFSETS``)."""

    OFFSETS = True


class BreakdownView(Themed, LineView, inherit_bindings=False, can_focus=False):
    """The breakdown panel of the sidebar (scrolls when the tool list is long); for an agent's request,
    its categories as ``/context`` shows them and the ledger of its compactions (``tui/categories.py``)."""

    ELLIPSIS = True
    COMPONENT_CLASSES: ClassVar[set[str]] = {"breakdown--trimmed", "breakdown--recorded", "gauge--free", "gauge--buffer",
                                             "gauge--crit", *PART_CLASSES}
    _view: View | None = None
    _facts: AgentFacts | None = None
    _agent = False
    _trimmed = False

    def show(self, view: View | None, facts: AgentFacts | None = None, *, agent: bool = False, trimmed: bool = False) -> None:
        self._view, self._facts, self._agent, self._trimmed = view, facts, agent, trimmed
        width = self.scrollable_content_region.width or None  # none before the first layout
        if view is None:
            lines = [Text("no plan", "dim")]
        elif agent:
            from tokenbox.tui.categories import category_lines  # start-up: an agent's panel only when one is shown

            lines = category_lines(view, facts, self.component_styles(), width, trimmed)
        else:
            lines = breakdown_lines(view, self.component_styles(), width)
        self.set_lines(lines)

    def on_lines_resized(self) -> None:
        """The label column is as wide as the panel allows."""
        self.restyle()

    def restyle(self) -> None:
        self.show(self._view, self._facts, agent=self._agent, trimmed=self._trimmed)
