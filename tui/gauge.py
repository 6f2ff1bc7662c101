"""The sidebar gauge: usage of ``max_ctx`` after the shown step, a bar split into its parts,
the numbers behind it, tokenizer, caches, overflow state and fingerprint."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.core.model.plan import HeadlineKind, PrefixCache
from tokenbox.core.planning.config import WHAT_IF_STEP_PERCENT
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import BAR_CLASSES, PLAIN, Styles, Themed
from tokenbox.tui.view import View, bar_class, fmt, gauge_cells

CELLS = {"section": "█", "joins": "▒", "free": "·", "reserve": "▓", "headroom": "▚", "over": "▞"}


class Gauge(Themed, FittedStatic):
    """Context usage gauge (plain ``Text``: nothing shown here is parsed as markup)."""

    DEFAULT_CSS = "Gauge { height: auto; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--ok", "gauge--warn", "gauge--crit", "gauge--info", "gauge--overflow",
        *(f"gauge--{kind}" for kind in CELLS if kind != "section"), *BAR_CLASSES,
    }
    _view: View | None = None

    def show(self, view: View | None) -> None:
        self._view = view
        styles = self.component_styles()
        self.show_fitted(lambda width: render_gauge(view, max(10, width), styles))

    def restyle(self) -> None:
        self.show(self._view)


def _cell_style(kind: str, styles: Styles) -> Style:
    """The style of a gauge cell of ``kind`` (the ``section`` swatch has the first bar's colour)."""
    return styles[bar_class(0) if kind == "section" else f"gauge--{kind}"]


ROW_START = 14  # a row's label column (12) and its swatch and blank: where the value starts


BREAKS = (" / ", " of ", " +", "  ")  # where a value too long for its row goes on to the next, in order


def _row(out: Text, label: str, value: str | Text, style: str | Style = "", swatch: str = "", styles: Styles = PLAIN,
         width: int | None = None) -> None:
    """A row: the label, a swatch, the value. A value longer than ``width`` allows goes on under
    itself from a break (" / ", " of ", a gap): a narrow sidebar never cuts a count."""
    text = value if isinstance(value, Text) else Text(value, style)
    rest = None
    start = ROW_START if swatch else ROW_START - 1  # where the value starts
    if width is not None and start + text.cell_len > width:
        text, rest = _split(text, width - start)
    out.append(f"{label:<{ROW_START - 2}}", "dim")
    if swatch:
        out.append(CELLS[swatch], _cell_style(swatch, styles))
        out.append(" ")
    else:
        out.append(" ")
    out.append_text(text)
    out.append("\n")
    if rest is not None:
        _row(out, "", rest, width=width)


def _split(text: Text, room: int) -> tuple[Text, Text | None]:
    """``text`` cut before the last break of the first kind in ``BREAKS`` that leaves a head of at most
    ``room`` cells (the tail starts at the break's mark: "/ 1 000 000", "of 200 000", "+12 345");
    ``text`` whole when none does (never inside a count: its groups are one space apart)."""
    plain_text = text.plain
    for mark in BREAKS:
        at = plain_text.rfind(mark, 0, room + len(mark))  # the head, before the mark, fits
        if at > 0:
            start = at + len(mark) - len(mark.lstrip())
            return text.divide([at, start])[0], text.divide([start])[1]
    return text, None


def render_gauge(view: View | None, width: int, styles: Styles = PLAIN) -> Text:
    """The gauge as text, ``width`` cells wide, coloured with ``styles`` (the gauge's component classes)."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    if view is None:
        out.append("Context  --%\n", "bold")
        out.append("·" * width + "\n", "dim")
        out.append("no plan yet", "dim")
        return out
    plan, approx = view.plan, view.approx
    percent = view.percent
    # over budget at the shown step is red whatever the percentage of max_ctx says
    headline = styles["gauge--" + view.level] + Style(bold=True)
    crit, warn = styles["gauge--crit"] + Style(bold=True), styles["gauge--warn"]
    pending = bool(getattr(plan, "pending", False))  # the lead's transcript path: a turn not sent yet
    out.append("Context ", "bold")
    out.append(f"{view.headline_approx}{percent}%" if view.window else f"{view.headline_approx}{fmt(view.total)}", headline)
    if pending:
        out.append(" ")
        out.append("pending", "italic")
    elif plan.headline_kind == HeadlineKind.RECORDED:
        out.append(" ")
        out.append("recorded", "dim")
    if view.last_step:  # the gap is its own segment: a segment never starts with blanks (SVG viewers drop them)
        out.append("  ")
        out.append(f"step {view.step}/{view.last_step}", "dim")
    out.append("\n")
    for kind, index in gauge_cells(view, width):
        if kind == "section":
            out.append(CELLS[kind], styles[bar_class(index)])
        else:
            out.append(CELLS[kind], _cell_style(kind, styles))
    out.append("\n")
    b = plan.budget
    window = view.window
    used = Text(f"{fmt(view.total, view.headline_approx)} / {fmt(window) if window else 'window unknown'}", headline)
    _row(out, "used", used, swatch="section", styles=styles, width=width)
    if plan.exceeds_window and not plan.what_if:
        # a prediction above the window is not an overflow: it is what the agent would send, and it compacts first
        _row(out, "window", f"would exceed by {fmt(view.total - (window or 0), view.headline_approx)} "
             "(the agent will compact first)", warn, width=width)
    free = b.available - view.total
    room = f"free {fmt(free, approx)}" if free >= 0 else f"over {fmt(-free, approx)}"
    swatch = "free" if free >= 0 else "over"
    if ROW_START + len(fmt(b.available)) + 2 + len(room) <= width:
        _row(out, "available", f"{fmt(b.available)}  {room}", "" if free >= 0 else crit, swatch=swatch, styles=styles)
    else:  # a narrow sidebar: the free (or over) count on a row of its own rather than cut
        _row(out, "available", fmt(b.available), swatch=swatch, styles=styles, width=width)
        _row(out, room[:4], room[5:], "" if free >= 0 else crit, width=width)
    _row(out, "reserve_out", fmt(b.reserve_out), swatch="reserve", styles=styles)
    _row(out, "headroom", f"{fmt(b.max_ctx - b.available - b.reserve_out)} ({b.headroom:g})", swatch="headroom", styles=styles,
         width=width)
    _row(out, "joins", fmt(view.joins, approx), swatch="joins", styles=styles)
    if plan.what_if and plan.base_max_ctx:
        _row(out, "what-if", f"max_ctx {plan.what_if * WHAT_IF_STEP_PERCENT:+d}% of {fmt(plan.base_max_ctx)}",
             styles["gauge--info"] + Style(bold=True), width=width)
    tokenizer = Text(plain(plan.tokenizer.name, FIELD_LIMIT))
    fits = ROW_START + len(tokenizer) + len(" ≈ approximate") <= width
    tokenizer.append(" exact" if plan.tokenizer.exact else " ≈ approximate" if fits else " ≈",
                     "dim" if plan.tokenizer.exact else warn)
    _row(out, "tokenizer", tokenizer)
    _row(out, "policy", plain(plan.trimming))
    prefix = plan.prefix_cache
    # a first turn always misses (nothing was cached yet); only a later miss breaks the provider's cache
    first = plan.session.turn <= 1
    broken = prefix == PrefixCache.MISS and not first
    note = "  ✗ break" if broken else " (cold)" if prefix == PrefixCache.MISS else ""
    _row(out, "prefix", prefix + note, crit if broken else "")
    _row(out, "context", plan.context_cache)
    if not plan.ok:
        overflow = Text()
        overflow.append("CRITICAL OVERFLOW", styles["gauge--overflow"])  # the badge alone: the count is on the panel
        overflow.append(f" +{fmt(plan.fixed_load - b.available, approx)}", crit)
        _row(out, "overflow", overflow, width=width)
    elif view.state.deficit > 0:
        _row(out, "overflow", f"deficit {fmt(view.state.deficit, approx)}", warn, width=width)
    else:
        _row(out, "overflow", "none (fits)", styles["gauge--ok"])
    fingerprint = view.fingerprint()
    out.append(f"{'fingerprint':<13}", "dim")
    out.append(fingerprint.removeprefix("sha256:")[:12], "bold")
    return out
