"""floop behaviour tiers: activation → tier, the constraint floor, budget demotion, tiered rendering."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from tokenbox.core.model import Behavior


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


def render(items: Sequence[Behavior], tiers: Sequence[Tier]) -> str:
    """Constraints / Directives / Procedures groups of the visible behaviours, in file order."""
    blocks = []
    for title, group_kinds in GROUPS:
        lines = [line_for(b, t) for b, t in zip(items, tiers, strict=True) if b.kind in group_kinds and t != Tier.OMITTED]
        if lines:
            blocks.append(f"## {title}\n" + "\n".join(lines))
    return "\n\n".join(blocks)


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


def fit_budget(items: Sequence[Behavior], budget: int | None, count: Callable[[str], int]) -> tuple[list[Tier], int]:
    """Initial tiers demoted until the rendered block counts at most ``budget`` tokens.

    Returns the tiers and the number of demotions made. Without a budget nothing is demoted.
    """
    tiers = [tier_for(b) for b in items]
    demotions = 0
    if budget is None:
        return tiers, 0
    while count(render(items, tiers)) > budget:
        if demote_once(items, tiers) is None:
            break
        demotions += 1
    return tiers, demotions
