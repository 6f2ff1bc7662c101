"""``loads``: ``json.loads`` of one JSON text, through msgspec's decoder when it is installed.

msgspec's decoder reads the JSON-lines transcripts an agent writes about 1.6 times as fast as the
standard library's (a 20 MB Claude Code transcript: 82 vs 137 ms on this project's machine; orjson
was 72 ms but turns integers past 64 bits into floats without a word, so its values could differ).
Every text msgspec refuses — ``NaN`` and ``Infinity``, a number beyond a double, a lone surrogate
escape, any syntax error — is handed to ``json.loads``, so the value or the error is always the
standard library's: same input, same result, with or without msgspec (tested both ways).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; a build without it reads as before
    msgspec = None  # type: ignore[assignment]

_FAST: Callable[[str | bytes], Any] | None = msgspec.json.Decoder().decode if msgspec is not None else None
_REFUSED: tuple[type[BaseException], ...] = (msgspec.DecodeError,) if msgspec is not None else ()


def loads(text: str | bytes) -> Any:
    """The value of the JSON ``text``, exactly as ``json.loads(text)`` gives it (or its error)."""
    fast = _FAST
    if fast is not None:
        try:
            return fast(text)
        except _REFUSED:
            pass  # not read the standard way: the standard library decides (its value or its error)
        except RecursionError:
            pass
    return json.loads(text)


def accelerated() -> bool:
    """Whether the fast decoder is in use (the benchmarks print it)."""
    return _FAST is not None
