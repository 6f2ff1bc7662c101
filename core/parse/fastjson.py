"""``loads``: ``json.loads`` of one JSON text, through msgspec's decoder when it is installed.

msgspec's decoder reads the JSON-lines transcripts an agent writes about 1.6 times as fast as the
standard library's (a 20 MB Claude Code transcript: 82 vs 137 ms on this project's machine; orjson
was 72 ms but turns integers past 64 bits into floats without a word, so its values could differ).
Every text msgspec refuses — ``NaN`` and ``Infinity``, a number beyond a double, a lone surrogate
escape, any syntax error — is handed to ``json.loads``, so the value or the error is always the
standard library's: same input, same result, with or without msgspec (tested both ways).

msgspec is imported once ``SLOW_CHARS`` characters have been read the standard way: importing it
costs more than it saves on a small read (the status line reads a 256 KiB tail in a fresh process,
where the import was a third of its cost above its floor), or at once by ``expect`` when a read that big is
known to come (a transcript's follower, before it reads a big file from its top).

``loads_utf8`` reads a line's UTF-8 bytes without decoding them first (msgspec decodes each string as
it reads it, and checks it): a transcript's lines are then decoded once, not decoded and encoded again
(a 20 MB transcript: ≈35 ms less). Whatever it does not read is the caller's to decode and ``loads``.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

SLOW_CHARS = 1 << 20  # characters read by json.loads before msgspec is imported for the rest

_PENDING: Any = object()
_FAST: Any = _PENDING  # msgspec's decode once imported; None without msgspec (or when switched off)
_REFUSED: tuple[type[BaseException], ...] = ()
_read = 0  # characters read while _FAST is pending
_FAST_UTF8: Any = None  # msgspec's decode for UTF-8 bytes, when it refuses invalid UTF-8 (checked on import)
_REFUSED_UTF8: tuple[type[BaseException], ...] = ()
MISSED: Any = object()  # ``loads_utf8``: not read (the caller decodes the text and ``loads`` it)


def _import_fast() -> Any:
    global _FAST, _REFUSED, _FAST_UTF8, _REFUSED_UTF8
    try:
        import msgspec  # start-up: 10-25 ms, paid only by a read big enough to gain it back
    except ImportError:  # pragma: no cover - msgspec is a dependency; a build without it reads as before
        _FAST = None
        return None
    _REFUSED = (msgspec.DecodeError,)
    _FAST = msgspec.json.Decoder().decode
    _REFUSED_UTF8 = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
    # bytes only where msgspec checks their UTF-8 (a bad byte must stay the reader's error, at its place) and
    # refuses a lone surrogate escape (json.loads keeps it: the reader replaces it and warns, from the text)
    if _refuses(b'["\xff"]', UnicodeDecodeError) and _refuses(b'["\\ud800"]', msgspec.DecodeError) \
            and _refuses(b'["\\udc00x"]', msgspec.DecodeError):
        _FAST_UTF8 = _FAST
    return _FAST


def _refuses(data: bytes, error: type[BaseException]) -> bool:
    """Whether the fast decoder refuses ``data`` with ``error``."""
    try:
        _FAST(data)
    except error:
        return True
    except Exception:  # pragma: no cover - a msgspec that does not say why: the text path only
        return False
    return False


def loads(text: str | bytes) -> Any:
    """The value of the JSON ``text``, exactly as ``json.loads(text)`` gives it (or its error)."""
    fast = _FAST
    if fast is _PENDING:
        global _read
        _read += len(text)
        if _read < SLOW_CHARS:
            return json.loads(text)
        fast = _import_fast()
    if fast is not None:
        try:
            return fast(text)
        except _REFUSED:
            pass  # not read the standard way: the standard library decides (its value or its error)
        except RecursionError:
            pass
    return json.loads(text)


def expect(chars: int) -> None:
    """A read of about ``chars`` characters is to come: the fast decoder is imported now when that alone
    is enough to gain its import back (``SLOW_CHARS``), not after the first ``SLOW_CHARS`` were read the
    slow way (a 20 MB transcript's first MiB: ≈25 ms)."""
    if _FAST is _PENDING and chars >= SLOW_CHARS:
        _import_fast()


def loads_utf8(data: bytes) -> Any:
    """The value of the JSON text in the UTF-8 ``data`` when the fast decoder reads it, else ``MISSED``:
    before it is imported (``loads`` decides when), without it, and for any text it refuses (invalid
    UTF-8, ``NaN``, a lone surrogate escape, a syntax error). A value returned is ``loads``' value of the
    decoded text and holds no lone surrogate (a decoder that keeps one is not used for bytes: ``_import_fast``);
    for ``MISSED`` the caller decodes ``data`` (its error, if any, is the file's) and calls ``loads``, which counts the text toward the import and decides the value or the error."""
    fast = _FAST_UTF8
    if fast is None or _FAST is None:  # not imported yet, or switched off since
        return MISSED
    try:
        return fast(data)
    except _REFUSED_UTF8:
        return MISSED


def accelerated() -> bool:
    """Whether the fast decoder is in use from now on (importing it if it was not yet; the benchmarks print it)."""
    fast = _import_fast() if _FAST is _PENDING else _FAST
    return fast is not None
