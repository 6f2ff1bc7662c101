"""floop behaviour tiers: activation → tier, the constraint floor, budget demotion, tiered rendering."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from tokenbox.core.model.session import Behavior


class Tier(IntEnum):
    """Injection tiers, most to least content; demotion moves one step down."""

    FULL = 0
    SUMMARY = 1
    NAME_ONLY = 2
    OMITTED = 3

    @property
    def label(self) -> str:
        return {0: "Full", 1: "Summary", 2: "NameOnly", 3: "Omitted"}[self.value]


GROUPS = (("Constraints", ("constraint",)), ("Directives", ("directive", "preference")), ("Procedures", ("procedure",)))
_GROUP_OF = {kind: g for g, (_, kinds) in enumerate(GROUPS) for kind in kinds}
SUMMARY_CHARS = 120


def tier_for(behavior: Behavior) -> Tier:
    """The tier a behaviour's activation earns (Full ≥ 0.7, Summary ≥ 0.3, NameOnly ≥ 0.1), floored for constraints."""
    activation = behavior.activation
    if activation >= 0.7:
        tier = Tier.FULL
    elif activation >= 0.3:
        tier = Tier.SUMMARY
    elif activation >= 0.1:
        tier = Tier.NAME_ONLY
    else:
        tier = Tier.OMITTED
    if behavior.kind == "constraint" and tier > Tier.SUMMARY:
        tier = Tier.SUMMARY
    return tier


def summary_of(behavior: Behavior) -> str:
    """The one-line summary, or the content's first line shortened."""
    if behavior.summary is not None:
        return behavior.summary
    first = behavior.content.strip().split("\n", 1)[0]
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1] + "…"


def name_only(behavior: Behavior) -> str:
    """`` `name` [kind] #tag1 #tag2 ``."""
    tags = "".join(f" #{tag}" for tag in behavior.tags)
    return f"`{behavior.name}` [{behavior.kind}]{tags}"


def line_for(behavior: Behavior, tier: Tier) -> str:
    if tier == Tier.FULL:
        body = behavior.content.strip()
    elif tier == Tier.SUMMARY:
        body = summary_of(behavior)
    else:
        body = name_only(behavior)
    return "- " + body.replace("\n", "\n  ")


def render(items: Sequence[Behavior], tiers: Sequence[Tier], lines: dict[tuple[int, Tier], str] | None = None) -> str:
    """Constraints / Directives / Procedures groups of the visible behaviours, in file order.

    ``lines``, when given, caches each behaviour's line by (index, tier) across calls.
    """
    if lines is None:
        blocks = []
        for title, group_kinds in GROUPS:
            shown = [line_for(b, t) for b, t in zip(items, tiers, strict=True) if b.kind in group_kinds and t != Tier.OMITTED]
            if shown:
                blocks.append(f"## {title}\n" + "\n".join(shown))
        return "\n\n".join(blocks)
    if len(items) != len(tiers):
        raise ValueError("one tier per behaviour")
    groups: list[list[str]] = [[] for _ in GROUPS]
    for i, (b, t) in enumerate(zip(items, tiers)):  # noqa: B905 (lengths checked above)
        if t == Tier.OMITTED:
            continue
        g = _GROUP_OF.get(b.kind)
        if g is None:
            continue
        line = lines.get((i, t))
        if line is None:
            line = lines[(i, t)] = line_for(b, t)
        groups[g].append(line)
    return "\n\n".join(f"## {title}\n" + "\n".join(shown) for (title, _), shown in zip(GROUPS, groups) if shown)  # noqa: B905


def demotion_order(items: Sequence[Behavior]) -> list[int]:
    """Indices by activation ascending, file order breaking ties; constraints never take part."""
    return sorted((i for i, b in enumerate(items) if b.kind != "constraint"), key=lambda i: (items[i].activation, i))


def demote_once(items: Sequence[Behavior], tiers: list[Tier]) -> int | None:
    """Demote the lowest-activation demotable behaviour one tier; its index, or ``None`` if none can move."""
    for i in demotion_order(items):
        if tiers[i] < Tier.OMITTED:
            tiers[i] = Tier(tiers[i] + 1)
            return i
    return None


def fit_budget(
    items: Sequence[Behavior], budget: int | None, count: Callable[[str], int], *, additive: bool = False
) -> tuple[list[Tier], int]:
    """Initial tiers demoted until the rendered block counts at most ``budget`` tokens.

    Returns the tiers and the number of demotions made. Without a budget nothing is demoted.
    With ``additive`` (a BPE tokenizer whose counts add up at line starts, see ``BlockCount``) the
    block's count is kept up to date demotion by demotion instead of rendering and counting it
    again each time.
    """
    tiers = [tier_for(b) for b in items]
    demotions = 0
    if budget is None:
        return tiers, 0
    demote = Demoter(items, tiers)
    if additive:
        block = BlockCount(items, tiers, count)
        while block.total > budget:
            moved = demote.next()
            if moved is None:
                break
            block.set_tier(moved, Tier(tiers[moved] + 1))
            demotions += 1
        return tiers, demotions
    while count(render(items, tiers)) > budget:
        moved = demote.next()
        if moved is None:
            break
        tiers[moved] = Tier(tiers[moved] + 1)
        demotions += 1
    return tiers, demotions


class Demoter:
    """Which behaviour ``demote_once`` would move next, found in amortised constant time.

    Tiers only ever move down, so the lowest-activation behaviour that can still move is found by a
    pointer that never goes back. ``next`` does not change ``tiers``; the caller moves the one returned.
    """

    def __init__(self, items: Sequence[Behavior], tiers: Sequence[Tier]) -> None:
        self.order = demotion_order(items)
        self.tiers = tiers
        self.position = 0

    def next(self) -> int | None:
        order, tiers = self.order, self.tiers
        while self.position < len(order) and tiers[order[self.position]] >= Tier.OMITTED:
            self.position += 1
        return order[self.position] if self.position < len(order) else None


class BlockText:
    """``render(items, tiers)`` kept as one line per behaviour, so re-rendering after a demotion
    is a join in C instead of a Python loop over every behaviour (same text as ``render``)."""

    def __init__(self, items: Sequence[Behavior], tiers: Sequence[Tier], lines: dict[tuple[int, Tier], str]) -> None:
        self.items = items
        self.cache = lines
        self.line_of = [self._line(i, t) for i, t in enumerate(tiers)]
        self.members = [[i for i, b in enumerate(items) if _GROUP_OF.get(b.kind) == g] for g in range(len(GROUPS))]
        self.headers = [f"## {title}\n" for title, _ in GROUPS]

    def _line(self, index: int, tier: Tier) -> str:
        if tier == Tier.OMITTED or _GROUP_OF.get(self.items[index].kind) is None:
            return ""
        line = self.cache.get((index, tier))
        if line is None:
            line = self.cache[(index, tier)] = line_for(self.items[index], tier)
        return line

    def set_tier(self, index: int, tier: Tier) -> None:
        self.line_of[index] = self._line(index, tier)

    def text(self) -> str:
        blocks = []
        for header, members in zip(self.headers, self.members):  # noqa: B905 (one header per group)
            shown = "\n".join(filter(None, map(self.line_of.__getitem__, members)))
            if shown:
                blocks.append(header + shown)
        return "\n\n".join(blocks)


class BlockCount:
    """``count(render(items, tiers))`` kept up to date while behaviours are demoted.

    Every line of the block starts with ``-`` right after a newline and every group title with ``#``
    right after a blank line: anchor points of the BPE tokenizers (``TiktokenTokenizer.anchors``),
    where counts add up exactly. So the block's count is the sum of the counts of its lines, each
    taken with the separator that follows it (``\n``, ``\n\n`` before the next group, or nothing at
    the end), plus the group titles; a demotion changes one line and at most two separators.
    Only for tokenizers with anchors. ``set_tier`` only moves behaviours down (as demotion does).
    """

    def __init__(
        self,
        items: Sequence[Behavior],
        tiers: list[Tier],
        count: Callable[[str], int],
        lines: dict[tuple[int, Tier], str] | None = None,
    ) -> None:
        self.items = items
        self.tiers = tiers
        self.count = count
        self.lines = {} if lines is None else lines  # (index, tier) -> line, shared with ``render``
        groups = len(GROUPS)
        self.group = [_GROUP_OF.get(b.kind, -1) for b in items]
        self.headers = [f"## {title}\n" for title, _ in GROUPS]
        n = len(items)
        # visible behaviours of each group as a doubly linked list in file order
        self.prev = [-1] * n
        self.next = [-1] * n
        self.last = [-1] * groups
        self.size = [0] * groups
        for i in range(n):
            if tiers[i] != Tier.OMITTED and self.group[i] >= 0:
                g = self.group[i]
                if self.last[g] >= 0:
                    self.next[self.last[g]] = i
                    self.prev[i] = self.last[g]
                self.last[g] = i
                self.size[g] += 1
        self.total = 0
        for g in range(groups):
            if self.size[g]:
                self.total += count(self.headers[g])
        for i in range(n):
            if tiers[i] != Tier.OMITTED and self.group[i] >= 0:
                self.total += self._piece(i, tiers[i])

    def _tail(self, g: int) -> str:
        """What follows the last line of group ``g``: a blank line when a later group shows, else nothing."""
        return "\n\n" if any(self.size[h] for h in range(g + 1, len(GROUPS))) else ""

    def line(self, i: int, tier: Tier) -> str:
        found = self.lines.get((i, tier))
        if found is None:
            found = self.lines[(i, tier)] = line_for(self.items[i], tier)
        return found

    def _piece(self, i: int, tier: Tier) -> int:
        follow = "\n" if self.next[i] >= 0 else self._tail(self.group[i])
        return self.count(self.line(i, tier) + follow)

    def set_tier(self, i: int, tier: Tier) -> None:
        old = self.tiers[i]
        if tier < old:
            raise ValueError("BlockCount only follows demotions")
        if tier == old or old == Tier.OMITTED or self.group[i] < 0:
            self.tiers[i] = tier
            return
        if tier != Tier.OMITTED:
            self.total += self._piece(i, tier) - self._piece(i, old)
            self.tiers[i] = tier
            return
        # the line leaves the block
        g = self.group[i]
        self.total -= self._piece(i, old)
        p, q = self.prev[i], self.next[i]
        if p >= 0:
            self.next[p] = q
        if q >= 0:
            self.prev[q] = p
        else:
            self.last[g] = p
        self.prev[i] = self.next[i] = -1
        self.tiers[i] = tier
        if p >= 0 and q < 0:
            # p is now the group's last line: "\n" becomes what ends the group
            self.total += self._piece(p, self.tiers[p]) - self.count(self.line(p, self.tiers[p]) + "\n")
        self.size[g] -= 1
        if self.size[g]:
            return
        # the group is gone, with its title; the last line of the group before it may lose its blank line
        self.total -= self.count(self.headers[g])
        before = next((h for h in range(g - 1, -1, -1) if self.size[h]), -1)
        if before >= 0 and not any(self.size[h] for h in range(g + 1, len(GROUPS))):
            j = self.last[before]
            line = self.line(j, self.tiers[j])
            self.total += self.count(line) - self.count(line + "\n\n")
