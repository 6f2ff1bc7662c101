"""The status line: file, last reload time, what changed, plan time, the current file's error."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import Static
from tokenbox.tui.safe import plain


@dataclass(frozen=True)
class Status:
    file: str
    reloaded: str | None = None  # clock time, None when suppressed
    changes: str = ""
    plan_ms: float | None = None  # None when suppressed
    error: str | None = None
    note: str = ""


def status_text(status: Status) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(" ")
    t.append(plain(status.file), "bold")
    if status.reloaded:
        t.append(f"  reloaded {status.reloaded}", "dim")
    if status.changes:
        t.append("  · ", "dim")
        t.append(plain(status.changes))
    if status.plan_ms is not None:
        t.append(f"  · planned in {status.plan_ms:.0f} ms", "dim")
    if status.note:
        t.append("  · ", "dim")
        t.append(plain(status.note), Style(color="#61afef"))
    if status.error:
        t.append("\n ")
        t.append("✗ ", Style(color="#e06c75", bold=True))
        t.append(plain(status.error), Style(color="#e06c75"))
    return t


class StatusLine(Static):
    """One line of status, a second one for the error of a broken file."""

    DEFAULT_CSS = "StatusLine { height: auto; max-height: 2; }"
    last_text: Text = Text()

    def show(self, status: Status) -> None:
        self.last_text = status_text(status)
        self.update(self.last_text)
