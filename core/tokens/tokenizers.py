"""Tokenizers: exact tiktoken encodings, named approximations, and a registry plug-ins can extend.

Plug-ins register through the ``tokenbox.tokenizers`` entry-point group: each entry point loads to
a zero-argument callable returning a ``Tokenizer``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from tokenbox.core.model.errors import TokenizerError
from tokenbox.core.model.names import ESTIMATE
from tokenbox.core.model.records import dataclass
from tokenbox.core.tokens.base import Tokenizer
from tokenbox.core.tokens.estimate import EstimateTokenizer

ENTRY_POINT_GROUP = "tokenbox.tokenizers"


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


def _solid(char: str) -> bool:
    # Printable ASCII other than the space: never white space for Python or for the regex crate.
    return "!" <= char <= "~"


# Long texts are encoded to tiktoken's uint32 buffer (no Python int per token); short ones to a list.
_BUFFER_MIN_CHARS = 512
# How far the anchor searches walk through spaces that do not qualify before giving up.
_SPACE_SEARCH_LIMIT = 64


class TiktokenTokenizer(Tokenizer):
    """An exact OpenAI encoding (``cl100k_base``, ``o200k_base``) built from packaged BPE data."""

    exact = True
    parallel = True  # the Rust encoder releases the GIL: counting may run in several threads

    def __init__(self, name: str) -> None:
        # start-up: the BPE loader and tiktoken (≈ 200–300 ms with the tables) only for an exact tokenizer
        from tokenbox.core.tokens.bpe import build_encoding

        self.name = name
        self._encoding, source = build_encoding(name)
        from importlib import metadata  # start-up: importlib.metadata only here and for plug-ins

        self.version = f"tiktoken {metadata.version('tiktoken')}; BPE from {source.package} {source.version}, sha256 verified"
        self._buffer = _buffer_encoder(self._encoding)
        self._token_bytes = getattr(getattr(self._encoding, "_core_bpe", None), "decode_single_token_bytes", None)

    def count(self, text: str) -> int:
        if self._buffer is not None and len(text) >= _BUFFER_MIN_CHARS:
            try:
                return len(self._buffer(_transient(text))) >> 2
            except UnicodeEncodeError:  # lone surrogates: tiktoken's own wrapper repairs them
                pass
        return len(self._encoding.encode_ordinary(_transient(text)))

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(_transient(text))

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
        # Position p is a pre-token boundary in any surrounding text when
        #  (a) text[p-1] is a newline and text[p] is a sync character (see _sync_char): the newline
        #      ends a pre-token and no pattern lets a sync character join it; p == 0 qualifies
        #      because sections are joined with a blank line; or
        #  (b) text[p] is a space and text[p-1] is printable ASCII (see _solid): in both patterns a
        #      space can only open a pre-token or sit in a run of white space, so the pre-token
        #      holding text[p-1] ends at p, and no pattern looks behind p.
        # Matching after a boundary depends only on the text after it, so counts of pieces cut at
        # such points add up exactly.
        if not text:
            return None
        first = 0 if _sync_char(text[0]) else _first_anchor(text)
        if first is None:
            return None
        space = _last_space_anchor(text, first)
        return first, max(space, _last_newline_anchor(text, space))  # a newline anchor before `space` cannot win

    def measure(self, text: str) -> tuple[int, tuple[int, int] | None, int, int]:
        """``(count, anchors, head count, tail count)`` from one encoding of ``text``.

        The head (``text[:first]``) and tail (``text[last:]``) end and start at pre-token boundaries,
        so their tokens are exactly the first and last tokens of ``text``; their counts are read off
        the token sequence by byte length instead of encoding them again (both are short: anchors
        lie near the ends of most texts).
        """
        cut = self.anchors(text)
        tokens: Sequence[int] | None = None
        if self._buffer is not None and len(text) >= _BUFFER_MIN_CHARS:
            try:
                tokens = self._buffer(_transient(text)).cast("I")
            except UnicodeEncodeError:
                tokens = None
        if tokens is None:
            tokens = self._encoding.encode_ordinary(_transient(text))
        total = len(tokens)
        if cut is None:
            return total, None, 0, 0
        first, last = cut
        head = _edge_count(tokens, text[:first], self._token_bytes, self.count, from_end=False) if first else 0
        if first == last:
            # One anchor: head and tail split the text at a pre-token boundary, so the tail is the
            # rest of the tokens (a text with no other anchor, e.g. megabytes without a space, would
            # otherwise be encoded a second time just to count its tail).
            return total, cut, head, total - head
        tail = _edge_count(tokens, text[last:], self._token_bytes, self.count, from_end=True)
        return total, cut, head, tail


def _transient(text: str) -> str:
    """``text``, or a throw-away copy of it when it is not ASCII.

    Handing a ``str`` to the Rust encoder makes CPython cache a UTF-8 copy inside the string object
    for as long as it lives (the session keeps its texts); a copy takes that cache with it.
    ASCII strings need no UTF-8 copy, so they are passed as they are.
    """
    return text if text.isascii() else "".join((text, ""))


def _buffer_encoder(encoding):  # -> Callable[[str], memoryview] | None
    """``text -> memoryview of bytes`` holding the uint32 tokens of ``encode_ordinary(text)``, if available.

    Uses tiktoken's buffer encoder with no special tokens allowed, which encodes exactly as
    ``encode_ordinary``; checked on probes, and ``None`` (plain lists) when unavailable or different.
    """
    core = getattr(encoding, "_core_bpe", None)
    raw = getattr(core, "encode_to_tiktoken_buffer", None)
    if raw is None:
        return None
    no_special: set[str] = set()

    def encode(text: str) -> memoryview:
        return memoryview(raw(text, no_special)).cast("B")

    try:
        for probe in ("hello <|endoftext|> world\n\n  x = 1", "", " ", "日本語 🙂 naïve\r\n\t/"):
            if encode(probe).cast("I").tolist() != encoding.encode_ordinary(probe):
                return None
    except Exception:  # an API change: fall back to lists
        return None
    return encode


_EDGE_TOKENS = 64  # longest head or tail read off the tokens; a longer one is counted directly


def _edge_count(tokens: Sequence[int], piece: str, token_bytes, count, *, from_end: bool) -> int:
    """How many tokens at the start (or end) of ``tokens`` spell ``piece``; counted directly if they do not line up."""
    if token_bytes is not None:
        try:
            need = len(piece.encode("utf-8"))
        except UnicodeEncodeError:
            return count(piece)
        size = len(tokens)
        taken = 0
        try:
            while need > 0 and taken < size and taken < _EDGE_TOKENS:
                need -= len(token_bytes(tokens[size - 1 - taken] if from_end else tokens[taken]))
                taken += 1
        except (ValueError, KeyError, IndexError, TypeError, OverflowError):
            need = -1
        if need == 0:
            return taken
    return count(piece)


def _first_anchor(text: str) -> int | None:
    """The first anchor after position 0 (rules (a) and (b) of ``TiktokenTokenizer.anchors``)."""
    newline = _next_anchor(text, 0)
    limit = len(text) if newline is None else newline
    index = text.find(" ", 1, limit)
    tries = 0
    while index >= 0 and tries < _SPACE_SEARCH_LIMIT:
        if _solid(text[index - 1]):
            return index
        index = text.find(" ", index + 1, limit)
        tries += 1
    return newline


def _last_newline_anchor(text: str, first: int) -> int:
    search = len(text)
    while True:
        index = text.rfind("\n", first, search)
        if index < 0 or index + 1 <= first:
            return first
        if index + 1 < len(text) and _sync_char(text[index + 1]):
            return index + 1
        search = index


def _last_space_anchor(text: str, first: int) -> int:
    index = text.rfind(" ", first + 1)
    tries = 0
    while index > first and tries < _SPACE_SEARCH_LIMIT:
        if _solid(text[index - 1]):
            return index
        index = text.rfind(" ", first + 1, index)
        tries += 1
    return first


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
        self.register(TokenizerEntry(ESTIMATE, False, "built-in, calibrated per thread", EstimateTokenizer))
        # plug-ins are looked up the first time a name is not built in or the list is asked for: finding
        # them imports importlib.metadata and reads every installed distribution's entry points (≈20 ms of
        # each `tokenbox plan`), and a plug-in never takes a built-in name
        self._plugins_pending = plugins
        self._plugins_lock = threading.Lock()

    def register(self, entry: TokenizerEntry) -> None:
        """Add or replace a tokenizer."""
        if getattr(self, "_plugins_pending", False):
            self._plugins()  # a name registered now replaces a plug-in's, as when plug-ins were found first
        self._entries[entry.name] = entry
        self._built.pop(entry.name, None)

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a tokenizer (built in, registered or a plug-in's)."""
        if name not in self._entries:
            self._plugins()
        return name in self._entries

    def _plugins(self) -> None:
        """The installed plug-ins, looked up once."""
        with self._plugins_lock:
            if self._plugins_pending:
                self._plugins_pending = False
                self._load_plugins()

    def _load_plugins(self) -> None:
        from importlib import metadata  # start-up: importlib.metadata is slow to import; most runs need no plug-in

        for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if point.name in self._entries:
                self._plugin_errors.append(f"{point.name}: plug-in ignored, the name is built in")
                continue

            def factory(point: Any = point) -> Tokenizer:
                target = point.load()
                tokenizer = target()
                if not isinstance(tokenizer, Tokenizer) and not callable(getattr(tokenizer, "count", None)):
                    raise TokenizerError(f"plug-in {point.name} did not return a tokenizer", "fix the plug-in")
                return tokenizer

            self._entries[point.name] = TokenizerEntry(point.name, False, f"plug-in {point.value}", factory)

    def names(self, *, plugins: bool = True) -> list[str]:
        """Every tokenizer's name: the built-in ones, then plug-ins'. With ``plugins`` False the installed
        plug-ins are not looked up (``plugins_pending`` says whether that was done): only those found
        already are listed."""
        if plugins:
            self._plugins()
        return list(self._entries)  # one C-level copy: safe beside a lookup adding plug-ins in another thread

    def entries(self, *, plugins: bool = True) -> list[TokenizerEntry]:
        """Every tokenizer's entry, in ``names`` order (``plugins`` as for ``names``)."""
        if plugins:
            self._plugins()
        return list(self._entries.values())

    @property
    def plugins_pending(self) -> bool:
        """Whether the installed plug-ins are still to be looked up."""
        return self._plugins_pending

    @property
    def plugin_errors(self) -> list[str]:
        """Why plug-ins were ignored."""
        self._plugins()
        return list(self._plugin_errors)

    def get(self, name: str) -> Tokenizer:
        """The tokenizer called ``name``, built on first use."""
        if name not in self._entries:
            self._plugins()
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
