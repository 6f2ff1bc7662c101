"""``tokenbox-tui``: the live inspector app beside a running agent.

The app's view state is one frozen ``ViewState`` (``tui/state.py``): flags, keys, resizes and finished
plans replace it with what a pure transition returns, and ``watch_state`` redraws only the parts of the
screen whose inputs (``PARTS``: what each part reads of the state) changed. A thread worker follows the file (``watcher.follow``), another loads and plans it
(``planner.Planner``) and posts the finished ``Outcome``; the UI thread only draws. A broken file
keeps the last good plan on screen.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from platformdirs import user_downloads_path
from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.notifications import Notify, SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import get_current_worker
from tokenbox.core import Plan
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS, warn_levels
from tokenbox.core.model.errors import ConfigError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.plan import HeadlineKind
from tokenbox.core.model.textsafe import printable
from tokenbox.core.planning.config import WHAT_IF_STEP_PERCENT, config_path
from tokenbox.tui import firstplan, watcher
from tokenbox.tui.agentview import glance_fields, part_of, topbar_fields
from tokenbox.tui.alerts import alerts
from tokenbox.tui.breakdown import BreakdownTitle, BreakdownView, is_imported
from tokenbox.tui.claude import DiscoveryError, discover
from tokenbox.tui.cli import Options, UsageError, fail, parse_args, sample_path, usage_message
from tokenbox.tui.detail import DetailView
from tokenbox.tui.firstplan import FirstPlan
from tokenbox.tui.footer import KeysFooter
from tokenbox.tui.gauge import Gauge, megabytes
from tokenbox.tui.glance import Glance, glance
from tokenbox.tui.help import HelpScreen
from tokenbox.tui.keys import KEYS, TURN_GROUP, bindings
from tokenbox.tui.messages import ConfigChanged, FileChanged, GlanceComputed, PlanComputed, TimelineFilled, TokenizersFound
from tokenbox.tui.planner import AgentFacts, Outcome, Planner, PlanRequest, TurnPoint
from tokenbox.tui.redraw import show_text
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.sections import SectionBars, SectionHeader
from tokenbox.tui.state import ViewState, inputs_differ
from tokenbox.tui.status import Status, StatusLine
from tokenbox.tui.textual_seams import TerminalGone, called_by_textual, driver_class
from tokenbox.tui.timeline import Timeline
from tokenbox.tui.topbar import TopBar
from tokenbox.tui.trace import TraceView
from tokenbox.tui.usage import UsageTimeline, has_recorded
from tokenbox.tui.view import Levels, View, approx_mark, fmt

if TYPE_CHECKING:  # the board's modules are imported for --all only
    from tokenbox.tui.board.firstlooks import FirstLooks

TOAST_LIMIT = 600  # characters of one toast line
TOAST_SECONDS = {"information": 3.0, "warning": 4.0, "error": 5.0}  # short lives: the status line keeps the state
WORKING_AFTER = 0.5  # seconds: a plan running longer says so in the status line
STALE_AFTER = 0.1  # seconds: a reload running longer marks the plan on screen stale (a quicker one just replaces it)
NARROW = 120  # columns: below this the sidebar narrows
WIDE = 180  # columns: from this the sidebar widens (longer trace lines and breakdown labels)
# A burst of file events coalesces: a reload starts at least RELOAD_COST_SHARE times the last reload's own
# time (from its start to its plan drawn) after the one before, so reloads take a third of the time at most
# however fast an agent writes; between RELOAD_MIN_INTERVAL and RELOAD_INTERVAL seconds (the lines an agent
# writes for one request, ms apart, are on screen a reload's time after the first, not a fixed 0.2 s)
RELOAD_INTERVAL = 0.2  # seconds: the longest a file event waits behind the reload before it
RELOAD_MIN_INTERVAL = 0.05  # the shortest
RELOAD_COST_SHARE = 3
# seconds after the first plan before the tokenizer plug-ins are looked up: not while the first appended
# request is being planned (both hold the interpreter), nor long after a user may cycle the tokenizers
TOKENIZERS_AFTER = 1.0
FIRST_FRAME_WRITTEN = 0.2  # seconds after the first outcome is drawn before a followed folder's watch is set up
ADOPT_AFTER = 2.0  # seconds the worker waits for a handed-over first plan to be drawn before its own load
# seconds from that draw to the load: the BPE table's load holds the GIL ~100 ms at a time, and the
# terminal's writer thread must first write the frame out (the plan is on screen, not only composed)
ADOPT_SETTLE = 0.15
FROZEN_ENV = "TOKENBOX_TUI_FROZEN"  # set to 1: no clock or timings on screen (tests, demos)
HELP = "help"  # the name the help screen is installed under


class TokenboxApp(App[None]):
    """Follows one session file and shows its plan."""

    CSS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app.tcss")  # absolute: subclasses elsewhere work
    TITLE = "tokenbox"
    BINDINGS = bindings()
    ENABLE_COMMAND_PALETTE = True

    state: var[ViewState] = var(ViewState, init=False)
    """Everything the screen shows (``tui/state.py``); replaced, never changed in place."""

    def __init__(
        self,
        path: str,
        *,
        budget: int | None = None,
        tokenizer: str | None = None,
        trimming: str | None = None,
        frozen: bool | None = None,
        watch: bool = True,
        planner: Planner | None = None,
        planner_factory: Callable[[], Planner] = Planner,
        display_name: str | None = None,
        toast_seconds: float | None = None,
        reserve_out: int | None = None,
        warn_levels: Levels = DEFAULT_WARN_LEVELS,
        first_plan: FirstPlan | None = None,
        follow: bool = True,
    ) -> None:
        super().__init__(driver_class=driver_class())
        self.path = os.path.abspath(path)
        self.display_name = display_name or os.path.basename(self.path)
        self.frozen = os.environ.get(FROZEN_ENV, "") not in ("", "0") if frozen is None else frozen
        self.watching = watch
        self.toast_seconds = toast_seconds
        self.set_reactive(TokenboxApp.state, ViewState(budget=budget, reserve_out=reserve_out, tokenizer=tokenizer,
                                                       trimming=trimming, warn_levels=warn_levels))
        # the worker machinery (not view state): the planner (a new one per file followed), request
        # numbers, the request in flight and the one waiting, the file watcher's stop flag, reload coalescing
        self._planner_factory = planner_factory
        self._planner = planner or planner_factory()
        self._view_memo: tuple[Plan, int, Levels, View] | None = None
        self._last_view: View | None = None  # the view drawn last: it lends its figures to the next (``View.at``)
        self._seq = 0
        self._handled_seq = 0
        self._in_flight: PlanRequest | None = None  # the request being planned (never cancelled)
        self._follow_up: PlanRequest | None = None  # at most one follow-up; a newer request replaces it
        self._dirty = True  # the file must be read again on the next request
        self._stop = threading.Event()
        self._first_drawn = threading.Event()  # the session's first outcome on screen (a folder's watch opens then)
        self._config_stop = threading.Event()  # the config file's watcher (it outlives a session switch)
        self._reload_timer: Timer | None = None
        self._last_reload = float("-inf")
        self._timed_reload: tuple[int, float] | None = None  # the last reload's request number and start
        self._reload_interval = RELOAD_INTERVAL  # until a reload has been timed
        self._last_change = ""
        self._main_screen: Screen | None = None  # the screen composed by ``compose`` (set on mount)
        # the toast shown, when it is about a state of the view: whether that state still holds (``_say``)
        self._toast_holds: Callable[[ViewState], bool] | None = None
        # the first request's outcome, planned by a forked process (``tui/firstplan.py``); taken once,
        # closed when the app ends (the child never outlives it)
        self._first_plan = first_plan
        self._tokenizers_pending = True  # the tokenizer plug-ins are looked up after the first plan (``_look_up_tokenizers``)
        self._following = follow  # False: nothing is followed until ``follow_file`` (the board picks a session)
        self._help_made_for: tuple[Levels, str] | None = None  # the installed help's warning levels and theme

    # ------------------------------------------------------------------ the state, read-only

    @property
    def budget_flag(self) -> int | None:
        """The ``--budget`` every request carries (None: the session's own max_ctx)."""
        return self.state.budget

    @property
    def plan(self) -> Plan | None:
        """The plan on screen (the last good one)."""
        return self.state.plan

    @property
    def outcome(self) -> Outcome | None:
        """The newest outcome accepted (it may carry only an error)."""
        return self.state.outcome

    @property
    def step(self) -> int:
        """The trim step shown."""
        return self.state.step

    @property
    def selected(self) -> int:
        """Index of the selected section."""
        return self.state.selected

    @property
    def file_error(self) -> str | None:
        """Why the file cannot be read now (None when it can)."""
        return self.state.file_error

    @property
    def waiting(self) -> bool:
        """Whether the file has no complete turn yet."""
        return self.state.waiting

    @property
    def settings_error(self) -> str | None:
        """Why the settings asked for cannot be planned (None when they can)."""
        return self.state.settings_error

    @property
    def timeline(self) -> tuple[TurnPoint, ...]:
        """Every turn of a log or transcript."""
        return self.state.timeline

    @property
    def turn_count(self) -> int:
        """How many turns the file has."""
        return self.state.turn_count

    @property
    def plans_shown(self) -> int:
        """How many plans have been put on screen."""
        return self.state.plans_shown

    def current_view(self) -> View | None:
        """The plan at the step shown."""
        return self.state.view()

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        with Horizontal(id="body"):
            with Vertical(id="sidebar"):
                yield Gauge(id="gauge")
                yield Timeline(id="timeline")
                yield UsageTimeline(id="usage")
                yield Static(Text("Trim trace"), id="trace-title", classes="title")
                yield TraceView(id="trace")
                yield BreakdownTitle(Text("Breakdown"), id="breakdown-title", classes="title")
                yield BreakdownView(id="breakdown")
            with Vertical(id="main"):
                header = SectionHeader(id="section-header")
                yield header
                bars = SectionBars(id="sections")
                bars.header = header
                yield bars
                yield Static(Text("Detail"), id="detail-title", classes="title")
                yield DetailView(id="detail")
        yield StatusLine(id="status")
        yield KeysFooter(compact=True, possible=self.BINDINGS)

    def on_mount(self) -> None:
        self._main_screen = self.screen
        self.query_one("#timeline", Timeline).display = False
        self.query_one(SectionBars).focus()
        state = replace(self.state, width=self.size.width)
        if self._following:
            state = state.with_glance(glance(self.path, os.environ))  # a big file's newest request, in the first frame
        self.set_reactive(TokenboxApp.state, state)  # drawn just below
        self._draw(None, self.state)
        if self._following:
            self._plan_first("start")
        if self.watching:
            if self._following:
                self._watch()
            self._watch_config()

    def on_resize(self, event: Resize) -> None:
        # the event's size: this handler runs before Textual's own, which updates ``self.size`` later (the
        # sidebar kept the width before the resize: shown at 80 columns after 140, hidden at 140 after 80);
        # every part again after the layout settles (fitted texts follow their widgets' widths)
        self.set_reactive(TokenboxApp.state, replace(self.state, width=event.size.width))
        self.call_after_refresh(self._redraw_all)

    def on_unmount(self) -> None:
        self._stop.set()
        self._config_stop.set()
        if self._first_plan is not None:
            self._first_plan.close()  # a worker waiting for it stops waiting; the child is reaped

    # ------------------------------------------------------------------ workers

    @property
    def following(self) -> bool:
        """Whether a file is followed (``False`` until the board opens one in a ``--all`` app)."""
        return self._following

    @property
    def planner(self) -> Planner:
        """The planner that loads and plans this app's file."""
        return self._planner

    @property
    def busy(self) -> bool:
        """Whether a plan request is running or queued (tests wait for ``not busy``)."""
        return self._in_flight is not None or self._follow_up is not None

    def request_plan(self, reason: str, *, reload: bool = False) -> None:
        """Ask for a new plan with the current settings.

        One request runs at a time and is never cancelled (a finished load is always shown); while it
        runs, the newest request waits as the one follow-up, replacing an older waiting one.
        """
        self._seq += 1
        if reload:
            self._dirty = True
        request = self.state.request(self.path, reload=self._dirty, reason=reason, seq=self._seq)
        if self._in_flight is not None:
            self._follow_up = request
            self._track_progress()
            return
        self._start(request)

    def _start(self, request: PlanRequest) -> None:
        self._in_flight = request
        self._plan_worker(request)
        # Not marked stale yet: a reload that is done within a few frames just replaces the plan, and
        # redrawing the status line for it would only take the UI thread (and the GIL) from the planner
        # and the next frame from the new plan. One timer: stale after STALE_AFTER, working after WORKING_AFTER.
        self._track_progress(working=False, mark_stale=False)
        self.set_timer(STALE_AFTER, lambda: self._still_running(request))

    def _still_running(self, request: PlanRequest) -> None:
        if self._in_flight is request:
            self._track_progress()
            self.set_timer(WORKING_AFTER - STALE_AFTER, lambda: self._still_working(request))

    def _still_working(self, request: PlanRequest) -> None:
        if self._in_flight is request:
            self._track_progress(working=True)

    def _track_progress(self, working: bool | None = None, *, mark_stale: bool = True) -> None:
        """The planner's progress into the state: working (slow), and stale (the file is read again;
        with ``mark_stale`` False a plan not marked stale yet stays unmarked)."""
        state = self.state
        working = state.working if working is None else working
        stale = self._dirty and self.busy and (mark_stale or state.stale)
        if (working, stale) != (state.working, state.stale):
            self.state = replace(state, working=working, stale=stale)

    @work(thread=True, group="plan", exit_on_error=False)
    def _plan_worker(self, request: PlanRequest) -> None:
        planner = self._planner
        first = self._first_plan
        handed = first.take(request) if first is not None else None  # the first request only: None after
        if self._stop.is_set():
            return  # the app has ended (and closed the first plan): nothing to plan for
        outcome = handed or planner.run(request)
        drawn = threading.Event()
        self.post_message(PlanComputed(outcome, drawn))
        if first is not None and handed is not None:
            self._adopt(first, request)
        if outcome.plan is not None and not outcome.timeline_complete:
            # recorded usage is on screen already; the estimates of uncached turns follow, newest first,
            # shown as they come; a newer request (an append, a key) interrupts the fill and takes it up
            # (once the plan is on screen: a fill that took up the interpreter at once slowed the screen's
            # update of every append by as much as the update itself)
            filled = planner.fill_timeline(outcome, progress=lambda partial: self.post_message(TimelineFilled(partial)),
                                           after=drawn)
            if filled is not None:
                self.post_message(TimelineFilled(filled))

    def _adopt(self, first: FirstPlan, request: PlanRequest) -> None:
        """After the handed-over first plan is drawn, build this process's engine, tokenizer and file
        state (the next request is then as quick as ever); a file changed since the child read it is
        reloaded. Runs in the plan worker: a request made meanwhile waits for the planner's lock."""
        drawn = threading.Event()
        self.call_after_refresh(drawn.set)  # after PlanComputed is handled and the screen painted
        deadline = time.monotonic() + ADOPT_AFTER
        while not drawn.wait(0.05) and not self._stop.is_set() and time.monotonic() < deadline:
            pass
        if self._stop.wait(ADOPT_SETTLE):
            return  # the app has ended: no engine to build
        self._planner.run(request)
        # stamped after the load: a write that lands while the load reads the file is in its outcome, which
        # is not drawn (stamped before it, such a write showed only with the next one, once the watcher had
        # taken it as its starting point)
        if firstplan.stamp(request.path) != first.stamp:
            self.post_message(FileChanged("modified"))

    @work(thread=True, group="tokenizers", exit_on_error=False)
    def _look_up_tokenizers(self) -> None:
        """``TOKENIZERS_AFTER`` the first plan, the tokenizer plug-ins looked up (plans leave them out until
        then: importing importlib.metadata to find them took ≈50 ms of the first plan, and of the request
        appended as the first plan is shown when that plan was handed over), and a plan again if it lists
        fewer tokenizers than there are."""
        if not self._stop.wait(TOKENIZERS_AFTER) and self._planner.look_up_tokenizers():
            self.post_message(TokenizersFound())

    def on_tokenizers_found(self, message: TokenizersFound) -> None:
        self.request_plan("tokenizer plug-ins found")

    @work(thread=True, group="glance", exclusive=True, exit_on_error=False)
    def _glance_again(self, path: str) -> None:
        """The newest request from the file's tail again (it changed while its first read runs)."""
        found = glance(path, os.environ)
        if not get_current_worker().is_cancelled:  # a newer change's glance is on its way
            self.post_message(GlanceComputed(path, found))

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch(self) -> None:
        planner = self._planner

        def changed(what: str) -> None:
            # the timeline's fill stops before its next turn now, not once the reload has made its way
            # through the UI thread to the planner (a past turn of a long chain plans for tens of ms)
            planner.yield_fill()
            self.post_message(FileChanged(what))

        watcher.follow(self.path, self._stop, changed, folder_opened_after=self._first_drawn)

    @work(thread=True, group="watch-config", exit_on_error=False)
    def _watch_config(self) -> None:
        """Follow the config file: a fix (or a new mistake) is planned at once, no restart needed."""
        path = config_path(os.environ)
        watcher.follow(path, self._config_stop, lambda what: self.post_message(ConfigChanged(what)))

    def on_config_changed(self, message: ConfigChanged) -> None:
        if not self._following:
            return  # no file yet: the first plan will read the config as it is then
        self.request_plan(f"config file {message.what}")  # the planner sees the new stamp: a new engine

    def on_file_changed(self, message: FileChanged) -> None:
        """Reload at once, unless a reload started less than ``reload_interval`` ago: then once, later.

        A burst of writes (an agent streaming into the file) costs a share of the time at most (the
        interval follows what the last reload took) and its last state is always shown; a single edit
        is never delayed.
        """
        self._last_change = message.what
        self._dirty = True
        if self.state.glance is not None:  # the first read still runs: the newest request from the tail meanwhile
            self._glance_again(self.path)
        if self._reload_timer is not None:
            return  # a reload is already scheduled: it will read the file as it is then
        wait = self._last_reload + self._reload_interval - time.monotonic()
        if wait <= 0:
            self._reload()
        else:
            self._reload_timer = self.set_timer(wait, self._reload)

    def _reload(self) -> None:
        """Re-read the file now (a file event, or the end of the coalescing interval)."""
        self._reload_timer = None
        self._last_reload = time.monotonic()
        self.request_plan(f"file {self._last_change}", reload=True)
        self._timed_reload = (self._seq, self._last_reload)

    @property
    def reload_interval(self) -> float:
        """Seconds a file event waits, at most, behind the reload before it (see ``RELOAD_COST_SHARE``)."""
        return self._reload_interval

    def _reload_drawn(self, started: float) -> None:
        took = time.monotonic() - started
        self._reload_interval = min(RELOAD_INTERVAL, max(RELOAD_MIN_INTERVAL, RELOAD_COST_SHARE * took))

    def accepts(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` belongs on this screen (a plan of a file followed before ``follow_file``)."""
        return outcome.request.path == self.path

    def follow_file(self, path: str, reason: str, display_name: str | None = None) -> None:
        """Follow another file from now on: a new planner (the constructor's ``planner_factory``), the
        watcher on the new file, nothing of the old one on screen (the choices made with keys stay)."""
        self.path = os.path.abspath(path)
        self.display_name = display_name or os.path.basename(self.path)
        self._planner = self._planner_factory()
        self._stop.set()  # the old file's watcher ends
        self._stop = threading.Event()
        self._first_drawn = threading.Event()
        self._following = True
        self.state = self.state.for_new_session().with_glance(glance(self.path, os.environ))
        self._plan_first(reason)
        if self.watching:
            self._watch()

    def _plan_first(self, reason: str) -> None:
        """The file's first plan: at once, or, when its newest request is shown from the file's tail (a big
        file), once that frame is painted (the whole read would hold the interpreter while it is drawn)."""
        if self.state.glance is None:
            self.request_plan(reason, reload=True)
        else:
            self.call_after_refresh(self.request_plan, reason, reload=True)

    def on_plan_computed(self, message: PlanComputed) -> None:
        try:
            self._plan_computed(message.outcome)
        finally:
            timed = self._timed_reload
            if timed is not None and timed[0] == message.outcome.request.seq:
                self._timed_reload = None
                self.call_after_refresh(self._reload_drawn, timed[1])
            if message.drawn is not None:
                self.call_after_refresh(message.drawn.set)
            if not self._first_drawn.is_set():
                # a moment after the frame is made: Textual's writer thread sends it to the terminal, and a
                # folder's watch set up meanwhile held it back (``watcher.follow``'s ``folder_opened_after``)
                self.call_after_refresh(self.set_timer, FIRST_FRAME_WRITTEN, self._first_drawn.set)
            if self._tokenizers_pending and message.outcome.plan is not None:
                self._tokenizers_pending = False
                self._look_up_tokenizers()

    def _plan_computed(self, outcome: Outcome) -> None:
        request = outcome.request
        if self._in_flight is request:
            self._in_flight = None
            if self._follow_up is not None:
                queued, self._follow_up = self._follow_up, None
                self._start(queued)
        if not self.accepts(outcome) or request.seq < self._handled_seq:
            self._track_progress(working=self.state.working and self.busy)
            return
        self._handled_seq = request.seq
        if request.reload and request.seq == self._seq:
            self._dirty = False
        state = self.state.with_outcome(outcome, None if self.frozen else time.strftime("%H:%M:%S"))
        found, watermark = alerts(state.watermark, outcome.plan, None, state.warn_levels,
                                  rebase=request.reason == "thread")
        # the progress with it: one new state, one draw (not a status-line draw before the plan's)
        self.state = replace(state, watermark=watermark, stale=self._dirty and self.busy and state.stale,
                             working=state.working and self.busy)
        for alert in found:
            self.notify(alert.message, title=alert.title, severity=alert.severity,  # type: ignore[arg-type]
                        timeout=self.toast_seconds or TOAST_SECONDS.get(alert.severity, 4.0), markup=False)

    def on_glance_computed(self, message: GlanceComputed) -> None:
        """A big file's newest request from its tail, while its first read runs."""
        if message.path == self.path:
            self.state = self.state.with_glance(message.glance)

    def on_timeline_filled(self, message: TimelineFilled) -> None:
        """The estimates of every turn, once the newest plan is on screen."""
        self.state = self.state.with_timeline(message.outcome)

    def on_terminal_gone(self, message: TerminalGone) -> None:
        """The terminal vanished without a hang-up signal (``su``, ``setsid``): nothing to draw on, quit."""
        self.exit(return_code=1)

    # ------------------------------------------------------------------ drawing

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast that is always inert: markup never parsed, control characters escaped.

        Textual's toasts pass ESC, C1 and bidi characters through to the terminal even with
        ``markup=False``, and messages quote file names and user values; so every toast of this
        app (and of its subclasses) goes through ``plain`` here. Line breaks are kept.
        """
        self._toast_holds = None  # a new toast: whatever the one before was about is no longer shown
        if markup and called_by_textual():
            # Textual's own notifications (the palette, ctrl+q) are trusted text written with markup;
            # any other caller's text may quote a file name or session text, so it stays inert
            super().notify(message, title=title, severity=severity, timeout=timeout, markup=True)
            return
        text = "\n".join(plain(line, TOAST_LIMIT) for line in str(message).split("\n"))
        super().notify(text, title=plain(str(title), FIELD_LIMIT), severity=severity, timeout=timeout, markup=False)

    def _say(self, text: str, holds: Callable[[ViewState], bool]) -> None:
        """A toast about the state shown (why a key does nothing here), cleared as soon as ``holds`` is false
        for the state (a what-if budget makes the trim keys apply: their toast is moot)."""
        self.notify(text, timeout=self.toast_seconds or 3, markup=False)
        self._toast_holds = holds

    def on_notify(self, event: Notify) -> None:
        """One toast at a time: a newer one replaces the last (stacked toasts covered the table and went
        stale while the status line, the one place of the current state, moved on). Done where Textual
        adds the toast (its ``Notify`` message: this handler runs before ``App``'s own, which adds it), so
        a burst of notifications cannot stack up either."""
        self.clear_notifications()

    def _short(self, text: str) -> str:
        """Errors name the file by its full path (escaped by core when it holds controls); show the name only."""
        shown = plain(self.display_name, FIELD_LIMIT)
        return text.replace(printable(self.path), shown).replace(self.path, shown)

    def _main_screen_ready(self) -> bool:
        """Whether the main screen's widgets are there: after mount, before closing. A help screen over
        them is fine (they are drawn beneath it, so it closes onto the current state). While the app
        shuts down (``is_running`` turns false first) its widgets are being removed: a plan a worker
        finishes then is not drawn (it found no Timeline under load)."""
        return self.is_running and self._main_screen is not None and self._main_screen.is_attached

    def watch_state(self, old: ViewState, new: ViewState) -> None:
        """A new state: redraw what differs from the old one; a toast about a state that no longer holds goes."""
        if self._toast_holds is not None and not self._toast_holds(new):
            self._toast_holds = None
            self.clear_notifications()
        if _applicable(old) != _applicable(new):
            # what check_action answers has changed: the footer's keys may have (it rebuilds only
            # if they did)
            self.refresh_bindings()
        self._draw(old, new)

    def _redraw_all(self) -> None:
        self._draw(None, self.state)

    def _draw(self, old: ViewState | None, new: ViewState) -> None:
        """Redraw the parts whose inputs differ between ``old`` and ``new`` (all of them when ``old`` is None)."""
        if not self._main_screen_ready():
            return  # a state that arrives while the screen is not composed (starting or closing)
        self._view_memo = None  # the view is worked out once per draw, for every part drawn from it
        for read, draw in PARTS:
            if inputs_differ(read, old, new):
                draw(self, *read(new))
        self._refresh_status()

    def _view(self, plan: Plan | None, step: int, levels: Levels) -> View | None:
        """The plan at ``step``, worked out once for every part drawn from it, from the view before it (a
        followed session's next request: the figures of the parts the two share are not worked out again)."""
        if plan is None:
            return None
        memo = self._view_memo
        if memo is not None and memo[0] is plan and memo[1] == step and memo[2] == levels:
            return memo[3]
        view = self._last_view = View.at(plan, step, levels, before=self._last_view)
        self._view_memo = (plan, step, levels, view)
        return view

    def _draw_gauge(self, plan: Plan | None, step: int, levels: Levels, facts: AgentFacts | None, agent: bool,
                    trimming: bool, glance: Glance | None) -> None:
        if plan is None and glance is not None:
            self.query_one(Gauge).show_glance(glance, levels)
            return
        self.query_one(Gauge).show(self._view(plan, step, levels), facts, agent=agent and not trimming)

    def _draw_timelines(self, plan: Plan | None, step: int, levels: Levels, timeline: tuple[TurnPoint, ...],
                        following: bool) -> None:
        """The usage timeline of recorded requests, or the estimated timeline of a log's turns."""
        # the plan alone, not its layout at the step (``View.at``): the fill redraws this part several
        # times a second, and working out every part's state each time grew with the session
        widget, usage = self.query_one(Timeline), self.query_one(UsageTimeline)
        recorded = plan is not None and has_recorded(timeline)
        if plan is not None and recorded:
            usage.show(timeline, plan.session.turn, following, approx_mark(plan), plan.pending)
        usage.display = recorded
        if timeline and plan is not None and not recorded:
            widget.show(timeline, plan.session.turn, following, levels)
        else:
            widget.display = False

    def _draw_sections(self, plan: Plan | None, step: int, levels: Levels, selected: int, agent: bool,
                       trimming: bool) -> None:
        view = self._view(plan, step, levels)
        self.query_one(SectionBars).show(view, selected if view else None, agent=agent, trimmed=trimming)
        # one row, fixed by the stylesheet: no layout pass (a new plan already redraws enough)
        show_text(self.query_one("#detail-title", Static),
                  Text(self._detail_title(view, selected, agent, trimming), end=""), layout=False)

    def _draw_detail(self, plan: Plan | None, step: int, levels: Levels, selected: int, message: tuple | None,
                     as_sent: bool) -> None:
        view = self._view(plan, step, levels)
        self.query_one(DetailView).show(view, selected if view else None, self._detail_message(message), as_sent=as_sent)

    def _draw_topbar(self, plan: Plan | None, step: int, levels: Levels, timeline: bool, following: bool,
                     sidebar_visible: bool, facts: AgentFacts | None, agent: bool, trimming: bool,
                     glance: Glance | None) -> None:
        """The top bar; ``timeline``: whether there is one (the fill's progress does not redraw it)."""
        if plan is None and glance is not None:
            self.query_one(TopBar).show(*glance_fields(glance, None if sidebar_visible else _glance_headline(glance)))
            return
        view = self._view(plan, step, levels)
        if view is not None and agent:
            headline = None if sidebar_visible else _headline(view)
            self.query_one(TopBar).show(*topbar_fields(view, facts, bool(timeline), following, headline, trimming))
            return
        self.query_one(TopBar).show(*self._topbar(view, bool(timeline), following, sidebar_visible))

    def _draw_footer_words(self, agent: bool) -> None:
        """The turn keys' footer label in the session's word: an agent's requests (as the top bar, the
        timeline and the status line count them), a log's turns; relabelled in place, not composed again."""
        self.query_one(KeysFooter).relabel(TURN_GROUP, "request" if agent else TURN_GROUP)

    def _detail_message(self, parts: tuple[str | None, str | None, str | None, int | None] | None) -> str | None:
        """What the detail says while there is no plan to show (None once there is): ``parts`` are the
        waiting note, the file's error, the settings' error and the size of a big file glanced at (``_message``)."""
        if parts is None:
            return None
        waiting, file_error, settings_error, size = parts
        if waiting:
            return (f"{plain(self.display_name)}: {waiting}\n\n"
                    "The file has no complete turn yet "
                    "(the agent writes the prompt first and the reply when it arrives).\n"
                    "Watching the file: the view appears as soon as the first turn is complete.")
        if file_error:
            return (f"cannot show {plain(self.display_name, FIELD_LIMIT)}:\n{self._short(file_error)}\n\n"
                    "watching the file; the view appears as soon as it loads")
        if settings_error:  # the file is not at fault: a flag, the environment or the config file is
            return (f"cannot plan {plain(self.display_name, FIELD_LIMIT)} with these settings:\n"
                    f"{self._short(settings_error)}\n\n"
                    "the config file is watched: the view appears once it is fixed "
                    "(a flag or an environment variable needs a restart)")
        if size is not None:
            return (f"reading {plain(self.display_name, FIELD_LIMIT)} ({megabytes(size)})…\n\n"
                    "The context shown is the newest request's, as the end of the file records it.\n"
                    "Its parts, the timeline and the keys come once the whole session is read.")
        return "loading…"

    def _refresh_status(self) -> None:
        """The status line: the one place an error is shown while a plan is on screen."""
        if not self._main_screen_ready():
            return  # a timer that fires while the screen is not composed (starting or closing)
        state = self.state
        error = None if state.waiting else state.file_error
        if error and state.plan is not None:
            error = f"{self._short(error)} — showing the last good plan"
        elif error or state.settings_error:
            error = self._short(error or state.settings_error or "")
        elif state.plan is not None and not state.plan.ok and state.agent:
            plan = state.plan
            error = (f"this request cannot be packed into max_ctx {fmt(plan.budget.max_ctx)}: its critical parts "
                     f"(the part not in the file and the latest input) take {fmt(plan.fixed_load)} tokens "
                     f"of the {fmt(plan.budget.available)} available (0: back to its window)")
        elif state.plan is not None and not state.plan.ok:
            error = "critical overflow: " + (state.plan.error or {}).get("message", "")
        plan_ms = None if self.frozen or state.outcome is None else state.outcome.plan_seconds * 1000
        self.query_one(StatusLine).show(
            Status(self.display_name, None if self.frozen else state.reloaded, state.changes, plan_ms, error, self._note(),
                   first=state.first_load)
        )

    def _note(self) -> str:
        state = self.state
        notes = []
        if state.waiting:
            notes.append(state.waiting_note())
        if state.glance is not None:
            notes.append(f"reading the whole session ({megabytes(state.glance.size)})…")
        elif state.working:
            notes.append("planning…" + (" (the plan shown is stale)" if state.stale and state.plan is not None else ""))
        elif state.stale and state.plan is not None:
            notes.append("stale: re-reading the file")
        warnings = state.warnings
        if warnings:  # the key to read them whole first: the line is cut at the terminal's edge
            count = f"{len(warnings)} warnings" if len(warnings) > 1 else "warning"
            notes.append(f"⚠ {count} (w): {self._short(warnings[0])}")
        if state.what_if:
            notes.append(f"what-if {state.what_if * WHAT_IF_STEP_PERCENT:+d}% (0: the file's budget)")
        elif state.agent and not state.trimming_shown and state.plan is not None and state.plan.steps:
            # shown as sent, though it is over the window less its reply reserve (a request's max_tokens)
            notes.append("over the window less the reply reserve: + or - shows it packed")
        return " · ".join(n for n in notes if n)

    def _draw_sidebar_layout(self, visible: bool, width: int) -> None:
        """Below ``NARROW`` columns the sidebar narrows, below ``state.HIDDEN`` it hides unless ``s`` shows
        it (``ViewState.sidebar_visible``); from ``WIDE`` columns it widens."""
        found = self.query("#sidebar")
        if not found:
            return  # a resize before the screen is composed (or after it is gone)
        sidebar = found.first()
        sidebar.display = visible
        sidebar.set_class(width < NARROW, "-narrow")
        sidebar.set_class(width >= WIDE, "-wide")

    def _draw_sidebar_mode(self, plan: Plan | None, step: int, levels: Levels, timeline: bool,
                           sidebar: str | None, facts: AgentFacts | None, agent: bool, trimming: bool) -> None:
        """The lower sidebar: the trim trace, or the token breakdown (for an agent's request its categories,
        the default; the trace only once a what-if budget trims it). ``timeline``: whether there is one
        (its points are not read here: the fill's progress does not redraw the breakdown)."""
        view = self._view(plan, step, levels)
        imported = is_imported(view)
        breakdown = sidebar == "breakdown" if sidebar else imported
        if agent and not trimming:
            breakdown = True
        if not breakdown:  # a hidden trace is not worked out: shown, this part is drawn again (``sidebar``)
            self.query_one(TraceView).show(view)
        for selector in ("#trace-title", "#trace"):
            self.query_one(selector).display = not breakdown
        for selector in ("#breakdown-title", "#breakdown"):
            self.query_one(selector).display = breakdown
        if imported:
            # one row (`.title` does not wrap): shown again only when it reads differently, with no layout pass
            show_text(self.query_one("#trace-title", Static), Text("Trim trace · v: categories" if agent else
                                                                   "Trim trace · v: breakdown", end=""))
        if breakdown:
            turn = f" · {'request' if agent else 'turn'} {view.plan.session.turn}" if view is not None and timeline else ""
            if agent:
                title = f"Context by category{turn}" + (" · v: trace" if trimming else "")
            else:
                title = f"Breakdown{turn} · v: trace"
            self.query_one(BreakdownTitle).show_text(Text(title, end=""))
            self.query_one(BreakdownView).show(view, facts, agent=agent, trimmed=trimming)

    def _detail_title(self, view: View | None, selected: int, agent: bool = False, trimming: bool = False) -> str:
        if view is None or not view.plan.sections:
            return "Detail"
        result = view.plan.sections[selected]
        if agent:  # the part's whole label opens the detail (the table cuts it where it is narrow), named
            # as the table names it under a what-if budget too (not by its layout id: "inferred")
            return f"Detail — {part_of(view, selected)}" + (f" after step {view.step}" if trimming else "")
        return f"Detail — {plain(result.id, FIELD_LIMIT)} after step {view.step}"

    def _topbar(self, view: View | None, multi_turn: bool, following: bool, sidebar_visible: bool) -> tuple[list[str], int, int]:
        """The top bar's fields, the index of the name and of the last field the name gives way for."""
        if view is None:
            return ["tokenbox", plain(self.display_name, FIELD_LIMIT)], 1, 1  # plain(): names may hold escapes
        plan = view.plan
        parts = ["tokenbox"]
        if not sidebar_visible:  # the gauge is hidden: its headline comes up here
            parts.append(_headline(view))
        name = len(parts)
        # capped (redrawn per key); the top bar cuts it further where the turn and step need the room
        parts.append(plain(plan.session.name or self.display_name, FIELD_LIMIT))
        if plan.session.turn_count > 1 or multi_turn:
            parts.append(f"turn {plan.session.turn}/{plan.session.turn_count}"
                         + (" (following)" if following else " (pinned)"))
        parts.append(f"step {view.step}/{view.last_step}" + (" final" if view.step == view.last_step else ""))
        essential = len(parts) - 1  # up to the step: the name gives way for these
        parts.append(f"policy {plain(plan.trimming)}")
        parts.append(f"{plain(plan.tokenizer.name, FIELD_LIMIT)}{'' if plan.tokenizer.exact else ' ≈'}")
        parts.append(f"max_ctx {fmt(plan.budget.max_ctx)}")
        return parts, name, essential

    # ------------------------------------------------------------------ actions

    def action_step(self, delta: int) -> None:
        plan = self.state.plan
        if plan is not None and not plan.steps:  # a trace of step 0 alone: say why the key moves nothing
            text = (f"nothing is trimmed: the layout fits max_ctx {fmt(plan.budget.max_ctx)} (- lowers the what-if "
                    "budget)" if plan.ok else f"no trim trace: the plan failed at max_ctx {fmt(plan.budget.max_ctx)}"
                    " (the status line says why)")
            self._say(text, lambda state: state.plan is plan)
            return
        moved = self.state.stepped_by(delta)
        if plan is not None and delta and moved.step == self.state.step:  # at an end of the trace: say so
            last = len(plan.steps)
            text = (f"the last step of the trace ({last}/{last}): Home shows the untrimmed layout" if delta > 0 else
                    f"step 0, the untrimmed layout: End shows the last step ({last})")
            step = self.state.step
            self._say(text, lambda state: state.plan is plan and state.step == step)
            return
        self.state = moved

    def action_step_to(self, step: int) -> None:
        """Show the layout after ``step``; the section that step changed (or undid) is selected."""
        self.state = self.state.stepped_to(step)

    def action_select(self, delta: int) -> None:
        self.state = self.state.selected_by(delta)

    def action_focus_detail(self) -> None:
        self.query_one(DetailView).focus()

    def action_focus_sections(self) -> None:
        self.query_one(SectionBars).focus()

    def on_detail_view_left(self, message: DetailView.Left) -> None:
        self.action_focus_sections()

    def action_budget(self, delta: int) -> None:
        state = self.state.with_what_if(delta)
        if delta and state.what_if == self.state.what_if:  # at the smallest or the largest: say so, plan nothing
            percent = 100 + state.what_if * WHAT_IF_STEP_PERCENT
            self._say(f"the what-if budget is at its {'largest' if delta > 0 else 'smallest'}: {percent} % of the "
                      "file's max_ctx (0: the file's budget)", lambda now: now.what_if == state.what_if)
            return
        self.state = state
        self.request_plan("what-if budget")

    def action_policy(self) -> None:
        self.state = self.state.with_next_policy()
        self.notify(f"trimming policy: {self.state.trimming}", timeout=2, markup=False)
        self.request_plan("policy")

    def action_tokenizer(self) -> None:
        state = self.state.with_next_tokenizer()
        if state is self.state:
            return  # no tokenizer to move to
        self.state = state
        self.request_plan("tokenizer")

    def action_turn(self, delta: int) -> None:
        if self.state.plan is None or self.state.turn_count <= 1:
            self.notify("not a multi-turn .jsonl log", timeout=2, markup=False)
            self._toast_holds = lambda state: state.plan is None or state.turn_count <= 1
            return
        self.state = self.state.with_turn(delta)
        self.request_plan("turn")

    def action_follow(self) -> None:
        self.state = replace(self.state, turn=None)
        self.request_plan("follow")

    def action_sidebar(self) -> None:
        self.state = self.state.with_sidebar_switched(is_imported(self.current_view()))
        if not self.state.sidebar_visible:  # switched out of sight: say so, and how to see it
            self._say(f"the sidebar is hidden (s shows it): it will show the "
                      f"{'trim trace' if self.state.sidebar == 'trace' else 'token breakdown'}",
                      lambda state: not state.sidebar_visible)

    def action_toggle_sidebar(self) -> None:
        """Show or hide the sidebar (it hides by itself on narrow terminals)."""
        self.state = replace(self.state, sidebar_shown=not self.state.sidebar_visible)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that do not apply are hidden from the footer: turn keys only for multi-turn logs, the
        trace, policy and sidebar keys for a layout (an agent's request under a what-if budget too), the
        threads for an agent's session, what-if, tokenizer and warnings once there is a plan. (Not by the
        plan's steps: they come and go while following, and every footer rebuild costs memory in Textual.)
        A key that does not apply runs its stand-in (``keys.py``), which says why."""
        multi_turn, has_plan, agent, trimming, warned, threaded = _applicable(self.state)
        if action in ("turn", "follow"):
            return multi_turn
        if action in ("step", "step_to", "policy", "sidebar"):
            return trimming  # an agent's request has no trim trace until a what-if budget packs it
        if action in ("budget", "tokenizer"):
            return has_plan
        if action == "warnings":  # in the footer for an agent's session, and wherever there are warnings
            return has_plan and (agent or warned)
        if action == "threads":
            return threaded
        return True

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot: into the Downloads folder when there is one, else into
        ``$XDG_STATE_HOME/tokenbox/screenshots`` (made when needed); Textual assumed ~/Downloads exists."""
        return super().deliver_screenshot(filename, path or screenshot_folder(os.environ), time_format)

    def action_unavailable(self, why: str) -> None:
        """A key that does not apply here: say why (its stand-in binding, ``keys.py``)."""
        state = self.state
        if why == "turns":
            text = ("one turn only: [ ] and f move between the turns of a log" if state.plan is not None
                    else "no plan yet: [ ] and f move between the turns of a log")
        elif why == "trim":
            text = ("an agent's request is shown as it was sent: the trim trace and policy apply once a what-if "
                    "budget packs it (+ or -)" if state.agent else "no plan yet")
        elif why == "warnings":
            text = "no warnings for the plan shown" if state.plan is not None else "no plan yet"
        elif state.agent:
            text = "one thread only: this session has no sub-agent"
        else:
            text = "threads are an agent's (a transcript's main thread and its sub-agents): this is a tokenbox session"
        # the toast holds while the key still does not apply, for the same reason (a plan or none)
        which = {"turns": 0, "trim": 3, "warnings": 4}.get(why, 5)
        now = _applicable(state)
        self._say(text, lambda later: (shown := _applicable(later))[which] == now[which] and shown[1] == now[1])

    def action_threads(self) -> None:
        """The session's threads; the one chosen is shown (``Esc``: the one shown stays)."""
        from tokenbox.tui.threads import ThreadsScreen  # start-up: the list (and Textual's OptionList) when first asked for

        facts = self.state.facts
        if facts is None or isinstance(self.screen, ThreadsScreen):
            return
        self.push_screen(ThreadsScreen(facts), self._thread_chosen)

    def _thread_chosen(self, name: str | None) -> None:
        if name is None or self.state.facts is None or name == self.state.facts.thread:
            return
        self.state = self.state.with_thread(None if name == MAIN_THREAD else name)
        self.request_plan("thread")

    def action_warnings(self) -> None:
        """Every warning of the plan shown, whole."""
        from tokenbox.tui.warnings import WarningsScreen  # start-up: the screen when first asked for

        if not isinstance(self.screen, WarningsScreen):
            self.push_screen(WarningsScreen(self.state.warnings, self.display_name))

    def action_help(self) -> None:
        """The help, made on the first ``?`` and kept (installed): a later ``?`` shows it again as it was laid
        out, and closing it removes nothing (a removed screen laid out the screen behind it again). Made again
        for other warning levels or another theme (a hidden screen's styles do not follow a theme switch)."""
        if isinstance(self.screen, HelpScreen):
            return
        made_for = (self.state.warn_levels, self.theme)
        if self.is_screen_installed(HELP) and self._help_made_for != made_for:
            old = self.get_screen(HELP)
            self.uninstall_screen(HELP)
            old.remove()
        if not self.is_screen_installed(HELP):
            self.install_screen(HelpScreen(made_for[0]), HELP)
            self._help_made_for = made_for
        self.push_screen(HELP)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key in KEYS:
            if key.action in ("quit", "help") or not key.listed:
                continue
            yield SystemCommand(key.help, escape(f"key {key.shown}"), self._command(key.action))
        yield SystemCommand("Help: keys and legend", escape("key ?"), self.action_help)

    def _command(self, action: str):
        async def run() -> None:
            await self.run_action(action)

        return run


# The parts of the screen: what each reads of the view state, and how it is drawn from exactly that. A
# part is redrawn when what it reads differs between the old and the new state (``inputs_differ``);
# the status line is drawn every time (progress, what-if, reload time).
PARTS: tuple[tuple[Callable[[ViewState], tuple], Callable[..., None]], ...] = (
    (lambda s: (s.sidebar_visible, s.width), TokenboxApp._draw_sidebar_layout),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, s.facts, s.agent, s.trimming_shown, s.glance),
     TokenboxApp._draw_gauge),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, s.timeline, s.following), TokenboxApp._draw_timelines),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, bool(s.timeline), s.sidebar, s.facts, s.agent, s.trimming_shown),
     TokenboxApp._draw_sidebar_mode),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, s.selected, s.agent, s.trimming_shown), TokenboxApp._draw_sections),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, s.selected, _message(s), s.agent and not s.trimming_shown),
     TokenboxApp._draw_detail),
    (lambda s: (s.plan, s.shown_step, s.warn_levels, bool(s.timeline), s.following, s.sidebar_visible, s.facts, s.agent,
                s.trimming_shown, s.glance), TokenboxApp._draw_topbar),
    (lambda s: (s.agent,), TokenboxApp._draw_footer_words),
)


def _message(state: ViewState) -> tuple[str | None, str | None, str | None, int | None] | None:
    """What the detail's message is made of while there is no plan (the app words it: ``_detail_message``)."""
    if state.plan is not None:
        return None
    return (state.waiting_note() if state.waiting else None, state.file_error, state.settings_error,
            state.glance.size if state.glance is not None else None)


def main(argv: Sequence[str] | None = None, first_plan: FirstPlan | FirstLooks | None = None) -> int:
    """Entry point of ``tokenbox-tui``; ``first_plan`` is the first plan of FILE already started (``tui/launch.py``)."""
    code = _main(list(sys.argv[1:] if argv is None else argv), first_plan)
    if argv is None:
        sys.exit(code)
    return code


def _main(argv: list[str], first_plan: FirstPlan | FirstLooks | None = None) -> int:
    try:
        return _run(argv, first_plan)
    finally:
        if first_plan is not None:
            first_plan.close()  # reaped here at the latest (the app closes it when it ends)


def _run(argv: list[str], first_plan: FirstPlan | FirstLooks | None) -> int:
    try:
        options: Options = parse_args(argv)
    except UsageError as exc:
        return fail(usage_message(exc))
    try:
        levels = warn_levels(options.warn_levels, os.environ)
    except ConfigError as exc:
        return fail(str(exc))
    settings = dict(budget=options.budget, tokenizer=options.tokenizer, trimming=options.trimming,
                    reserve_out=options.reserve_out, warn_levels=levels)
    if options.file is not None and os.path.isdir(options.file) and not _folder_read(options.file):
        return fail(f"{printable(options.file)}: is a directory tokenbox does not read (give a session file: .yaml, "
                    ".json or .jsonl, a Cline task folder or an OpenCode storage folder)")
    if options.serve is not None:
        from tokenbox.tui.serve import serve  # start-up: aiohttp and textual-serve only when serving

        if first_plan is not None:
            first_plan.close()  # the server plans nothing (each tab's app does): reap the child now
        return serve(options, argv)
    with contextlib.ExitStack() as stack:
        if options.claude:
            from tokenbox.tui.claude_app import ClaudeApp

            try:
                found = discover(options.claude_project)  # a project without a session says so (no fallback)
            except DiscoveryError as exc:
                return fail(str(exc))
            app: TokenboxApp = ClaudeApp(found, **settings)
        elif options.codex:
            from tokenbox.tui.codex import discover as discover_codex

            try:
                path = discover_codex().path
            except DiscoveryError as exc:
                return fail(str(exc))
            app = TokenboxApp(path, **settings)
        elif options.agent:
            from tokenbox.core.sources.discovery import newest

            try:
                found = newest(options.agent)
            except DiscoveryError as exc:
                return fail(str(exc))
            app = TokenboxApp(found.path, **settings)
        elif options.all:
            from tokenbox.tui.board.app import BoardApp  # start-up: the board's modules only for --all

            # the board's first looks (``tui/board/firstlooks.py``): the app's from now on
            looks = None if isinstance(first_plan, FirstPlan) else first_plan
            first_plan = first_plan if looks is None else None
            board = {"first_looks": looks} if options.since is None else {"first_looks": looks, "since": options.since}
            app = BoardApp(**board, **settings)
        elif options.record:
            from tokenbox.core.model.errors import BadInput
            from tokenbox.core.record.run import record_for_tui

            try:
                path = stack.enter_context(record_for_tui(options.listen, options.upstream))
            except BadInput as exc:
                return fail(str(exc))
            app = TokenboxApp(path, **settings)
        else:
            path = options.file or sample_path(stack)
            planned = first_plan if isinstance(first_plan, FirstPlan) else None  # (not the board's)
            app = TokenboxApp(path, first_plan=planned, **settings)
            first_plan = None if planned is not None else first_plan
        if first_plan is not None:
            first_plan.close()  # a mode that finds its own file: the child planned nothing, reap it now
        try:
            app.run()
        except KeyboardInterrupt:
            return 130
    return 0


def screenshot_folder(environ: Mapping[str, str]) -> str:
    """Where screenshots go: the user's Downloads folder if it exists, else tokenbox's own folder under
    ``$XDG_STATE_HOME`` (``~/.local/state``), made on first use."""
    downloads = str(user_downloads_path())
    if os.path.isdir(downloads):
        return downloads
    base = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    folder = os.path.join(base, "tokenbox", "screenshots")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def _headline(view: View) -> str:
    """The gauge's headline in words, for the top bar while the sidebar is hidden."""
    plan = view.plan
    if view.state.deficit > 0 or not plan.ok:
        note = " over budget"
    elif plan.pending:
        note = " pending"
    elif plan.headline_kind == HeadlineKind.RECORDED:
        note = " recorded"
    else:
        note = ""
    return f"context {view.headline_approx}{view.percent}%{note}"


def _glance_headline(glance: Glance) -> str:
    """A glance's headline in words, for the top bar while the sidebar (and its gauge) is hidden."""
    figures = glance.figures
    mark = "≈" if figures.approx else ""
    shown = f"{glance.percent}%" if glance.percent is not None else fmt(figures.tokens or 0)
    return f"context {mark}{shown} {'pending' if figures.pending else 'recorded'}"


def _folder_read(path: str) -> bool:
    """Whether core reads the folder ``path`` as a session (a Cline task folder, an OpenCode storage
    folder: the ``SOURCE`` rows of its formats' table), as ``tokenbox plan FOLDER`` does."""
    from tokenbox.core.sources.formats import FORMATS, source_format  # start-up: every reader, for a folder only

    found = source_format(FORMATS, path)
    return found is not None and found[0] is not None


def _applicable(state: ViewState) -> tuple[bool, bool, bool, bool, bool, bool]:
    """What decides which keys apply: several turns, a plan at all, an agent's session, the trim controls,
    warnings, several threads."""
    threaded = state.facts is not None and len(state.facts.threads) > 1
    return state.turn_count > 1, state.plan is not None, state.agent, state.trimming_shown, bool(state.warnings), threaded
