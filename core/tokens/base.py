"""The ``Tokenizer`` interface every tokenizer implements (built-in, estimate or plug-in), and the one
character-level truncation that any tokenizer can fall back on."""

from __future__ import annotations

from collections.abc import Sequence


class Tokenizer:
    """Counts tokens of text. Subclasses set ``name``, ``exact`` and ``version``.

    ``count`` must be deterministic. ``truncate`` returns the longest piece of ``text`` at the
    ``keep`` end (``head`` or ``tail``) that counts at most ``limit`` tokens, never splitting a character.
    """

    name: str = "?"
    exact: bool = False
    version: str = ""
    # True when every text counts on its own and separators count nothing: a join's count is the sum of
    # its texts' counts (``anchors`` then spans each whole text). Joins are then summed, not measured.
    sums_parts: bool = False

    def count(self, text: str) -> int:
        raise NotImplementedError

    def truncate(self, text: str, limit: int, keep: str) -> str:
        return truncate_by_chars(self, text, limit, keep)

    def count_joined(self, texts: Sequence[str], sep: str) -> int:
        """The count of ``sep.join(texts)``; subclasses may answer without joining."""
        return self.count(sep.join(texts))

    def anchors(self, text: str) -> tuple[int, int] | None:
        """Positions where this tokenizer's count is additive whatever text surrounds ``text``.

        Returns ``(first, last)`` such that ``count(a + text + b)`` splits exactly at ``first`` and
        ``last``, or ``None`` when the tokenizer cannot promise that (the count is then done whole).
        """
        return None


def truncate_by_chars(tokenizer: Tokenizer, text: str, limit: int, keep: str) -> str:
    """Binary search on characters: the longest head/tail whose count is within ``limit``."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        piece = text[:mid] if keep == "head" else text[len(text) - mid :]
        if tokenizer.count(piece) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low] if keep == "head" else text[len(text) - low :]
