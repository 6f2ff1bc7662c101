"""``tokenbox-tui``: the live inspector app beside a running agent.

The app holds only view state (step, selection, what-if settings). A thread worker follows the
file (``watcher.follow``), another loads and plans it (``planner.Planner``) and posts the finished
``Outcome``; the UI thread only draws. A broken file keeps the last good plan on screen.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static
from textual.worker import get_current_worker
from tokenbox.core import Plan
from tokenbox.core.textsafe import printable
from tokenbox.tui import watcher
from tokenbox.tui.alerts import Watermark, alerts
from tokenbox.tui.breakdown import BreakdownTitle, BreakdownView, is_imported
from tokenbox.tui.claude import DiscoveryError, discover, waiting_note
from tokenbox.tui.cli import Options, UsageError, fail, parse_args, sample_path, usage_message
from tokenbox.tui.detail import DetailView
from tokenbox.tui.gauge import Gauge
from tokenbox.tui.help import HelpScreen
from tokenbox.tui.keys import KEYS, bindings
from tokenbox.tui.messages import FileChanged, PlanComputed
from tokenbox.tui.planner import Outcome, Planner, PlanRequest, TurnPoint
from tokenbox.tui.safe import FIELD_LIMIT, plain
from tokenbox.tui.sections import SectionBars, SectionHeader
from tokenbox.tui.status import Status, StatusLine
from tokenbox.tui.timeline import Timeline
from tokenbox.tui.trace import TraceView
from tokenbox.tui.usage import UsageTimeline, has_recorded
from tokenbox.tui.view import View, describe_changes

POLICIES = ("tokenbox", "progressive")
MIN_WHAT_IF = -19  # 5% of max_ctx
MAX_WHAT_IF = 200
TOAST_LIMIT = 600  # characters of one toast line
RELOAD_INTERVAL = 0.2  # seconds: file events closer than this to the last reload coalesce into one more
FROZEN_ENV = "TOKENBOX_TUI_FROZEN"  # set to 1: no clock or timings on screen (tests, demos)


class TokenboxApp(App[None]):
    """Follows one session file and shows its plan."""

    CSS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app.tcss")  # absolute: subclasses elsewhere work
    TITLE = "tokenbox"
    BINDINGS = bindings()
    ENABLE_COMMAND_PALETTE = True

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
        display_name: str | None = None,
        toast_seconds: float | None = None,
        reserve_out: int | None = None,
    ) -> None:
        super().__init__()
        self.path = os.path.abspath(path)
        self.display_name = display_name or os.path.basename(self.path)
        self.frozen = os.environ.get(FROZEN_ENV, "") not in ("", "0") if frozen is None else frozen
        self.watching = watch
        self.toast_seconds = toast_seconds
        self._planner = planner or Planner()
        self._budget_flag = budget
        self._tokenizer = tokenizer
        self._trimming = trimming
        self._reserve_out = reserve_out
        self._sidebar: str | None = None  # "trace" | "breakdown"; None: breakdown for imported sessions
        self._what_if = 0
        self._turn: int | None = None  # None = follow the newest turn
        self._cycle_tokenizer = False
        self._seq = 0
        self._handled_seq = 0
        self._dirty = True  # the file must be read again on the next request
        self._stop = threading.Event()
        # what is shown
        self.outcome: Outcome | None = None
        self.plan: Plan | None = None
        self.step = 0
        self._at_end = True
        self.selected = 0
        self.file_error: str | None = None
        self.settings_error: str | None = None
        self.timeline: tuple[TurnPoint, ...] = ()
        self.turn_count = 0
        self.plans_shown = 0
        self.file_events = 0  # FileChanged messages handled (the planner counts the runs they caused)
        self._reload_timer: Timer | None = None
        self._last_reload = float("-inf")
        self._changes = ""
        self._reloaded: str | None = None
        self._watermark = Watermark()
        self._last_change = ""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="topbar")
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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.query_one("#timeline", Timeline).display = False
        self.query_one(SectionBars).focus()
        self._refresh_all()
        self.request_plan("start", reload=True)
        if self.watching:
            self._watch()

    def on_resize(self) -> None:
        self.call_after_refresh(self._refresh_all)

    def on_unmount(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------ workers

    @property
    def planner(self) -> Planner:
        """The planner (its counters tell tests how many runs, loads and plans were really made)."""
        return self._planner

    def request_plan(self, reason: str, *, reload: bool = False) -> None:
        """Ask the worker for a new plan with the current settings (newest request wins)."""
        self._seq += 1
        if reload:
            self._dirty = True
        request = PlanRequest(
            path=self.path,
            reload=self._dirty,
            budget=self._budget_flag,
            what_if=self._what_if,
            tokenizer=self._tokenizer,
            cycle_tokenizer=self._cycle_tokenizer,
            trimming=self._trimming,
            turn=self._turn,
            reason=reason,
            seq=self._seq,
            reserve_out=self._reserve_out,
        )
        self._plan_worker(request)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def _plan_worker(self, request: PlanRequest) -> None:
        # exclusive: a newer request cancels this one; cancelled requests waiting for the planner's
        # lock give up at once, so a burst of requests coalesces into a few plans
        worker = get_current_worker()
        outcome = self._planner.run(request, lambda: worker.is_cancelled)
        if outcome is not None and not worker.is_cancelled:
            self.post_message(PlanComputed(outcome))

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch(self) -> None:
        watcher.follow(self.path, self._stop, lambda what: self.post_message(FileChanged(what)))

    def on_file_changed(self, message: FileChanged) -> None:
        """Reload at once, unless a reload started less than ``RELOAD_INTERVAL`` ago: then once, later.

        A burst of writes (an agent streaming into the file) costs a few plans a second and its
        last state is always shown; a single edit is never delayed.
        """
        self.file_events += 1
        self._last_change = message.what
        self._dirty = True
        if self._reload_timer is not None:
            return  # a reload is already scheduled: it will read the file as it is then
        wait = self._last_reload + RELOAD_INTERVAL - time.monotonic()
        if wait <= 0:
            self._reload()
        else:
            self._reload_timer = self.set_timer(wait, self._reload)

    def _reload(self) -> None:
        """Re-read the file now (a file event, or the end of the coalescing interval)."""
        self._reload_timer = None
        self._last_reload = time.monotonic()
        self.request_plan(f"file {self._last_change}", reload=True)

    def on_plan_computed(self, message: PlanComputed) -> None:
        outcome = message.outcome
        request = outcome.request
        if request.seq < self._handled_seq:
            return
        self._handled_seq = request.seq
        if request.reload and request.seq == self._seq:
            self._dirty = False
        if request.reload or outcome.error_kind == "load":
            self.file_error = outcome.file_error
        self.settings_error = outcome.error if outcome.error_kind in ("settings", "internal") else None
        self.outcome = outcome
        if outcome.plan is not None:
            self._show_plan(outcome)
        if request.reload and not self.frozen:
            self._reloaded = time.strftime("%H:%M:%S")
        error = self.file_error or self.settings_error
        if waiting_note(error):
            error = None  # no complete turn yet: a state, not a failure
        found, self._watermark = alerts(self._watermark, outcome.plan, self._short(error) if error else None)
        for alert in found:
            timeout = self.toast_seconds or (8 if alert.severity == "error" else 5)
            self.notify(alert.message, title=alert.title, severity=alert.severity,  # type: ignore[arg-type]
                        timeout=timeout, markup=False)
        self._refresh_all()

    def _show_plan(self, outcome: Outcome) -> None:
        plan = outcome.plan
        assert plan is not None
        old = self.plan
        selected_id = old.sections[self.selected].id if old and self.selected < len(old.sections) else None
        self._changes = describe_changes(old, plan)
        if outcome.stale:
            self._changes = "reload failed: the last good plan stays"
        if outcome.skipped_tokenizers:
            self._changes += f"; skipped tokenizers {', '.join(outcome.skipped_tokenizers)}"
        self.plan = plan
        self.plans_shown += 1
        self.timeline = outcome.timeline
        self.turn_count = outcome.turn_count
        self._tokenizer = plan.tokenizer.name if self._cycle_tokenizer else self._tokenizer
        self._cycle_tokenizer = False
        last = len(plan.steps)
        self.step = last if self._at_end else min(self.step, last)
        ids = [s.id for s in plan.sections]
        if selected_id in ids:
            self.selected = ids.index(selected_id)
        self.selected = max(0, min(self.selected, len(ids) - 1))

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
        text = "\n".join(plain(line, TOAST_LIMIT) for line in str(message).split("\n"))
        super().notify(text, title=plain(str(title), FIELD_LIMIT), severity=severity, timeout=timeout, markup=False)

    def _short(self, text: str) -> str:
        """Errors name the file by its full path (escaped by core when it holds controls); show the name only."""
        shown = plain(self.display_name, FIELD_LIMIT)
        return text.replace(printable(self.path), shown).replace(self.path, shown)

    def current_view(self) -> View | None:
        return View.at(self.plan, self.step) if self.plan is not None else None

    def _refresh_all(self) -> None:
        view = self.current_view()
        outcome = self.outcome
        self.query_one(Gauge).show(
            view, what_if=self._what_if, base_max_ctx=outcome.base_max_ctx if outcome else None
        )
        following = self._turn is None
        timeline = self.query_one(Timeline)
        recorded = view is not None and has_recorded(self.timeline)
        if view is not None and recorded:
            self.query_one(UsageTimeline).show(self.timeline, view.plan.session.turn, following, view.approx)
        self.query_one(UsageTimeline).display = recorded
        if self.timeline and self.plan is not None and not recorded:
            timeline.show(self.timeline, self.plan.session.turn, following)
        else:
            timeline.display = False
        self.query_one(TraceView).show(view)
        self._show_sidebar_mode(view)
        self.query_one(SectionBars).show(view, self.selected if view else None)
        message = None
        if self.plan is not None and self.file_error:
            message = f"{self._short(self.file_error)}\n(showing the last good plan; watching the file for a fix)"
        waiting = waiting_note(self.file_error)
        if self.plan is None and waiting:
            message = (f"{plain(self.display_name)}: {waiting}\n\nThe file has no complete turn yet "
                       "(the agent writes the prompt first and the reply when it arrives).\n"
                       "Watching the file: the view appears as soon as the first turn is complete.")
        elif self.plan is None:
            error = self.file_error or self.settings_error
            message = (
                f"cannot show {plain(self.display_name, FIELD_LIMIT)}:\n{self._short(error)}\n\n"
                "watching the file; the view appears as soon as it loads"
                if error else "loading…"
            )
        self.query_one(DetailView).show(view, self.selected if view else None, message)
        self.query_one("#detail-title", Static).update(Text(self._detail_title(view), end=""))
        self.query_one("#topbar", Static).update(Text(self._topbar(view), no_wrap=True, overflow="ellipsis", end=""))
        error = self.settings_error if waiting else self.file_error or self.settings_error
        if self.file_error and not waiting and self.plan is not None:
            error = f"{self._short(self.file_error)} — showing the last good plan"
        elif error:
            error = self._short(error)
        elif self.plan is not None and not self.plan.ok:
            error = "critical overflow: " + (self.plan.error or {}).get("message", "")
        plan_ms = None if self.frozen or outcome is None else outcome.plan_seconds * 1000
        self.query_one(StatusLine).show(
            Status(self.display_name, None if self.frozen else self._reloaded, self._changes, plan_ms, error, self._note())
        )

    def _note(self) -> str:
        notes = [waiting_note(self.file_error) or ""]
        if self._what_if:
            notes.append(f"what-if {self._what_if * 5:+d}% (0 resets)")
        return " · ".join(n for n in notes if n)

    def _show_sidebar_mode(self, view: View | None) -> None:
        """The lower sidebar: the trim trace, or the token breakdown (the default for imported sessions)."""
        imported = is_imported(view)
        breakdown = self._sidebar == "breakdown" if self._sidebar else imported
        for selector in ("#trace-title", "#trace"):
            self.query_one(selector).display = not breakdown
        for selector in ("#breakdown-title", "#breakdown"):
            self.query_one(selector).display = breakdown
        if imported:
            self.query_one("#trace-title", Static).update(Text("Trim trace · v: breakdown", end=""))
        if breakdown:
            turn = f" · turn {view.plan.session.turn}" if view is not None and self.timeline else ""
            self.query_one(BreakdownTitle).update(Text(f"Breakdown{turn} · v: trace", end=""))
            self.query_one(BreakdownView).show(view)

    def _detail_title(self, view: View | None) -> str:
        if view is None or not view.plan.sections:
            return "Detail"
        result = view.plan.sections[self.selected]
        return f"Detail — {plain(result.id, FIELD_LIMIT)} after step {view.step}"

    def _topbar(self, view: View | None) -> str:
        if view is None:
            return f"tokenbox · {plain(self.display_name, FIELD_LIMIT)}"  # plain(): names may hold escapes
        plan = view.plan
        parts = ["tokenbox", plain(plan.session.name or self.display_name, FIELD_LIMIT)]  # capped: redrawn per key
        if plan.session.turn_count > 1 or self.timeline:
            parts.append(f"turn {plan.session.turn}/{plan.session.turn_count}"
                         + (" (following)" if self._turn is None else " (pinned)"))
        parts.append(f"step {view.step}/{view.last_step}" + (" final" if view.step == view.last_step else ""))
        parts.append(f"policy {plain(plan.trimming)}")
        parts.append(f"{plain(plan.tokenizer.name, FIELD_LIMIT)}{'' if plan.tokenizer.exact else ' ≈'}")
        parts.append(f"max_ctx {plan.budget.max_ctx}")
        return " · ".join(parts)

    # ------------------------------------------------------------------ actions

    def action_step(self, delta: int) -> None:
        if self.plan is None:
            return
        self.action_step_to(max(0, min(len(self.plan.steps), self.step + delta)))

    def action_step_to(self, step: int) -> None:
        if self.plan is None:
            return
        last = len(self.plan.steps)
        self.step = last if step < 0 else max(0, min(last, step))
        self._at_end = self.step == last
        self._refresh_all()

    def action_select(self, delta: int) -> None:
        if self.plan is None or not self.plan.sections:
            return
        self.selected = max(0, min(len(self.plan.sections) - 1, self.selected + delta))
        self._refresh_all()

    def action_focus_detail(self) -> None:
        self.query_one(DetailView).focus()

    def action_focus_sections(self) -> None:
        self.query_one(SectionBars).focus()

    def action_budget(self, delta: int) -> None:
        self._what_if = 0 if delta == 0 else max(MIN_WHAT_IF, min(MAX_WHAT_IF, self._what_if + delta))
        self.request_plan("what-if budget")
        self._refresh_all()

    def action_policy(self) -> None:
        current = self._trimming or (self.plan.trimming if self.plan else POLICIES[0])
        self._trimming = POLICIES[(POLICIES.index(current) + 1) % len(POLICIES)] if current in POLICIES else POLICIES[0]
        self.notify(f"trimming policy: {self._trimming}", timeout=2, markup=False)
        self.request_plan("policy")

    def action_tokenizer(self) -> None:
        names = list(self.outcome.tokenizers) if self.outcome and self.outcome.tokenizers else []
        if not names:
            return
        current = self._tokenizer or (self.plan.tokenizer.name if self.plan else names[0])
        index = names.index(current) if current in names else -1
        self._tokenizer = names[(index + 1) % len(names)]
        self._cycle_tokenizer = True
        self.request_plan("tokenizer")

    def action_turn(self, delta: int) -> None:
        if self.plan is None or self.turn_count <= 1:
            self.notify("not a multi-turn .jsonl log", timeout=2, markup=False)
            return
        current = self.plan.session.turn
        self._turn = max(1, min(self.turn_count, current + delta))
        self.request_plan("turn")
        self._refresh_all()

    def action_follow(self) -> None:
        self._turn = None
        self.request_plan("follow")
        self._refresh_all()

    def action_sidebar(self) -> None:
        imported = is_imported(self.current_view())
        showing = self._sidebar == "breakdown" if self._sidebar else imported
        self._sidebar = "trace" if showing else "breakdown"
        self._refresh_all()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key in KEYS:
            if key.action in ("quit", "help"):
                continue
            yield SystemCommand(key.help, escape(f"key {key.shown}"), self._command(key.action))
        yield SystemCommand("Help: keys and legend", escape("key ?"), self.action_help)

    def _command(self, action: str):
        async def run() -> None:
            await self.run_action(action)

        return run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tokenbox-tui``."""
    code = _main(list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        sys.exit(code)
    return code


def _main(argv: list[str]) -> int:
    try:
        options: Options = parse_args(argv)
    except UsageError as exc:
        return fail(usage_message(exc))
    settings = dict(budget=options.budget, tokenizer=options.tokenizer, trimming=options.trimming,
                    reserve_out=options.reserve_out)
    with contextlib.ExitStack() as stack:
        if options.claude:
            from tokenbox.tui.claude_app import ClaudeApp

            fallback = options.claude_project is None
            try:
                found = discover(options.claude_project, fallback=fallback)
            except DiscoveryError as exc:
                return fail(str(exc))
            app: TokenboxApp = ClaudeApp(found, fallback=fallback, **settings)
        elif options.codex:
            from tokenbox.tui.codex import discover as discover_codex

            try:
                path = discover_codex().path
            except DiscoveryError as exc:
                return fail(str(exc))
            app = TokenboxApp(path, **settings)
        elif options.record:
            from tokenbox.core.errors import BadInput
            from tokenbox.core.record.run import record_for_tui

            try:
                path = stack.enter_context(record_for_tui(options.listen, options.upstream))
            except BadInput as exc:
                return fail(str(exc))
            app = TokenboxApp(path, **settings)
        else:
            path = options.file or sample_path(stack)
            app = TokenboxApp(path, **settings)
        try:
            app.run()
        except KeyboardInterrupt:
            return 130
    return 0
