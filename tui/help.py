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
from tokenbox.tui.styles import PLAIN, Styles, styles_of
from tokenbox.tui.view import thresholds

ABOUT = """\
The inspector follows the session file and re-plans it on every change; it never writes the file.
Gauge: usage of max_ctx after the shown step — green below {0}%, yellow below {1}%, red from there
  on or when the layout at the shown step is over budget; the bar shows each section's share,
  joins (separators), reserve_out, headroom and free space; ≈ marks numbers from an approximate
  tokenizer (or a turn still pending). Caches: prefix/context hit, miss or none (no earlier turn).
Sections: tokens before → after, a bar where a full bar is the largest part (█ kept, ░ trimmed,
  ┄ allotment: room the layout grants beyond the text), ◆ critical, ◀ the section changed by the shown step.
Trace: step 0 is untrimmed; Δ is the deficit still to trim after a step ("fits" when none);
  stepping moves the gauge, the bars and the detail together and selects the section it changed.
Detail: the section's text after the shown step; ✂ marks text that was cut.
A broken file keeps the last good plan on screen with the error in the status line.
ctrl+p opens the command palette; Tab moves the focus; q or ctrl+q quits."""


def help_text(styles: Styles = PLAIN) -> Text:
    """The help text; keys in the ``help--key`` style."""
    key_style = styles["help--key"] + Style(bold=True)
    t = Text(end="")
    t.append("tokenbox-tui — keys\n\n", Style(bold=True))
    for key in KEYS:
        t.append(f"  {key.shown:<7}", key_style)
        t.append(f"{key.help}\n")
    t.append("  Esc    ", key_style)
    t.append("Leave the detail / close this help\n\n")
    t.append(ABOUT.format(*thresholds()))
    return t


class HelpScreen(ModalScreen[None]):
    """Modal help; any of Esc, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close help"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"help--key"}
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

    def on_mount(self) -> None:
        self.restyle()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.restyle())

    def restyle(self) -> None:
        """The text again with the current theme's key style (a theme can be picked while help is open)."""
        self.query_one("#help-text", Static).update(help_text(styles_of(self, self.COMPONENT_CLASSES)[0]))

    def action_close(self) -> None:
        self.dismiss(None)
