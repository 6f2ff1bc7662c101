"""Estimates of token counts where no public tokenizer exists (Claude, Gemini), and their calibration.

The base estimate weighs characters by class, because a BPE vocabulary spends tokens very unevenly:
an English word or an identifier is one or two tokens, a run of indentation is one, punctuation-dense
JSON costs about a token per two or three characters, and a CJK character costs about one token; a long run of
letters and digits (a hash, base64, a uuid, a long number) is split where letters and digits or lower and upper
case change, numbers into groups of digits, so it costs about a token per two to eight characters, not three.
``base_estimate`` is that weighted sum; ``EstimateTokenizer`` multiplies it by a per-thread ``scale``
fitted to what the provider recorded (``tokenbox.core.sources.readers.claude_truth``), so the visible parts of a real
agent's request add up with its ``inferred`` part to the recorded context.

It is cheap (a few passes of C string methods per text) and imports nothing heavy, so the status line
can use it without loading tokenizer tables. Every figure it produces is an approximation (``≈``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.tokens.base import Tokenizer, truncate_by_chars
from tokenbox.core.tokens.charclass import BaseEstimates, scaled


class EstimateTokenizer(Tokenizer):
    """The calibrated estimate as a tokenizer (approximate): additive, so parts add up with no joins.

    Separators between parts count nothing: a real request frames its blocks itself, and that framing
    is part of each block's estimate (the calibration fits it).
    """

    exact = False
    sums_parts = True  # ``count`` of white space alone (a separator) is 0, and ``anchors`` spans every text

    def __init__(self, scale: float = 1.0, bases: BaseEstimates | None = None) -> None:
        self.scale = scale
        self.bases = bases if bases is not None else BaseEstimates()
        self.name = ESTIMATE
        self.version = f"character classes × {scale:.4f} (calibrated to recorded usage)" if scale != 1.0 else "character classes"

    def count(self, text: str) -> int:
        return scaled(text, self.scale, self.bases)

    def count_joined(self, texts: Sequence[str], sep: str) -> int:
        return sum(self.count(t) for t in texts)

    def anchors(self, text: str) -> tuple[int, int] | None:
        # Additive everywhere: a text's count never depends on its neighbours.
        return (0, len(text))

    def truncate(self, text: str, limit: int, keep: str) -> str:
        if self.count(text) <= limit:
            return text
        # the estimate grows with the text, not strictly per character: the search on characters
        return truncate_by_chars(self, text, limit, keep)
