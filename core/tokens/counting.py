"""Token counting with a cache, and exact incremental counts of sections joined by blank lines.

``JoinedTotal`` keeps the exact token count of ``"\\n\\n".join(kept texts)`` while texts are replaced
or removed one at a time. For BPE tokenizers it splits each text at anchor points (positions where
the pre-tokenizer always starts a new piece) so that only the short stretches around separators
(the glue) are counted together; a change re-counts one text and the glue next to it.

``TokenCounter`` measures each distinct text once: its count and, for anchored tokenizers, the
counts of its head and tail (read off the same encoding when the tokenizer offers ``measure``).
Big batches of new texts are measured in two threads when the tokenizer releases the GIL.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from tokenbox.core.model.names import SEPARATOR
from tokenbox.core.tokens.base import Tokenizer

# Characters of text per cache generation (two are kept: about 2 x 32M characters at most).
_GENERATION_CHARS = 32 * 1024 * 1024
_JOIN_SNAPSHOTS = 8  # initial JoinedTotal states kept for reuse (what-if plans start from the same texts)
_PATCH_LIMIT = 8  # a new join is patched from a kept one when at most this many texts changed
# Below this many characters of new text a batch is measured in the calling thread only.
PARALLEL_MIN_CHARS = 96 * 1024

_T = TypeVar("_T")
Anchors = tuple[int, int] | None


class _Generation:
    """One generation of the counter's caches (see ``TokenCounter``)."""

    __slots__ = ("chars", "counts", "pieces", "truncations")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        # text -> (anchors, head count, tail count) for texts measured whole
        self.pieces: dict[str, tuple[Anchors, int, int]] = {}
        self.truncations: dict[tuple[str, int, str], str] = {}
        self.chars = 0


class TokenCounter:
    """A tokenizer with a count cache keyed by text (the engine keeps one per tokenizer).

    The cache has two generations: entries are added to the new one, and found entries of the old
    one move up; when the new one holds ``generation_chars`` characters of text it becomes the old
    one and the previous old one is dropped. Memory stays bounded by about twice that, and whatever
    the last plans used survives a turnover.
    """

    def __init__(self, tokenizer: Tokenizer, *, generation_chars: int = _GENERATION_CHARS) -> None:
        self.tokenizer = tokenizer
        self.generation_chars = generation_chars
        self._new = _Generation()
        self._old = _Generation()
        self._joins: dict[tuple[str, ...], tuple] = {}
        self.misses = 0
        self.hits = 0
        self._measure = getattr(tokenizer, "measure", None)
        self._threads = 2 if getattr(tokenizer, "parallel", False) and (os.cpu_count() or 1) > 1 else 1

    def count(self, text: str) -> int:
        """Exact (or the tokenizer's approximate) count of ``text``, cached."""
        cached = self._new.counts.get(text)
        if cached is not None:
            self.hits += 1
            return cached
        cached = self._old.counts.get(text)
        if cached is not None:
            self.hits += 1
        else:
            self.misses += 1
            cached = self.tokenizer.count(text)
        self._keep_count(text, cached)
        return cached

    def _keep_count(self, text: str, value: int) -> None:
        new = self._new
        new.counts[text] = value
        new.chars += len(text)
        if new.chars > self.generation_chars:
            self._turn_over()

    def _turn_over(self) -> None:
        self._old = self._new
        self._new = _Generation()
        self._joins.clear()

    def anchors(self, text: str) -> Anchors:
        return self.pieces(text)[0]

    def pieces(self, text: str) -> tuple[Anchors, int, int]:
        """``(anchors, head count, tail count)`` of ``text`` (see ``Tokenizer.anchors``), cached."""
        found = self._new.pieces.get(text)
        if found is None:
            found = self._old.pieces.get(text)
            if found is None:
                return self._measure_one(text)
            self._new.pieces[text] = found
        return found

    def forget(self, text: str) -> None:
        """Drop what is cached about ``text`` (a throw-away text that would only fill the cache)."""
        for generation in (self._new, self._old):
            if generation.counts.pop(text, None) is not None:
                generation.chars -= len(text)
            generation.pieces.pop(text, None)

    def remember(self, text: str, value: int) -> None:
        """Record the exact count of ``text`` found another way (a behaviour block counted line by line)."""
        if text not in self._new.counts:
            self._keep_count(text, value)

    def _measure_one(self, text: str) -> tuple[Anchors, int, int]:
        known = text in self._new.counts or text in self._old.counts
        if self._measure is not None and not known:
            total, cut, head, tail = self._measure(text)
            self._keep_count(text, total)
        else:  # the count is known (or there is no one-pass measure): count the short ends directly
            cut = self.tokenizer.anchors(text)
            head = tail = 0
            if cut is not None:
                head = self.count(text[: cut[0]]) if cut[0] else 0
                tail = self.count(text[cut[1] :])
        found = self._new.pieces[text] = (cut, head, tail)
        return found

    def prepare(self, texts: Sequence[str]) -> None:
        """Measure every text not measured yet, in two threads when the batch is big."""
        todo = list({t: None for t in texts if t and t not in self._new.pieces})
        if not todo:
            return
        if self._measure is None or not self._parallel_worth(todo):
            for text in todo:
                self.pieces(text)
            return
        old = self._old
        known = [t for t in todo if t in old.pieces or t in old.counts or t in self._new.counts]
        for text in known:
            self.pieces(text)
        todo = [t for t in todo if t not in old.pieces and t not in old.counts and t not in self._new.counts]
        results = _in_threads(self._measure, todo)
        for text, (total, cut, head, tail) in zip(todo, results, strict=True):
            self.misses += 1
            if text not in self._new.counts:
                self._keep_count(text, total)
            self._new.pieces[text] = (cut, head, tail)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The counts of ``texts``; new ones are counted in two threads when the batch is big."""
        todo = list({t: None for t in texts if t not in self._new.counts and t not in self._old.counts})
        if todo and self._parallel_worth(todo):
            for text, value in zip(todo, _in_threads(self.tokenizer.count, todo), strict=True):
                self.misses += 1
                self._keep_count(text, value)
        count = self.count
        return [count(t) for t in texts]

    def _parallel_worth(self, texts: list[str]) -> bool:
        """A second thread pays for big batches, when a core is free (else the two threads queue)."""
        if self._threads < 2 or len(texts) < 2 or sum(map(len, texts)) < PARALLEL_MIN_CHARS:
            return False
        return _idle_core()

    def count_joined(self, texts: Sequence[str]) -> int:
        """Exact count of ``texts`` joined by blank lines."""
        return JoinedTotal(self, list(texts)).total

    def truncate(self, text: str, limit: int, keep: str) -> str:
        """``tokenizer.truncate``, cached (a what-if plan cuts the same sections to the same sizes)."""
        key = (text, limit, keep)
        found = self._new.truncations.get(key)
        if found is None:
            found = self._old.truncations.get(key)
            if found is None:
                found = self.tokenizer.truncate(text, limit, keep)
            self._new.truncations[key] = found
            self._new.chars += len(found)
        return found

    def _snapshot(self, texts: tuple[str, ...]) -> tuple | None:
        return self._joins.get(texts)

    def _similar(self, texts: tuple[str, ...], limit: int) -> tuple[tuple[str, ...], tuple, list[int]] | None:
        """The newest kept join of as many texts, at most ``limit`` of them changed (all non-empty)."""
        for old in reversed(self._joins):
            if len(old) != len(texts):
                continue
            changed = []
            for i, (a, b) in enumerate(zip(old, texts, strict=True)):
                if a is not b and a != b:
                    if not a or not b or len(changed) >= limit:
                        break
                    changed.append(i)
            else:
                if changed:
                    return old, self._joins[old], changed
        return None

    def _keep_snapshot(self, texts: tuple[str, ...], state: tuple) -> None:
        if len(self._joins) >= _JOIN_SNAPSHOTS:
            self._joins.pop(next(iter(self._joins)))
        self._joins[texts] = state


def _idle_core() -> bool:
    """Whether the machine has had a core to spare lately (load average below the core count - 1)."""
    try:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    except OSError:  # not available on this platform
        return True


def _in_threads(work: Callable[[str], _T], texts: list[str]) -> list[_T]:
    """``[work(t) for t in texts]`` split over the calling thread and one helper, balanced by length."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    mine: list[int] = []
    theirs: list[int] = []
    load = [0, 0]
    for i in order:
        side = 0 if load[0] <= load[1] else 1
        (mine if side == 0 else theirs).append(i)
        load[side] += len(texts[i])
    results: list = [None] * len(texts)
    failure: list[BaseException] = []

    def helper() -> None:
        try:
            for i in theirs:
                results[i] = work(texts[i])
        except BaseException as exc:  # re-raised in the calling thread
            failure.append(exc)

    thread = threading.Thread(target=helper, name="tokenbox-count", daemon=True)
    thread.start()
    try:
        for i in mine:
            results[i] = work(texts[i])
    finally:
        thread.join()
    if failure:
        raise failure[0]
    return results


class JoinedTotal:
    """The count of the kept texts joined by ``SEPARATOR``, updated as texts change or leave.

    Items are addressed by their index in the initial list; empty texts take no part in the join.
    """

    def __init__(self, counter: TokenCounter, texts: list[str]) -> None:
        self.counter = counter
        self.texts = list(texts)
        self.kept = [bool(t) for t in texts]
        self.additive = counter.tokenizer.anchors("a\nb") is not None
        if not self.additive:
            self.total = counter.tokenizer.count_joined([t for t in self.texts if t], SEPARATOR)
            self.counts = tuple(counter.count(t) if t else 0 for t in self.texts)
            return
        n = len(texts)
        if counter.tokenizer.sums_parts:
            self._summed(counter)
            return
        key = tuple(self.texts)
        snapshot = counter._snapshot(key)
        if snapshot is not None:
            prev, nxt, cuts, body, glue_after, self.first, self.total, self.counts = snapshot
            self.prev, self.next, self.cuts, self.body = list(prev), list(nxt), list(cuts), list(body)
            self.glue_after = dict(glue_after)
            return
        if self._patched(key):
            return
        counter.prepare(self.texts)
        count = counter.count
        # the initial count of every item (0 when empty), for the layout's pieces
        self.counts: tuple[int, ...] = tuple(count(t) if t else 0 for t in self.texts)
        # Doubly linked list over kept items, so removals are O(1).
        self.prev = [-1] * n
        self.next = [n] * n
        self.cuts: list[Anchors] = [None] * n
        self.body = [0] * n
        last = -1
        total = 0
        anchored: list[int] = []
        for i in range(n):
            if self.kept[i]:
                self.prev[i] = last
                if last >= 0:
                    self.next[last] = i
                last = i
                text = self.texts[i]
                cut, head, tail = counter.pieces(text)
                self.cuts[i] = cut
                if cut is not None:
                    self.body[i] = self.counts[i] - head - tail
                    total += self.body[i]
                    anchored.append(i)
        self.first = next((i for i in range(n) if self.kept[i]), n)
        if last >= 0:
            self.next[last] = n
        # glue_after[a] = count of the glue that starts with item a's tail (a = -1: the very start).
        starts = [-1, *anchored]
        ends = [*anchored, n]
        glues = counter.count_many([self._glue_text(a, b) for a, b in zip(starts, ends, strict=True)])
        self.glue_after: dict[int, int] = dict(zip(starts, glues, strict=True))
        self.total = total + sum(glues)
        counter._keep_snapshot(
            key,
            (tuple(self.prev), tuple(self.next), tuple(self.cuts), tuple(self.body), dict(self.glue_after), self.first, self.total,
             self.counts),
        )

    def _summed(self, counter: TokenCounter) -> None:
        """The join of a tokenizer whose parts add up (``Tokenizer.sums_parts``): every kept text is one
        anchored piece whose body is its count, and every glue (separators and empty ends) counts 0, so
        the total is the sum of the counts. Nothing is measured twice and no state is kept for reuse
        (building it again is one pass over the counts)."""
        texts = self.texts
        n = len(texts)
        count = counter.count
        self.counts = tuple(count(t) if t else 0 for t in texts)
        kept = [i for i in range(n) if self.kept[i]]
        self.prev = [-1] * n
        self.next = [n] * n
        for a, b in itertools.pairwise(kept):
            self.next[a] = b
            self.prev[b] = a
        self.cuts = [(0, len(t)) if t else None for t in texts]
        self.body = list(self.counts)
        self.first = kept[0] if kept else n
        self.glue_after = dict.fromkeys([-1, *kept], 0)
        self.total = sum(self.counts)

    def _patched(self, key: tuple[str, ...]) -> bool:
        """Start from a kept state whose texts differ from ``key`` in a few items, replacing just those.

        An edit of one section re-plans with one text changed: patching the previous join costs
        that text and the glue around it, not a pass over every item.
        """
        found = self.counter._similar(key, _PATCH_LIMIT)
        if found is None:
            return False
        old, state, changed = found
        prev, nxt, cuts, body, glue_after, self.first, self.total, counts = state
        self.prev, self.next, self.cuts, self.body = list(prev), list(nxt), list(cuts), list(body)
        self.glue_after = dict(glue_after)
        self.texts = list(old)
        counts = list(counts)
        for i in changed:
            self.replace(i, key[i])
            counts[i] = self.counter.count(key[i])
        self.counts = tuple(counts)
        self.counter._keep_snapshot(
            key,
            (tuple(self.prev), tuple(self.next), tuple(self.cuts), tuple(self.body), dict(self.glue_after), self.first, self.total,
             self.counts),
        )
        return True

    # -- pieces

    def _anchored(self, i: int) -> bool:
        return self.cuts[i] is not None

    def _body(self, i: int) -> int:
        text = self.texts[i]
        cut, head, tail = self.counter.pieces(text)
        self.cuts[i] = cut
        if cut is None:
            return 0
        return self.counter.count(text) - head - tail

    def _glue_text(self, start: int, end: int) -> str:
        """Text from the tail of anchored ``start`` (or the beginning) to the head of ``end``."""
        parts: list[str] = []
        n = len(self.texts)
        if start >= 0:
            parts.append(self.texts[start][self.cuts[start][1] :])  # type: ignore[index]
            i = self.next[start]
        else:
            i = self.first
        while i < end and i < n:
            parts.append(SEPARATOR if parts or start >= 0 else "")
            parts.append(self.texts[i])  # an item without anchors is glue as a whole
            i = self.next[i]
        if end < n:
            if parts or start >= 0:
                parts.append(SEPARATOR)
            parts.append(self.texts[end][: self.cuts[end][0]])  # type: ignore[index]
        return "".join(parts)

    def _set_glue(self, start: int, end: int) -> None:
        value = self.counter.count(self._glue_text(start, end))
        self.total += value - self.glue_after.get(start, 0)
        self.glue_after[start] = value

    def _drop_glue(self, start: int) -> None:
        self.total -= self.glue_after.pop(start, 0)

    def _anchor_before(self, i: int) -> int:
        j = self.prev[i] if self.kept[i] else self._prev_kept(i)
        while j >= 0 and not self._anchored(j):
            j = self.prev[j]
        return j

    def _anchor_after(self, i: int) -> int:
        n = len(self.texts)
        j = self.next[i] if self.kept[i] else self._next_kept(i)
        while j < n and not self._anchored(j):
            j = self.next[j]
        return j

    def _prev_kept(self, i: int) -> int:
        j = i - 1
        while j >= 0 and not self.kept[j]:
            j -= 1
        return j

    def _next_kept(self, i: int) -> int:
        j = i + 1
        while j < len(self.texts) and not self.kept[j]:
            j += 1
        return j

    # -- updates

    def replace(self, i: int, text: str) -> None:
        """Item ``i`` now reads ``text`` (an empty text removes it)."""
        if not text:
            self.remove(i)
            return
        if not self.additive:
            self.texts[i] = text
            self.total = self.counter.tokenizer.count_joined([t for k, t in enumerate(self.texts) if self.kept[k]], SEPARATOR)
            return
        if not self.kept[i]:
            raise ValueError("cannot replace a removed item")
        before = self._anchor_before(i)
        after = self._anchor_after(i)
        if self._anchored(i):
            self._drop_glue(i)
        self.total -= self.body[i]
        self.texts[i] = text
        self.body[i] = self._body(i)
        self.total += self.body[i]
        if self._anchored(i):
            self._set_glue(before, i)
            self._set_glue(i, after)
        else:
            self._set_glue(before, after)

    def remove(self, i: int) -> None:
        """Item ``i`` leaves the join."""
        if not self.kept[i]:
            return
        if not self.additive:
            self.kept[i] = False
            self.total = self.counter.tokenizer.count_joined([t for k, t in enumerate(self.texts) if self.kept[k]], SEPARATOR)
            return
        before = self._anchor_before(i)
        after = self._anchor_after(i)
        if self._anchored(i):
            self._drop_glue(i)
        self.total -= self.body[i]
        self.body[i] = 0
        p, q = self.prev[i], self.next[i]
        if p >= 0:
            self.next[p] = q
        else:
            self.first = q
        if q < len(self.texts):
            self.prev[q] = p
        self.kept[i] = False
        self._set_glue(before, after)
