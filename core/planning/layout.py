"""The Token Box Model (README, "How the layout works"): fixed load, critical overflow, compression order, truncation,
drops, the step trace and the expansion report. Two trimming policies:

* ``tokenbox`` — section by section in compression order: its lenses, then truncation to
  ``max(min, size - deficit)``, then a drop.
* ``progressive`` — passepartout's levels: every section's lenses first, then truncations and drops.

Both stop at the first step that brings the deficit to zero or below. Totals are exact counts of the
rendered context, kept up to date incrementally by ``JoinedTotal``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

from tokenbox.core.model.errors import ContextCriticalOverflow
from tokenbox.core.model.plan import SectionResult, Step
from tokenbox.core.model.records import dataclass
from tokenbox.core.model.session import Trimming
from tokenbox.core.parse.lensspec import parse_lens
from tokenbox.core.planning import behaviors, lenses
from tokenbox.core.planning.assembly import Assembled
from tokenbox.core.planning.behaviors import Tier
from tokenbox.core.tokens.counting import JoinedTotal, TokenCounter

_MIN_RETRIES = 8


class _Piece:
    """A section's state during layout."""

    __slots__ = ("before", "cut", "lenses", "part", "steps", "text", "tiers", "tokens")

    def __init__(self, part: Assembled, text: str, tokens: int, tiers: list[Tier] | None) -> None:
        self.part = part
        self.text = text
        self.tokens = tokens
        self.before = tokens  # the count of the untrimmed text
        self.tiers = tiers
        self.steps: list[str] = []  # ops applied
        self.lenses: list[str] = []
        self.cut = ""


@dataclass
class LayoutResult:
    sections: list[SectionResult]
    steps: list[Step]
    tokens_before: int
    tokens_after: int
    fixed_load: int


class LensCache:
    """Lens results by (lens, text, tiers); bounded so a long-running app does not grow without end.

    It also keeps the results of untouched sections by identity (same ``Section`` and text objects,
    same allotment), so planning one loaded session at another budget rebuilds only what changed.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._results: dict[tuple, lenses.LensResult] = {}
        self._kept: dict[tuple[int, int], tuple] = {}
        self._order: tuple[list[Assembled], list[int]] | None = None

    def order(self, parts: list[Assembled]) -> list[int]:
        """The compression order (priority ASC, shrink DESC, file order) of the flexible non-empty parts
        (a sized part without text is one: it can only be dropped).

        Kept for the last parts list seen: a what-if plan of the same assembly sorts nothing again.
        """
        if self._order is not None and self._order[0] is parts:
            return self._order[1]
        order = sorted(
            (i for i, p in enumerate(parts) if not p.section.critical and (p.text if p.section.tokens is None else p.section.tokens)),
            key=lambda i: (parts[i].section.priority, -parts[i].section.shrink, i),
        )
        self._order = (parts, order)
        return order

    def kept(self, section: object, text: str, tokens: int, allotment: int) -> SectionResult | None:
        """The result of a section left as it was, if one was built for these very objects and numbers."""
        found = self._kept.get((id(section), id(text)))
        if found is None or found[0] is not section or found[1] is not text:
            return None
        result = found[2]
        return result if result.tokens_after == tokens and result.allotment == allotment else None

    def keep(self, result: SectionResult) -> None:
        if len(self._kept) >= self.limit:
            self._kept.clear()
        self._kept[(id(result.section), id(result.text_before))] = (result.section, result.text_before, result)

    def apply(self, spec: str, piece: _Piece) -> lenses.LensResult:
        key = (spec, piece.part.section.id if spec in ("summary",) else "", piece.text, tuple(piece.tiers) if piece.tiers else None)
        result = self._results.get(key)
        if result is None:
            if len(self._results) >= self.limit:
                self._results.clear()
            result = self._results[key] = lenses.apply(spec, piece.part.section, piece.text, piece.tiers)
        return result


def _replay_block(items, start: list[Tier], moves: list[tuple[int, Tier]], upto: int, lines: dict) -> str:
    """The behaviours block after the first ``upto`` demotions from ``start``."""
    tiers = list(start)
    for index, tier in moves[:upto]:
        tiers[index] = tier
    return behaviors.render(items, tiers, lines)


def fixed_load(parts: list[Assembled], counter: TokenCounter) -> int:
    """Tokens of the critical sections rendered alone (their separators included), with the fixed
    sizes of the critical parts the file does not hold (``inferred``); a sized part that is not critical
    (an image or a call's framing in the history) can be dropped."""
    return (counter.count_joined([p.text for p in parts if p.section.critical and p.text and p.section.tokens is None])
            + sum(p.section.tokens for p in parts if p.section.tokens and p.section.critical))


def fixed_tokens(parts: list[Assembled]) -> int:
    """The tokens of the parts that have a size but no text (the ``inferred`` part of README, "Real agents")."""
    return sum(p.section.tokens for p in parts if p.section.tokens)


class _Layout:
    def __init__(self, parts: list[Assembled], counter: TokenCounter, available: int, cache: LensCache) -> None:
        self.counter = counter
        self.available = available
        self.cache = cache
        # measures every text first; parts of a fixed size (inferred, images, replies) stay out of the join
        self.joined = JoinedTotal(counter, [p.text if p.section.tokens is None else "" for p in parts])
        self.parts = parts
        self._pieces: list[_Piece] | None = None  # made when a step is taken (most plans fit as they are)
        self.fixed = fixed_tokens(parts)  # sized parts without text take no part in the join
        self.steps: list[Step] = []
        # per behaviours piece: its block count, the tiers it matches, and its demotion pointer
        self._blocks: dict[int, tuple] = {}

    @property
    def pieces(self) -> list[_Piece]:
        if self._pieces is None:
            self._pieces = [
                _Piece(p, p.text, p.section.tokens if p.section.tokens is not None else tokens, p.tiers)
                for p, tokens in zip(self.parts, self.joined.counts, strict=True)
            ]
        return self._pieces

    def untouched(self) -> bool:
        """No piece was made, so none has changed: every part is as assembled, at its count."""
        return self._pieces is None

    @property
    def total(self) -> int:
        return self.joined.total + self.fixed

    @property
    def deficit(self) -> int:
        return self.total - self.available

    def _record(
        self, index: int, op: str, detail: str, before: int, note: str = "", rebuild: Callable[[], str] | None = None
    ) -> None:
        piece = self.pieces[index]
        self.steps.append(
            Step(
                index=len(self.steps) + 1,
                section=piece.part.section.id,
                op=op,
                detail=detail,
                tokens_before=before,
                tokens_after=piece.tokens,
                deficit_after=self.deficit,
                total_after=self.total,
                text_source=piece.text if rebuild is None else rebuild,
                note=note,
            )
        )
        piece.steps.append(op)

    def _set_text(self, index: int, text: str) -> None:
        piece = self.pieces[index]
        piece.text = text
        piece.tokens = self.counter.count(text) if text else 0
        self.joined.replace(index, text)

    def _shrunk(self, spec: str, name: str, piece: _Piece) -> lenses.LensResult | None:
        """One application of a lens, or ``None`` when it would not shrink the section."""
        if name != "demote":
            result = self.cache.apply(spec, piece)
            tokens = self.counter.count(result.text) if result.text else 0
            return result if tokens < piece.tokens else None
        if piece.tiers is not None and self.joined.additive:
            return self._demoted(piece)
        # demote: move tiers down, lowest activation first, until the block actually shrinks
        probe = _Piece(piece.part, piece.text, piece.tokens, piece.tiers)
        notes = []
        while True:
            result = lenses.apply(spec, piece.part.section, probe.text, probe.tiers)
            if result.tiers is None or result.tiers == probe.tiers:
                return None
            notes.append(result.note)
            probe.text, probe.tiers = result.text, result.tiers
            if not result.text or self.counter.count(result.text) < piece.tokens:
                return lenses.LensResult(result.text, result.tiers, "; ".join(notes))

    def _demoted(self, piece: _Piece) -> lenses.LensResult | None:
        """``demote`` as above (same tiers, text and note), counting the block incrementally.

        The block's count follows each demotion (``behaviors.BlockCount``, kept from one step to
        the next), so the block is rendered once per step, when it has shrunk, and its count is
        handed to the counter with it.
        """
        items = piece.part.section.items
        kept = self._blocks.pop(id(piece), None)
        if kept is not None and kept[1] is piece.tiers:
            block, demote, shown = kept[0], kept[2], kept[3]
        else:
            tiers = list(piece.tiers)  # type: ignore[arg-type]
            block = behaviors.BlockCount(items, tiers, self.counter.count)
            demote = behaviors.Demoter(items, tiers)
            shown = behaviors.BlockText(items, tiers, block.lines)
            shown.start, shown.moves = list(tiers), []
        tiers = block.tiers
        notes = []
        while True:
            moved = demote.next()
            if moved is None:
                return None
            old = tiers[moved]
            block.set_tier(moved, Tier(old + 1))
            shown.set_tier(moved, tiers[moved])
            shown.moves.append((moved, tiers[moved]))
            notes.append(f"{items[moved].name}: {old.label} → {tiers[moved].label}")
            if block.total < piece.tokens:
                text = shown.text()
                if text:
                    self.counter.remember(text, block.total)
                rebuild = functools.partial(_replay_block, items, shown.start, shown.moves, len(shown.moves), block.lines)
                result = lenses.LensResult(text, tiers, "; ".join(notes), rebuild)
                self._blocks[id(piece)] = (block, result.tiers, demote, shown)
                return result

    def lenses(self, index: int) -> None:
        piece = self.pieces[index]
        if piece.part.section.tokens is not None:
            return  # a sized part has no text to shrink: it can only be dropped
        for spec in piece.part.section.strategy:
            name, _ = parse_lens(spec)
            # Re-apply while it keeps shrinking the section (idempotent lenses stop after one).
            while piece.text and self.deficit > 0:
                result = self._shrunk(spec, name, piece)
                if result is None:
                    break
                before = piece.tokens
                if result.tiers is not None:
                    piece.tiers = result.tiers
                self._set_text(index, result.text)
                if spec not in piece.lenses:
                    piece.lenses.append(spec)
                self._record(index, "lens", spec, before, result.note, result.rebuild)
                if result.rebuild is not None and piece.text:
                    self.counter.forget(piece.text)  # rebuilt on demand; do not keep every block

    def truncate(self, index: int) -> None:
        piece = self.pieces[index]
        section = piece.part.section
        if not piece.text or self.deficit <= 0 or section.tokens is not None:
            return
        size = piece.tokens
        target = max(section.min, size - self.deficit)
        if target >= size or target <= 0:
            return
        source = piece.text
        before = size
        new = self._cut(source, target, section.min, section.keep)
        if not new:
            return
        self._set_text(index, new)
        # Joins can move by a token or two; keep cutting within this step while the deficit remains.
        while self.deficit > 0 and piece.tokens > max(section.min, 1):
            target = max(section.min, piece.tokens - self.deficit, 1)
            if target >= piece.tokens:
                target = piece.tokens - 1
            if target < max(section.min, 1):
                break
            shorter = self._cut(source, target, section.min, section.keep)
            if not shorter or shorter == piece.text:
                break
            self._set_text(index, shorter)
        piece.cut = source[: len(source) - len(piece.text)] if section.keep == "tail" else source[len(piece.text) :]
        self._record(index, "truncate", f"{section.keep}:{piece.tokens}", before)

    def _cut(self, text: str, target: int, minimum: int, keep: str) -> str:
        new = self.counter.truncate(text, target, keep)
        extra = 1
        while minimum and self.counter.count(new) < minimum and extra <= _MIN_RETRIES:
            new = self.counter.truncate(text, target + extra, keep)
            extra += 1
        return new

    def drop(self, index: int) -> None:
        piece = self.pieces[index]
        if self.deficit <= 0:
            return
        if piece.part.section.tokens is not None:
            if not piece.part.section.critical and piece.tokens:
                before = piece.tokens  # a sized part without text (an image, a call's framing): dropped whole
                piece.tokens = 0
                self.fixed -= before
                self._record(index, "drop", "drop", before)
            return
        if not piece.text:
            return
        before = piece.tokens
        piece.text = ""
        piece.tokens = 0
        self.joined.remove(index)
        self._record(index, "drop", "drop", before)


def run_layout(
    parts: list[Assembled], counter: TokenCounter, available: int, policy: str, cache: LensCache
) -> LayoutResult:
    """Fit ``parts`` into ``available`` tokens; raise ``ContextCriticalOverflow`` if the critical ones cannot."""
    counter.prepare([p.text for p in parts])  # one batch: every text measured once, in parallel when big
    critical_load = fixed_load(parts, counter)
    if critical_load > available:
        raise ContextCriticalOverflow(
            critical_load,
            available,
            [(p.section.id, p.section.tokens if p.section.tokens is not None else counter.count(p.text))
             for p in parts if p.section.critical and (p.text or p.section.tokens)],
        )
    state = _Layout(parts, counter, available, cache)
    before = state.total
    if state.deficit > 0:
        order = cache.order(parts)
        if policy == Trimming.PROGRESSIVE:
            for i in order:
                state.lenses(i)
                if state.deficit <= 0:
                    break
            for i in order:
                if state.deficit <= 0:
                    break
                state.truncate(i)
                state.drop(i)
        else:
            for i in order:
                state.lenses(i)
                state.truncate(i)
                state.drop(i)
                if state.deficit <= 0:
                    break
    total = state.total
    return LayoutResult(_results(state, available, total), state.steps, before, total, critical_load)


def patch_layout(
    previous: LayoutResult, parts: list[Assembled], changed: list[int], counter: TokenCounter, available: int,
    cache: LensCache,
) -> LayoutResult | None:
    """``run_layout`` of ``parts`` from the layout of parts that differed from them only at ``changed``
    (texts of their own, no fixed size, same number of parts), or ``None`` when it has to run in full.

    When the previous layout fitted without a step and the new parts fit too, nothing is trimmed: the
    joined total is patched at the changed texts (``JoinedTotal`` starts from the kept join), and the
    results of the other sections are the previous ones, but for the allotments of growing sections.
    """
    if previous.steps or len(previous.sections) != len(parts):
        return None
    old = previous.sections
    for i in changed:
        section, before = parts[i].section, old[i].section
        if section.tokens is not None or before.tokens is not None or parts[i].tiers is not None or parts[i].skipped:
            return None
    counter.prepare([parts[i].text for i in changed])
    critical_load = previous.fixed_load
    if any(parts[i].section.critical or old[i].section.critical for i in changed):
        critical_load = fixed_load(parts, counter)
    if critical_load > available:
        return None  # run_layout raises the overflow
    joined = JoinedTotal(counter, [p.text if p.section.tokens is None else "" for p in parts])
    total = joined.total + fixed_tokens(parts)
    if total > available:
        return None  # something must be trimmed: the full layout
    counts = joined.counts
    growing = [i for i, p in enumerate(parts) if p.section.grow > 0 and p.text]
    grow_sum = _grow_sum([parts[i].section.grow for i in growing])
    slack = max(0, available - total)
    results = list(old)
    for i in sorted({*changed, *growing}):
        part = parts[i]
        tokens = part.section.tokens if part.section.tokens is not None else counts[i]
        results[i] = _result(part, tokens, tokens, part.text, [], [], "", _allotment(part.section, tokens, part.text, grow_sum, slack), cache)
    return LayoutResult(results, [], total, total, critical_load)


def _allotment(section: object, tokens: int, text: str, grow_sum: Fraction | int, slack: int) -> int:
    """A section's tokens, with its share of the slack when it grows: ``int(slack * grow / grow_sum)``,
    exactly (``grow`` as the fraction the float is), in integers."""
    if grow_sum and text and section.grow > 0:  # type: ignore[attr-defined]
        share = _fraction(section.grow)  # type: ignore[attr-defined]
        total = Fraction(grow_sum)
        return tokens + slack * share.numerator * total.denominator // (share.denominator * total.numerator)
    return tokens


@functools.lru_cache(maxsize=1024)
def _fraction(value: float) -> Fraction:
    return Fraction(value)


def _grow_sum(grows: list[float]) -> Fraction | int:
    """The exact sum of the ``grow`` of the growing sections (0 when none grows)."""
    return sum(map(_fraction, grows), Fraction(0)) if grows else 0


def _results(state: _Layout, available: int, total: int) -> list[SectionResult]:
    if state.untouched():
        return _kept_results(state.parts, state.joined.counts, available, total, state.cache)
    pieces = state.pieces
    grow_sum = _grow_sum([p.part.section.grow for p in pieces if p.part.section.grow > 0 and p.text])
    slack = max(0, available - total)
    cache = state.cache
    return [
        _result(piece.part, piece.before, piece.tokens, piece.text, piece.steps, piece.lenses, piece.cut,
                _allotment(piece.part.section, piece.tokens, piece.text, grow_sum, slack), cache)
        for piece in pieces
    ]


def _kept_results(parts: list[Assembled], counts: tuple[int, ...], available: int, total: int,
                  cache: LensCache) -> list[SectionResult]:
    """``_results`` of a layout that took no step: each part as assembled, at its count."""
    grow_sum = _grow_sum([p.section.grow for p in parts if p.section.grow > 0 and p.text])
    slack = max(0, available - total)
    results = []
    for part, count in zip(parts, counts, strict=True):
        tokens = part.section.tokens if part.section.tokens is not None else count
        results.append(_result(part, tokens, tokens, part.text, [], [], "",
                               _allotment(part.section, tokens, part.text, grow_sum, slack), cache))
    return results


def _result(
    part: Assembled, before: int, tokens: int, text: str, steps: list[str], lens_names: list[str], cut: str, allotment: int,
    cache: LensCache,
) -> SectionResult:
    """One section's result: the one kept for these very objects and numbers when it was left as it was."""
    section = part.section
    if not steps and not part.skipped:
        reused = cache.kept(section, part.text, tokens, allotment)
        if reused is not None:
            return reused
    if part.skipped:
        action = "skipped"
    elif "drop" in steps or (steps and not text):
        action = "dropped"
    elif "truncate" in steps:
        action = "truncated"
    elif steps:
        action = "compressed"
    else:
        action = "kept"
    result = SectionResult(
        section=section,
        tokens_before=before,
        tokens_after=tokens,
        allotment=allotment,
        action=action,
        lenses=tuple(lens_names),
        text_before=part.text,
        text_after=text,
        cut=cut,
    )
    if action == "kept":
        cache.keep(result)
    return result
