"""The status line: file, last reload time, what changed, plan time, the current file's error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.styles import PLAIN, Styles, Themed

ERROR_LIMIT = 2000  # the line is cropped on screen anyway; the detail banner has the full error
MIN_NAME = 12  # the shortest a file name gets to leave room for the reload time


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


def shortened(name: str, room: int) -> str:
    """``name`` in at most ``room`` characters: its middle replaced by "…", so that the start and the
    end (the extension, a session id's tail) stay readable."""
    if len(name) <= room:
        return name
    tail = (room - 1) // 2
    return name[: room - 1 - tail] + "…" + name[len(name) - tail :]


def status_text(status: Status, styles: Styles = PLAIN, width: int | None = None) -> Text:
    """The status line (and the error line of a broken file), coloured with ``styles``; within ``width``
    cells a long file name gives way (cut in its middle) so that the reload time stays whole."""
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(" ")
    name = plain(status.file, FIELD_LIMIT)
    if width is not None and status.reloaded:
        clock = len("  reloaded ") + len(status.reloaded)
        name = shortened(name, max(MIN_NAME, width - 1 - clock))
    t.append(name, "bold")
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


class StatusLine(Themed, FittedStatic):
    """One line of status, a second one for the error of a broken file."""

    DEFAULT_CSS = "StatusLine { height: auto; max-height: 2; }"
    COMPONENT_CLASSES: ClassVar[set[str]] = {"status--note", "status--error"}
    FALLBACK_WIDTH = 80
    _status: Status | None = None

    def show(self, status: Status) -> None:
        """Show ``status`` (nothing to do when it is the one shown: a redraw costs a layout pass;
        the file name is shortened for the width it is drawn at)."""
        if status == self._status:
            return
        self._status = status
        styles = self.component_styles()
        self.show_fitted(lambda width: status_text(status, styles, width))

    def restyle(self) -> None:
        if self._status is not None:
            status, self._status = self._status, None
            self.show(status)
