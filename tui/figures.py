"""What every widget reads of a plan's parts, worked out once per view, and carried over from the view before.

The gauge, the parts table and the categories each made their own passes over every part of the request
(its kind, word and colour, its row of ``/context``, the largest part, the running sums), three or four
times a part, on every draw: the whole chain of an uncompacted session, for each appended request.
``Figures.of`` works them out once per view. What a part *is* (its kind, word, colour, ``/context`` row,
whether it is a tool definition or carries a cache mark) depends on its ``Section`` alone, and a followed
session's next request holds the same ``Section`` objects as the one before, but for its first parts (the
hidden part's estimate) and its newest: those are taken from the view before, where both requests hold
the same section at the same place, and only the others are worked out. The counts change with every
request (a thread's calibration refits its scale), so what is made of them is made again, but at C speed
(a list of counts, its running sums, maxima, sums by row through ``itemgetter``): no Python work per part.

Nothing here touches Textual. Section ids are unique in a plan (the layout's states are keyed by them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter

from tokenbox.core.analysis.breakdown import (
    CONTEXT_LABELS,
    PART_WORDS,
    ContextUse,
    category,
    context_key,
    context_use_of,
    part_kind,
)
from tokenbox.core.model.plan import LayoutState, Plan, SectionResult, allotments_of, counts_of, sections_of
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.session import Section

PART_CLASSES = frozenset(f"part--{key.replace('_', '-')}" for key in CONTEXT_LABELS)  # styled in app.tcss
HEAD = 8  # leading parts looked at for the first one two requests share (before it: the hidden part, re-estimated)



# each category's class made once: a view keeps one per part, the same few words for thousands of parts
_COLOURS = {base: f"part--{base.replace('_', '-')}" for base in (*CONTEXT_LABELS, "other")}


def category_colour(key: str) -> str:
    """The component class of a category's colour (``mcp:<server>`` takes the MCP tools' colour)."""
    base = key.split(":")[0]
    return _COLOURS[base if base in CONTEXT_LABELS else "other"]


def part_word(section: Section, kind: str | None = "") -> str:
    """The part column of an agent's request: message, tool call, tool result, thinking, image, hidden part…
    (``kind``: the section's ``part_kind`` when the caller has it already)."""
    if section.meta.get("is_compact_summary") is True or section.meta.get("compacted") is True:
        return "summary"  # a compaction's summary: a message, the one that replaced the history
    kind = (part_kind(section) if kind == "" else kind) or "other"
    return PART_WORDS.get(kind, kind)


def kind_colour(kind: str | None) -> str:
    """The colour class of a part of ``kind`` (``part_kind``): its category's (the same in the table, gauge and panel)."""
    kind = kind or "other"
    return category_colour("other" if kind == "reply" else kind)


@dataclass(frozen=True, eq=False)
class Kinds:
    """What each part of a plan is (index ``i``: ``plan.sections[i]``): its ``section``, ``kinds``
    (``part_kind``), ``words`` (``part_word``), ``colours`` (``kind_colour``), ``rows`` (``context_key``);
    the positions of the parts of each ``/context`` row (``groups``: key → ascending positions), of the
    tool definitions (``tools``) and of the parts with a cache mark (``marks``)."""

    sections: list[Section]
    kinds: list[str | None]
    words: list[str]
    colours: list[str]
    rows: list[tuple[str, str] | None]
    groups: dict[str, list[int]]
    tools: list[int]
    marks: list[int]

    @classmethod
    def of(cls, results: Sequence[SectionResult], before: Kinds | None = None) -> Kinds:
        """The kinds of ``results``' parts, those of ``before`` kept where it holds the same section at the same place."""
        sections = sections_of(results)  # (a followed chain's parts: no result made for it)
        start, end = _kept(before.sections, sections) if before is not None else (0, 0)
        if before is None or start == end:
            before, start, end = _NONE, 0, 0
        fresh = [*range(start), *range(end, len(sections))]  # the parts worked out here

        def merged(kept: list, make: Callable[[int], object]) -> list:
            return [make(i) for i in range(start)] + kept[start:end] + [make(i) for i in range(end, len(sections))]

        kinds = merged(before.kinds, lambda i: part_kind(sections[i]))
        words = merged(before.words, lambda i: part_word(sections[i], kinds[i]))
        colours = merged(before.colours, lambda i: kind_colour(kinds[i]))
        rows = merged(before.rows, lambda i: context_key(sections[i], kinds[i]))
        groups = {key: _within(places, start, end) for key, places in before.groups.items()}
        for i in fresh:
            row = rows[i]
            if row is not None:
                groups.setdefault(row[0], []).append(i)
        groups = {key: sorted(places) for key, places in groups.items() if places}
        tools = sorted(_within(before.tools, start, end) + [i for i in fresh if category(sections[i]) == "tool"])
        marks = sorted(_within(before.marks, start, end)
                       + [i for i in fresh if sections[i].meta.get("cache_breakpoint") is True])
        return cls(sections, kinds, words, colours, rows, groups, tools, marks)


_NONE = Kinds([], [], [], [], [], {}, [], [])


def _kept(old: list[Section], new: list[Section]) -> tuple[int, int]:
    """Where ``new`` holds the sections of ``old`` at the same places: ``new[start:end]`` (the first of
    them within ``HEAD`` parts, then as far as they go). Equal sections count (a reader may build a
    message's sections again: the timeline's fill plans past turns), the same objects compare at once."""
    n = min(len(old), len(new))
    start = next((i for i in range(min(n, HEAD)) if old[i] == new[i]), n)
    return start, start + shared_prefix(old[start:n], new[start:n])


def same_places(old: Sequence[SectionResult], new: Sequence[SectionResult]) -> tuple[int, int]:
    """Where two plans hold the same sections at the same places: ``start`` to ``end`` in both (their counts
    may differ: a thread's calibration refits its scale with every request)."""
    return _kept(sections_of(old), sections_of(new))


def _within(places: list[int], start: int, end: int) -> list[int]:
    """The ascending ``places`` from ``start`` up to ``end``."""
    return places[bisect_left(places, start): bisect_left(places, end)]


@dataclass(frozen=True, eq=False)
class Figures:
    """One view's figures of its parts; build it with ``Figures.of``. ``kinds``: what each part is;
    ``tokens``: the tokens each part shows at the step; ``cum``: the tokens shown before each part (and all
    of them at the end); ``most_before``: the largest part's untrimmed tokens (None without parts);
    ``scale``: what a full bar stands for (the largest part before trimming or its allotment; 1 at least)."""

    kinds: Kinds
    tokens: list[int]
    cum: list[int]
    most_before: int | None
    scale: int

    @classmethod
    def of(cls, plan: Plan, state: LayoutState, before: Figures | None = None) -> Figures:
        """The figures of ``plan`` at ``state``; ``before``'s kinds kept where the plans share their sections."""
        results = plan.sections
        kinds = Kinds.of(results, before.kinds if before is not None else None)
        befores = counts_of(results)  # (an untrimmed plan's, without making its thousands of results)
        if state.step == 0:
            tokens = befores  # untrimmed: each part shows its own count (its states made only when read)
        else:
            tokens = [s.tokens for s in state.sections]
        most = max(befores) if befores else None
        scale = max(1, most or 0, max(allotments_of(results, befores), default=0))
        return cls(kinds, tokens, list(accumulate(tokens, initial=0)), most, scale)

    @property
    def shown_total(self) -> int:
        """The tokens the parts show (the total less what joining them adds)."""
        return self.cum[-1]

    @property
    def widest_word(self) -> int:
        """The length of the longest part word (0 without parts)."""
        return max(map(len, set(self.kinds.words)), default=0)

    def context_use(self, window: int, compact_at: int | None, used: int) -> ContextUse:
        """``analysis.breakdown.context_use`` of the tokens shown (each row summed from its parts' places)."""
        rows, tokens = self.kinds.rows, self.tokens
        sums: dict[str, list] = {}
        for key, places in self.kinds.groups.items():
            total = tokens[places[0]] if len(places) == 1 else sum(itemgetter(*places)(tokens))
            sums[key] = [rows[places[0]][1], total, len(places)]  # type: ignore[index]  # labelled by its first part
        return context_use_of(sums, used, window, compact_at)

    def owner(self, cell: int, width: int, cell_of: Callable[[int], int]) -> int | None:
        """The part drawn last on gauge cell ``cell`` when each part that shows tokens takes the cells from
        ``cell_of`` its start up to ``cell_of`` its end (one cell at least), in order: the last such part
        that starts at or before the cell, if it reaches it. Two binary searches over the running sums (the
        counts must not be below 0): the cost is the cells', not the parts'."""
        cum, count = self.cum, len(self.tokens)
        low, high = 0, count
        while low < high:  # the last part that starts at or before the cell
            mid = (low + high) // 2
            if cell_of(cum[mid]) <= cell:
                low = mid + 1
            else:
                high = mid
        index = low - 1
        if index < 0:
            return None
        if not self.tokens[index]:  # parts of no tokens take no cell: the last part before them that has some
            index = bisect_left(cum, cum[index], 0, index + 1) - 1
            if index < 0:
                return None
        start = cell_of(cum[index])
        end = max(cell_of(cum[index + 1]), start + 1 if start < width else start)
        return index if start <= cell < min(end, width) else None
