"""The board's screen: a title bar, the column titles, the table of sessions, a legend and the keys.

It is drawn from the app's ``BoardState`` (``show``) and changes it only through the app: the keys move the
selection, switch the order, open the selected session in the inspector (Enter) or quit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static
from tokenbox.tui.board.state import BoardState
from tokenbox.tui.board.table import BoardTable, Columns, header
from tokenbox.tui.footer import KeysFooter
from tokenbox.tui.redraw import show_text
from tokenbox.tui.topbar import TopBar

if TYPE_CHECKING:
    from tokenbox.tui.board.app import BoardApp

LEGEND = ("room: to auto-compact ┊ or window end · ≈ estimated · sub: sub-agents running · ● active this minute "
          "(Claude Code compacts; other agents' room is to their window's end)")


def duration(seconds: float) -> str:
    """``2h``, ``90m``, ``45s``, ``1d``: ``--since`` as people write it."""
    seconds = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class BoardScreen(Screen[None]):
    """Every recent agent session, one row each (``tokenbox-tui --all``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "open", key_display="Enter", tooltip="Open the selected session in the inspector (Esc there comes back)"),
        Binding("s", "order", "sort", tooltip="Sort by last activity or by pressure (nearest to compaction first)"),
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("pageup", "move(-10)", "page up", show=False),
        Binding("pagedown", "move(10)", "page down", show=False),
        Binding("home", "move_to(0)", "first", show=False),
        Binding("end", "move_to(-1)", "last", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield TopBar(id="board-title")
        yield Static(Text(""), id="board-header")
        yield BoardTable(id="board-table")
        yield Static(Text(LEGEND, end=""), id="board-legend")
        yield KeysFooter(compact=True)

    @property
    def board_app(self) -> BoardApp:
        return self.app  # type: ignore[return-value]

    def on_mount(self) -> None:
        self.query_one(BoardTable).focus()

    def on_screen_resume(self) -> None:
        self.show(self.board_app.board)

    def on_resize(self) -> None:
        self.call_after_refresh(lambda: self.show(self.board_app.board))

    def show(self, state: BoardState) -> None:
        """Draw ``state``."""
        if not self.is_attached:
            return
        count = len(state.shown)
        fields = ["tokenbox", "listing agents' sessions…" if not state.listed else f"{count} session{'s' if count != 1 else ''}",
                  f"active in the last {duration(state.since)}", f"by {state.order.value}"]
        if state.listed and state.busy:
            fields.append("reading…")
        self.query_one(TopBar).show(fields, None, 1)
        table = self.query_one(BoardTable)
        width = table.scrollable_content_region.width or self.size.width or 80
        show_text(self.query_one("#board-header", Static), header(Columns.fit(width), state), layout=False)
        if state.shown or not state.listed:
            table.show(state)
        else:
            table.set_lines([Text(line, no_wrap=True, end="") for line in self.empty_message(state)])

    def empty_message(self, state: BoardState) -> list[str]:
        return [
            f"No agent session changed in the last {duration(state.since)}.",
            "",
            f"tokenbox looked in {state.places} place{'s' if state.places != 1 else ''} that exist"
            + (f" and skipped {state.skipped} folder{'s' if state.skipped != 1 else ''}" if state.skipped else "")
            + ": `tokenbox doctor` lists every place and why a folder was skipped.",
            "Sessions appear here as soon as an agent writes; --since widens the window.",
        ]

    def action_open(self) -> None:
        row = self.board_app.board.selected_row
        if row is not None:
            self.board_app.open_session(row)

    def action_order(self) -> None:
        app = self.board_app
        app.board = app.board.reordered()

    def action_move(self, delta: int) -> None:
        app = self.board_app
        app.board = app.board.moved(delta)

    def action_move_to(self, index: int) -> None:
        app = self.board_app
        app.board = app.board.moved_to(index)
