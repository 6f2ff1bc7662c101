"""The status line: file, last reload time, what changed, plan time, the current file's error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Static
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import PLAIN, Styles, Themed

ERROR_LIMIT = 2000  # the line is cropped on screen anyway; the detail banner has the full error


@dataclass(frozen=True)
class Status:
    file: str
    reloaded: str | None = None  # clock time of the last load that planned, None when suppressed
    changes: str = ""
    plan_ms: float | None = None  # None when suppressed
    error: str | None = None
    note: str = ""
    first: bool = False  # the plan shown is the file's first: "loaded", not "reloaded"


def _gap(t: Text, dot: bool = True) -> None:
    """Two blanks and a dim dot; the blanks are a segment of their own (SVG viewers drop leading blanks)."""
    t.append("  ")
    if dot:
        t.append("· ", "dim")


def status_text(status: Status, styles: Styles = PLAIN) -> Text:
    """The status line (and the error line of a broken file), coloured with ``styles``."""
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(" ")
    t.append(plain(status.file, FIELD_LIMIT), "bold")
    if status.reloaded:
        _gap(t, dot=False)
        t.append(f"{'loaded' if status.first else 'reloaded'} {status.reloaded}", "dim")
    if status.changes:
        _gap(t)
        t.append(plain(status.changes, FIELD_LIMIT))
    if status.plan_ms is not None:
        _gap(t)
        t.append(f"planned in {status.plan_ms:.0f} ms", "dim")
    if status.note:
        _gap(t)
        t.append(plain(status.note, FIELD_LIMIT), styles["status--note"])
    if status.error:
        t.append("\n ")
        t.append("✗ ", styles["status--error"] + Style(bold=True))
        t.append(plain(status.error, ERROR_LIMIT), styles["status--error"])
    return t


class StatusLine(Themed, Static):
    """One line of status, a second one for the error of a broken file."""

    DEFAULT_CSS = "StatusLine { height: auto; max-height: 2; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {"status--note", "status--error"}
    last_text: Text = Text()
    _status: Status | None = None

    def show(self, status: Status) -> None:
        """Show ``status`` (nothing to do when it is the one shown: a redraw costs a layout pass)."""
        if status == self._status:
            return
        self._status = status
        self.last_text = status_text(status, self.component_styles())
        self.update(self.last_text)

    def restyle(self) -> None:
        if self._status is not None:
            status, self._status = self._status, None
            self.show(status)
