"""Key ``a``: the threads of an agent's session — the main conversation and each sub-agent — with their
requests, context now and at its peak, and what each cost; the one chosen is shown (the main thread
stays the default)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from tokenbox.core.analysis.threads import ThreadSummary
from tokenbox.tui.agentview import COMPACTION_WORD, MIN_THREAD, thread_word, usd
from tokenbox.tui.planner import AgentFacts
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import GAP
from tokenbox.tui.textual_seams import SettledModal
from tokenbox.tui.view import fmt

COLUMNS = {"requests": 10, "context now": 13, "peak": 11, "cost": 10}  # titles and widths of the number columns
SCROLLBAR = 2  # the list's scrollbar, when it has more threads than rows


def header_row(name_width: int, models: bool) -> Text:
    """The column titles over ``thread_row``s."""
    t = Text(no_wrap=True, end="")
    t.append("  ", GAP)
    t.append("thread".ljust(name_width), "dim")
    for title, width in COLUMNS.items():
        t.append(" " * (width - len(title)), GAP)
        t.append(title, "dim")
    if models:
        t.append("  ", GAP)
        t.append("models", "dim")
    return t


def thread_row(summary: ThreadSummary, shown: bool, name_width: int, models: bool = True) -> Text:
    """One thread: its name, requests, context now and at its peak, cost and (``models``) the models its
    requests went to (inert text)."""
    t = Text(no_wrap=True, end="")
    t.append("▶ " if shown else "  ", "bold")
    t.append(f"{thread_word(summary.name, name_width):<{name_width}}", "bold" if summary.main else "")
    requests = f"{summary.requests} req" + ("+1" if summary.pending else "")
    now = fmt(summary.current) if summary.current is not None else "–"
    peak = fmt(summary.peak) if summary.peak is not None else "–"
    cost = usd(summary.usd) if summary.usd is not None else "no price" if summary.unpriced else "–"
    for value, width in zip((requests, now, peak, cost), COLUMNS.values(), strict=True):
        t.append(" " * (width - len(value)), GAP)  # right-aligned; the blanks an element of their own
        t.append(value)
    if models and summary.models:
        t.append("  ", GAP)
        t.append(", ".join(plain(m, FIELD_LIMIT) for m in summary.models), "dim")
    return t


def session_line(facts: AgentFacts) -> Text:
    """The session's total cost, and what it leaves out."""
    t = Text(no_wrap=False, end="")
    cost = facts.cost
    if cost is None or cost.usd is None:
        t.append("session cost: no request has a priced model", "dim")
    else:
        t.append(f"session cost {usd(cost.usd)}", "bold")
        t.append(" ", GAP)
        t.append(f"(every request of every thread, prices as of {cost.prices_as_of})", "dim")
    if cost is not None and cost.unpriced:
        t.append(f"; no price for {', '.join(plain(m, FIELD_LIMIT) for m in cost.unpriced)}", "dim")
    return t


class ThreadsScreen(SettledModal[str | None]):
    """The threads of the session; Enter shows the one highlighted, Esc (or ``a``) closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,a,q", "close", "Close")]
    DEFAULT_CSS = """
    ThreadsScreen { align: center middle; }
    ThreadsScreen > Vertical {
        width: 120; max-width: 95%; height: auto; max-height: 80%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ThreadsScreen OptionList, ThreadsScreen OptionList:focus { height: auto; max-height: 20; border: none; padding: 0; }
    ThreadsScreen .threads--title { text-style: bold; }
    """

    def __init__(self, facts: AgentFacts) -> None:
        super().__init__()
        self.facts = facts

    def compose(self) -> ComposeResult:
        facts = self.facts
        room = min(120, int(self.app.size.width * 0.95)) - 4  # the panel's inner width
        # the names' column: the longest name, or what the numbers leave (a row never wraps; names are cut)
        numbers = 2 + sum(COLUMNS.values()) + SCROLLBAR
        width = max([4] + [len(thread_word(s.name)) for s in facts.threads])
        width = max(MIN_THREAD + len(COMPACTION_WORD), min(width, room - numbers))
        longest = max([0] + [len(", ".join(s.models)) + 2 for s in facts.threads])
        models = 2 + width + sum(COLUMNS.values()) + longest <= room
        with Vertical():
            yield Static(Text("Threads — ↑↓ Enter shows one, Esc closes", end=""), classes="threads--title")
            yield Static(header_row(width, models))
            options = [Option(thread_row(s, s.name == facts.thread, width, models), id=s.name) for s in facts.threads]
            yield OptionList(*options, id="threads")
            yield Static(session_line(facts), id="threads-cost")

    def on_mount(self) -> None:
        names = [s.name for s in self.facts.threads]
        threads = self.query_one(OptionList)
        threads.highlighted = names.index(self.facts.thread) if self.facts.thread in names else 0
        threads.focus()

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(message.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
