"""Tokenizers: exact tiktoken encodings, named approximations, and a registry plug-ins can extend.

Plug-ins register through the ``tokenbox.tokenizers`` entry-point group: each entry point loads to
a zero-argument callable returning a ``Tokenizer``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from tokenbox.core.errors import TokenizerError

ENTRY_POINT_GROUP = "tokenbox.tokenizers"


class Tokenizer:
    """Counts tokens of text. Subclasses set ``name``, ``exact`` and ``version``.

    ``count`` must be deterministic. ``truncate`` returns the longest piece of ``text`` at the
    ``keep`` end (``head`` or ``tail``) that counts at most ``limit`` tokens, never splitting a character.
    """

    name: str = "?"
    exact: bool = False
    version: str = ""

    def count(self, text: str) -> int:
        raise NotImplementedError

    def truncate(self, text: str, limit: int, keep: str) -> str:
        return _truncate_by_chars(self, text, limit, keep)

    def count_joined(self, texts: Sequence[str], sep: str) -> int:
        """The count of ``sep.join(texts)``; subclasses may answer without joining."""
        return self.count(sep.join(texts))

    def anchors(self, text: str) -> tuple[int, int] | None:
        """Positions where this tokenizer's count is additive whatever text surrounds ``text``.

        Returns ``(first, last)`` such that ``count(a + text + b)`` splits exactly at ``first`` and
        ``last``, or ``None`` when the tokenizer cannot promise that (the count is then done whole).
        """
        return None


def _truncate_by_chars(tokenizer: Tokenizer, text: str, limit: int, keep: str) -> str:
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


class HeuristicTokenizer(Tokenizer):
    """``ceil(chars / 4 * 1.15)``: the opt-in fallback of nrv ADR 007 (approximate)."""

    name = "heuristic"
    exact = False
    version = "ceil(chars / 4 * 1.15)"

    def count(self, text: str) -> int:
        return self.from_chars(len(text))

    @staticmethod
    def from_chars(chars: int) -> int:
        return (chars * 115 + 399) // 400

    def count_joined(self, texts: Sequence[str], sep: str) -> int:
        return self.from_chars(sum(map(len, texts)) + len(sep) * max(0, len(texts) - 1))

    def truncate(self, text: str, limit: int, keep: str) -> str:
        chars = min(len(text), limit * 400 // 115)
        while chars > 0 and self.from_chars(chars) > limit:
            chars -= 1
        return text[:chars] if keep == "head" else text[len(text) - chars :]


class FloopEstimateTokenizer(HeuristicTokenizer):
    """``(chars + 3) // 4``: floop's estimate (approximate)."""

    name = "floop-estimate"
    version = "(chars + 3) // 4"

    @staticmethod
    def from_chars(chars: int) -> int:
        return (chars + 3) // 4

    def truncate(self, text: str, limit: int, keep: str) -> str:
        chars = min(len(text), limit * 4)
        return text[:chars] if keep == "head" else text[len(text) - chars :]


def _sync_char(char: str) -> bool:
    # A character that always starts a new pre-token right after a newline in cl100k/o200k: anything
    # but white space and '/', which o200k's punctuation rule may glue to preceding newlines.
    return not char.isspace() and char != "/"


class TiktokenTokenizer(Tokenizer):
    """An exact OpenAI encoding (``cl100k_base``, ``o200k_base``) built from packaged BPE data."""

    exact = True

    def __init__(self, name: str) -> None:
        from tokenbox.core.bpe import build_encoding

        self.name = name
        self._encoding, source = build_encoding(name)
        self.version = f"tiktoken {metadata.version('tiktoken')}; BPE from {source.package} {source.version}, sha256 verified"

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        return self._encoding.decode_bytes(tokens)

    def truncate(self, text: str, limit: int, keep: str) -> str:
        tokens = self.encode(text)
        if len(tokens) <= limit:
            return text
        take = limit
        while take > 0:
            part = tokens[:take] if keep == "head" else tokens[len(tokens) - take :]
            piece = _whole_chars(self.decode_bytes(part), keep)
            if self.count(piece) <= limit:
                return piece
            take -= 1
        return ""

    def anchors(self, text: str) -> tuple[int, int] | None:
        # Position p is a pre-token boundary in any surrounding text when text[p-1] is a newline and
        # text[p] is a sync character (see _sync_char); p == 0 qualifies because sections are
        # joined with a blank line. Counts of pieces cut at such points add up exactly.
        first = 0 if text and _sync_char(text[0]) else _next_anchor(text, 0)
        if first is None:
            return None
        last = first
        search = len(text)
        while True:
            index = text.rfind("\n", first, search)
            if index < 0 or index + 1 <= first:
                break
            if index + 1 < len(text) and _sync_char(text[index + 1]):
                last = index + 1
                break
            search = index
        return first, last


def _next_anchor(text: str, start: int) -> int | None:
    index = text.find("\n", start)
    while index >= 0:
        if index + 1 < len(text) and _sync_char(text[index + 1]):
            return index + 1
        index = text.find("\n", index + 1)
    return None


def _whole_chars(data: bytes, keep: str) -> str:
    """Decode ``data`` dropping a character split at the cut end (never at the kept end)."""
    if keep == "head":
        for cut in range(4):
            try:
                return data[: len(data) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
    else:
        for cut in range(4):
            try:
                return data[cut:].decode("utf-8")
            except UnicodeDecodeError:
                continue
    return data.decode("utf-8", errors="ignore")


@dataclass(frozen=True)
class TokenizerEntry:
    """A registered tokenizer: its name, whether it is exact, and how to build it."""

    name: str
    exact: bool
    source: str
    factory: Callable[[], Tokenizer]


class TokenizerRegistry:
    """Resolves tokenizer names; builds each tokenizer once per registry (loading BPE data is costly)."""

    def __init__(self, *, plugins: bool = True) -> None:
        self._entries: dict[str, TokenizerEntry] = {}
        self._built: dict[str, Tokenizer] = {}
        self._lock = threading.Lock()
        self._plugin_errors: list[str] = []
        for name in ("o200k_base", "cl100k_base"):
            self.register(TokenizerEntry(name, True, "tiktoken, packaged BPE", lambda n=name: TiktokenTokenizer(n)))
        self.register(TokenizerEntry("heuristic", False, "built-in", HeuristicTokenizer))
        self.register(TokenizerEntry("floop-estimate", False, "built-in", FloopEstimateTokenizer))
        if plugins:
            self._load_plugins()

    def register(self, entry: TokenizerEntry) -> None:
        """Add or replace a tokenizer."""
        self._entries[entry.name] = entry
        self._built.pop(entry.name, None)

    def _load_plugins(self) -> None:
        for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if point.name in self._entries:
                self._plugin_errors.append(f"{point.name}: plug-in ignored, the name is built in")
                continue

            def factory(point: metadata.EntryPoint = point) -> Tokenizer:
                target = point.load()
                tokenizer = target()
                if not isinstance(tokenizer, Tokenizer) and not callable(getattr(tokenizer, "count", None)):
                    raise TokenizerError(f"plug-in {point.name} did not return a tokenizer", "fix the plug-in")
                return tokenizer

            self._entries[point.name] = TokenizerEntry(point.name, False, f"plug-in {point.value}", factory)

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[TokenizerEntry]:
        return list(self._entries.values())

    @property
    def plugin_errors(self) -> list[str]:
        return list(self._plugin_errors)

    def get(self, name: str) -> Tokenizer:
        """The tokenizer called ``name``, built on first use."""
        entry = self._entries.get(name)
        if entry is None:
            raise TokenizerError(f"unknown tokenizer {name!r}", f"known tokenizers: {', '.join(self._entries)}")
        with self._lock:
            if name not in self._built:
                try:
                    self._built[name] = entry.factory()
                except TokenizerError:
                    raise
                except Exception as exc:  # a broken plug-in must not crash the app
                    raise TokenizerError(f"tokenizer {name!r} failed to load: {exc}", "fix or remove the plug-in") from None
            return self._built[name]


_DEFAULT: TokenizerRegistry | None = None


def default_registry() -> TokenizerRegistry:
    """The process-wide registry (tokenizer tables are large; build them once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = TokenizerRegistry()
    return _DEFAULT
