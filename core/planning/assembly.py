"""Section kinds → text: the cached prompt prefix, incremental context, floop behaviour tiers.

Cache states model the agent's own caches (passepartout): a prefix *hit* means the prefix inputs are
unchanged since the previous turn, so a provider's prompt cache would hit too; context is *reused*
while focus, scope and memory content are unchanged, and *skipped* on heartbeat/delegation turns.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TypeVar

from tokenbox.core.model.plan import ContextCache, PrefixCache
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import Section, Session, TurnHistory
from tokenbox.core.planning import behaviors

SKIPPING_SENSORS = ("heartbeat", "delegation")


def digest(*parts: object) -> str:
    """A stable digest of JSON-serialisable parts (never Python's salted ``hash``)."""
    payload = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=16).hexdigest()


def prefix_text(section: Section) -> str:
    """``IDENTITY: {assistant_name}{identity}{feedback}`` + blank line + ``TOOLS:`` + newline + tools."""
    return f"IDENTITY: {section.assistant_name}{section.identity}{section.feedback}\n\nTOOLS:\n{section.tools}"


def context_text(section: Section) -> str:
    """The awareness block rendered from focus, scope and memory (and any literal text)."""
    lines = []
    if section.foveal_focus is not None:
        lines.append(f"FOCUS: {section.foveal_focus}")
    if section.scope is not None:
        lines.append(f"SCOPE: {section.scope}")
    if section.memory:
        lines.append("MEMORY:")
        lines.extend("- " + item.replace("\n", "\n  ") for item in section.memory)
    if section.text:
        lines.append(section.text)
    return "\n".join(lines)


@dataclass
class AssemblyState:
    """What the agent's caches hold after a turn: per section id, the digest of the last inputs."""

    prefix: dict[str, str] = field(default_factory=dict)
    context: dict[str, str] = field(default_factory=dict)

    def copy(self) -> AssemblyState:
        return AssemblyState(dict(self.prefix), dict(self.context))


@dataclass
class Assembled:
    """A section's text for this turn, before layout."""

    section: Section
    text: str
    skipped: bool = False
    tiers: list[behaviors.Tier] | None = None


@dataclass
class Assembly:
    """Every section of a turn assembled, with the cache states of that turn."""

    parts: list[Assembled]
    prefix_cache: PrefixCache
    context_cache: ContextCache


_TEXTS_KEPT = 256  # per cache of the assembler: prefix texts, context texts, behaviour blocks
_REPLAYS_KEPT = 8  # replayed histories kept (each holds its turns)


class Assembler:
    """Assembles turns, caching prefix and context text by the digest of their inputs.

    ``additive`` says that the counts of ``count`` add up at line starts (BPE tokenizers), which
    lets the behaviour budget be fitted incrementally (``behaviors.BlockCount``).
    """

    def __init__(self, count: Callable[[str], int], *, additive: bool = False) -> None:
        self.count = count
        self.additive = additive
        self._prefix_texts: dict[str, str] = {}
        self._context_texts: dict[str, str] = {}
        self._behavior_blocks: dict[str, tuple[list[behaviors.Tier], str]] = {}
        # (len(history), id(last turn)) -> (history, state after replaying it)
        self._replayed: dict[tuple[int, int], tuple[tuple[Session, ...], AssemblyState]] = {}

    def replay(self, history: tuple[Session, ...]) -> AssemblyState:
        """The caches' state after the turns of ``history`` (``assemble(..., texts=False)`` on each, in order).

        Remembered for the last few histories: planning the turns of a log one after the other (a
        timeline) replays one more turn each time instead of the whole log again.
        """
        if not isinstance(history, TurnHistory):
            history = tuple(history)  # a view stays a view: comparing two of one list is O(1)
        if not history:
            return AssemblyState()
        found = self._replayed.get((len(history), id(history[-1])))
        if found is not None and found[0] == history:  # the same turns (identical objects compare fast)
            return found[1].copy()
        state = None
        if len(history) > 1:
            before = self._replayed.get((len(history) - 1, id(history[-2])))
            if before is not None and before[0] == history[:-1]:
                state = before[1].copy()
                self.assemble(history[-1], state, texts=False)
        if state is None:
            state = AssemblyState()
            for earlier in history:
                self.assemble(earlier, state, texts=False)
        if len(self._replayed) >= _REPLAYS_KEPT:
            self._replayed.pop(next(iter(self._replayed)))
        self._replayed[(len(history), id(history[-1]))] = (history, state.copy())
        return state

    def assemble(self, session: Session, state: AssemblyState, *, texts: bool = True) -> Assembly:
        """Assemble one turn, updating ``state`` (the agent's caches) as the agent would.

        With ``texts=False`` only the cache states are advanced (replaying earlier turns).
        """
        parts: list[Assembled] = []
        prefix_states: list[PrefixCache] = []
        context_states: list[ContextCache] = []
        for section in session.sections:
            kind = section.kind
            if kind == "prefix":
                key = digest(section.assistant_name, section.identity, section.feedback, section.tools)
                prefix_states.append(PrefixCache.HIT if state.prefix.get(section.id) == key else PrefixCache.MISS)
                state.prefix[section.id] = key
                if not texts:
                    continue
                text = self._prefix_texts.get(key)
                if text is None:
                    text = _keep(self._prefix_texts, key, prefix_text(section))
                parts.append(Assembled(section, text))
            elif kind == "context":
                if session.sensor in SKIPPING_SENSORS:
                    context_states.append(ContextCache.SKIPPED)
                    parts.append(Assembled(section, "", skipped=True))
                    continue
                key = digest(section.foveal_focus, section.scope, list(section.memory), section.text)
                context_states.append(ContextCache.REUSED if state.context.get(section.id) == key else ContextCache.REBUILT)
                state.context[section.id] = key
                if not texts:
                    continue
                text = self._context_texts.get(key)
                if text is None:
                    text = _keep(self._context_texts, key, context_text(section))
                parts.append(Assembled(section, text))
            elif not texts:
                continue
            elif kind == "behaviors":
                key = digest([(b.name, b.kind, b.activation, b.content, b.summary, list(b.tags)) for b in section.items], section.budget)
                block = self._behavior_blocks.get(key)
                if block is None:
                    tiers, _ = behaviors.fit_budget(section.items, section.budget, self.count, additive=self.additive)
                    block = _keep(self._behavior_blocks, key, (tiers, behaviors.render(section.items, tiers)))
                parts.append(Assembled(section, block[1], tiers=list(block[0])))
            else:
                parts.append(Assembled(section, section.text or ""))
        prefix = _combine(prefix_states, (PrefixCache.MISS, PrefixCache.HIT), PrefixCache.NONE)
        context = _combine(context_states, (ContextCache.REBUILT, ContextCache.REUSED, ContextCache.SKIPPED), ContextCache.NONE)
        return Assembly(parts, prefix, context)


def _keep(cache: dict, key: str, value):
    """Store ``value`` in a bounded cache (the oldest entry goes first); returns it."""
    if len(cache) >= _TEXTS_KEPT:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


_State = TypeVar("_State", PrefixCache, ContextCache)


def _combine(states: list[_State], severity: tuple[_State, ...], none: _State) -> _State:
    """One state for several sections: the first of ``severity`` that any section has."""
    if not states:
        return none
    for state in severity:
        if state in states:
            return state
    return states[0]
