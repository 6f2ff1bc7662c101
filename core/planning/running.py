"""The layout of a turn that takes no step, from figures kept as a session grows (README, "Real agents").

An agent's session that never compacts plans a turn holding the whole chain at each request, at the
scale its thread fitted for that request. Laid out in full, every part would be counted, made a result
and keyed at every request. ``SectionSums`` keeps what the engine planned last: per section, its fixed
size, whether it is critical and its base estimate, added up, and the calibrated estimate's totals per
scale. The next turn holds all of the one before but its first part (an agent's hidden part, sized
anew) and its newest parts: aligning with it costs the parts that differ, a total at a scale met before
those parts too, and a scale met for the first time one builtin pass. ``untrimmed`` is then the layout
when nothing has to be trimmed (the turn fits the room as it is): its totals from those sums and its
section results made when read (``model.plan.SectionResults``), exactly as ``layout.run_layout`` makes
them.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tokenbox.core.model.plan import SectionResult, SectionResults
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.session import Section, Session
from tokenbox.core.tokens.charclass import scaled, scaled_sum
from tokenbox.core.tokens.estimate import EstimateTokenizer

# Kinds whose part is assembled from more than the section's text (``assembly.Assembler``: a cached prefix,
# a context that may be skipped, behaviour tiers): such a turn is laid out in full.
ASSEMBLED_KINDS = ("prefix", "context", "behaviors")
INFERRED = "inferred"  # the kind of the part a request held that its file does not (sized to the headline)


def _countable(section: Section) -> bool:
    """Whether the section's text is counted (a part with a fixed size is not; white space alone counts 0)."""
    text = section.text
    return section.tokens is None and bool(text) and not text.isspace()  # type: ignore[union-attr]


def _special(section: Section) -> bool:
    """Whether the section is laid out otherwise than as its own text kept whole (assembled, or growing)."""
    return section.kind in ASSEMBLED_KINDS or section.grow > 0


class SectionSums:
    """The sections of the turn planned last (after its first), their figures added up and their
    calibrated estimate's totals per scale, aligned with the next turn's by their common prefix.

    ``passed`` counts the sections whose figures were taken or whose estimate was rounded at a scale,
    all told (what one more turn costs: the parts that differ, and one pass at a new scale).
    """

    SCALES = 8  # totals kept (a followed thread refits its scale at every request; the fill plans older ones)

    def __init__(self, bases: Callable[[str], float]) -> None:
        self.bases = bases
        self.passed = 0
        self._whole: tuple[Section, ...] | None = None
        self._rest: tuple[Section, ...] = ()
        # over the first i sections of ``_rest`` (each array is one longer than it)
        self._fixed = array("q", [0])  # fixed sizes
        self._critical_fixed = array("q", [0])
        self._special = array("q", [0])  # sections a full layout must lay out (``_special``)
        self._counted = array("q", [0])  # sections whose text is counted
        self._critical_counted = array("q", [0])
        self._inferred: list[int] = []  # places in ``_rest`` of the sections of kind ``inferred``
        self._estimates = array("d")  # base estimates of the counted texts, in order
        self._critical_estimates = array("d")  # those of the critical ones
        self._totals: dict[float, list[int]] = {}  # scale -> [estimates summed, sum, critical summed, critical sum]
        # the section results made for the turns' plans, by section (``untrimmed``): a part whose count did
        # not change is the same result (read from any thread: one dict operation at a time)
        self.results = _Results()

    def align(self, sections: tuple[Section, ...]) -> None:
        """Take ``sections`` as the turn's (the figures of the sections after the first that differ from the
        last turn's are taken again)."""
        if sections is self._whole:
            return
        self._whole = sections if type(sections) is tuple else None  # a list may change: never taken as the same
        rest = tuple(sections[1:])
        keep = shared_prefix(self._rest, rest)
        counted, critical = self._counted[keep], self._critical_counted[keep]
        if len(self._estimates) > counted or len(self._critical_estimates) > critical:
            for scale, entry in self._totals.items():
                self._drop(entry, 0, self._estimates, counted, scale)
                self._drop(entry, 2, self._critical_estimates, critical, scale)
            del self._estimates[counted:], self._critical_estimates[critical:]
        for column in (self._fixed, self._critical_fixed, self._special, self._counted, self._critical_counted):
            del column[keep + 1:]
        while self._inferred and self._inferred[-1] >= keep:
            self._inferred.pop()
        fixed, critical_fixed, special = self._fixed[keep], self._critical_fixed[keep], self._special[keep]
        bases = self.bases
        for place, section in enumerate(rest[keep:], keep):
            is_critical = section.critical
            if section.tokens is not None:
                fixed += section.tokens
                if is_critical:
                    critical_fixed += section.tokens
            elif _countable(section):
                base = bases(section.text)  # type: ignore[arg-type]
                self._estimates.append(base)
                counted += 1
                if is_critical:
                    self._critical_estimates.append(base)
                    critical += 1
            if _special(section):
                special += 1
            if section.kind == INFERRED:
                self._inferred.append(place)
            self._fixed.append(fixed)
            self._critical_fixed.append(critical_fixed)
            self._special.append(special)
            self._counted.append(counted)
            self._critical_counted.append(critical)
        self.passed += len(rest) - keep
        self._rest = rest

    def _drop(self, entry: list[int], at: int, estimates: array, keep: int, scale: float) -> None:
        """Take the estimates past the first ``keep`` out of a total (or start it again when they were most of it)."""
        summed = entry[at]
        if summed <= keep:
            return
        if summed - keep > keep:
            entry[at] = entry[at + 1] = 0
            return
        entry[at + 1] -= scaled_sum(estimates[keep:summed], scale)
        self.passed += summed - keep
        entry[at] = keep

    def at(self, scale: float) -> tuple[int, int]:
        """The calibrated counts at ``scale`` of the counted texts after the first section, added up: of all
        of them, and of the critical ones."""
        entry = self._totals.pop(scale, None)
        if entry is None:
            entry = [0, 0, 0, 0]
            if len(self._totals) >= self.SCALES:
                self._totals.pop(next(iter(self._totals)))
        self._totals[scale] = entry  # newest last
        for at, estimates in ((0, self._estimates), (2, self._critical_estimates)):
            if entry[at] < len(estimates):
                entry[at + 1] += scaled_sum(estimates[entry[at]:], scale)
                self.passed += len(estimates) - entry[at]
                entry[at] = len(estimates)
        return entry[1], entry[3]

    @property
    def fixed(self) -> tuple[int, int]:
        """The fixed sizes after the first section, added up: of all, and of the critical ones."""
        return self._fixed[-1], self._critical_fixed[-1]

    @property
    def special(self) -> int:
        """How many sections after the first only a full layout lays out."""
        return self._special[-1]

    @property
    def inferred(self) -> list[int]:
        """The places (in the turn) of its sections of kind ``inferred``."""
        return [place + 1 for place in self._inferred]


class TextSize:
    """The characters of text of the sections planned last, added up: the next turn of a growing session
    costs the sections after the first that differ (``passed`` counts the sections gone through)."""

    def __init__(self) -> None:
        self.passed = 0
        self._rest: tuple[Section, ...] = ()
        self._chars = array("q", [0])  # over the first i sections of ``_rest``

    def of(self, sections: Sequence[Section]) -> int:
        """The characters of text of ``sections``."""
        rest = tuple(sections[1:])
        keep = shared_prefix(self._rest, rest)
        del self._chars[keep + 1:]
        total = self._chars[keep]
        for section in rest[keep:]:
            total += len(section.text or "")
            self._chars.append(total)
        self.passed += len(rest) - keep
        self._rest = rest
        return total + (len(sections[0].text or "") if sections else 0)


class _Results(dict):
    """Section results by ``id(section)``, at most ``LIMIT`` (all dropped at once past it)."""

    LIMIT = 100_000

    def __setitem__(self, key: int, value: SectionResult) -> None:
        if len(self) >= self.LIMIT:
            self.clear()
        super().__setitem__(key, value)


def inferred_size(target: int, visible: int, tokenizer: str) -> tuple[int, tuple[str, ...]]:
    """The size of the ``inferred`` part: what is left of the headline ``target`` once the visible parts
    (``visible`` tokens with ``tokenizer``) are counted, 0 when they count more (a note says so)."""
    need = target - visible
    if need >= 0:
        return need, ()
    return 0, (f"the visible parts count {visible} tokens with {tokenizer}, more than the {target} "
               "the request cost; the hidden part is shown as 0",)


@dataclass(frozen=True, slots=True)
class Untrimmed:
    """A turn laid out as it is: its results (made when read), its total, its critical load, the notes."""

    sections: SectionResults
    total: int
    fixed_load: int
    notes: tuple[str, ...]


def untrimmed(sums: SectionSums, session: Session, tokenizer: EstimateTokenizer, available: int) -> Untrimmed | None:
    """``session``'s layout counted with ``tokenizer`` when it takes no step, as ``layout.run_layout`` makes it
    (with the ``inferred`` part sized as ``engine`` sizes it); ``None`` when the turn must be laid out in
    full: a part assembled or growing, a critical load or a total over ``available``.

    A session of text sections without earlier turns only: each part is its section's text.
    """
    sections = session.sections
    sums.align(sections)
    head = sections[0] if sections else None
    if sums.special or (head is not None and _special(head)):
        return None
    count = tokenizer.count
    counted, critical_counted = sums.at(tokenizer.scale)
    fixed, critical_fixed = sums.fixed
    inferred = sums.inferred
    if head is not None:
        own_count, own_fixed = _own(head, count)
        counted += own_count
        fixed += own_fixed
        if head.critical:
            critical_counted += own_count
            critical_fixed += own_fixed
        if head.kind == INFERRED:
            inferred.insert(0, 0)
    notes: tuple[str, ...] = ()
    resized: Section | None = None
    target = session.context_tokens
    if target is not None and inferred:
        section = sections[inferred[0]]
        own_count, own_fixed = _own(section, count)
        need, notes = inferred_size(target, counted - own_count + fixed - own_fixed, tokenizer.name)
        if section.tokens != need:
            resized = replace(section, tokens=need)
            counted -= own_count
            fixed += need - own_fixed
            if section.critical:
                critical_counted -= own_count
                critical_fixed += need - own_fixed
    total = counted + fixed
    critical_load = critical_counted + critical_fixed
    if critical_load > available or total > available:
        return None
    place = inferred[0] if resized is not None else -1
    kept, scale, bases = sums.results, tokenizer.scale, tokenizer.bases

    def make(index: int) -> SectionResult:
        section = resized if index == place else sections[index]
        text = section.text or ""  # type: ignore[union-attr]
        tokens = section.tokens if section.tokens is not None else scaled(text, scale, bases)  # type: ignore[union-attr]
        # the result made for the same section at the same count (a plan before, at another scale or budget)
        found = kept.get(id(section))
        if found is not None and found.section is section and found.tokens_after == tokens:
            return found
        result = kept[id(section)] = SectionResult(section, tokens, tokens, tokens, "kept", (), text, text)  # type: ignore[arg-type]
        return result

    results = SectionResults(len(sections), make, tokens_after=total, kinds={INFERRED: tuple(inferred)})
    return Untrimmed(results, total, critical_load, notes)


def _own(section: Section, count: Callable[[str], int]) -> tuple[int, int]:
    """A section's own count and fixed size (one of them is 0)."""
    if section.tokens is not None:
        return 0, section.tokens
    return (count(section.text) if _countable(section) else 0), 0  # type: ignore[arg-type]
