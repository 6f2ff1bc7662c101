"""Pure view computations shared by the widgets: the state at a step, bar classes, bar cells, diffs.

Nothing here touches Textual; it turns a ``Plan`` and a step number into numbers and labels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

from tokenbox.core import Plan
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.core.model.names import NATIVE_FORMAT
from tokenbox.core.model.plan import HeadlineKind, LayoutState, fingerprint_of, texts_differ
from tokenbox.tui.figures import Figures, same_places

BAR_COUNT = 9  # sections cycle through the component classes bar--0 .. bar--8 (colours: app.tcss)
Levels = tuple[int, int, int]  # the warning levels (percent of the window): the view state's ``warn_levels``


@dataclass(frozen=True)
class View:
    """Everything a widget needs to draw one moment: the plan, the step shown and its layout, and the
    figures of its parts every widget reads (``tui/figures.py``: worked out once, not once per widget)."""

    plan: Plan
    step: int
    state: LayoutState
    levels: Levels = DEFAULT_WARN_LEVELS  # the warning levels it is coloured by
    figures: Figures = dataclasses.field(default=None, compare=False, repr=False)  # type: ignore[assignment]  # None: worked out here

    def __post_init__(self) -> None:
        if self.figures is None:
            object.__setattr__(self, "figures", Figures.of(self.plan, self.state))

    @classmethod
    def at(cls, plan: Plan, step: int, levels: Levels = DEFAULT_WARN_LEVELS, before: View | None = None) -> View:
        """``plan`` after ``step``; ``before`` (the view shown until now) lends what its parts are where the
        two plans hold the same sections (a followed session's next request: all but its first and newest)."""
        state = plan.state_at(step)  # step 0: each part's state made when read (``model.plan.Built``)
        figures = Figures.of(plan, state, before.figures if before is not None else None)
        return cls(plan, state.step, state, levels, figures)

    @property
    def last_step(self) -> int:
        return len(self.plan.steps)

    @property
    def total(self) -> int:
        return self.state.total

    @property
    def window(self) -> int | None:
        """What the headline is measured against: a foreign request's context window (``None`` when
        unknown; CONTRACT §11), else ``max_ctx``. A what-if or ``--budget`` is the window it sets."""
        plan = self.plan
        if plan.window is None or plan.what_if:
            return plan.budget.max_ctx
        return plan.window_tokens

    @property
    def percent(self) -> int:
        """Usage of the window after this step (not clamped: the untrimmed layout, or a prediction, may
        exceed 100%; 0 when the window is unknown)."""
        window = self.window
        return (100 * self.state.total) // window if window else 0

    @property
    def level(self) -> str:
        """The gauge's colour level: over budget at the shown step is ``crit``; a prediction (a pending
        request: nothing was sent yet) is never more than ``warn``, whatever it would reach."""
        if self.state.deficit > 0 or not self.plan.ok:
            return "crit"
        named = level(self.percent, self.levels) if self.window else "ok"
        return "warn" if named == "crit" and self.plan.pending else named

    @property
    def joins(self) -> int:
        """What joining the parts adds: the total less the tokens the parts show."""
        return self.state.total - self.figures.shown_total

    @property
    def approx(self) -> str:
        """``≈`` unless the parts are counted exactly: the tokenizer's own count, or a request body counted
        by the provider's published rules (its text parts exact, its framing the rule's)."""
        return approx_mark(self.plan)

    @property
    def headline_approx(self) -> str:
        """``≈`` unless the total shown is exact: the tokenizer's count, or a request's recorded (or
        counted) cost before any trimming step (README, "Real agents")."""
        kind = self.plan.headline_kind
        if kind == HeadlineKind.EXACT or (not kind.approximate and self.state.total == self.plan.tokens_before):
            return ""
        return "≈"

    def fingerprint(self) -> str:
        """sha256 of the context rendered after this step (the plan's fingerprint at the last step)."""
        if self.step == self.last_step:
            return self.plan.fingerprint
        return fingerprint_of(s.text for s in self.state.sections)


def level(percent: int, levels: Levels = DEFAULT_WARN_LEVELS) -> str:
    """``ok`` below the first warning level (75% by default), ``warn`` below the second (90%), ``crit`` from there on."""
    if percent < levels[0]:
        return "ok"
    if percent < levels[1]:
        return "warn"
    return "crit"


def band(percent: int | None, levels: Levels = DEFAULT_WARN_LEVELS) -> int:
    """How many of the warning ``levels`` (75/90/100% by default) ``percent`` has reached (0..3)."""
    if percent is None:
        return 0
    return sum(percent >= t for t in levels)


def bar_class(index: int) -> str:
    """The component class that colours section ``index``'s bar (the palette cycles)."""
    return f"bar--{index % BAR_COUNT}"


def fmt(n: int, approx: str = "") -> str:
    """A token count with thin grouping (``14 540``) and the approximation mark."""
    return f"{approx}{n:,}".replace(",", " ")


def gauge_cells(view: View, width: int) -> list[tuple[str, int]]:
    """The gauge bar as ``width`` cells, each ``(kind, section index)``.

    Kinds: ``section`` (index = the section), ``joins``, ``free``, ``headroom``, ``reserve``, and
    ``over`` where used tokens run into headroom/reserve or past ``max_ctx``.
    """
    budget = view.plan.budget
    max_ctx = max(1, budget.max_ctx)
    after_headroom = budget.available + budget.reserve_out  # floor(max_ctx * (1 - headroom))

    def cell_of(tokens: int) -> int:
        return min(width, (tokens * width + max_ctx // 2) // max_ctx)

    cells: list[tuple[str, int]] = [("free", -1)] * width
    head_start, reserve_start = cell_of(budget.available), cell_of(after_headroom)
    for i in range(reserve_start, width):
        cells[i] = ("headroom", -1)
    for i in range(head_start, reserve_start):
        cells[i] = ("reserve", -1)
    used = 0
    parts = [(s.tokens, "section", i) for i, s in enumerate(view.state.sections) if s.tokens]
    if view.joins > 0:
        parts.append((view.joins, "joins", -1))
    for tokens, kind, index in parts:
        start, used = cell_of(used), used + tokens
        end = max(cell_of(used), start + 1 if start < width else start)
        # a part past the available cells is "over" only when the tokens really are: the one cell
        # every small part gets can push a layout that fits a cell or two further by rounding alone
        over = used > budget.available
        for i in range(start, min(end, width)):
            cells[i] = ("over", index) if over and i >= head_start else (kind, index)
    if view.total > max_ctx and width:
        cells[-1] = ("over", -1)
    return cells


def section_key(section) -> object:
    """A section's identity for diffs: its attributes without its position in the file."""
    try:
        return replace(section, line=0, col=0)
    except TypeError:  # pragma: no cover - a section without positions
        return section


def _edited(before, after) -> bool:
    """Whether a section's content differs between two plans (the same ``Section`` object, which a
    followed file keeps for what did not change, is the same content)."""
    if before.section is after.section:
        return before.text_before != after.text_before
    return section_key(before.section) != section_key(after.section) or before.text_before != after.text_before


FIRST_PLAN, NO_CHANGE = "first plan", "no change"  # ``describe_changes``' words for no plan before, and an equal one


def describe_changes(old: Plan | None, new: Plan) -> str:
    """What changed between two plans: sections added/removed/edited, budget, tokenizer, policy, turn."""
    if old is None:
        return FIRST_PLAN
    if old.session.thread != new.session.thread:
        return f"thread {new.session.thread}"  # another thread of the log: nothing of the one before is compared
    # an agent's session counts requests (as its top bar does), a tokenbox log its turns
    turn = f"{'turn' if new.session.source_format == NATIVE_FORMAT else 'request'} {new.session.turn}/{new.session.turn_count}"
    compacted = len(new.session.meta.get("compactions") or ()) - len(old.session.meta.get("compactions") or ())
    if compacted > 0 and new.session.turn >= old.session.turn:  # every part changed: say why, not which
        return f"{turn}; compacted: the context restarted from a summary (the ledger is under the categories)"
    parts: list[str] = []
    if old.session.turn != new.session.turn or old.session.turn_count != new.session.turn_count:
        parts.append(turn)
    olds, news = old.sections, new.sections
    start, end = same_places(olds, news)
    if start < end and texts_differ(olds, news, start, end):
        start = end = 0  # a text of the same section changed (not while following): every section is compared
    # the sections both plans hold at the same places (a followed session's next request: all but its first
    # and newest) are neither added, removed, edited nor moved relative to each other: the rest is compared,
    # and a section that went from before them to after them (or back) has moved
    before = {s.id: s for s in (*olds[:start], *olds[end:])}
    after = {s.id: s for s in (*news[:start], *news[end:])}
    added = [i for i in after if i not in before]
    removed = [i for i in before if i not in after]
    edited = [
        i for i in after
        if i in before and _edited(before[i], after[i])
    ]
    crossed = start < end and ({s.id for s in olds[:start]} & {s.id for s in news[end:]}
                               or {s.id for s in olds[end:]} & {s.id for s in news[:start]})
    if crossed or [i for i in before if i in after] != [i for i in after if i in before]:
        parts.append("sections reordered")
    for label, ids in (("added", added), ("removed", removed), ("edited", edited)):
        if ids:
            shown = ", ".join(ids[:4]) + (f" +{len(ids) - 4}" if len(ids) > 4 else "")
            parts.append(f"{label} {shown}")
    if old.budget != new.budget:
        parts.append(f"max_ctx {fmt(old.budget.max_ctx)} → {fmt(new.budget.max_ctx)}"
                     if old.budget.max_ctx != new.budget.max_ctx else "budget settings")
    if old.tokenizer.name != new.tokenizer.name:
        parts.append(f"tokenizer {new.tokenizer.name}")
    if old.trimming != new.trimming:
        parts.append(f"policy {new.trimming}")
    return "; ".join(parts) if parts else NO_CHANGE


MIN_NAME = 8  # characters a name in the top bar keeps when later fields need its room


def fitted(fields: list[str], width: int, separator: str = " · ", name: int | None = None, essential: int = 0,
           spare: tuple[int, ...] = ()) -> str:
    """``fields`` joined by ``separator`` within ``width`` cells: the leading fields that fit whole and
    "…" for the rest, so that no number is shown cut short; the first field is always there.

    The field at index ``name`` (a name, not a number) is cut with "…" rather than dropped: as much as
    it takes for the fields up to index ``essential`` to fit (down to ``MIN_NAME`` characters), or to
    the room left when it is the first that does not fit.

    When the fields up to ``essential`` do not fit even so, the fields at the indices ``spare`` (all
    before ``essential``) are left out, one by one in that order, until they do: on a narrow terminal the
    request shown matters more than the window's size or the model's name. If they still do not fit once
    every spare field is out, the longest field left before ``essential`` (a sub-agent's long thread name)
    is cut as the name is.
    """
    shown, count = _fitted(list(fields), width, separator, name, essential)
    fields = list(fields)
    left = list(spare)
    while left and count <= essential:  # an essential field is not there
        index = left.pop(0)
        del fields[index]
        name = None if name == index else name if name is None or name < index else name - 1
        essential -= 1
        left = [other - 1 if other > index else other for other in left]
        shown, count = _fitted(fields, width, separator, name, essential)
    if spare and count <= essential and essential > 1:
        longest = max(range(1, essential), key=lambda index: (len(fields[index]), -index))
        if longest != name:
            shown, count = _fitted(list(fields), width, separator, longest, essential)
    return shown


def _fitted(fields: list[str], width: int, separator: str, name: int | None, essential: int) -> tuple[str, int]:
    """``fitted`` without spare fields, and how many fields it shows (a cut name counts)."""
    if name is not None and name < len(fields):
        # the most essential fields that a shorter name lets fit: cut it by as much as that takes
        for last in range(min(essential, len(fields) - 1), name, -1):
            marker = len(separator) + 1 if last + 1 < len(fields) else 0
            cut = len(separator.join(fields[: last + 1])) + marker - width
            if cut <= 0:
                break
            if cut + 1 <= len(fields[name]) - MIN_NAME:
                fields[name] = fields[name][: len(fields[name]) - cut - 1] + "…"
                break
    shown = fields[0]
    for index, field in enumerate(fields[1:], 1):
        more = index < len(fields) - 1
        if len(shown) + len(separator) + len(field) + (len(separator) + 1 if more else 0) > width:
            room = width - len(shown) - len(separator)
            if index == name and room > 1:
                return shown + separator + field[: room - 1] + "…", index + 1
            return shown + separator + "…", index
        shown += separator + field
    return shown, len(fields)


def approx_mark(plan: Plan) -> str:
    """``≈`` unless ``plan``'s parts are counted exactly (``View.approx``)."""
    exact = plan.tokenizer.exact or plan.headline_kind == HeadlineKind.COUNTED
    return "" if exact else "≈"
