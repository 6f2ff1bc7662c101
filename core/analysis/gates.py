"""Gates on a log's history (README, "Inside an agent's loop"): a stable prompt prefix and bounded growth per turn.

``prefix_break(engine, earlier, newest)`` says why the newest turn's prompt no longer starts with
the earlier turn's (the provider's prompt cache would miss), or ``None``:

* a tokenbox log: the assembled prefix sections changed (the newest plan's ``caches.prefix`` is
  ``miss`` after the first turn);
* a real agent's log (transcript, capture, rollout): the earlier request's context parts — the text
  sections, neither the ``inferred`` part nor a request's own reply, and not thinking, which the API
  strips — are not the first parts of the newest request's context, in order;
* when both requests recorded their usage: the newest read less from the cache than the earlier one
  had cached (read + written), by more than ``CACHE_SLACK`` tokens — the cache was rebuilt (a change,
  or an entry that expired).

``growth(engine, earlier, newest)`` is the difference of the two headlines (``tokens.after``).
"""

from __future__ import annotations

from tokenbox.core.model.names import NATIVE_FORMAT
from tokenbox.core.model.plan import PrefixCache
from tokenbox.core.model.session import Session

CACHE_SLACK = 1024  # tokens a newer request may read less from the cache without calling it a break
_SKIPPED = ("inferred", "reply")


def _context(session: Session) -> list[str]:
    return [
        s.text or ""
        for s in session.sections
        if s.meta.get("category") not in _SKIPPED and s.meta.get("block") not in ("thinking", "redacted_thinking")
    ]


def prefix_break(engine, earlier: Session, newest: Session) -> str | None:
    """Why the prompt prefix broke between ``earlier`` and ``newest`` (``None`` when it held)."""
    if newest.source_format == NATIVE_FORMAT:
        plan = engine.plan(newest)
        if plan.prefix_cache == PrefixCache.MISS:
            changed = [s.id for s in newest.sections if s.kind == "prefix"]
            return f"the prefix changed ({', '.join(changed) or 'prefix'}): the provider's prompt cache misses"
        return None
    before, after = _context(earlier), _context(newest)
    for index, text in enumerate(before):
        if index >= len(after) or after[index] != text:
            section = earlier.sections[[i for i, s in enumerate(earlier.sections)
                                        if s.meta.get("category") not in _SKIPPED
                                        and s.meta.get("block") not in ("thinking", "redacted_thinking")][index]]
            label = section.meta.get("label") or section.id
            return f"part {index + 1} of the earlier request ({label}) is not where the newest request starts"
    old, new = earlier.recorded, newest.recorded
    if old is not None and new is not None and not newest.pending:
        cached = old.cache_read_input_tokens + old.cache_creation_input_tokens
        if cached and new.cache_read_input_tokens + CACHE_SLACK < cached:
            return (f"the newest request read {new.cache_read_input_tokens} tokens from the cache, the one before had "
                    f"{cached} cached: the cache was rebuilt")
    return None


def growth(engine, earlier: Session, newest: Session) -> tuple[int, int]:
    """``(earlier headline, newest headline)`` in tokens."""
    return engine.plan(earlier).tokens_after, engine.plan(newest).tokens_after
