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

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.model.session import Calibration, RecordedUsage, Section, Session
from tokenbox.core.sources.readers.common import inferred_section
from tokenbox.core.tokens.charclass import BaseEstimates

WINDOW = 16  # request pairs the scale is fitted on (the newest up to the turn)
SCALE_BOUNDS = (0.3, 5.0)
PRIOR_SCALE = 1.3  # transcripts' visible text against recorded growth, over the real sessions in tests
PRIOR_WEIGHT = 400.0


@dataclass(frozen=True, slots=True)
class Observation:
    """One request of a thread as calibration sees it."""

    recorded: int | None  # recorded context, when usage was recorded
    visible: float  # base estimate of what the file shows of its context
    epoch: int  # compactions before it; pairs across one are not comparable


@dataclass(frozen=True, slots=True)
class Fit:
    """The calibration of one turn: its scale, the hidden part, and the words for ``calibration``."""

    scale: float
    hidden: int | None
    turns: tuple[int, ...]
    method: str
    source: str = ""

    def calibration(self) -> Calibration:
        return Calibration(self.method, self.scale, self.hidden, self.turns, self.source)


class ScaleFits:
    """The scale fitted for each request of a thread, extended as requests arrive.

    ``update(observations)`` recomputes only from the last request it had seen (whose usage may still
    have changed while its lines were written), so a followed thread costs O(1) per new request.
    """

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        self.fits: list[tuple[float, tuple[int, ...]]] = []
        self._pairs: list[tuple[int, float, float]] = []  # (request number, ΔR, ΔV)

    def update(self, observations: Sequence[Observation]) -> list[tuple[float, tuple[int, ...]]]:
        # Requests only change at the end (the newest one while its lines are written): walk back
        # from there to the last observation that is still the same.
        start = min(len(self.observations), len(observations))
        while start > 0 and self.observations[start - 1] != observations[start - 1]:
            start -= 1
        start = max(0, start - 1)  # the last one seen is refitted anyway
        if start < len(self.observations):
            del self.observations[start:]
            del self.fits[start:]
            while self._pairs and self._pairs[-1][0] > start:
                self._pairs.pop()
        for i in range(start, len(observations)):
            obs = observations[i]
            if i > 0:
                prev = observations[i - 1]
                if (obs.recorded is not None and prev.recorded is not None and obs.epoch == prev.epoch
                        and obs.visible > prev.visible and obs.recorded > prev.recorded):
                    self._pairs.append((i + 1, obs.recorded - prev.recorded, obs.visible - prev.visible))
            recent = self._pairs[-WINDOW:]
            d_r = sum(p[1] for p in recent) + PRIOR_SCALE * PRIOR_WEIGHT
            d_v = sum(p[2] for p in recent) + PRIOR_WEIGHT
            # the growth fit, shrunk toward the prior while few requests back it (one pair of small
            # requests says little); the prior weighs as much as PRIOR_WEIGHT base tokens of growth
            scale = round(min(max(d_r / d_v, SCALE_BOUNDS[0]), SCALE_BOUNDS[1]), 4)  # as the plan JSON writes it
            used = tuple(sorted({n for p in recent for n in (p[0] - 1, p[0])}))
            self.observations.append(obs)
            self.fits.append((scale, used))
        return self.fits


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


def _total(fixed: int, estimates: list[float], scale: float) -> int:
    # the same arithmetic as charclass.scaled, section by section (each part is rounded on its own)
    return fixed + sum(max(1, round(base * scale)) for base in estimates)


def visible_tokens(sections: Sequence[Section], scale: float, bases: BaseEstimates | None = None) -> int:
    """The calibrated count of the visible sections (parts with a fixed size count that size)."""
    fixed, estimates = _parts(sections, bases if bases is not None else BaseEstimates())
    return _total(fixed, estimates, scale)


def fit_within(sections: Sequence[Section], target: int, scale: float, bases: BaseEstimates | None = None) -> float:
    """The largest scale (4 decimals, at most ``scale``) at which the visible sections count at most ``target``."""
    fixed, estimates = _parts(sections, bases if bases is not None else BaseEstimates())

    def fits(step: int) -> bool:
        return _total(fixed, estimates, step / 10_000) <= target

    top = round(scale * 10_000)
    if fits(top):
        return top / 10_000
    # The count is nearly proportional to the scale: search a narrow bracket around the proportional
    # guess first (a few sums over thousands of parts instead of a dozen), widening it if it misses.
    spread = sum(estimates)
    guess = int(top * max(0, target - fixed) / (spread * scale)) if spread > 0 else 0
    guess = max(0, min(guess, top - 1))
    # gallop from the guess to a bracket [low, high) with fits(low) and not fits(high)
    width = 4
    if fits(guess):
        low, high = guess, top
        while low + width < high and fits(low + width):
            low += width
            width *= 4
        high = min(high, low + width)
    else:
        low, high = guess, guess
        while low > 0:
            low = max(0, low - width)
            width *= 4
            if fits(low):
                break
            high = low
        if low == 0 and not fits(0):
            return 0.0
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
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
) -> Session:
    """``session`` with its ``inferred`` part sized so that everything adds up to ``target``.

    ``target`` ``None`` (the hidden part unknown) gives an ``inferred`` part of 0 tokens and a headline
    that is only a floor; the caller's warnings say so.
    """
    bases = bases if bases is not None else BaseEstimates()
    visible = visible_tokens(session.sections, fit.scale, bases)
    notes = list(warnings)
    if target is not None and visible > target and session.calibration is None:
        # The recorded context is smaller than the visible parts' estimate (a placeholder usage, or
        # content the provider counts for less): scale the estimates down so that they fit it.
        fitted = fit_within(session.sections, target, fit.scale, bases)
        notes.append(
            f"the visible parts are estimated at {visible} tokens, more than the {target} the request cost; "
            f"estimates scaled ×{fitted:.4f} to fit"
        )
        fit = Fit(fitted, 0, fit.turns, fit.method + f"; scaled down ×{fitted:.4f} to fit the recorded context", fit.source)
        visible = visible_tokens(session.sections, fitted, bases)
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
