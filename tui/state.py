"""The app's view state: one frozen snapshot of everything the screen shows, and the pure transitions
that keys and finished plans make on it.

``TokenboxApp`` holds exactly one ``ViewState`` (its ``state`` variable); a key or a plan replaces it
with the value a transition returns, and the app redraws only the widgets whose inputs differ between
the old and the new snapshot (``inputs_differ``). Everything a plan request asks for is here (the
flags' budget and reserve, the what-if, the tokenizer, the policy, the pinned turn), and ``request``
is the one place a ``PlanRequest`` is built from it (the app's every request, and the launcher's
first one). Nothing here touches Textual, so every transition is testable alone. The worker
machinery (request numbers, the plan in flight, timers) is not view state and stays in the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tokenbox.core import Plan
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.core.model.errors import ErrorKind
from tokenbox.core.model.names import MAIN_THREAD, NATIVE_FORMAT
from tokenbox.core.model.session import TRIMMING_POLICIES
from tokenbox.core.planning.config import WHAT_IF_STEP_PERCENT
from tokenbox.tui.alerts import Watermark
from tokenbox.tui.glance import Glance
from tokenbox.tui.planner import AgentFacts, Outcome, PlanRequest, TurnPoint
from tokenbox.tui.view import FIRST_PLAN, NO_CHANGE, View, describe_changes

MIN_WHAT_IF = 1 - 100 // WHAT_IF_STEP_PERCENT  # the smallest what-if that leaves some max_ctx
MAX_WHAT_IF = 200
SETTINGS_ERRORS = (ErrorKind.SETTINGS, ErrorKind.INTERNAL, ErrorKind.WHAT_IF)  # shown as a settings error, not a file's
FILE_ERRORS = (ErrorKind.LOAD, ErrorKind.WAITING)
STALE_CHANGES = "reload failed: the last good plan stays"
HIDDEN = 100  # columns: below this the sidebar hides unless ``s`` shows it


@dataclass(frozen=True, eq=False)
class ViewState:
    """What the screen shows, at one moment.

    ``eq=False``: two snapshots are equal only when they are the same object, so replacing the state
    always redraws, and the redraw itself decides what differs (``inputs_differ``) without deep comparisons.
    """

    # what the next plan request asks for (flags and keys set these; they outlive a session switch)
    budget: int | None = None  # ``--budget``: the base of what-if (None: the session's own max_ctx)
    reserve_out: int | None = None  # ``--reserve-out`` (None: the session's own)
    trimming: str | None = None  # None: the session's own policy
    tokenizer: str | None = None  # None: the session's own tokenizer
    cycle_tokenizer: bool = False  # the pending request moves to the next tokenizer that works
    what_if: int = 0  # what-if budget, in steps of WHAT_IF_STEP_PERCENT of max_ctx
    sidebar: str | None = None  # "trace" | "breakdown"; None: breakdown for imported sessions
    sidebar_shown: bool | None = None  # None: by the terminal's width; else toggled with ``s``
    width: int = HIDDEN  # the terminal's columns (the app sets them on mount and on every resize)
    warn_levels: tuple[int, int, int] = DEFAULT_WARN_LEVELS  # percentages that colour and notify
    thread: str | None = None  # the thread of an agent's log shown (key ``a``); None: the main one
    # what is known of the session followed
    turn: int | None = None  # the turn pinned by ``[``/``]``; None follows the newest
    outcome: Outcome | None = None  # the newest outcome accepted (it may carry only an error)
    plan: Plan | None = None  # the plan on screen: the last good one
    glance: Glance | None = None  # before the first plan of a big file: its newest request from the file's tail
    facts: AgentFacts | None = None  # core's analysis of an agent's session, beside ``plan`` (None: tokenbox's)
    plans_shown: int = 0  # plans put on screen since the app started (a new plan is news)
    step: int = 0
    at_end: bool = True  # the step follows the plan's last step when a new plan arrives
    selected: int = 0  # index of the selected section in ``plan.sections``
    file_error: str | None = None
    waiting: bool = False  # the file has no complete turn yet (a state, not an error)
    waiting_for: str = ""  # what it still lacks: "the first complete line", "the agent's first message"
    settings_error: str | None = None
    timeline: tuple[TurnPoint, ...] = ()
    turn_count: int = 0
    changes: str = ""  # what the newest plan changed, in words
    reloaded: str | None = None  # clock time of the last reload that planned (None when suppressed)
    first_load: bool = True  # that reload was the session's first ("loaded", not "reloaded")
    watermark: Watermark = field(default_factory=Watermark)  # the thresholds already notified
    # the planner's progress
    working: bool = False  # the running plan has taken longer than the app's WORKING_AFTER
    stale: bool = False  # the file changed and is being read again: the plan shown is older

    # ------------------------------------------------------------------ derived

    def view(self) -> View | None:
        """The plan at the step shown, or None before the first plan."""
        return View.at(self.plan, self.shown_step, self.warn_levels) if self.plan is not None else None

    @property
    def sidebar_visible(self) -> bool:
        """Whether the sidebar shows: as toggled with ``s``, else from ``HIDDEN`` columns on."""
        return self.sidebar_shown if self.sidebar_shown is not None else self.width >= HIDDEN

    def request(self, path: str, *, reload: bool, reason: str, seq: int = 0) -> PlanRequest:
        """The plan request for this state: the one place a ``PlanRequest`` is made from the view state."""
        return PlanRequest(
            path=path,
            reload=reload,
            budget=self.budget,
            what_if=self.what_if,
            tokenizer=self.tokenizer,
            cycle_tokenizer=self.cycle_tokenizer,
            trimming=self.trimming,
            turn=self.turn,
            reason=reason,
            seq=seq,
            reserve_out=self.reserve_out,
            thread=self.thread,
        )

    def waiting_note(self) -> str:
        """The calm words of the waiting state ("waiting for the first complete line")."""
        return f"waiting for {self.waiting_for or 'the first complete turn'}"

    @property
    def agent(self) -> bool:
        """Whether the plan shown is of an agent's session (a transcript, rollout, chat, capture or request
        body): the screen shows the request's parts, not a layout's."""
        return self.plan is not None and self.plan.session.source_format != NATIVE_FORMAT

    @property
    def trimming_shown(self) -> bool:
        """Whether the trim controls apply: a tokenbox session's layout, or an agent's request packed into a
        what-if budget (``+``/``-``, or ``--budget``/``--reserve-out``): its Token Box plan under that window."""
        if self.plan is None:
            return False
        return not self.agent or self.plan.what_if != 0 or self.budget is not None or self.reserve_out is not None

    @property
    def shown_step(self) -> int:
        """The step drawn: the one stepped to, or for an agent's request as it was sent, step 0 (untrimmed)."""
        return self.step if self.trimming_shown else 0

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning of the plan shown (and of the lines the load skipped), whole."""
        return self.outcome.warnings if self.outcome is not None and self.plan is not None else ()

    @property
    def following(self) -> bool:
        """Whether the newest turn is shown as it arrives (no turn pinned)."""
        return self.turn is None

    # ------------------------------------------------------------------ sessions and plans

    def for_new_session(self) -> ViewState:
        """Nothing known yet of a new session; the choices made with keys stay."""
        return ViewState(budget=self.budget, reserve_out=self.reserve_out, trimming=self.trimming, tokenizer=self.tokenizer,
                         what_if=self.what_if, sidebar=self.sidebar, sidebar_shown=self.sidebar_shown, width=self.width,
                         warn_levels=self.warn_levels, plans_shown=self.plans_shown)

    def with_outcome(self, outcome: Outcome, reloaded: str | None = None) -> ViewState:
        """The state once ``outcome`` (a finished request of this session) is accepted.

        A reload (or a load/waiting outcome) sets the file's error; a settings error is the request's;
        a plan, when there is one, replaces the plan shown, keeping the selected section by id.
        """
        request, kind = outcome.request, outcome.error_kind
        changes: dict[str, object] = {"outcome": outcome, "glance": None,  # the plan (or the error) is the news now
                                      "settings_error": outcome.error if kind in SETTINGS_ERRORS else None}
        if request.reload or kind in FILE_ERRORS:
            changes.update(file_error=outcome.file_error, waiting=kind is ErrorKind.WAITING, waiting_for=outcome.waiting_for)
        if reloaded is not None and request.reload and outcome.plan is not None:  # a failed reload keeps the time
            changes.update(reloaded=reloaded, first_load=self.plan is None)
        state = replace(self, **changes)
        return state._showing(outcome, self.outcome) if outcome.plan is not None else state

    def _showing(self, outcome: Outcome, before: Outcome | None) -> ViewState:
        """The state showing ``outcome``'s plan (``before``: the outcome whose plan was on screen)."""
        plan = outcome.plan
        assert plan is not None
        old = self.plan
        selected_id = old.sections[self.selected].id if old is not None and self.selected < len(old.sections) else None
        changes = STALE_CHANGES if outcome.stale else describe_changes(old, plan)
        if changes == NO_CHANGE and self._reload_changed(outcome, before):
            # a reload that found nothing new (a half-written line) after one that did: the status goes on
            # saying what the file's writes changed since the screen before them (a request added), not
            # "no change" under a request count that has just moved
            changes = self.changes
        elif outcome.skipped_tokenizers:
            changes += f"; skipped tokenizers {', '.join(outcome.skipped_tokenizers)}"
        last = len(plan.steps)
        count = len(plan.sections)
        if selected_id is not None and self.selected < count and plan.sections[self.selected].id == selected_id:
            selected = self.selected  # where it was (a followed session's next request keeps its parts in place)
        else:
            ids = [s.id for s in plan.sections]
            selected = ids.index(selected_id) if selected_id in ids else self.selected
        return replace(
            self,
            plan=plan,
            facts=outcome.agent,
            thread=None if outcome.agent is None or outcome.agent.thread == MAIN_THREAD else outcome.agent.thread,
            plans_shown=self.plans_shown + 1,
            changes=changes,
            timeline=outcome.timeline,
            turn_count=outcome.turn_count,
            tokenizer=plan.tokenizer.name if self.cycle_tokenizer else self.tokenizer,
            cycle_tokenizer=False,
            step=last if self.at_end else min(self.step, last),
            selected=max(0, min(selected, count - 1)),
        )

    def _reload_changed(self, outcome: Outcome, before: Outcome | None) -> bool:
        """Whether ``outcome`` is a reload and the plan shown (``before``'s) came from a reload that changed something."""
        return (outcome.request.reload and before is not None and before.request.reload and before.plan is not None
                and not before.stale and self.changes not in ("", FIRST_PLAN, NO_CHANGE, STALE_CHANGES))

    def with_glance(self, glance: Glance | None) -> ViewState:
        """The newest request as the file's tail records it, shown until the first outcome (ignored after it)."""
        if self.outcome is not None or self.plan is not None:
            return self
        return replace(self, glance=glance)

    def with_timeline(self, outcome: Outcome) -> ViewState:
        """Every turn's estimate, filled in after ``outcome``'s plan (ignored for an older request)."""
        if self.outcome is None or outcome.request is not self.outcome.request:
            return self
        return replace(self, outcome=outcome, timeline=outcome.timeline)

    # ------------------------------------------------------------------ keys

    def stepped_to(self, step: int) -> ViewState:
        """The layout after ``step`` (negative: the last), with the section that step changed selected
        (the one the trace and the table mark ``◀``); at step 0 the selection stays."""
        if self.plan is None:
            return self
        last = len(self.plan.steps)
        new = last if step < 0 else max(0, min(last, step))
        selected = self.selected
        if new >= 1 and new != self.step:
            changed = self.plan.steps[new - 1].section
            ids = [s.id for s in self.plan.sections]
            if changed in ids:
                selected = ids.index(changed)
        return replace(self, step=new, at_end=new == last, selected=selected)

    def stepped_by(self, delta: int) -> ViewState:
        """``delta`` steps forward (or back), within the trace."""
        if self.plan is None:
            return self
        return self.stepped_to(max(0, min(len(self.plan.steps), self.step + delta)))

    def selected_by(self, delta: int) -> ViewState:
        """The selection moved by ``delta`` rows, within the sections."""
        if self.plan is None or not self.plan.sections:
            return self
        return replace(self, selected=max(0, min(len(self.plan.sections) - 1, self.selected + delta)))

    def with_what_if(self, delta: int) -> ViewState:
        """The what-if budget ``delta`` steps bigger or smaller; 0 resets it."""
        what_if = 0 if delta == 0 else max(MIN_WHAT_IF, min(MAX_WHAT_IF, self.what_if + delta))
        return replace(self, what_if=what_if)

    def with_next_policy(self) -> ViewState:
        """The next trimming policy (from the one asked for, else the plan's)."""
        current = self.trimming or (self.plan.trimming if self.plan else TRIMMING_POLICIES[0])
        index = TRIMMING_POLICIES.index(current) + 1 if current in TRIMMING_POLICIES else 0
        return replace(self, trimming=TRIMMING_POLICIES[index % len(TRIMMING_POLICIES)])

    def with_next_tokenizer(self) -> ViewState:
        """The next tokenizer the session can use (the request skips those that fail)."""
        names = list(self.outcome.tokenizers) if self.outcome and self.outcome.tokenizers else []
        if not names:
            return self
        current = self.tokenizer or (self.plan.tokenizer.name if self.plan else names[0])
        index = names.index(current) if current in names else -1
        return replace(self, tokenizer=names[(index + 1) % len(names)], cycle_tokenizer=True)

    def with_turn(self, delta: int) -> ViewState:
        """A turn pinned ``delta`` from the one asked for last (not the one on screen: ``[[[`` moves three)."""
        if self.plan is None or self.turn_count <= 1:
            return self
        current = self.turn if self.turn is not None else self.plan.session.turn
        return replace(self, turn=max(1, min(self.turn_count, current + delta)))

    def with_thread(self, thread: str | None) -> ViewState:
        """Another thread of the log (None: the main one), following its newest turn."""
        return replace(self, thread=thread, turn=None, selected=0, at_end=True)

    def with_sidebar_switched(self, imported: bool) -> ViewState:
        """The lower sidebar switched between the trim trace and the breakdown."""
        showing = self.sidebar == "breakdown" if self.sidebar else imported
        return replace(self, sidebar="trace" if showing else "breakdown")


_SCALARS = (str, int, float, bool, type(None))


def same_input(a: object, b: object) -> bool:
    """Whether two inputs of a widget draw the same: plain values by value, tuples item by item, and any
    other object (a plan, an outcome, a view) by identity — the state replaces an object when it changes."""
    if a is b:
        return True
    if isinstance(a, _SCALARS) and isinstance(b, _SCALARS):
        return type(a) is type(b) and a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_input(x, y) for x, y in zip(a, b, strict=True))
    return False


def inputs_differ(read, old: ViewState | None, new: ViewState) -> bool:
    """Whether ``read`` (a function of the state: what one widget draws from) gives other inputs for
    ``new`` than for ``old`` (always, with no ``old``). What a widget redraws on follows from what it
    reads: no list of field names to keep beside it."""
    return old is None or not same_input(read(old), read(new))
