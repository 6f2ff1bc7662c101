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

from tokenbox.core.model.plan import SectionResult, SectionResults
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.records import dataclass, replace
from tokenbox.core.model.session import Section, Session
from tokenbox.core.sources.readers.parts import context_key
from tokenbox.core.tokens.charclass import scaled, scaled_each, scaled_sum
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


class _Group:
    """The sections of one row (``parts.context_key``) that are, or are not, critical: their count, their
    fixed sizes added up and the base estimates of their counted texts, in order."""

    __slots__ = ("estimates", "fixed", "key", "parts")

    def __init__(self, key: tuple[str | None, bool]) -> None:
        self.key = key
        self.parts = 0
        self.fixed = 0
        self.estimates = array("d")


class SectionSums:
    """The sections of the turn planned last (after its first), their figures added up by row of the
    request (``parts.context_key``) and critical or not, and their calibrated estimate's totals per scale,
    aligned with the next turn's by their common prefix.

    ``passed`` counts the sections whose figures were taken or whose estimate was rounded at a scale,
    all told (what one more turn costs: the parts that differ, and one pass at a new scale).
    """

    SCALES = 8  # totals kept (a followed thread refits its scale at every request; the fill plans older ones)

    def __init__(self, bases: Callable[[str], float]) -> None:
        self.bases = bases
        self.passed = 0
        self._whole: tuple[Section, ...] | None = None
        self._head: Section | None = None
        self._rest: tuple[Section, ...] = ()
        self._keys: list[tuple[str | None, bool]] = []  # each section's group: (its row's key, critical)
        self._groups: dict[tuple[str | None, bool], _Group] = {}
        self._labels: dict[str, tuple[int, str]] = {}  # each row's first section (its place) and its label
        self._special = array("q", [0])  # sections a full layout must lay out (``_special``), in the first i
        self._inferred: list[int] = []  # places in ``_rest`` of the sections of kind ``inferred``
        # each section's base estimate, in order (0 where it is not counted), and the places of those not
        # counted with their size (a fixed size, or 0): each part's count at a scale in a few builtins' passes
        self._bases_in_order = array("d")
        self._not_counted: dict[int, int] = {}
        # scale -> group -> [its estimates summed, their rounded sum]
        self._totals: dict[float, dict[tuple[str | None, bool], list[int]]] = {}
        # the section results made for the turns' plans, by section (``untrimmed``): a part whose count did
        # not change is the same result (read from any thread: one dict operation at a time)
        self.results: dict[int, SectionResult] = {}  # bounded in ``align``: about the turn's parts

    def align(self, sections: tuple[Section, ...]) -> None:
        """Take ``sections`` as the turn's (the figures of the sections after the first that differ from the
        last turn's are taken again)."""
        if sections is self._whole:
            return
        self._whole = sections if type(sections) is tuple else None  # a list may change: never taken as the same
        rest = tuple(sections[1:])
        keep = shared_prefix(self._rest, rest)
        results = self.results
        if keep < len(self._rest):
            for gone in self._rest[keep:]:
                results.pop(id(gone), None)  # a result holds its section: only the turn's are kept
            self._drop(keep)
        if self._head is not None and (not sections or sections[0] is not self._head):
            results.pop(id(self._head), None)
        self._head = sections[0] if sections else None
        if len(results) > 2 * len(rest) + 1_000:  # results made for other turns' parts (a fill, another thread)
            results.clear()
        del self._special[keep + 1:]
        while self._inferred and self._inferred[-1] >= keep:
            self._inferred.pop()
        special = self._special[keep]
        bases, groups, labels = self.bases, self._groups, self._labels
        for place, section in enumerate(rest[keep:], keep):
            row = context_key(section)
            key = (row[0] if row is not None else None, section.critical)
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group(key)
            else:
                key = group.key  # one key object per group, not one per section
            group.parts += 1
            if section.tokens is not None:
                group.fixed += section.tokens
                self._not_counted[place] = section.tokens
                self._bases_in_order.append(0.0)
            elif _countable(section):
                base = bases(section.text)  # type: ignore[arg-type]
                group.estimates.append(base)
                self._bases_in_order.append(base)
            else:
                self._not_counted[place] = 0  # white space alone, or no text: counts nothing
                self._bases_in_order.append(0.0)
            if row is not None and row[0] not in labels:
                labels[row[0]] = (place, row[1])
            if _special(section):
                special += 1
            if section.kind == INFERRED:
                self._inferred.append(place)
            self._keys.append(key)
            self._special.append(special)
        self.passed += len(rest) - keep
        self._rest = rest

    def _drop(self, keep: int) -> None:
        """Take the sections past the first ``keep`` out of the figures and of every total kept."""
        groups = self._groups
        counted: dict[tuple[str | None, bool], int] = {}
        for key, section in zip(self._keys[keep:], self._rest[keep:], strict=True):
            group = groups[key]
            group.parts -= 1
            if section.tokens is not None:
                group.fixed -= section.tokens
            elif _countable(section):
                counted[key] = counted.get(key, 0) + 1
        del self._keys[keep:]
        for key, dropped in counted.items():
            estimates = groups[key].estimates
            left = len(estimates) - dropped
            for scale, totals in self._totals.items():
                entry = totals.get(key)
                if entry is None or entry[0] <= left:
                    continue
                if entry[0] - left > left:  # most of it: summed again when next asked for
                    entry[0] = entry[1] = 0
                    continue
                entry[1] -= scaled_sum(estimates[left:entry[0]], scale)
                self.passed += entry[0] - left
                entry[0] = left
            del estimates[left:]
        for row in [row for row, (place, _) in self._labels.items() if place >= keep]:
            del self._labels[row]
        del self._bases_in_order[keep:]
        for place in [place for place in self._not_counted if place >= keep]:
            del self._not_counted[place]

    def counts_after_first(self) -> Callable[[float], list[int]]:
        """Each section's count after the first at a scale, as ``scaled`` makes it one by one (a fixed size as
        it is): a function of what is aligned now (copied: the sums go on to other turns), for a plan's
        reader of every part (``SectionResults``) without a result made or a text looked up."""
        bases, not_counted = array("d", self._bases_in_order), dict(self._not_counted)

        def at(scale: float) -> list[int]:
            counts = scaled_each(bases, scale)
            for place, size in not_counted.items():
                counts[place] = size
            return counts

        return at

    def at(self, scale: float) -> dict[tuple[str | None, bool], int]:
        """Per group, the calibrated counts at ``scale`` of its counted texts, added up."""
        totals = self._totals.pop(scale, None)
        if totals is None:
            totals = {}
            if len(self._totals) >= self.SCALES:
                self._totals.pop(next(iter(self._totals)))
        self._totals[scale] = totals  # newest last
        out = {}
        for key, group in self._groups.items():
            entry = totals.get(key)
            if entry is None:
                entry = totals[key] = [0, 0]
            estimates = group.estimates
            if entry[0] < len(estimates):
                entry[1] += scaled_sum(estimates[entry[0]:], scale)
                self.passed += len(estimates) - entry[0]
                entry[0] = len(estimates)
            out[key] = entry[1]
        return out

    def groups(self) -> dict[tuple[str | None, bool], _Group]:
        """The groups of the sections after the first (their counts and fixed sizes)."""
        return self._groups

    def labels(self) -> dict[str, tuple[int, str]]:
        """Each row's first section after the first (its place in the turn less one) and the row's label."""
        return self._labels

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

    A session of text sections without earlier turns only: each part is its section's text. Its rows
    (``parts.context_key``) are added up as ``analysis.breakdown.context_use`` adds them.
    """
    sections = session.sections
    sums.align(sections)
    head = sections[0] if sections else None
    if sums.special or (head is not None and _special(head)):
        return None
    count = tokenizer.count
    counts = sums.at(tokenizer.scale)
    # per row: [label, tokens, parts] (the head's row first: its section comes first)
    rows: dict[str, list] = {}
    total = critical_load = 0
    inferred = sums.inferred
    if head is not None:
        if head.kind == INFERRED:
            inferred.insert(0, 0)
    notes: tuple[str, ...] = ()
    resized: Section | None = None
    target = session.context_tokens
    if target is not None and inferred:
        section = sections[inferred[0]]
        own = sum(_own(section, count))
        visible = sum(counts.values()) + sum(group.fixed for group in sums.groups().values())
        if head is not None:
            visible += sum(_own(head, count))
        need, notes = inferred_size(target, visible - own, tokenizer.name)
        if section.tokens != need:
            resized = replace(section, tokens=need)
    place = inferred[0] if resized is not None else -1
    heads: list[tuple[Section, int]] = []
    if head is not None:
        heads.append((resized if place == 0 else head, 0))
    if resized is not None and place > 0:
        heads.append((resized, place))  # in the sums with its size before: taken out below, added resized
        heads.append((sections[place], -1))
    extra: dict[tuple[str | None, bool], list[int]] = {}  # the head's and the resized part's own figures
    head_rows: list[tuple[str, str]] = []
    for section, where in heads:
        row = context_key(section)
        key = (row[0] if row is not None else None, section.critical)
        own = sum(_own(section, count)) * (1 if where >= 0 else -1)
        entry = extra.setdefault(key, [0, 0])
        entry[0] += own
        entry[1] += 1 if where >= 0 else -1
        if row is not None and where == 0:
            head_rows.append(row)
    groups = sums.groups()
    for row in head_rows:
        rows[row[0]] = [row[1], 0, 0]
    for row, (_, label) in sorted(sums.labels().items(), key=lambda item: item[1][0]):
        rows.setdefault(row, [label, 0, 0])
    for key in {*groups, *extra}:
        group = groups.get(key)
        tokens = (counts.get(key, 0) + group.fixed if group is not None else 0) + extra.get(key, (0, 0))[0]
        parts = (group.parts if group is not None else 0) + extra.get(key, (0, 0))[1]
        total += tokens
        if key[1]:
            critical_load += tokens
        if key[0] is not None and parts:
            rows[key[0]][1] += tokens
            rows[key[0]][2] += parts
    if critical_load > available or total > available:
        return None
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

    groups_out = {row: (label, tokens, parts) for row, (label, tokens, parts) in rows.items() if parts}
    in_order = list(sections)
    if resized is not None:
        in_order[place] = resized
    after_first = sums.counts_after_first()

    def own_count(section: Section) -> int:  # as ``make`` counts it
        return section.tokens if section.tokens is not None else scaled(section.text or "", scale, bases)

    def part_counts() -> list[int]:  # each part's count as ``make`` has it, no result made
        if not in_order:
            return []
        counts = [own_count(in_order[0]), *after_first(scale)]
        if resized is not None and place > 0:
            counts[place] = own_count(resized)
        return counts

    results = SectionResults(len(sections), make, tokens_after=total, kinds={INFERRED: tuple(inferred)}, groups=groups_out,
                             untrimmed=(in_order, part_counts))
    return Untrimmed(results, total, critical_load, notes)


def _own(section: Section, count: Callable[[str], int]) -> tuple[int, int]:
    """A section's own count and fixed size (one of them is 0)."""
    if section.tokens is not None:
        return 0, section.tokens
    return (count(section.text) if _countable(section) else 0), 0  # type: ignore[arg-type]
