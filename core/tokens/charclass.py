"""The base estimate of a text's tokens by character class, with nothing else imported.

``tokenbox.core.tokens.estimate`` explains the estimate and wraps it as a calibrated tokenizer; this module
holds the arithmetic alone, so that the status line and the transcript reader can use it without
loading the tokenizer registry.
"""

from __future__ import annotations

import operator
import re
from itertools import repeat

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

# Weights of the base estimate (tokens per character of each class). Fitted on real Claude Code
# transcripts against their recorded usage (see tests/importers/test_truth.py); the per-thread scale
# absorbs what differs between models and content.
_PUNCT_PER_TOKEN = 1.6  # ASCII punctuation and symbols: quotes, braces, operators
_SPACE_RUN_TOKENS = 0.35  # each run of white space (a newline, an indentation) beyond single spaces
_WIDE_PER_CHAR = 1.4  # characters outside ASCII (CJK, accents, emoji)
# The overall level, set so that whole Anthropic request bodies with recorded usage come out at about
# their recorded size (Claude Code 1.0.6's request: 15677; pydantic-ai's thinking replay: 525).
_LEVEL = 1.1
# Tokens inside a word (see below): weights of the counts ``base_estimate`` adds to the word's fixed 1-3
_MIXED_TOKENS = 1.0  # each change between a letter and a digit: 'a4e1' is 4 pieces
_CAMEL_TOKENS = 0.5  # each lower-case letter followed by an upper-case one (camelCase is cheaper than base64)
# each 4 digits of a run: with the word's own token, a number of up to 3 digits costs 1 and a longer run of n
# about n / 3 (BPE splits numbers into groups of at most 3 digits; 4-digit pieces are counted in one pass)
_DIGIT_GROUP_TOKENS = 4 / 3
_DIGIT_PIECE = 4
_LONG_LOWER_TOKENS = 2.0  # each 16 lower-case letters of a run ('x' * 1000: 125 tokens in o200k)
_LONG_LOWER = 16

# A word is a run of ASCII letters and digits; a word of 8+ costs a second token, of 15+ a third (BPE
# splits long identifiers). Inside a word, BPE splits further where a run stops looking like a word (o200k,
# an exact public BPE, as the proxy for the shape; the corpus of real transcripts for the weights): at each
# change between a letter and a digit (hashes, uuids, base64, ids), at each lower-case letter followed by an
# upper-case one (camelCase, base64), into groups of at most 3 digits (numbers, timestamps), and a run of
# lower-case letters keeps costing tokens past what the fixed 1-3 covers ('x' * 3_000_000 was 3 tokens).
# A run of white space (a newline, an indentation) beyond single spaces costs _SPACE_RUN_TOKENS: as counted
# by the pattern below, a run of two or more white-space characters, or a lone newline. ``base_estimate``
# counts all of them with bytes.translate and bytes.count (several times faster than regular expressions);
# ``reference_estimate`` is the same definition with the patterns, kept to test it against.
_WORD = re.compile(r"[A-Za-z0-9]+")
_LONG_WORD = re.compile(r"[A-Za-z0-9]{8,}")
_LONGER_WORD = re.compile(r"[A-Za-z0-9]{15,}")
_MIXED = re.compile(r"[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])")
_CAMEL = re.compile(r"[a-z](?=[A-Z])")
_DIGIT_PIECES = re.compile(rf"[0-9]{{{_DIGIT_PIECE}}}")  # a run of n digits: n // 4 of them
_LONG_LOWER_RUN = re.compile(rf"[a-z]{{{_LONG_LOWER}}}")  # a run of n lower-case letters: n // 16 of them
_SPACE_RUN = re.compile(r"\s{2,}|\n")
_NON_ASCII_SPACE = re.compile(r"[^\S\x00-\x7f]")
_PUNCT_BYTES = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
# Byte classes: letters and digits to "a", everything else to "." (bytes of non-ASCII characters too)
_ALNUM_CLASS = bytes(ord("a") if b < 128 and chr(b).isalnum() else ord(".") for b in range(256))
# Lower-case letters to "l", upper-case to "u", digits to "d", everything else to "." (the changes inside a word)
_LETTER_DIGIT_CLASS = bytes(
    ord("l") if 97 <= b <= 122 else ord("u") if 65 <= b <= 90 else ord("d") if 48 <= b <= 57 else ord(".")
    for b in range(256)
)
# Of those classes: letters to "a" (digits and the rest kept)
_LETTER_OR_DIGIT = bytes(ord("a") if b in b"lu" else b for b in range(256))
_DIGIT_PIECE_BYTES = b"d" * _DIGIT_PIECE
_LONG_LOWER_BYTES = b"l" * _LONG_LOWER
# the newline to "n", other ASCII white space (what \s matches below 128) to " ", everything else to "x"
_SPACE_CLASS = bytes(
    ord("n") if b == 10 else ord(" ") if b < 128 and chr(b).isspace() else ord("x") for b in range(256)
)
# Word ends (bytes.count is fastest with the rarer byte last): every word ends once, a word of 8+ (15+)
# ends once in 8 (15) word bytes
_WORD_END = b"a."
_LONG_WORD_END = b"a" * 8 + b"."
_LONGER_WORD_END = b"a" * 15 + b"."
# A run counted by _SPACE_RUN starts after a non-space: two spaces, a space and a newline, or a newline
# (alone or followed by more white space); the three patterns cannot overlap themselves
_RUN_STARTS = (b"x  ", b"x n", b"xn")


def _combine(words: int, inside: tuple[int, int, int, int], punct: int, runs: int, wide: int) -> float:
    mixed, camel, groups, lower = inside
    pieces = (
        mixed * _MIXED_TOKENS + camel * _CAMEL_TOKENS + groups * _DIGIT_GROUP_TOKENS + lower * _LONG_LOWER_TOKENS
    )
    return (words + pieces + punct / _PUNCT_PER_TOKEN + runs * _SPACE_RUN_TOKENS + wide * _WIDE_PER_CHAR) * _LEVEL


def _inside_words(data: bytes) -> tuple[int, int, int, int]:
    """Changes between letters and digits, lower-to-upper changes, 4-digit pieces of digit runs and 16-letter
    pieces of lower-case runs in ``data`` (UTF-8): counted with bytes.translate and bytes.count."""
    classes = data.translate(_LETTER_DIGIT_CLASS)
    camel = classes.count(b"lu")
    lower = classes.count(_LONG_LOWER_BYTES)  # non-overlapping: n // 16 in each run of n
    if b"d" not in classes:
        return 0, camel, 0, lower
    groups = classes.count(_DIGIT_PIECE_BYTES)  # n // 4 in each run of n digits
    kinds = classes.translate(_LETTER_OR_DIGIT)
    return kinds.count(b"ad") + kinds.count(b"da"), camel, groups, lower


def base_estimate(text: str) -> float:
    """The uncalibrated estimate of ``text``'s tokens (a float: scaled and rounded by the caller).

    A handful of passes of C bytes methods, no Python loop over the text.
    """
    if not text:
        return 0.0
    ascii_only = text.isascii()
    wide = 0 if ascii_only else len(text) - len(text.encode("ascii", "ignore"))
    data = text.encode("utf-8", "surrogatepass")
    punct = len(data) - len(data.translate(None, _PUNCT_BYTES))  # bytes.translate: far faster than str's
    classes = data.translate(_ALNUM_CLASS) + b"."
    words = classes.count(_WORD_END) + classes.count(_LONG_WORD_END) + classes.count(_LONGER_WORD_END)
    if ascii_only or _NON_ASCII_SPACE.search(text) is None:
        spaces = b"x" + data.translate(_SPACE_CLASS)
        runs = sum(spaces.count(start) for start in _RUN_STARTS)
    else:
        runs = len(_SPACE_RUN.findall(text))  # white space beyond ASCII: the pattern's own definition
    return _combine(words, _inside_words(data), punct, runs, wide)


def reference_estimate(text: str) -> float:
    """``base_estimate`` by its definition with regular expressions (slower; tests compare the two)."""
    if not text:
        return 0.0
    wide = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    words = len(_WORD.findall(text)) + len(_LONG_WORD.findall(text)) + len(_LONGER_WORD.findall(text))
    data = text.encode("utf-8", "surrogatepass")
    punct = len(data) - len(data.translate(None, _PUNCT_BYTES))
    inside = (
        len(_MIXED.findall(text)),
        len(_CAMEL.findall(text)),
        len(_DIGIT_PIECES.findall(text)),
        len(_LONG_LOWER_RUN.findall(text)),
    )
    return _combine(words, inside, punct, len(_SPACE_RUN.findall(text)), wide)


class BaseEstimates:
    """Base estimates by text, bounded (the engine and each transcript reader own one).

    The estimate of a text does not depend on the scale, so a thread refitted at every request recounts
    nothing: only the multiplication and the rounding are done again.
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._values: dict[str, float] = {}

    def __call__(self, text: str) -> float:
        value = self._values.get(text)
        if value is None:
            if len(self._values) >= self.limit:
                self._values.clear()
            value = self._values[text] = base_estimate(text)
        return value

    def forget(self, texts: Iterable[str]) -> None:
        """Drop ``texts``' estimates (texts its owner no longer keeps: the entries would keep them alive)."""
        values = self._values
        for text in texts:
            values.pop(text, None)


def scaled(text: str, scale: float, bases: BaseEstimates | None = None) -> int:
    """``base_estimate(text) × scale``, rounded; white space alone counts nothing."""
    if not text or text.isspace():
        return 0
    return max(1, round((bases(text) if bases is not None else base_estimate(text)) * scale))


def scaled_sum(estimates: Sequence[float], scale: float) -> int:
    """``sum(max(1, round(base * scale)))`` over base estimates (floats, never negative): ``scaled``'s arithmetic,
    text by text (each part is rounded on its own). A product of at most one half rounds to 0 and counts
    1: counted apart, so that each pass is a builtin's."""
    products = list(map(operator.mul, estimates, repeat(scale)))
    # float.__round__ is what round() calls for a float, without looking it up for each (a third faster)
    return sum(map(_ROUND, products)) + sum(map(_HALF.__ge__, products))


def scaled_each(estimates: Sequence[float], scale: float) -> list[int]:
    """``max(1, round(base * scale))`` for each base estimate: ``scaled``'s arithmetic (a text's base estimate
    is above 0), each part rounded on its own, in a few builtins' passes."""
    return list(map(max, map(_ROUND, map(operator.mul, estimates, repeat(scale))), repeat(1)))


_HALF = 0.5
_ROUND = float.__round__
