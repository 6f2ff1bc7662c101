"""``tokenbox-tui --all``: the board of every recent agent session, over the inspector.

``BoardApp`` is the inspector (``TokenboxApp``) started with no file, and the board's screen pushed over
it. Enter on a row makes the inspector follow that session (``follow_file``) and takes the board away;
Esc in the inspector brings it back, the same session selected. The board's state is one frozen
``BoardState`` (``board``); the worker (``feed.Feed``, a thread) publishes rows, the watcher (``watch``,
another thread) hands it the paths that changed, a one-second tick moves the clock (idle sessions fade
out after ``since``). The clock is injected (``clock``): snapshots and tests draw a fixed time. The first
looks may come from a process the console entry forked (``first_looks``: ``tui/board/firstlooks.py``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.core.planning.engine import Engine
from tokenbox.core.sources.discovery import SOURCES, Agent, Scan, scan
from tokenbox.tui.app import TokenboxApp
from tokenbox.tui.board.feed import Feed, Published
from tokenbox.tui.board.firstlooks import FirstLooks
from tokenbox.tui.board.screen import BoardScreen
from tokenbox.tui.board.sessions import Row, Sessions, board_buffer
from tokenbox.tui.board.state import DEFAULT_SINCE, BoardState
from tokenbox.tui.board.watch import watch_places
from tokenbox.tui.view import Levels

TICK_SECONDS = 1.0  # how often the clock is read while the board is on screen
CLOCK_STEP = 10  # seconds: the board's clock moves in such steps ("last" reads now, 10s, 20s, … then minutes)
BOARD = "board"  # the board screen's name (installed: it keeps its state under the inspector)


class RowsPublished(Message):
    """The worker's new rows."""

    def __init__(self, published: Published) -> None:
        super().__init__()
        self.published = published


class BoardApp(TokenboxApp):
    """The inspector with the board of every recent agent session over it."""

    BINDINGS: ClassVar[list[BindingType]] = [*TokenboxApp.BINDINGS,
                Binding("escape", "board", "board", key_display="Esc", tooltip="Back to the board of every session")]

    board: var[BoardState] = var(BoardState, init=False)
    """Everything the board shows; replaced, never changed in place."""

    def __init__(
        self,
        *,
        since: float = DEFAULT_SINCE,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        sources: tuple[Agent, ...] = SOURCES,
        scanner: Callable[..., Scan] = scan,
        engine_factory: Callable[[], Engine] = Engine,
        tick: float | None = TICK_SECONDS,
        watch: bool = True,
        force_polling: bool | None = None,
        warn_levels: Levels = DEFAULT_WARN_LEVELS,
        first_looks: FirstLooks | None = None,
        **settings,
    ) -> None:
        super().__init__(os.getcwd(), follow=False, watch=watch, display_name="board", warn_levels=warn_levels,
                         **settings)
        env = os.environ if environ is None else environ
        self.clock = clock
        self.tick = tick
        self.force_polling = force_polling
        self.sessions = Sessions(env, since, clock, sources=sources, scanner=scanner, engine_factory=engine_factory,
                                 buffer=board_buffer(env))
        self.first_looks = first_looks  # the first looks the console entry forked (``tui/board/firstlooks.py``)
        self.feed = Feed(self.sessions, lambda published: self.post_message(RowsPublished(published)),
                         first_looks=self.first_looks)
        self._board_stop = threading.Event()
        self.board_screen = BoardScreen()
        self.published = 0  # how many times the worker published rows (tests wait on it)
        self.set_reactive(BoardApp.board, BoardState(now=self.board_clock(), since=since, warn_levels=warn_levels))

    def on_mount(self) -> None:
        super().on_mount()
        self.install_screen(self.board_screen, BOARD)
        self.push_screen(BOARD)
        self._run_feed()  # the watcher starts once the first listing says where to watch
        if self.tick:
            self.set_interval(self.tick, self._tick)

    def on_unmount(self) -> None:
        super().on_unmount()
        self._board_stop.set()
        self.feed.wake()
        if self.first_looks is not None:
            self.first_looks.close()  # a worker still waiting for it stops waiting; the child is reaped

    @work(thread=True, group="board", exit_on_error=False)
    def _run_feed(self) -> None:
        self.feed.run(self._board_stop)

    @work(thread=True, group="board-watch", exit_on_error=False)
    def _watch_places(self) -> None:
        watch_places(self.feed.places, self._board_stop, self.feed.changes, force_polling=self.force_polling)

    def board_clock(self) -> float:
        """The board's time: the clock in whole ``CLOCK_STEP``s (the rows' "last" and their fading move in
        such steps, so a tick between two of them changes nothing and draws nothing)."""
        now = self.clock()
        return now - now % CLOCK_STEP

    def _tick(self) -> None:
        if self.screen is self.board_screen:
            self.board = self.board.at(self.board_clock())

    def on_rows_published(self, message: RowsPublished) -> None:
        published = message.published
        self.published += 1
        if self.published == 1 and self.watching:
            self._watch_places()
        self.board = self.board.with_rows(published.rows, busy=published.busy, places=published.places,
                                          skipped=published.skipped).at(self.board_clock())

    def watch_board(self, old: BoardState, new: BoardState) -> None:
        if self.screen is self.board_screen:
            self.board_screen.show(new)

    @property
    def on_board(self) -> bool:
        """Whether the board is the screen shown."""
        return self.screen is self.board_screen

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """On the board only quitting and the palette apply of the app's keys (the inspector's wait beneath)."""
        if self.on_board:
            return action in ("quit", "command_palette")
        return super().check_action(action, parameters)

    def open_session(self, row: Row) -> None:
        """Follow ``row``'s session in the inspector (the one already followed stays as it is) and show it."""
        if not self.following or row.key != self.path:
            self.follow_file(row.key, "board", display_name=_display_name(row))
        if self.on_board:
            self.pop_screen()

    def action_board(self) -> None:
        """Back to the board (Esc in the inspector); the inspector's toast goes with it (it was about the
        session left, and stayed over the board)."""
        if not self.on_board:
            self.clear_notifications()
            self.push_screen(BOARD)


def _display_name(row: Row) -> str:
    """The inspector's name for a session: its file (or database session) and the agent."""
    return f"{os.path.basename(row.key.rstrip('/'))} ({row.label})"
