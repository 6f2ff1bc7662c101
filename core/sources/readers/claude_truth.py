"""The headline of a real agent's turn: what the request cost (recorded) or will cost (predicted).

A transcript records, per request, the context the provider counted, but holds only part of what was
sent (no system prompt, tool definitions or memory files). Per thread, the estimates of the visible
parts are fitted to the recorded history, and the rest becomes one critical ``inferred`` section:

* **scale** — the visible estimate's growth between consecutive requests is compared with the
  recorded growth (pairs in one context: no compaction or rewind between), over the last
  ``WINDOW`` pairs up to the turn: ``scale = Σ ΔR / Σ ΔV``. The hidden part is constant within a
  thread (to about ±0.5 %), so the growth isolates the visible part. Without a usable pair the
  scale is 1 (the base estimate is itself fitted to real Claude Code sessions).
* **a recorded turn** — the headline is the recorded context ``R``; the visible sections are counted
  at that scale and the ``inferred`` section is the rest, so the parts add up exactly.
* **a pending turn** (input after the thread's last request) — predicted as the last recorded
  context plus the scaled estimate of what was added since (the reply itself and the new input; a
  reply's ``output_tokens`` in a transcript is often a streaming placeholder and is not used). After
  a compaction or a rewind the prediction is the fitted hidden part plus the scaled visible estimate.
* **no recorded request yet** — the hidden part is borrowed from another session of the same
  project when one records it; otherwise it is unknown, a warning says so and the figure is a floor.

``Plan.calibration`` says, for each turn, which of these applied and from which requests.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence

from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.records import dataclass, replace
from tokenbox.core.model.session import Calibration, RecordedUsage, Section, Session
from tokenbox.core.sources.readers.common import inferred_section
from tokenbox.core.tokens.charclass import BaseEstimates, base_estimate, scaled_sum

WINDOW = 16  # request pairs the scale is fitted on (the newest up to the turn)

# The hidden part (system prompt, tools, memory files, session-start hook output) of a Claude Code
# request before anything of the session was recorded, when no other session of the project records
# it: the median over the real transcripts in ``tests/`` and the staging corpus of issue 26 (first
# requests of 1.x main threads 14.8k–23.1k, of 2.x main threads 25.4k–26.5k, of sub-agents
# 11.6k–24.6k). A typical figure, not this session's: the plan marks it ``≈`` and says so.
TYPICAL_HIDDEN = {("main", 1): 15_100, ("main", 2): 25_900, ("agent", 1): 14_500, ("agent", 2): 14_500}

# What Claude Code attaches again after a compaction (its ``compact.ts`` constants, quoted by several
# ports, and 2.1.39's bundle): the 5 files read or written last, each whole when its content is at most
# 5 000 tokens, 50 000 in all; the plan of a plan-mode session and the todo list. A larger file is not
# cut to 5 000: the Read that restores it fails on the limit and Claude Code attaches a one-line note
# naming it instead (``compact_file_reference``, its wording below).
RESTORE_FILES = 5
RESTORE_FILE_TOKENS = 5_000
RESTORE_BUDGET = 50_000
LINE_NUMBER = base_estimate("   123\u2192")  # a restored file is numbered like a Read result
REFERENCE_NOTE = base_estimate(
    "Note: /a/path/to/the/file.ext was read before the last conversation was summarized, but the contents "
    "are too large to include. Use Read tool if you need to access it."
)
SCALE_BOUNDS = (0.3, 5.0)
# A pair whose recorded growth is this far from its visible growth is a jump the file does not show
# (a reminder, a skill or an attachment Claude Code added unseen; content it dropped), not a scale:
# it is left out of the fit, and the next recorded request resets the prediction.
PAIR_RATIO = (0.5, 3.0)
RESIDUAL_NOTED = 0.05  # a recorded request this far from its prediction gets a warning that says so
PRIOR_SCALE = 1.3  # transcripts' visible text against recorded growth, over the real sessions in tests
PRIOR_WEIGHT = 400.0


@dataclass(frozen=True, slots=True)
class Observation:
    """One request of a thread as calibration sees it."""

    recorded: int | None  # recorded context, when usage was recorded
    visible: float  # base estimate of what the file shows of its context
    epoch: int  # compactions before it; pairs across one are not comparable
    model: str | None = None  # pairs across a model switch are not either (another system prompt, tokenizer)


@dataclass(frozen=True, slots=True)
class Fit:
    """The calibration of one turn: its scale, the hidden part, and the words for ``calibration``."""

    scale: float
    hidden: int | None
    turns: tuple[int, ...]
    method: str
    source: str = ""
    typical: bool = False  # the hidden part is a typical figure, not this session's

    residual: int | None = None  # a recorded request's figure less its prediction

    def calibration(self) -> Calibration:
        return Calibration(self.method, self.scale, self.hidden, self.turns, self.source, self.residual)


class ScaleFits:
    """The scale fitted for each request of a thread, extended as requests arrive.

    ``update(observations)`` recomputes only from the last request it had seen (whose usage may still
    have changed while its lines were written), so a followed thread costs O(1) per new request. It reads
    as the sequence of each request's fit: its scale and the numbers of the requests it was fitted on.
    """

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        # each request's scale, and the pairs before it (its fit's are the WINDOW before): 16 bytes a request in
        # two arrays, not a tuple of its scale and of the numbers of its fit's requests (≈220 bytes a request of
        # a session followed; those numbers are put together from the pairs when a fit is read: ``__getitem__``)
        self._scales = array("d")
        self._ends = array("q")
        # the pairs fits are made on, oldest first: each pair's request number (the request before it is the
        # number less one), and what it grew by as recorded (ΔR) and in its visible parts (ΔV): three arrays, 24
        # bytes a pair, not a tuple of four (≈190 bytes with its numbers). A ΔR is a whole number, as a double
        # exactly, and the sums add them in the same order: the same figures
        self._numbers = array("q")
        self._grown_r = array("d")
        self._grown_v = array("d")

    def update(self, observations: Sequence[Observation]) -> ScaleFits:
        # Requests only change at the end (the newest one while its lines are written): walk back
        # from there to the last observation that is still the same.
        start = min(len(self.observations), len(observations))
        while start > 0 and self.observations[start - 1] != observations[start - 1]:
            start -= 1
        start = max(0, start - 1)  # the last one seen is refitted anyway
        if start < len(self.observations):
            del self.observations[start:]
            del self._scales[start:]
            del self._ends[start:]
            while self._numbers and self._numbers[-1] > start:
                self._numbers.pop()
                self._grown_r.pop()
                self._grown_v.pop()
        for i in range(start, len(observations)):
            obs = observations[i]
            if i > 0:
                prev = observations[i - 1]
                if (obs.recorded is not None and prev.recorded is not None and obs.epoch == prev.epoch
                        and obs.model == prev.model and obs.visible > prev.visible and obs.recorded > prev.recorded
                        and PAIR_RATIO[0] <= (obs.recorded - prev.recorded) / (obs.visible - prev.visible) <= PAIR_RATIO[1]):
                    self._numbers.append(i + 1)
                    self._grown_r.append(obs.recorded - prev.recorded)
                    self._grown_v.append(obs.visible - prev.visible)
            end = len(self._numbers)
            first = max(0, end - WINDOW)
            d_r = sum(self._grown_r[first:end]) + PRIOR_SCALE * PRIOR_WEIGHT
            d_v = sum(self._grown_v[first:end]) + PRIOR_WEIGHT
            # the growth fit, shrunk toward the prior while few requests back it (one pair of small
            # requests says little); the prior weighs as much as PRIOR_WEIGHT base tokens of growth
            scale = round(min(max(d_r / d_v, SCALE_BOUNDS[0]), SCALE_BOUNDS[1]), 4)  # as the plan JSON writes it
            self.observations.append(obs)
            self._scales.append(scale)
            self._ends.append(end)
        return self

    def __len__(self) -> int:
        return len(self._scales)

    def __getitem__(self, index: int) -> tuple[float, tuple[int, ...]]:
        """Request ``index``'s fit: its scale, and the numbers of the requests of its pairs, in order."""
        end = self._ends[index]
        numbers = self._numbers[max(0, end - WINDOW):end]
        return self._scales[index], tuple(sorted({n for number in numbers for n in (number - 1, number)}))


def _parts(sections: Sequence[Section], bases: BaseEstimates) -> tuple[int, list[float]]:
    """The fixed sizes' total and the base estimate of every other non-blank section's text."""
    fixed = 0
    estimates: list[float] = []
    for section in sections:
        if section.tokens is not None:
            fixed += section.tokens  # a fixed size (an image, a reply's 0)
        elif section.text and not section.text.isspace():
            estimates.append(bases(section.text))
    return fixed, estimates


def _total(fixed: int, estimates: Sequence[float], scale: float) -> int:
    return fixed + scaled_sum(estimates, scale)


class PartSums:
    """A thread's visible sections as its turns are built, with their calibrated totals kept per scale.

    A thread's turns share their sections (``readers.common.SectionCache``): the next request's turn
    is the last one's sections, less the newest messages' (built again once they are no longer the
    latest), plus what was appended. ``align`` keeps the base estimates of the common prefix and the
    sum at each scale asked for before, so a turn's count at a scale met before costs the parts that
    differ, not every part of the chain (``summed`` counts the parts rounded and added, all told).
    The figures are those of ``visible_tokens``: each part is rounded on its own, integers add up
    in any order.
    """

    SCALES = 64  # totals kept (a fit down searches a dozen scales, most of them near the last one's)

    def __init__(self, bases: BaseEstimates) -> None:
        self.bases = bases
        self.summed = 0
        self._sections: tuple[Section, ...] = ()
        self._fixed = array("q", [0])  # the fixed sizes of the first i sections
        self._counted = array("q", [0])  # how many of the first i sections have an estimate
        self._spread = array("d", [0.0])  # the base estimates of the first i sections, added up
        self._estimates = array("d")
        self._totals: dict[float, list[int]] = {}  # scale -> [estimates summed, their rounded sum]
        self._lock = threading.Lock()

    def _align(self, sections: Sequence[Section]) -> None:
        sections = tuple(sections)
        if sections is self._sections:
            return
        keep = shared_prefix(self._sections, sections)  # the newest messages' sections differ
        counted = self._counted[keep]
        if len(self._estimates) > counted:
            dropped = self._estimates[counted:]
            for scale, entry in list(self._totals.items()):
                if entry[0] > counted:
                    entry[1] -= scaled_sum(dropped[: entry[0] - counted], scale)
                    self.summed += entry[0] - counted
                    entry[0] = counted
            del self._estimates[counted:]
        del self._fixed[keep + 1:], self._counted[keep + 1:], self._spread[keep + 1:]
        fixed, count, spread = self._fixed[keep], counted, self._spread[keep]
        bases = self.bases
        for section in sections[keep:]:
            if section.tokens is not None:
                fixed += section.tokens
            elif section.text and not section.text.isspace():
                base = bases(section.text)
                self._estimates.append(base)
                count += 1
                spread += base
            self._fixed.append(fixed)
            self._counted.append(count)
            self._spread.append(spread)
        self._sections = sections

    def _at(self, scale: float) -> int:
        entry = self._totals.pop(scale, None)
        if entry is None:
            entry = [0, 0]
            if len(self._totals) >= self.SCALES:
                self._totals.pop(next(iter(self._totals)))
        self._totals[scale] = entry  # newest last
        count = len(self._estimates)
        if entry[0] < count:
            entry[1] += scaled_sum(self._estimates[entry[0]:], scale)
            self.summed += count - entry[0]
            entry[0] = count
        return self._fixed[-1] + entry[1]

    def visible(self, sections: Sequence[Section], scale: float) -> int:
        """``visible_tokens(sections, scale)``."""
        with self._lock:
            self._align(sections)
            return self._at(scale)

    def fit(self, sections: Sequence[Section], target: int, scale: float) -> float:
        """``fit_within(sections, target, scale)``."""
        with self._lock:
            self._align(sections)
            cheap = [step for step in map(_step, self._totals) if step / 10_000 in self._totals]
            return _largest_fit(lambda s: self._at(s), self._fixed[-1], self._spread[-1], target, scale, cheap)


def _step(scale: float) -> int:
    return round(scale * 10_000)


def visible_tokens(sections: Sequence[Section], scale: float, bases: BaseEstimates | None = None) -> int:
    """The calibrated count of the visible sections (parts with a fixed size count that size)."""
    fixed, estimates = _parts(sections, bases if bases is not None else BaseEstimates())
    return _total(fixed, estimates, scale)


def fit_within(sections: Sequence[Section], target: int, scale: float, bases: BaseEstimates | None = None) -> float:
    """The largest scale (4 decimals, at most ``scale``) at which the visible sections count at most ``target``."""
    fixed, estimates = _parts(sections, bases if bases is not None else BaseEstimates())
    return _largest_fit(lambda s: _total(fixed, estimates, s), fixed, sum(estimates), target, scale)


def _largest_fit(total, fixed: int, spread: float, target: int, scale: float, cheap: Sequence[int] = ()) -> float:
    """The largest step of 1/10 000 (at most ``scale``) whose ``total`` is at most ``target``.

    ``total`` grows with the scale, so the step is one whatever the search's path: ``fixed`` and
    ``spread`` (the estimates added up), the counts met on the way and the ``cheap`` steps (whose totals
    are known already: a thread's fits of the requests before) only place its guesses."""
    counts: dict[int, int] = {}

    def fits(step: int) -> bool:
        count = counts.get(step)
        if count is None:
            count = counts[step] = total(step / 10_000)
        return count <= target

    top = round(scale * 10_000)
    if fits(top):
        return top / 10_000
    # the answer is in [low, high): fits(low) (None: no step known to fit yet), not fits(high)
    low: int | None = None
    high = top
    steps = sorted(step for step in cheap if 0 <= step < top)
    first, last = 0, len(steps)
    while first < last:  # the cheap steps first, by bisection
        middle = (first + last) // 2
        if fits(steps[middle]):
            low, first = steps[middle], middle + 1
        else:
            high, last = steps[middle], middle
    # The count is nearly proportional to the scale (each part's rounding moves it by less than a part):
    # a line through the counts known at both ends of the bracket (or through the top's and a first
    # proportional guess) lands within a step or two of the answer, where a gallop brackets it (a few
    # sums over thousands of parts, not a dozen).
    floor = 0 if low is None else low
    if low is None:
        guess = int(top * max(0, target - fixed) / (spread * scale)) if spread > 0 else 0
        guess = max(floor, min(guess, high - 1))
        fits(guess)
        start, end = guess, high
    else:
        start, end = low, high
    if counts[start] != counts[end]:
        guess = start + (target - counts[start]) * (end - start) // (counts[end] - counts[start])
    else:
        guess = start
    guess = max(floor, min(guess, high - 1))
    width = 1
    if fits(guess):
        low = guess
        while low + width < high and fits(low + width):
            low += width
            width *= 4
        high = min(high, low + width)
    else:
        high = guess
        while True:
            step = max(floor, high - width)
            if low is not None and step <= low:
                break
            if fits(step):
                low = step
                break
            if step == floor:
                return 0.0  # not even the smallest step fits
            high = step
            width *= 4
    assert low is not None
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low / 10_000


def with_truth(
    session: Session,
    *,
    target: int | None,
    fit: Fit,
    pending: bool,
    thread: str,
    warnings: tuple[str, ...],
    hidden_label: str,
    bases: BaseEstimates | None = None,
    sums: PartSums | None = None,
) -> Session:
    """``session`` with its ``inferred`` part sized so that everything adds up to ``target``.

    ``target`` ``None`` (the hidden part unknown) gives an ``inferred`` part of 0 tokens and a headline
    that is only a floor; the caller's warnings say so. ``sums``: the thread's running sums (the same
    figures, counted for what differs from the turn built before).
    """
    if sums is None:
        sums = PartSums(bases if bases is not None else BaseEstimates())
    visible = sums.visible(session.sections, fit.scale)
    notes = [*warnings, *session.warnings]  # the reader's, then what the turn's blocks could not measure
    if target is not None and visible > target and session.calibration is None:
        # The recorded context is smaller than the visible parts' estimate (a placeholder usage, or
        # content the provider counts for less): scale the estimates down so that they fit it.
        fitted = sums.fit(session.sections, target, fit.scale)
        notes.append(
            f"the visible parts are estimated at {visible} tokens, more than the {target} the request cost; "
            f"estimates scaled ×{fitted:.4f} to fit"
        )
        fit = Fit(fitted, 0, fit.turns, fit.method + f"; scaled down ×{fitted:.4f} to fit the recorded context", fit.source)
        visible = sums.visible(session.sections, fitted)
    if target is None:
        hidden = 0
        known = False
    else:
        hidden = target - visible
        known = True
        if hidden < 0:
            notes.append(
                f"the visible parts are estimated at {visible} tokens, more than the {target} the request cost; "
                "the hidden part is shown as 0"
            )
            hidden = 0
    sections = (inferred_section(hidden, hidden_label, known), *session.sections)
    return replace(
        session,
        sections=sections,
        tokenizer=session.tokenizer or ESTIMATE,
        context_tokens=target if target is not None else None,
        pending=pending,
        thread=thread,
        calibration=fit.calibration(),
        warnings=tuple(notes),
    )


def recorded_context(usage: RecordedUsage | None) -> int | None:
    return None if usage is None else usage.context_tokens


def typical_hidden(version: str | None, main: bool) -> tuple[int, str]:
    """The typical hidden part of a Claude Code request (``TYPICAL_HIDDEN``) and where it comes from."""
    major = 1 if version and version.startswith(("0.", "1.")) else 2
    key = ("main" if main else "agent", major)
    thread = "main threads" if main else "sub-agents"
    return TYPICAL_HIDDEN[key], f"the typical hidden part of Claude Code {major}.x {thread}"


@dataclass(frozen=True, slots=True)
class Restored:
    """What a compaction attaches again, in base-estimate units: the files (newest first, each as
    ``(attached, content)``: numbered as a Read shows it, and its bare content, which the limit is on),
    the plan, the todo list."""

    files: tuple[tuple[float, float], ...] = ()
    plan: float = 0.0
    todos: float = 0.0

    def _files(self, scale: float) -> list[int]:
        """Each file's attachment at ``scale``: the file, or the note naming it when its content is over
        5 000 tokens; Claude Code keeps them in order while they fit its 50 000."""
        kept: list[int] = []
        used = 0
        for attached, content in self.files[:RESTORE_FILES]:
            size = round(attached * scale) if round(content * scale) <= RESTORE_FILE_TOKENS else round(REFERENCE_NOTE * scale)
            if used + size <= RESTORE_BUDGET:
                used += size
                kept.append(size)
        return kept

    def tokens(self, scale: float) -> int:
        """Its size at ``scale``, with Claude Code's limits (a file over 5 000 tokens named only; 50 000 in all)."""
        return sum(self._files(scale)) + round(self.plan * scale) + round(self.todos * scale)

    def describe(self, scale: float) -> str:
        """What it holds, e.g. ``3 files, 2 named only (over 5000 tokens), the plan``."""
        named = sum(1 for _attached, content in self.files[:RESTORE_FILES] if round(content * scale) > RESTORE_FILE_TOKENS)
        parts = [f"{len(self.files[:RESTORE_FILES]) - named} files"]
        if named:
            parts.append(f"{named} named only (over {RESTORE_FILE_TOKENS} tokens)")
        if self.plan:
            parts.append("the plan")
        if self.todos:
            parts.append("the todo list")
        return ", ".join(parts)


class FileAccess:
    """The files a thread read or wrote, newest last, with the base estimate of each as Claude Code
    would attach it again (numbered lines); and the last plan and todo list.

    Sizes come from each tool's own record (``toolUseResult``): a Read's ``file`` (``totalLines`` scales
    a partial read up to the whole file), an Edit's ``originalFile`` with the edit applied, a Write's
    ``content``. Memory files (``CLAUDE.md``) are not attached as files.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[float, float]] = {}  # path: (numbered, bare content)
        self.plan = 0.0
        self.todos = 0.0

    def access(self, tool: str | None, record: dict, result_text: str, bases: BaseEstimates) -> None:
        path = record.get("filePath")
        sizes: tuple[float, float] | None = None
        if tool == "Read" and isinstance(record.get("file"), dict):
            file = record["file"]
            path = file.get("filePath", path)
            base = bases(result_text) if result_text else 0.0
            shown, total = file.get("numLines"), file.get("totalLines")
            # the result numbers its lines; the limit is on the content without them
            bare = max(0.0, base - shown * LINE_NUMBER) if _count(shown) else base
            if _count(shown) and _count(total) and total > shown:
                base *= total / shown
                bare *= total / shown
            sizes = (base, bare)
        elif tool in ("Edit", "MultiEdit") and isinstance(record.get("originalFile"), str):
            original = record["originalFile"]
            edits = record.get("edits") if isinstance(record.get("edits"), list) else [record]
            grown = sum(len(e.get("newString") or "") - len(e.get("oldString") or "") for e in edits if isinstance(e, dict))
            lines = original.count("\n") + 1
            bare = base_estimate(original)
            ratio = max(0.0, len(original) + grown) / max(1, len(original))
            sizes = ((bare + lines * LINE_NUMBER) * ratio, bare * ratio)
        elif tool == "Write" and isinstance(record.get("content"), str):
            content = record["content"]
            bare = base_estimate(content)
            sizes = (bare + (content.count("\n") + 1) * LINE_NUMBER, bare)
        if not isinstance(path, str) or path.endswith("CLAUDE.md"):
            return
        if sizes is None:
            sizes = self._files.get(path)
            if sizes is None:
                return
        self._files.pop(path, None)
        self._files[path] = sizes  # newest last

    def note_call(self, tool: str | None, arguments: object, bases: BaseEstimates) -> None:
        if not isinstance(arguments, dict):
            return
        if tool == "ExitPlanMode" and isinstance(arguments.get("plan"), str):
            self.plan = bases(arguments["plan"])
        elif tool == "TodoWrite" and isinstance(arguments.get("todos"), list):
            import json  # start-up: only for a todo list

            self.todos = bases(json.dumps(arguments["todos"], ensure_ascii=False))

    def restored(self) -> Restored:
        return Restored(tuple(reversed(list(self._files.values())[-RESTORE_FILES:])), self.plan, self.todos)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
