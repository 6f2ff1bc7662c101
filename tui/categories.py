"""An agent's request by category, like Claude Code's ``/context``, and the ledger of its compactions.

The rows are core's (``analysis.breakdown.context_use``): what the file does not hold (named as its
reader names it), system prompt, memory files, tool definitions, MCP tools per server, messages, tool
calls, tool results, thinking, images; they add up to the headline. Free space and the auto-compact
buffer complete the window, so the shares are of the window, as ``/context`` shows them (a window neither
the file nor the model table gives is said unknown: no shares, no free space). Every count
is calibrated and marked ``≈``. A label longer than its column goes on under itself: nothing is cut.
Below, every compaction of the thread (``analysis.compactions.ledger``): where, the context before and
after it, and what its summary replaced.
"""

from __future__ import annotations

import textwrap

from rich.style import Style
from rich.text import Text
from tokenbox.core.analysis.breakdown import cache_breakpoints, cached_prefix_tokens, context_use, tool_totals
from tokenbox.tui.figures import category_colour
from tokenbox.tui.planner import AgentFacts
from tokenbox.tui.safe import plain
from tokenbox.tui.styles import GAP, PLAIN, Styles
from tokenbox.tui.view import View, fmt

COUNT = 8  # "≈200 000": the count column; a wider count ("≈1 032 456") takes the cells it needs from its label
SHARE = 6  # "100.0%"
MIN_LABEL = 10


def _right(t: Text, text: str, width: int, style: Style | str = "") -> None:
    """``text`` right-aligned in ``width`` cells, its padding a ``GAP`` (never the start of a screenshot's element)."""
    if len(text) < width:
        t.append(" " * (width - len(text)), GAP)
    t.append(text, style)


def _share(tokens: int, window: int) -> str:
    return f"{100 * tokens / max(1, window):.1f}%"


def _label_room(width: int, count: int) -> int:
    """The label's cells in a row ``width`` cells wide whose count is ``count`` cells: a count wider than
    ``COUNT`` takes its extra cells from the label, its minimum included (a narrow sidebar's row stays within it)."""
    return max(MIN_LABEL - (count - COUNT), width - 2 - count - 1 - SHARE - 1)


Row = tuple[str, str, str, "Style | None", "Style | str"]  # label, count, share, swatch, style


def _render(lines: list[Text], rows: list[Row], width: int) -> None:
    for label, figure, share, swatch, style in rows:
        _row(lines, label, figure, share, width, swatch, style)


def _row(lines: list[Text], label: str, count: str, share: str, width: int, swatch: Style | None,
         style: Style | str = "") -> None:
    """A row: a swatch, the label (wrapped under itself when long), the count and the share on its first line.
    A count wider than ``COUNT`` (a million-token window's "≈1 032 456") takes its extra cells from this row's
    label, so that it ends where the others do and the share beside it is not cut."""
    count_width = max(COUNT, len(count))
    room = _label_room(width, count_width)
    pieces = textwrap.wrap(label, room, break_long_words=True, break_on_hyphens=False) or [""]
    for number, piece in enumerate(pieces):
        t = Text(no_wrap=True, end="")
        if number == 0 and swatch is not None:
            t.append("■", swatch)
            t.append(" ", GAP)
        else:
            t.append("  ", GAP)  # under the label (a continuation, or a row without a swatch)
        t.append(piece + " " * (room - len(piece)) if number == 0 else piece, style)
        if number == 0:
            t.append(" ", GAP)
            _right(t, count, count_width, style)
            t.append(" ", GAP)
            _right(t, share, SHARE, "dim")
        lines.append(t)


def category_lines(view: View, facts: AgentFacts | None, styles: Styles = PLAIN, width: int | None = None,
                   trimmed: bool = False) -> list[Text]:
    """The panel's rows, ``width`` cells wide (every label whole, over several rows where it must);
    ``trimmed``: the request packed into a what-if budget (its categories at the step shown, ✂ where cut)."""
    width = width or 40
    plan = view.plan
    # under a what-if budget the window is the what-if's, where the agent's own threshold does not apply
    compact_at = facts.compact_at if facts is not None and not trimmed else None
    window = plan.budget.max_ctx
    figures = view.figures  # each row summed once per view, from its parts' places (``tui/figures.py``)
    use = figures.context_use(window, compact_at, view.total)
    # the untrimmed request by category: the same sums when nothing is trimmed at the step shown
    if view.step == 0 and view.total == plan.tokens_before:
        untrimmed = use  # step 0 shows every part's untrimmed tokens
    else:
        shown = [s.tokens for s in view.state.sections]
        before = [s.tokens_before for s in plan.sections]
        untrimmed = use if shown == before and view.total == plan.tokens_before else \
            context_use(plan, window, compact_at, before, plan.tokens_before)
    whole = {c.key: c.tokens for c in untrimmed.categories}
    approx = "≈"
    # a window the file does not record and the model table does not know (CONTRACT §11): the plan's
    # max_ctx is then only the recorded context raised to, so no share, free space or window is shown
    known = view.window is not None

    def share(tokens: int) -> str:
        return _share(tokens, window) if known else ""

    rows: list[Row] = []
    for category in use.categories:
        cut = " ✂" if category.tokens < whole.get(category.key, 0) else ""  # trimmed at the step shown
        rows.append((plain(category.label) + cut, fmt(category.tokens, approx), share(category.tokens),
                     styles[category_colour(category.key)], ""))
    rows.append(("in use", fmt(use.used, view.headline_approx), share(use.used), None, "bold"))
    if not known:
        rows.append(("window", "unknown", "", None, "dim"))
    elif use.compact_at is not None:
        free = max(0, use.free)
        rows.append(("free space", fmt(free, view.headline_approx), share(free), styles["gauge--free"], ""))
        if use.free < 0:
            rows.append(("past the auto-compact threshold", fmt(-use.free, view.headline_approx), "", None,
                         styles["gauge--crit"]))
        rows.append(("auto-compact buffer", fmt(use.buffer), share(use.buffer), styles["gauge--buffer"], ""))
    else:
        rows.append(("free space", fmt(max(0, use.free), view.headline_approx), share(max(0, use.free)),
                     styles["gauge--free"], ""))
    if known:
        rows.append(("window", fmt(window), "100.0%", None, "dim"))
    if use.used < plan.tokens_before:
        rows.append((f"untrimmed ✂ {fmt(plan.tokens_before - use.used, approx)}", fmt(plan.tokens_before, approx),
                     share(plan.tokens_before), None, "dim"))
    prefix = cached_prefix_tokens(plan) if figures.kinds.marks else None  # (the marks found once per view)
    if prefix is not None:  # where the provider's cache prefix ends (cache_control marks)
        marks = len(cache_breakpoints(plan.session))
        rows.append((f"cache prefix ({marks} mark{'s' if marks != 1 else ''})", fmt(prefix, approx), share(prefix),
                     None, "dim"))
    tools = sorted(enumerate(tool_totals(plan, [s.tokens for s in view.state.sections])),
                   key=lambda item: (-item[1].tokens_after, item[0])) if figures.kinds.tools else []
    tool_rows: list[Row] = [
        (plain(tool.label), fmt(tool.tokens_after, approx), share(tool.tokens_after),
         styles[category_colour("mcp" if tool.key.startswith("mcp__") else "tools")], "")
        for _, tool in tools]
    lines: list[Text] = []
    head = Text(no_wrap=True, end="")
    head.append("  ", GAP)
    head.append("category".ljust(_label_room(width, COUNT) + 1), "dim")
    _right(head, "tokens", COUNT, "dim")
    head.append(" ", GAP)
    _right(head, "window", SHARE, "dim")
    lines.append(head)
    _render(lines, rows, width)
    if tool_rows:  # a request body or a capture holds the definitions: which tool costs what
        lines.append(Text(""))
        lines.append(Text(f"Tool definitions by cost ({len(tools)})", "bold", no_wrap=True, end=""))
        _render(lines, tool_rows, width)
    if facts is not None and (facts.compactions or plan.session.turn_count > 1):  # a log, not one request body
        lines.extend(ledger_lines(facts, styles, width))
    return lines


def ledger_lines(facts: AgentFacts, styles: Styles = PLAIN, width: int = 40) -> list[Text]:
    """Every compaction of the thread up to the request shown (one line saying so when there is none)."""
    lines: list[Text] = [Text("")]
    title = Text(no_wrap=True, end="")
    title.append(f"Compactions ({len(facts.compactions)})", "bold")
    lines.append(title)
    if not facts.compactions:
        lines.append(Text("none in this thread so far", "dim", no_wrap=True, end=""))
        return lines
    for entry in facts.compactions:
        first = f"#{entry.number} {entry.trigger or 'compaction'}"
        where = [f"line {entry.line}"] if entry.line is not None else []
        # a compaction before the first request the file records (a resumed rollout) is not "after request 0"
        where.append(f"after request {entry.after_request}" if entry.after_request else "before request 1")
        before = fmt(entry.before) if entry.before is not None else "not recorded"
        after = fmt(entry.after) if entry.after is not None else "no request since"
        freed = f"  −{fmt(entry.freed)}" if entry.freed is not None and entry.freed > 0 else ""
        summary = (f"summary ≈{fmt(entry.summary)}" if entry.summary is not None else "summary not in the file")
        # no recorded request since the compaction before (or since the file's start): no count to give
        history = (f"{entry.summarised} request{'s' if entry.summarised != 1 else ''}' history" if entry.summarised
                   else "the history before it")
        replaced = f"replaced {history}; {summary}"
        for text, style in ((f"{first} · {', '.join(where)}", "bold"), (f"{before} → {after}{freed}", ""),
                            (replaced, "dim")):
            for piece in textwrap.wrap(text, max(10, width - 3), break_on_hyphens=False) or [""]:
                row = Text(no_wrap=True, end="")
                if style != "bold":
                    row.append("  ", GAP)
                row.append(piece, style)
                lines.append(row)
    return lines
