"""Views of imported sessions for the TUI and reports: categories, tool costs, cache prefix, usage.

* ``category(section)``: ``tool`` | ``system`` | ``history`` | ``tool_result`` | ``other`` | ``latest``
  for imported sections (``None`` for sections of a native tokenbox session).
* ``category_totals(plan)`` / ``tool_totals(plan)``: tokens per category and per tool definition.
* ``cache_breakpoints(session)`` / ``cached_prefix_tokens(plan)``: where the provider's cache prefix
  ends (``cache_control`` marks) and how many tokens lie up to the last mark.
* ``turn_usages(turns)``: per turn, what the file recorded next to what tokenbox estimates.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tokenbox.core.model.plan import Plan, SectionResult
from tokenbox.core.model.session import RecordedUsage, Section, Session
from tokenbox.core.planning.engine import Engine
from tokenbox.core.sources.loader import load_turns
from tokenbox.core.sources.readers.common import CATEGORIES

CATEGORY_LABELS = {
    "inferred": "not in the file (inferred)",
    "tool": "tool definitions",
    "system": "system prompt",
    "history": "history",
    "tool_result": "tool results",
    "other": "other blocks",
    "latest": "latest message",
    "reply": "the reply (output)",
}


def category(section: Section) -> str | None:
    """The importer's category of ``section`` (``None`` for a section that was not imported)."""
    value = section.meta.get("category")
    return value if value in CATEGORIES else None


@dataclass(frozen=True, slots=True)
class Total:
    """Tokens of a group of sections, before and after layout."""

    key: str  # a category, or a tool name for tool_totals
    label: str
    sections: int
    tokens_before: int
    tokens_after: int


def sum_by(
    plan: Plan, key_of: Callable[[SectionResult], str | None], shown: Sequence[int] | None = None
) -> dict[str, Total]:
    """The sections of ``plan`` summed per key, in the order keys first appear (a ``None`` key leaves the
    section out). ``tokens_after`` is each section's count after layout, or ``shown[i]`` (its count at
    a step of the trace, which the TUI shows). The one place sections are summed by group."""
    sums: dict[str, list[int]] = {}
    for index, result in enumerate(plan.sections):
        key = key_of(result)
        if key is None:
            continue
        entry = sums.setdefault(key, [0, 0, 0])
        entry[0] += 1
        entry[1] += result.tokens_before
        entry[2] += result.tokens_after if shown is None else shown[index]
    return {key: Total(key, key, *entry) for key, entry in sums.items()}


def category_totals(plan: Plan, shown: Sequence[int] | None = None) -> list[Total]:
    """Tokens per category, in prompt order (categories without sections are left out)."""
    sums = sum_by(plan, lambda result: category(result.section), shown)
    return [replace(sums[k], label=CATEGORY_LABELS[k]) for k in CATEGORIES if k in sums]


def tool_totals(plan: Plan, shown: Sequence[int] | None = None) -> list[Total]:
    """Tokens of each tool definition, in file order, so users see which tool costs what."""
    totals = []
    for index, result in enumerate(plan.sections):
        if category(result.section) == "tool":
            name = str(result.section.meta.get("tool", result.id))
            totals.append(Total(name, name, 1, result.tokens_before, result.tokens_after if shown is None else shown[index]))
    return totals


def cache_breakpoints(session: Session) -> tuple[str, ...]:
    """Ids of the sections that carry a ``cache_control`` mark, in prompt order."""
    return tuple(s.id for s in session.sections if s.meta.get("cache_breakpoint") is True)


def cached_prefix_tokens(plan: Plan) -> int | None:
    """Untrimmed tokens of the sections up to and including the last cache mark (``None``: no mark)."""
    marks = [i for i, s in enumerate(plan.sections) if s.section.meta.get("cache_breakpoint") is True]
    if not marks:
        return None
    return sum(s.tokens_before for s in plan.sections[: marks[-1] + 1])


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """One turn: the usage the file recorded and tokenbox's count of the same context."""

    turn: int
    turn_count: int
    message_id: str | None
    sidechain: bool
    recorded: RecordedUsage | None
    estimated: int  # tokens.before of the turn's plan: the untrimmed context as tokenbox counts it
    tokenizer: str
    exact: bool

    @property
    def ratio(self) -> float | None:
        """``estimated / recorded context`` (``None`` without a recorded context)."""
        if self.recorded is None or not self.recorded.context_tokens:
            return None
        return self.estimated / self.recorded.context_tokens

    @property
    def unaccounted(self) -> int | None:
        """Recorded context minus the estimate: for transcripts mostly the unrecorded system prompt and tools."""
        return None if self.recorded is None else self.recorded.context_tokens - self.estimated


def turn_usages(
    turns: Sequence[Session], engine: Engine | None = None, *, tokenizer: str | None = None, budget: int | None = None
) -> list[TurnUsage]:
    """Plan every turn and pair its estimate with its recorded usage."""
    engine = engine or Engine()
    usages = []
    for index, session in enumerate(turns, start=1):
        plan = engine.plan(session, budget, tokenizer)
        message_id = session.meta.get("message_id")
        usages.append(
            TurnUsage(
                turn=index,
                turn_count=len(turns),
                message_id=message_id if isinstance(message_id, str) else None,
                sidechain=session.meta.get("sidechain") is True,
                recorded=session.recorded,
                estimated=plan.tokens_before,
                tokenizer=plan.tokenizer.name,
                exact=plan.tokenizer.exact,
            )
        )
    return usages


def load_turn_usages(path: str | os.PathLike[str], engine: Engine | None = None, **options: object) -> list[TurnUsage]:
    """``turn_usages`` of every turn of the file at ``path``."""
    return turn_usages(load_turns(path), engine, **options)  # type: ignore[arg-type]
