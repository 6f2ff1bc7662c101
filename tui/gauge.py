"""The sidebar gauge: usage of ``max_ctx`` after the shown step, a bar split into its parts,
the numbers behind it, tokenizer, caches, overflow state and fingerprint."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static
from tokenbox.core.config import WHAT_IF_STEP_PERCENT
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.view import View, colour_of, fmt, gauge_cells, level

LEVEL_COLOURS = {"ok": "#98c379", "warn": "#e5c07b", "crit": "#e06c75"}
CELL_STYLES = {
    "section": ("█", Style(color="#4ea1ff")),
    "joins": ("▒", Style(color="#9da5b4")),
    "free": ("·", Style(color="#5c6370")),
    "reserve": ("▓", Style(color="#7f848e")),
    "headroom": ("▚", Style(color="#4b5263")),
    "over": ("▞", Style(color="#ff5f5f", bold=True)),
}


class Gauge(Static):
    """Context usage gauge (plain ``Text``: nothing shown here is parsed as markup)."""

    DEFAULT_CSS = "Gauge { height: auto; }"
    last_text: Text = Text()

    def show(self, view: View | None) -> None:
        self.last_text = render_gauge(view, max(10, self.content_region.width or 34))
        self.update(self.last_text)


def _row(out: Text, label: str, value: str | Text, style: str | Style = "", swatch: str = "") -> None:
    out.append(f"{label:<12}", "dim")
    if swatch:
        char, swatch_style = CELL_STYLES[swatch]
        out.append(char, swatch_style)
        out.append(" ")
    else:
        out.append(" ")
    if isinstance(value, Text):
        out.append_text(value)
    else:
        out.append(value, style)
    out.append("\n")


def render_gauge(view: View | None, width: int) -> Text:
    """The gauge as text, ``width`` cells wide."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    if view is None:
        out.append("Context  --%\n", "bold")
        out.append("·" * width + "\n", "dim")
        out.append("no plan yet", "dim")
        return out
    plan, approx = view.plan, view.approx
    percent = view.percent
    # over budget at the shown step is red whatever the percentage of max_ctx says
    colour = LEVEL_COLOURS["crit" if view.state.deficit > 0 or not plan.ok else level(percent)]
    pending = bool(getattr(plan, "pending", False))  # the lead's transcript path: a turn not sent yet
    out.append("Context ", "bold")
    out.append(f"{view.headline_approx}{percent}%", Style(color=colour, bold=True))
    if pending:
        out.append(" ")
        out.append("pending", "italic")
    elif plan.headline_kind == "recorded":
        out.append(" ")
        out.append("recorded", "dim")
    if view.last_step:  # the gap is its own segment: a segment never starts with blanks (SVG viewers drop them)
        out.append("  ")
        out.append(f"step {view.step}/{view.last_step}", "dim")
    out.append("\n")
    for kind, index in gauge_cells(view, width):
        if kind == "section":
            out.append("█", Style(color=colour_of(index)))
        else:
            char, style = CELL_STYLES[kind]
            out.append(char, style)
    out.append("\n")
    b = plan.budget
    used = Text(f"{fmt(view.total, view.headline_approx)} / {fmt(b.max_ctx)}", Style(color=colour, bold=True))
    _row(out, "used", used, swatch="section")
    free = b.available - view.total
    _row(out, "available", f"{fmt(b.available)}  " + (f"free {fmt(free, approx)}" if free >= 0 else f"over {fmt(-free, approx)}"),
         "" if free >= 0 else Style(color=LEVEL_COLOURS["crit"], bold=True), swatch="free" if free >= 0 else "over")
    _row(out, "reserve_out", fmt(b.reserve_out), swatch="reserve")
    _row(out, "headroom", f"{fmt(b.max_ctx - b.available - b.reserve_out)} ({b.headroom:g})", swatch="headroom")
    _row(out, "joins", fmt(view.joins, approx), swatch="joins")
    if plan.what_if and plan.base_max_ctx:
        _row(out, "what-if", f"max_ctx {plan.what_if * WHAT_IF_STEP_PERCENT:+d}% of {fmt(plan.base_max_ctx)}",
             Style(color="#61afef", bold=True))
    tokenizer = Text(plain(plan.tokenizer.name, FIELD_LIMIT))
    tokenizer.append(" exact" if plan.tokenizer.exact else " ≈ approximate",
                     "dim" if plan.tokenizer.exact else Style(color=LEVEL_COLOURS["warn"]))
    _row(out, "tokenizer", tokenizer)
    _row(out, "policy", plain(plan.trimming))
    prefix = plan.prefix_cache
    broken = prefix == "miss" and plan.session.turn > 1
    _row(out, "prefix", prefix + ("  ✗ break" if broken else ""),
         Style(color=LEVEL_COLOURS["crit"], bold=True) if broken else "")
    _row(out, "context", plan.context_cache)
    if not plan.ok:
        overflow = Text("CRITICAL OVERFLOW", Style(color="#ffffff", bgcolor="#be5046", bold=True))
        overflow.append(f" +{fmt(plan.fixed_load - b.available, approx)}", Style(color=LEVEL_COLOURS["crit"], bold=True))
        _row(out, "overflow", overflow)
    elif view.state.deficit > 0:
        _row(out, "overflow", f"deficit {fmt(view.state.deficit, approx)}", Style(color=LEVEL_COLOURS["warn"]))
    else:
        _row(out, "overflow", "none (fits)", Style(color=LEVEL_COLOURS["ok"]))
    fingerprint = view.fingerprint()
    out.append(f"{'fingerprint':<13}", "dim")
    out.append(fingerprint.removeprefix("sha256:")[:12], "bold")
    return out
