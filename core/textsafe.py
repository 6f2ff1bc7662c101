"""Make untrusted text safe for one-line terminal output (errors, tables, status lines)."""

from __future__ import annotations

import unicodedata

_MAX_FIELD = 200


def printable(text: str, limit: int = _MAX_FIELD) -> str:
    """Escape control and format characters so ``text`` cannot move the cursor or restyle a terminal.

    Newlines, tabs, ANSI escapes, bidi controls and zero-width characters become ``\\xNN``/``\\uNNNN``
    escapes; very long values are shortened with an ellipsis so that an error stays one line.
    """
    if text.isascii() and text.isprintable() and (not limit or len(text) <= limit):
        return text  # the common case, without a step per character
    out: list[str] = []
    for ch in text[: limit + 1] if limit else text:
        if ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Zl", "Zp"):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    result = "".join(out)
    if limit and len(text) > limit:
        result = printable(text[:limit], 0) + "…"
    return result
