"""Views of imported sessions for the TUI and reports: categories, tool costs, cache prefix, usage.

* ``category(section)``: ``tool`` | ``system`` | ``history`` | ``tool_result`` | ``other`` | ``latest``
  for imported sections (``None`` for sections of a native tokenbox session).
* ``category_totals(plan)`` / ``tool_totals(plan)``: tokens per category and per tool definition.
* ``cache_breakpoints(session)`` / ``cached_prefix_tokens(plan)``: where the provider's cache prefix
  ends (``cache_control`` marks) and how many tokens lie up to the last mark.
* ``turn_usages(turns)``: per turn, what the file recorded next to what tokenbox estimates.
* ``context_use(plan, window, compact_at)``: an agent's request by what a person asks about, as
  Claude Code's ``/context`` groups it (the part the file does not hold, system prompt, memory files,
  tool definitions, MCP tools per server, messages, tool calls, tool results, thinking, images), the
  parts adding up to the headline, with the free space and the auto-compact buffer of the window.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tokenbox.core.model.plan import Plan, SectionResult, SectionResults
from tokenbox.core.model.session import RecordedUsage, Session
from tokenbox.core.planning.engine import Engine
from tokenbox.core.sources.loader import load_turns
from tokenbox.core.sources.readers.common import CATEGORIES
from tokenbox.core.sources.readers.parts import CONTEXT_LABELS, category, context_key, is_memory, mcp_server, part_kind

__all__ = ["CONTEXT_LABELS", "PART_WORDS", "category", "context_key", "is_memory", "mcp_server", "part_kind"]

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


# ---------------------------------------------------------------- an agent's request, as /context shows it

# The part column of an agent's request: what one section is, in a word or two.
PART_WORDS = {"hidden": "hidden part", "system": "system", "memory": "memory", "tools": "tool def",
              "mcp": "MCP tool def", "messages": "message", "tool_calls": "tool call", "tool_results": "tool result",
              "thinking": "thinking", "images": "image", "other": "other", "reply": "reply"}
@dataclass(frozen=True, slots=True)
class Category:
    """Tokens of one kind of part of an agent's request (``key``: ``mcp:<server>`` for one MCP server)."""

    key: str
    label: str
    tokens: int
    parts: int


@dataclass(frozen=True, slots=True)
class ContextUse:
    """An agent's request by category: ``categories`` add up to ``used`` (the headline at the step shown);
    the rest of the ``window`` is free space and, when the agent compacts at ``compact_at``, the
    auto-compact buffer above it."""

    categories: tuple[Category, ...]
    used: int
    window: int
    compact_at: int | None

    @property
    def buffer(self) -> int:
        """The auto-compact buffer: the window above the threshold (0 when the agent does not compact)."""
        return 0 if self.compact_at is None else max(0, self.window - self.compact_at)

    @property
    def free(self) -> int:
        """Room left before compaction (before the window's end when the agent does not compact); negative
        when the context is past it."""
        return (self.window if self.compact_at is None else self.compact_at) - self.used



def context_use(plan: Plan, window: int, compact_at: int | None, shown: Sequence[int] | None = None,
                used: int | None = None) -> ContextUse:
    """``plan`` (an agent's request) by category. ``shown`` and ``used``: each section's tokens and the
    total at a step of the trace (the plan's own after layout by default). What joining the parts adds
    is its own row (``framing``), so the rows always add up to ``used``."""
    used = plan.tokens_after if used is None else used
    sums: dict[str, list] = {}
    results = plan.sections
    if shown is None and isinstance(results, SectionResults) and results.groups is not None:
        for key, (label, count, parts) in results.groups.items():  # kept as the session grew (planning.running)
            sums[key] = [label, count, parts]
    else:
        tokens = [r.tokens_after for r in results] if shown is None else list(shown)
        for result, count in zip(results, tokens, strict=True):
            row = context_key(result.section)
            if row is None:
                continue
            entry = sums.setdefault(row[0], [row[1], 0, 0])
            entry[1] += count
            entry[2] += 1
    return context_use_of(sums, used, window, compact_at)


def context_use_of(sums: Mapping[str, Sequence], used: int, window: int, compact_at: int | None) -> ContextUse:
    """The ``ContextUse`` of rows summed already: ``sums`` maps each row's key (``parts.context_key``) to its
    label (the first part's), tokens and parts (further items are the caller's); ``used`` the total."""
    order = list(CONTEXT_LABELS)
    keys = sorted(sums, key=lambda k: (order.index(k.split(":")[0]), k))
    categories = [Category(k, sums[k][0], sums[k][1], sums[k][2]) for k in keys]
    rest = used - sum(c.tokens for c in categories)  # separators, and sections no reader placed
    if rest:
        categories.append(Category("framing", CONTEXT_LABELS["framing"], rest, 0))
    return ContextUse(tuple(categories), used, window, compact_at)
