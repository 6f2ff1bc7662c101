"""Key ``w``: every warning of the plan shown, whole (the status line shows the first, cut to its width)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.textual_seams import SettledModal


def warnings_text(warnings: Sequence[str], name: str) -> Text:
    """Every warning, numbered, each whole (escaped: a warning quotes the file)."""
    t = Text(end="")
    t.append(f"Warnings — {plain(name, FIELD_LIMIT)}", "bold")
    t.append("\n")
    if not warnings:
        t.append("\nno warnings for the plan shown", "dim")
        return t
    for number, warning in enumerate(warnings, start=1):
        t.append("\n")
        t.append(f"{number}. ", "bold")
        t.append(plain(warning))
    return t


class WarningsScreen(SettledModal[None]):
    """Every warning, scrolled when long; Esc, ``w`` or ``q`` closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,w,q", "close", "Close")]
    DEFAULT_CSS = """
    WarningsScreen { align: center middle; }
    WarningsScreen > VerticalScroll {
        width: 110; max-width: 95%; height: auto; max-height: 85%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, warnings: Sequence[str], name: str) -> None:
        super().__init__()
        self.warnings = tuple(warnings)
        self.file_name = name

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(warnings_text(self.warnings, self.file_name), id="warnings-text")

    def action_close(self) -> None:
        self.dismiss(None)
