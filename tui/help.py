"""The help screen: every key, what the screen shows, and what the colours mean."""

from __future__ import annotations

import io
from functools import lru_cache
from typing import ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.tui.keys import KEYS
from tokenbox.tui.styles import PLAIN, Styles, styles_of
from tokenbox.tui.textual_seams import SettledModal
from tokenbox.tui.view import Levels

# the legend: a term and its paragraph (Rich wraps each paragraph at words, under the paragraph's start)
INTRO = "The inspector follows the session file and re-plans it on every change; it never writes the file."
LEGEND: tuple[tuple[str, str], ...] = (
    ("Gauge", "Usage of max_ctx after the shown step: green below {0}%, yellow below {1}%, red from there on or "
              "when the layout at the shown step is over budget. The bar shows each section's share, joins "
              "(separators), reserve_out, headroom and free space; ≈ marks numbers from an approximate tokenizer "
              "(or a turn still pending)."),
    ("Caches", "prefix hit: the cached prefix is the same as the earlier turn's; miss: it changed, a provider "
               "cache break (✗) after the first turn, cold on the first; context reused, rebuilt or skipped "
               "(heartbeat/delegation); none: the session has no such section."),
    ("Sections", "Tokens before → after, a bar where a full bar is the largest part (█ kept, ░ trimmed, ┄ allotment: "
                 "room the layout grants beyond the text), ◆ critical, ◀ the section changed by the shown step."),
    ("Trace", "Step 0 is untrimmed; Δ is the deficit still to trim after a step (\"fits\" when none); stepping moves "
              "the gauge, the bars and the detail together and selects the section it changed."),
    ("Detail", "The section's text after the shown step; ✂ marks text that was cut."),
    ("Timeline", "One column per turn of a log (per request of an agent's session: rec, the context its provider "
                 "recorded; file, the part the file holds): ▲ the one shown, × a prompt-cache break, ! one that "
                 "cannot be planned within the budget (its critical parts alone are over it), ○ a sub-agent's."),
    ("Agents", "A transcript, rollout, chat, capture or request body is shown as the request it was: its parts "
               "(message, tool call, tool result, thinking, image, the hidden part the file does not hold) with "
               "their tokens and share, the context by category as Claude Code's /context groups it (≈: "
               "calibrated estimates that add up to the recorded context), the auto-compact threshold (┃) with "
               "the room before it and a forecast, every compaction so far, and the cost from the offline price "
               "table (its date shown; override prices in the config file). a lists the threads (the main one "
               "and each sub-agent), w every warning. + and - pack the request into a what-if window: its Token "
               "Box plan, with the trim trace, steps and policy."),
    ("Errors", "A broken file keeps the last good plan on screen with the error in the status line."),
    ("More", "ctrl+p opens the command palette; Tab moves the focus; q or ctrl+q quits."),
)


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    return grid


def help_text(styles: Styles = PLAIN, levels: Levels = DEFAULT_WARN_LEVELS) -> Group:
    """The help: every key and the legend, in two columns whose text wraps under itself; keys and
    terms in the ``help--key`` style."""
    key_style = styles["help--key"] + Style(bold=True)
    keys = _grid()
    for key in KEYS:
        if key.listed:
            keys.add_row(Text(f" {key.shown}", key_style), Text(key.help))
    keys.add_row(Text(" Esc", key_style), Text("Leave the detail / close this help"))
    legend = _grid()
    for term, paragraph in LEGEND:
        legend.add_row(Text(term, key_style), Text(paragraph.format(*levels)))
    return Group(Text("tokenbox-tui — keys", Style(bold=True)), Text(INTRO), Text(""), keys, Text(""), legend)


class RenderedOnce:
    """``renderable`` (the help's tables) rendered once per width it is drawn at, its segments kept and given
    again: Textual renders a widget's content to measure its height and again to draw it, and rich lays
    a table out anew each time (every cell measured and wrapped) — most of what ``?`` cost."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._segments: dict[tuple, list[Segment]] = {}
        self._measures: dict[int, Measurement] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # what the help's layout reads of the options (the height too: a renderable may fill it)
        key = (options.max_width, options.height, options.justify, options.overflow, options.no_wrap)
        segments = self._segments.get(key)
        if segments is None:
            segments = self._segments[key] = list(console.render(self.renderable, options))
        return segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        measured = self._measures.get(options.max_width)
        if measured is None:
            measured = self._measures[options.max_width] = Measurement.get(console, options, self.renderable)
        return measured


@lru_cache(maxsize=4)  # a theme's key style and the warning levels: one help per app, a few per theme switch
def _help_once(key_style: Style, levels: Levels) -> RenderedOnce:
    """The help in the key style ``key_style``, built once and laid out once per width (``RenderedOnce``)."""
    return RenderedOnce(help_text(Styles({"help--key": key_style}), levels))


def help_plain(width: int = 100, levels: Levels = DEFAULT_WARN_LEVELS) -> str:
    """The help as plain text at ``width`` columns (what a test or a pipe reads)."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(help_text(levels=levels))
    return console.export_text()


class HelpScreen(SettledModal[None]):
    """Modal help; any of Esc, q or ? closes it (pushed without laying out the screen behind it again)."""

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

    def __init__(self, levels: Levels = DEFAULT_WARN_LEVELS) -> None:
        super().__init__()
        self.levels = levels  # the warning levels the legend names

    def compose(self) -> ComposeResult:
        # the screen's styles are in place when it composes: the text is made once, in the theme's key style
        # (an unstyled text made here and replaced on mount was built and laid out twice)
        with VerticalScroll():
            yield Static(self._help(), id="help-text")

    def on_mount(self) -> None:
        self.restyle()  # in case the key style was not in place at compose
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.restyle())

    def _help(self) -> RenderedOnce:
        return _help_once(styles_of(self, self.COMPONENT_CLASSES)[0]["help--key"], self.levels)

    def restyle(self) -> None:
        """The text again with the current theme's key style (a theme can be picked while help is open);
        nothing is done when the style has not changed."""
        text = self.query_one("#help-text", Static)
        help_now = self._help()
        if text.content is not help_now:
            text.update(help_now)

    def action_close(self) -> None:
        self.dismiss(None)
