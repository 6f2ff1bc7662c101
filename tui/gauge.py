"""The sidebar gauge: usage of ``max_ctx`` after the shown step, a bar split into its parts,
the numbers behind it, tokenizer, caches, overflow state and fingerprint.

An agent's request (``render_agent_gauge``) shows its context against the window instead: the bar in
the colours of its categories, the auto-compact threshold marked on it (``┃``) with the buffer above
it, the room left before compaction and how many requests that lasts, and what the request and the
session cost."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.core.model.plan import HeadlineKind, PrefixCache
from tokenbox.core.planning.config import WHAT_IF_STEP_PERCENT
from tokenbox.tui.agentview import request_cost_text, usd
from tokenbox.tui.figures import PART_CLASSES, category_colour
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.glance import Glance
from tokenbox.tui.planner import AgentFacts
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import BAR_CLASSES, GAP, PLAIN, Styles, Themed
from tokenbox.tui.view import Levels, View, bar_class, fmt, gauge_cells, level

CELLS = {"section": "█", "joins": "▒", "free": "·", "reserve": "▓", "headroom": "▚", "over": "▞", "buffer": "░",
         "threshold": "┃"}


class Gauge(Themed, FittedStatic):
    """Context usage gauge (plain ``Text``: nothing shown here is parsed as markup)."""

    DEFAULT_CSS = "Gauge { height: auto; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--ok", "gauge--warn", "gauge--crit", "gauge--info", "gauge--overflow",
        *(f"gauge--{kind}" for kind in CELLS if kind != "section"), *BAR_CLASSES, *PART_CLASSES,
    }
    _view: View | None = None
    _facts: AgentFacts | None = None
    _agent = False
    _glance: tuple[Glance, Levels] | None = None

    def show(self, view: View | None, facts: AgentFacts | None = None, *, agent: bool = False) -> None:
        """``view``'s gauge; ``agent``: an agent's request as it is (no what-if), with core's ``facts`` of it."""
        self._view, self._facts, self._agent, self._glance = view, facts, agent, None
        styles = self.component_styles()
        if agent and view is not None:
            self.show_fitted(lambda width: render_agent_gauge(view, facts, max(10, width), styles))
        else:
            self.show_fitted(lambda width: render_gauge(view, max(10, width), styles))

    def show_glance(self, glance: Glance, levels: Levels) -> None:
        """The newest request's context from the file's tail, while the whole file is read (no plan yet)."""
        self._view, self._facts, self._agent, self._glance = None, None, False, (glance, levels)
        styles = self.component_styles()
        self.show_fitted(lambda width: render_glance_gauge(glance, max(10, width), levels, styles))

    def restyle(self) -> None:
        if self._glance is not None:
            self.show_glance(*self._glance)
        else:
            self.show(self._view, self._facts, agent=self._agent)


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
    out.append(" ", GAP)  # its own element in a screenshot: the value's first cell stays where it is
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
    # as exact as the total it is taken from (a recorded request's is: the categories' free space is too)
    room = (f"free {fmt(free, view.headline_approx)}" if free >= 0 else f"over {fmt(-free, view.headline_approx)}")
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
    tokenizer.append(" ", GAP)
    tokenizer.append("exact" if plan.tokenizer.exact else "≈ approximate" if fits else "≈",
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


def agent_cells(view: View, width: int, compact_at: int | None) -> list[tuple[str, str]]:
    """The agent gauge's bar as ``width`` cells, each ``(kind, style class)``: the parts in their
    categories' colours, free space, the auto-compact threshold and the buffer above it."""
    window = max(1, view.window or view.plan.budget.max_ctx)  # the request's window (CONTRACT §11)

    def cell_of(tokens: int) -> int:
        return min(width, (tokens * width + window // 2) // window)

    cells: list[tuple[str, str]] = [("free", "gauge--free")] * width
    if compact_at is not None:
        for i in range(cell_of(compact_at), width):
            cells[i] = ("buffer", "gauge--buffer")
    figures = view.figures
    used = figures.shown_total
    if min(figures.tokens, default=0) >= 0:
        # each cell takes the colour of the last part drawn on it: found among the parts' running sums by
        # a binary search per cell (thousands of parts share a few dozen cells)
        for i in range(width):
            index = figures.owner(i, width, cell_of)
            if index is not None:
                cells[i] = ("section", figures.kinds.colours[index])
    else:  # a part below 0 tokens: the running sums do not grow, so the parts are walked in order
        drawn = 0
        for index, state in enumerate(view.state.sections):
            if not state.tokens:
                continue
            start, drawn = cell_of(drawn), drawn + state.tokens
            end = max(cell_of(drawn), start + 1 if start < width else start)
            for i in range(start, min(end, width)):
                cells[i] = ("section", figures.kinds.colours[index])
    joins = view.total - used
    if joins > 0:
        for i in range(cell_of(used), min(width, cell_of(used + joins))):
            cells[i] = ("section", category_colour("framing"))
    if compact_at is not None and 0 < cell_of(compact_at) <= width:
        at = min(width - 1, cell_of(compact_at))
        over = view.total >= compact_at
        cells[at] = ("threshold", "gauge--crit" if over else "gauge--threshold")
    if view.total > window and width:
        cells[-1] = ("over", "gauge--over")
    return cells


def render_agent_gauge(view: View, facts: AgentFacts | None, width: int, styles: Styles = PLAIN) -> Text:
    """An agent's request against its window: headline, bar, the room before auto-compaction and its
    forecast, the cost; ``width`` cells wide (a count is never cut: a long value goes on below)."""
    plan = view.plan
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    percent = view.percent
    compact_at = facts.compact_at if facts is not None else None
    outlook = facts.forecast if facts is not None else None
    due = compact_at is not None and view.total >= compact_at
    # a prediction is never red: nothing was sent yet, and the agent compacts first (CONTRACT §11)
    colour = ("warn" if plan.pending else "crit") if due else view.level
    headline = styles["gauge--" + colour] + Style(bold=True)
    out.append("Context ", "bold")
    out.append(f"{view.headline_approx}{percent}%" if view.window else f"{view.headline_approx}{fmt(view.total)}", headline)
    out.append(" ")
    if plan.pending:
        out.append("pending (predicted)", "italic")
    elif plan.headline_kind == HeadlineKind.RECORDED:
        out.append("recorded", "dim")
    else:
        out.append(plan.headline_kind.value, "dim")
    out.append("\n")
    for kind, style in agent_cells(view, width, compact_at):
        out.append(CELLS[kind], styles[style])
    out.append("\n")
    window = view.window or plan.budget.max_ctx
    shown = fmt(view.window) if view.window else "window unknown"
    _row(out, "used", Text(f"{fmt(view.total, view.headline_approx)} / {shown}", headline), swatch="section",
         styles=styles, width=width)
    if plan.exceeds_window and not plan.what_if:
        _row(out, "window", f"would exceed by {fmt(view.total - window, view.headline_approx)} (the agent will compact "
             "first)", styles["gauge--warn"], width=width)
    if compact_at is not None:
        room = compact_at - view.total
        _row(out, "compacts at", f"{fmt(compact_at)} ({100 * compact_at // max(1, window)}%)", swatch="threshold",
             styles=styles, width=width)
        if room > 0:
            _row(out, "room", f"{fmt(room, view.headline_approx)} before it", width=width)
        else:
            _row(out, "room", f"none: {fmt(-room, view.headline_approx)} past it",
                 styles["gauge--warn" if plan.pending else "gauge--crit"], width=width)
        _row(out, "buffer", fmt(window - compact_at), swatch="buffer", styles=styles, width=width)
        if outlook is not None:
            _row(out, "forecast", _forecast_text(outlook), width=width)
            if outlook.growth is not None and outlook.basis >= 2:
                _row(out, "growth", f"{fmt(round(outlook.growth))}/request (last {outlook.basis})", "dim", width=width)
    else:
        if view.window:  # an unknown window has no free space to give (the glance's gauge says none either)
            _row(out, "free", f"{fmt(window - view.total, view.headline_approx)} of the window", swatch="free",
                 styles=styles, width=width)
        _row(out, "compaction", "rule not known", "dim", width=width)
    _row(out, "request", request_cost_text(plan), width=width)
    cost = facts.cost if facts is not None else None
    if cost is not None and cost.usd is not None:
        threads = len(facts.threads) if facts is not None else 1
        more = f" ({threads} threads)" if threads > 1 else ""
        _row(out, "session", f"{usd(cost.usd)}{more}", width=width)
    # the request row names its own model's missing price: the row of the session's lists only the others
    named = plan.session.model_name if plan.cost is None and plan.recorded is not None else None
    unpriced = [m for m in cost.unpriced if m != named] if cost is not None else []
    if unpriced:
        _row(out, "no price", ", ".join(plain(m, FIELD_LIMIT) for m in unpriced), "dim", width=width)
    as_of = plan.cost.prices_as_of if plan.cost is not None else cost.prices_as_of if cost is not None else None
    if as_of:
        _row(out, "prices", f"as of {as_of}", "dim", width=width)
    tokenizer = Text(plain(plan.tokenizer.name, FIELD_LIMIT))
    calibration = plan.calibration
    if calibration is not None or not plan.tokenizer.exact:
        tokenizer.append(" ", GAP)
        tokenizer.append(f"≈ ×{calibration.scale:.2f}" if calibration is not None else "≈", styles["gauge--warn"])
    _row(out, "tokenizer", tokenizer, width=width)
    return out


def render_glance_gauge(glance: Glance, width: int, levels: Levels, styles: Styles = PLAIN) -> Text:
    """The newest request's context as its file's tail records it, against its window: headline, a bar
    of one colour (the parts are not known yet), the room before auto-compaction; ``width`` cells wide."""
    figures = glance.figures
    tokens = figures.tokens or 0
    window, percent, compact_at = glance.window, glance.percent, figures.compact_at
    approx = "≈" if figures.approx else ""
    due = compact_at is not None and tokens >= compact_at
    colour = ("warn" if figures.pending else "crit") if due else level(percent or 0, levels)
    headline = styles["gauge--" + colour] + Style(bold=True)
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append("Context ", "bold")
    out.append(f"{approx}{percent}%" if percent is not None else f"{approx}{fmt(tokens)}", headline)
    out.append(" ")
    out.append("pending (predicted)" if figures.pending else "recorded", "italic" if figures.pending else "dim")
    out.append("\n")
    scale = max(1, window or tokens)

    def cell_of(count: int) -> int:
        return min(width, (count * width + scale // 2) // scale)

    cells = [("free", "gauge--free")] * width
    if compact_at is not None:
        cells[cell_of(compact_at):] = [("buffer", "gauge--buffer")] * (width - cell_of(compact_at))
    cells[:cell_of(tokens)] = [("section", "gauge--" + colour)] * cell_of(tokens)
    if compact_at is not None and 0 < cell_of(compact_at) <= width:
        cells[min(width - 1, cell_of(compact_at))] = ("threshold", "gauge--crit" if due else "gauge--threshold")
    for kind, style in cells:
        out.append(CELLS[kind], styles[style])
    out.append("\n")
    shown = fmt(window) if window else "window unknown"
    _row(out, "used", Text(f"{fmt(tokens, approx)} / {shown}", headline), width=width)
    if compact_at is not None and window:
        room = compact_at - tokens
        _row(out, "compacts at", f"{fmt(compact_at)} ({100 * compact_at // window}%)", swatch="threshold",
             styles=styles, width=width)
        _row(out, "room", f"{fmt(room, approx)} before it" if room > 0 else f"none: {fmt(-room, approx)} past it",
             "" if room > 0 else styles["gauge--warn" if figures.pending else "gauge--crit"], width=width)
    elif window:
        _row(out, "free", f"{fmt(window - tokens, approx)} of the window", swatch="free", styles=styles, width=width)
    _row(out, "parts", "after the whole read", "dim", width=width)  # the status line says how much is read
    return out


def megabytes(size: int) -> str:
    """A file's size in words: ``52.3 MB``."""
    return f"{size / 1e6:.1f} MB"


def _forecast_text(outlook) -> str:
    """``≈51 requests to go``, or why there is no figure."""
    requests = outlook.requests
    if requests == 0:
        return "compaction due"
    if requests is None:
        return "not growing" if outlook.growth is not None else "too few requests to say"
    return f"≈{requests} request{'s' if requests != 1 else ''} to go"
