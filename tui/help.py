"""The help screen: every key, what the screen shows, and what the colours mean."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from tokenbox.tui.keys import KEYS

ABOUT = """\
The inspector follows the session file and re-plans it on every change; it never writes the file.
Gauge: usage of max_ctx after the shown step — green below 75%, yellow below 90%, red above;
  the bar shows each section's share, joins (separators), reserve_out, headroom and free space;
  ≈ marks numbers from an approximate tokenizer.
Sections: tokens before → after, a bar scaled to the available budget (█ kept, ░ trimmed,
  ┄ expansion reported by grow), ◆ critical, ◀ the section changed by the shown step.
Trace: step 0 is untrimmed; stepping moves the gauge, the bars and the detail together.
Detail: the section's text after the shown step; ✂ marks text that was cut.
A broken file keeps the last good plan on screen with the error in the status line.
ctrl+p opens the command palette."""


def help_text() -> Text:
    t = Text(end="")
    t.append("tokenbox-tui — keys\n\n", Style(bold=True))
    for key in KEYS:
        t.append(f"  {key.shown:<7}", Style(bold=True, color="#61afef"))
        t.append(f"{key.help}\n")
    t.append("  Esc    ", Style(bold=True, color="#61afef"))
    t.append("Leave the detail / close this help\n\n")
    t.append(ABOUT)
    return t


class HelpScreen(ModalScreen[None]):
    """Modal help; any of Esc, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close help"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100; max-width: 95%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
