"""``Engine``: plans sessions, keeping caches across calls so re-planning does only new work.

Caches: token counts per tokenizer keyed by text, assembled prefix/context/behaviour text keyed by
the digest of their inputs, lens results, and whole layouts keyed by their inputs. A ``.jsonl``
turn replays the assembly of every earlier turn first, so its cache states are the real ones.
"""

from __future__ import annotations

import math
import operator
import os
import threading
from collections.abc import Mapping
from fractions import Fraction

from tokenbox.core.model.errors import BadInput, ConfigError, ContextCriticalOverflow, SessionError, TokenizerError
from tokenbox.core.model.llms import Window, WindowSource
from tokenbox.core.model.names import ESTIMATE, NATIVE_FORMAT
from tokenbox.core.model.plan import Budget, ContextCache, Plan, PlanFailure, PrefixCache, SectionResult, TokenizerInfo
from tokenbox.core.model.prefix import shared_prefix
from tokenbox.core.model.prices import request_cost
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import TRIMMING_POLICIES, Section, Session, TurnHistory
from tokenbox.core.planning.assembly import Assembled, Assembler, Assembly
from tokenbox.core.planning.config import MAX_COUNT, Resolved, Settings, available_tokens, load_settings, resolve, what_if_budget
from tokenbox.core.planning.layout import LayoutResult, LensCache, fixed_tokens, patch_layout, run_layout
from tokenbox.core.planning.running import SectionSums, TextSize, Untrimmed, inferred_size, untrimmed
from tokenbox.core.tokens.charclass import BaseEstimates
from tokenbox.core.tokens.counting import TokenCounter
from tokenbox.core.tokens.estimate import EstimateTokenizer
from tokenbox.core.tokens.tokenizers import TokenizerRegistry, default_registry

_LAYOUT_CACHE_LIMIT = 64
_LAYOUT_CACHE_CHARS = 64 * 1024 * 1024  # text held by cached layouts (their sessions' texts, roughly)
# Parts held by cached layouts (each part: its result, key item and hash). A turn of a 20 MB transcript
# has thousands: without this bound 64 of them held ≈ 150 MB of per-part objects whose texts are shared.
_LAYOUT_CACHE_PARTS = 60_000
_SCALED_COUNTERS = 4  # calibrated estimate counters kept (one per scale; a followed thread refits each turn)


class _PartsKey:
    """The assembled parts as a layout cache key, hashed once (a what-if plan reuses it as it is).

    The hash is that of the parts' own hashes, so a key patched at a few parts (``patched``) hashes
    only those again.
    """

    __slots__ = ("chars", "hash", "hashes", "items")

    def __init__(self, parts: list[Assembled], before: _PartsKey | None = None) -> None:
        self.items = tuple(map(_key_item, parts))
        # The parts the key before shares keep their hashes: a growing session's next turn holds all of the
        # turn before but its newest parts, and its first part (an agent's hidden part) is sized anew.
        same = shared_prefix(before.items[1:], self.items[1:]) if before is not None and self.items else 0
        if same:
            self.hashes = (hash(self.items[0]), *before.hashes[1:same + 1], *map(hash, self.items[same + 1:]))
        else:
            self.hashes = tuple(map(hash, self.items))
        self.hash = hash(self.hashes)
        self.chars = sum(len(p.text) for p in parts)

    @property
    def parts(self) -> int:
        return len(self.items)

    @classmethod
    def patched(cls, before: _PartsKey, parts: list[Assembled], changed: list[int]) -> _PartsKey:
        """The key of ``parts``, which differ from those of ``before`` only at the indices ``changed``."""
        key = cls.__new__(cls)
        items, hashes, chars = list(before.items), list(before.hashes), before.chars
        for i in changed:
            chars += len(parts[i].text) - len(items[i][1])
            items[i] = _key_item(parts[i])
            hashes[i] = hash(items[i])
        key.items, key.hashes, key.chars = tuple(items), tuple(hashes), chars
        key.hash = hash(key.hashes)
        return key

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _PartsKey) and self.hash == other.hash and self.items == other.items)


def _key_item(part: Assembled) -> tuple:
    return (part.section, part.text, part.skipped, tuple(part.tiers) if part.tiers else None)


_PATCHED_KINDS = ("prefix", "context", "behaviors")  # kinds whose text depends on more than the section: never patched
_PATCH_LIMIT = 16  # changed sections past which a session is assembled in full


def _changed_sections(before: Session, session: Session) -> list[int] | None:
    """The indices of the sections of ``session`` that are not those of ``before`` (the turn planned
    last), when its assembly can be the one of ``before`` patched there; else ``None``.

    Only sections of text kinds may differ, with no sized part to fit (``context_tokens``), the same
    sensor and the same earlier turns: then every other part is assembled exactly as it was.
    """
    if (
        len(before.sections) != len(session.sections)
        or before.sensor != session.sensor
        or before.context_tokens is not None
        or session.context_tokens is not None
        or not (before.history is session.history or (not before.history and not session.history))
    ):
        return None
    changed = [i for i, same in enumerate(map(operator.is_, before.sections, session.sections)) if not same]
    if len(changed) > _PATCH_LIMIT:
        return None
    for i in changed:
        if before.sections[i].kind in _PATCHED_KINDS or session.sections[i].kind in _PATCHED_KINDS:
            return None
    return changed


def _rebind(outcome: LayoutResult, parts: list[Assembled]) -> LayoutResult:
    """A cached layout with its results pointing at this session's ``Section`` objects.

    Equal sections can still differ in what equality ignores (``meta``), which readers of the plan see.
    """
    if all(r.section is p.section for r, p in zip(outcome.sections, parts, strict=True)):
        return outcome
    sections = [r if r.section is p.section else replace(r, section=p.section) for r, p in zip(outcome.sections, parts, strict=True)]
    return replace(outcome, sections=sections)


class Engine:
    """Plans sessions. Holds the caches; one engine can serve many sessions and budgets."""

    def __init__(
        self,
        registry: TokenizerRegistry | None = None,
        settings: Settings | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if registry is not None and not isinstance(registry, TokenizerRegistry):
            raise ConfigError(f"registry must be a TokenizerRegistry, not {type(registry).__name__}", "pass default_registry()")
        if settings is not None and not isinstance(settings, Settings):
            raise ConfigError(f"settings must be a Settings, not {type(settings).__name__}", "leave it out to read the environment")
        if environ is not None and not (isinstance(environ, Mapping)
                                        and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
            raise ConfigError("environ must be a mapping of str to str", "pass a dict of strings")
        self.registry = registry or default_registry()
        self.settings = settings if settings is not None else load_settings(os.environ if environ is None else environ)
        self._counters: dict[str, TokenCounter] = {}
        self._assemblers: dict[str, Assembler] = {}
        self._lock = threading.RLock()
        self._lens_cache = LensCache()
        self._estimate_bases = BaseEstimates()  # shared by the calibrated counters of every scale
        self._sums = SectionSums(self._estimate_bases)  # the estimate's figures of the turn planned last
        self._chars = TextSize()  # the text of the turn planned last (``MAX_TEXT_CHARS``)
        self._layouts: dict[tuple, LayoutResult | ContextCriticalOverflow] = {}
        self._layout_chars = 0
        self._layout_parts = 0
        # per assembler (by its counter's key, dropped with it): (session, assembly, layout key, notes)
        # of the last session planned
        self._assembled: dict[str, tuple[Session, Assembly, _PartsKey, tuple[str, ...]]] = {}
        self._last_key: _PartsKey | None = None  # the key assembled last, whatever its counter

    def counter(self, tokenizer: str) -> TokenCounter:
        """The cached counter of tokenizer ``tokenizer`` (loading it on first use)."""
        if not isinstance(tokenizer, str) or not tokenizer:
                raise ConfigError(f"tokenizer={tokenizer!r:.40} is not a tokenizer name", "pass a name from `tokenbox tokenizers`")
        counter = self._counters.get(tokenizer)
        if counter is None:
            counter = self._counters[tokenizer] = TokenCounter(self.registry.get(tokenizer))
        return counter

    def resolve(self, session: Session, **overrides) -> Resolved:
        """Budget and tokenizer for ``session`` after the precedence rules (errors carry the file position)."""
        try:
            resolved = resolve(session, self.settings, **overrides)
        except BadInput as exc:
            line, col = session.position(exc.field or "budget")
            if line is None and session.source_format == NATIVE_FORMAT:
                line, col = session.line, 1
            raise exc.located(session.path, line, col) from None
        if not self.registry.knows(resolved.tokenizer):
            from_session = not overrides.get("tokenizer") and not self.settings.env_tokenizer and session.tokenizer
            line, col = session.position("tokenizer") if from_session else (None, None)
            source = ""
            if not overrides.get("tokenizer") and self.settings.env_tokenizer:
                source = " (from TOKENBOX_TOKENIZER)"
            elif not from_session and not overrides.get("tokenizer"):
                source = " (from the config file)"
            raise TokenizerError(
                f"unknown tokenizer {resolved.tokenizer!r}{source}", f"known tokenizers: {', '.join(self.registry.names())}",
                session.path if from_session else None, line, col,
            )
        return resolved

    def plan(
        self,
        session: Session,
        budget: int | None = None,
        tokenizer: str | None = None,
        *,
        trimming: str | None = None,
        reserve_out: int | None = None,
        what_if: int = 0,
    ) -> Plan:
        """Plan one turn. ``budget`` overrides ``max_ctx``; ``tokenizer`` overrides the tokenizer name;
        ``what_if`` moves the resolved max_ctx by that many ``WHAT_IF_STEP_PERCENT`` % steps (the plan
        keeps the base and the step; a what-if that leaves nothing available raises ``WhatIfTooSmall``).

        Raises ``BadInput`` subclasses for unusable settings; critical overflow is reported in the
        plan (``plan.ok`` false, ``plan.error`` set), not raised.
        """
        _check_arguments(session, budget, tokenizer, trimming, reserve_out)
        with self._lock:  # the caches are shared: one plan at a time per engine (identical results)
            chars = self._chars.of(session.sections)  # the sections that differ from the turn before
            if chars > MAX_TEXT_CHARS:
                raise SessionError(
                    f"the session holds {chars // (1024 * 1024)} MiB of text, over the {MAX_TEXT_CHARS // (1024 * 1024)} "
                    "MiB a plan may hold", "split the session, or trim its parts before planning", session.path,
                )
            return self._plan(session, budget, tokenizer, trimming, reserve_out, what_if)

    def _plan(self, session: Session, budget, tokenizer, trimming, reserve_out, what_if: int = 0) -> Plan:
        resolved = self.resolve(session, budget=budget, tokenizer=tokenizer, trimming=trimming, reserve_out=reserve_out)
        resolved, window, window_notes = _window_room(session, resolved, what_if)
        base_max_ctx = resolved.max_ctx if what_if else None
        resolved = what_if_budget(resolved, what_if)
        counter_key = resolved.tokenizer
        calibration = session.calibration
        if calibration is not None and resolved.tokenizer == ESTIMATE and calibration.scale != 1.0:
            counter_key = f"{ESTIMATE}×{calibration.scale!r}"  # the thread's fitted scale (README, "Real agents")
            counter = self._scaled_counter(counter_key, calibration.scale)
        else:
            counter = self.counter(resolved.tokenizer)
        untouched = None
        if type(counter.tokenizer) is EstimateTokenizer and not session.history:
            # a growing agent's turn: counted from what the turn before left (nothing else is assembled)
            untouched = untrimmed(self._sums, session, counter.tokenizer, resolved.available)
        if untouched is not None:
            return self._untrimmed_plan(session, untouched, counter.tokenizer, resolved, window, window_notes, base_max_ctx,
                                        what_if)
        assembler = self._assemblers.get(counter_key)
        if assembler is None:
            additive = counter.tokenizer.anchors("a\nb") is not None
            assembler = self._assemblers[counter_key] = Assembler(counter.count, additive=additive)
            # scales fitted for earlier requests: their assemblers go, with what each last assembled (a
            # followed thread refits at every request: kept, they would pile up, each holding a turn)
            scaled = [k for k in self._assemblers if k.startswith(ESTIMATE + "×")]
            for old in scaled[: max(0, len(scaled) - _SCALED_COUNTERS)]:
                self._assemblers.pop(old, None)
                self._assembled.pop(old, None)
        assembly, parts_key, notes, base = self._assemble(session, assembler, counter, counter_key)
        key = (counter_key, resolved.available, resolved.trimming, parts_key)
        outcome = self._layouts.get(key)
        if outcome is None:
            # an edit of a few sections: the layout of the parts before, patched, when nothing is trimmed
            previous = self._layouts.get((*key[:3], base[0])) if base is not None else None
            if isinstance(previous, LayoutResult):
                outcome = patch_layout(previous, assembly.parts, base[1], counter, resolved.available, self._lens_cache)
                if outcome is not None:
                    outcome = _rebind(outcome, assembly.parts)
            if outcome is None:
                try:
                    outcome = run_layout(assembly.parts, counter, resolved.available, resolved.trimming, self._lens_cache)
                except ContextCriticalOverflow as exc:
                    outcome = exc
            self._remember_layout(key, outcome, parts_key)
        elif isinstance(outcome, LayoutResult):
            outcome = _rebind(outcome, assembly.parts)
        if window is not None and not window.known and isinstance(outcome, LayoutResult) and resolved.available >= MAX_COUNT // 2:
            # an unknown window and no headline known before counting: laid out unbounded, then the budget
            # is the room the untrimmed request takes (nothing was trimmed to a guessed window)
            resolved = _room_for(resolved, outcome.tokens_before)
        tokenizer_obj = counter.tokenizer
        # "exact" says whether tokens.after is the tokenizer's own count of the rendered context: parts
        # of a fixed size (a transcript's hidden part, an API's framing, images) make it another figure
        # (whether that figure is exact is the headline's kind: a body counted by a published rule is).
        # (a part of a fixed 0 that renders text, a request's own reply, is such a part too)
        exact = bool(tokenizer_obj.exact) and not any(
            p.section.tokens is not None and (p.section.tokens or p.section.text) for p in assembly.parts)
        info = TokenizerInfo(resolved.tokenizer, exact, str(tokenizer_obj.version))
        plan_budget = Budget(resolved.max_ctx, resolved.reserve_out, resolved.headroom, resolved.available)
        common = dict(
            session=session,
            tokenizer=info,
            budget=plan_budget,
            prefix_cache=assembly.prefix_cache,
            context_cache=assembly.context_cache,
            trimming=resolved.trimming,
            recorded=session.recorded,
            base_max_ctx=base_max_ctx,
            what_if=what_if,
            warnings=session.warnings + notes + window_notes,
            window=window,
            cost=(request_cost(session.model_name, session.recorded, self.settings.config_prices)
                  if session.source_format != NATIVE_FORMAT else None),
        )
        if isinstance(outcome, ContextCriticalOverflow):
            sizes = [p.section.tokens if p.section.tokens is not None else counter.count(p.text) if p.text else 0
                     for p in assembly.parts]
            sections = tuple(
                SectionResult(
                    section=p.section,
                    tokens_before=size,
                    tokens_after=size,
                    allotment=size,
                    action="skipped" if p.skipped else "kept",
                    lenses=(),
                    text_before=p.text,
                    text_after=p.text,
                )
                for p, size in zip(assembly.parts, sizes, strict=True)
            )
            total = counter.count_joined([p.text for p in assembly.parts if p.text and p.section.tokens is None]) + fixed_tokens(assembly.parts)
            return Plan(
                sections=sections,
                steps=(),
                tokens_before=total,
                tokens_after=total,
                error={"kind": PlanFailure.CONTEXT_CRITICAL_OVERFLOW, "message": str(outcome)},
                fixed_load=outcome.fixed_load,
                **common,
            )
        return Plan(
            sections=tuple(outcome.sections),
            steps=tuple(outcome.steps),
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            fixed_load=outcome.fixed_load,
            **common,
        )

    def _untrimmed_plan(self, session: Session, untouched: Untrimmed, tokenizer: EstimateTokenizer, resolved: Resolved,
                        window: Window | None, window_notes: tuple[str, ...], base_max_ctx: int | None,
                        what_if: int) -> Plan:
        """The plan of a turn laid out as it is (``running.untrimmed``): as the full layout makes it."""
        if window is not None and not window.known and resolved.available >= MAX_COUNT // 2:
            resolved = _room_for(resolved, untouched.total)  # as in ``_plan``: the room the request takes
        info = TokenizerInfo(resolved.tokenizer, False, str(tokenizer.version))  # an estimate: never exact
        return Plan(
            session=session,
            tokenizer=info,
            budget=Budget(resolved.max_ctx, resolved.reserve_out, resolved.headroom, resolved.available),
            sections=untouched.sections,
            steps=(),
            tokens_before=untouched.total,
            tokens_after=untouched.total,
            prefix_cache=PrefixCache.NONE,  # no prefix or context section (``running.ASSEMBLED_KINDS``)
            context_cache=ContextCache.NONE,
            trimming=resolved.trimming,
            fixed_load=untouched.fixed_load,
            recorded=session.recorded,
            base_max_ctx=base_max_ctx,
            what_if=what_if,
            warnings=session.warnings + untouched.notes + window_notes,
            window=window,
            cost=(request_cost(session.model_name, session.recorded, self.settings.config_prices)
                  if session.source_format != NATIVE_FORMAT else None),
        )

    def _assemble(
        self, session: Session, assembler: Assembler, counter: TokenCounter, counter_key: str
    ) -> tuple[Assembly, _PartsKey, tuple[str, ...], tuple[_PartsKey, list[int]] | None]:
        """The assembled turn, its layout key and notes; kept for the last session object (what-if plans).

        A turn that differs from the last one in a few text sections (an edit of the file) is that
        turn's assembly patched there; it then also comes with the key of the parts before and the
        indices that changed, from which the layout can be patched.
        """
        memo = self._assembled.get(counter_key)
        if memo is not None and memo[0] is session:
            return memo[1], memo[2], memo[3], None
        changed = _changed_sections(memo[0], session) if memo is not None else None
        if memo is not None and changed is not None:
            before = memo[1]
            parts = list(before.parts)
            for i in changed:
                section = session.sections[i]
                parts[i] = Assembled(section, section.text or "")
            assembly = Assembly(parts, before.prefix_cache, before.context_cache)
            parts_key = _PartsKey.patched(memo[2], parts, changed)
            self._assembled[counter_key] = (session, assembly, parts_key, memo[3])
            return assembly, parts_key, memo[3], (memo[2], changed)
        # An agent's turn holds text and inferred parts only (``sources.readers.common.build_session``), which no
        # cache state concerns: replaying its earlier turns would build every one of them for nothing.
        history = session.history if session.source_format == NATIVE_FORMAT else ()
        assembly = assembler.assemble(session, assembler.replay(history))
        notes = _size_inferred(session, assembly, counter)
        parts_key = self._last_key = _PartsKey(assembly.parts, self._last_key)
        self._assembled[counter_key] = (session, assembly, parts_key, notes)
        return assembly, parts_key, notes, None

    def _scaled_counter(self, key: str, scale: float) -> TokenCounter:
        """The counter of the estimate at ``scale``; only the few newest scales are kept."""
        counter = self._counters.pop(key, None)
        if counter is None:
            counter = TokenCounter(EstimateTokenizer(scale, self._estimate_bases))
            scaled = [k for k in self._counters if k.startswith(ESTIMATE + "×")]
            for old in scaled[: max(0, len(scaled) - _SCALED_COUNTERS + 1)]:
                self._counters.pop(old)
        self._counters[key] = counter  # newest last
        return counter

    def _remember_layout(self, key: tuple, outcome: LayoutResult | ContextCriticalOverflow, parts_key: _PartsKey) -> None:
        """Keep at most ``_LAYOUT_CACHE_LIMIT`` layouts, about ``_LAYOUT_CACHE_CHARS`` characters of their
        text and ``_LAYOUT_CACHE_PARTS`` parts (the newest is kept whatever its size)."""
        layouts = self._layouts
        chars, parts = parts_key.chars, parts_key.parts
        while layouts and (len(layouts) >= _LAYOUT_CACHE_LIMIT or self._layout_chars + chars > _LAYOUT_CACHE_CHARS
                           or self._layout_parts + parts > _LAYOUT_CACHE_PARTS):
            old = next(iter(layouts))
            layouts.pop(old)
            self._layout_chars -= old[3].chars
            self._layout_parts -= old[3].parts
        layouts[key] = outcome
        self._layout_chars += chars
        self._layout_parts += parts

    def plan_turns(self, turns: list[Session], **options) -> list[Plan]:
        """Plan every turn of a log in order (each with the earlier ones as history)."""
        plans = []
        for index, turn in enumerate(turns):
            session = turn if turn.history or index == 0 else replace(turn, history=TurnHistory(turns, index))
            plans.append(self.plan(session, **options))
        return plans


def _room_for(resolved: Resolved, needed: int) -> Resolved:
    """``resolved`` with the smallest ``max_ctx`` whose available room holds ``needed`` tokens."""
    needed = max(needed, 1)
    max_ctx = math.ceil((needed + resolved.reserve_out) / (1 - Fraction(repr(float(resolved.headroom)))))
    while available_tokens(max_ctx, resolved.headroom, resolved.reserve_out) < needed:  # floor() rounding
        max_ctx += 1
    return replace(resolved, max_ctx=max_ctx, available=available_tokens(max_ctx, resolved.headroom, resolved.reserve_out))


def _window_room(session: Session, resolved: Resolved, what_if: int) -> tuple[Resolved, Window | None, tuple[str, ...]]:
    """CONTRACT §11 for a foreign log or request body: the window it is measured against, the budget its
    layout uses and what to warn.

    A recorded or predicted headline is never trimmed to a window: a recorded context larger than the
    window shows the window is larger (it is raised, with a warning); a prediction (a pending request,
    a request body counted by the provider's rules) larger than the window is planned whole, with a
    warning that it would exceed it; an unknown window is said to be unknown and nothing is trimmed.
    A window set by a flag or the environment (a what-if) is laid out as asked.
    """
    window = session.window
    if window is None:
        return resolved, None, ()
    if resolved.explicit or what_if:
        return resolved, resolved.window, ()
    notes: list[str] = []
    if window.note:
        notes.append(window.note)
    target = session.context_tokens
    if not window.known:
        if target is not None:
            resolved = _room_for(resolved, target)
        return resolved, window, tuple(notes)
    if target is None or target <= resolved.available:
        return resolved, window, tuple(notes)
    room = _room_for(resolved, target)
    if session.recorded is not None and not session.pending:
        notes.append(f"the recorded context ({target}) is larger than the window {window.tokens} ({window.source}): the "
                     f"request ran with a larger window, so the window is raised to {room.max_ctx}")
        return room, Window(room.max_ctx, WindowSource.RAISED), tuple(notes)
    what = "predicted" if session.pending else "counted"
    tail = "the agent will compact first" if session.pending else "the provider would refuse it as it is"
    notes.append(f"the {what} context ({target}) would exceed the window {window.tokens} by "
                 f"{target - resolved.available} ({tail})")
    return room, window, tuple(notes)


def _size_inferred(session: Session, assembly: Assembly, counter: TokenCounter) -> tuple[str, ...]:
    """Resize the ``inferred`` part so that the untrimmed total is the session's headline (README, "Real agents").

    The importer sizes it with the thread's calibrated estimate; another tokenizer (a flag) counts the
    visible parts differently, and the hidden part is what is left of the same recorded total.
    """
    target = session.context_tokens
    if target is None:
        return ()
    parts = assembly.parts
    index = next((i for i, p in enumerate(parts) if p.section.kind == "inferred"), None)
    if index is None:
        return ()
    others = [p for i, p in enumerate(parts) if i != index]
    visible = counter.count_joined([p.text for p in others if p.text and p.section.tokens is None]) + fixed_tokens(others)
    need, notes = inferred_size(target, visible, counter.tokenizer.name)
    section = parts[index].section
    if section.tokens != need:
        parts[index] = replace(parts[index], section=_resized(section, need))
    return notes


def _resized(section: Section, tokens: int) -> Section:
    return replace(section, tokens=tokens)


MAX_TEXT_CHARS = 256 * 1024 * 1024  # the text one plan may hold: refused before any counting


def _check_arguments(session: object, budget: object, tokenizer: object, trimming: object, reserve_out: object) -> None:
    """Wrong types and values through the API are typed errors, never a raw exception or a default."""
    if not isinstance(session, Session):
        raise SessionError(f"Engine.plan needs a Session, not {type(session).__name__}",
                           "load one with load_session(path) or session_from_dict(mapping)")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= 10**9):
        raise ConfigError(f"budget={budget!r} is not a whole number of tokens from 1 to 1000000000", "pass e.g. budget=16384")
    if reserve_out is not None and (isinstance(reserve_out, bool) or not isinstance(reserve_out, int)
                                    or not 0 <= reserve_out <= 10**9):
        raise ConfigError(f"reserve_out={reserve_out!r} is not a whole number of tokens from 0", "pass e.g. reserve_out=1024")
    if tokenizer is not None and (not isinstance(tokenizer, str) or not tokenizer):
        raise ConfigError(f"tokenizer={tokenizer!r} is not a tokenizer name", "pass a name from `tokenbox tokenizers`")
    if trimming is not None and trimming not in TRIMMING_POLICIES:
        raise ConfigError(f"trimming={trimming!r} is not a trimming policy", f"use one of {', '.join(TRIMMING_POLICIES)}")
