"""Token counting with a cache, and exact incremental counts of sections joined by blank lines.

``JoinedTotal`` keeps the exact token count of ``"\\n\\n".join(kept texts)`` while texts are replaced
or removed one at a time. For BPE tokenizers it splits each text at anchor points (positions where
the pre-tokenizer always starts a new piece) so that only the short stretches around separators
(the glue) are counted together; a change re-counts one text and the glue next to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox.core.tokenizers import Tokenizer

SEPARATOR = "\n\n"
_CACHE_LIMIT_CHARS = 256 * 1024 * 1024


class TokenCounter:
    """A tokenizer with a count cache keyed by text (the engine keeps one per tokenizer)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._counts: dict[str, int] = {}
        self._anchors: dict[str, tuple[int, int] | None] = {}
        self._chars = 0
        self.misses = 0
        self.hits = 0

    def count(self, text: str) -> int:
        """Exact (or the tokenizer's approximate) count of ``text``, cached."""
        cached = self._counts.get(text)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        value = self.tokenizer.count(text)
        if self._chars + len(text) > _CACHE_LIMIT_CHARS:
            self._counts.clear()
            self._anchors.clear()
            self._chars = 0
        self._counts[text] = value
        self._chars += len(text)
        return value

    def anchors(self, text: str) -> tuple[int, int] | None:
        try:
            return self._anchors[text]
        except KeyError:
            value = self._anchors[text] = self.tokenizer.anchors(text)
            return value

    def count_joined(self, texts: Sequence[str]) -> int:
        """Exact count of ``texts`` joined by blank lines."""
        return JoinedTotal(self, list(texts)).total

    def truncate(self, text: str, limit: int, keep: str) -> str:
        return self.tokenizer.truncate(text, limit, keep)


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
            return
        n = len(texts)
        # Doubly linked list over kept items, so removals are O(1).
        self.prev = [-1] * n
        self.next = [n] * n
        last = -1
        for i in range(n):
            if self.kept[i]:
                self.prev[i] = last
                if last >= 0:
                    self.next[last] = i
                last = i
        self.first = next((i for i in range(n) if self.kept[i]), n)
        if last >= 0:
            self.next[last] = n
        self.body = [0] * n
        # glue_after[a] = count of the glue that starts with item a's tail (a = -1: the very start).
        self.glue_after: dict[int, int] = {}
        self.total = 0
        anchor = -1
        for i in range(n):
            if self.kept[i]:
                self.body[i] = self._body(i)
                self.total += self.body[i]
                if self._anchored(i):
                    self._set_glue(anchor, i)
                    anchor = i
        self._set_glue(anchor, n)

    # -- pieces

    def _anchored(self, i: int) -> bool:
        return self.counter.anchors(self.texts[i]) is not None

    def _body(self, i: int) -> int:
        text = self.texts[i]
        cut = self.counter.anchors(text)
        if cut is None:
            return 0
        first, last = cut
        return self.counter.count(text) - self.counter.count(text[:first]) - self.counter.count(text[last:])

    def _glue_text(self, start: int, end: int) -> str:
        """Text from the tail of anchored ``start`` (or the beginning) to the head of ``end``."""
        parts: list[str] = []
        n = len(self.texts)
        if start >= 0:
            text = self.texts[start]
            parts.append(text[self.counter.anchors(text)[1] :])  # type: ignore[index]
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
            text = self.texts[end]
            parts.append(text[: self.counter.anchors(text)[0]])  # type: ignore[index]
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
