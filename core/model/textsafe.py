"""Untrusted text made safe for one-line terminal output: the one escaper (CLI errors, tables, status
lines, and every field the TUI draws, through ``tokenbox.tui.safe``).

Every control or format character (ESC, CSI/C1, CR, BEL, DEL, bidi overrides and isolates, zero-width
characters, line and paragraph separators…) becomes a visible ``\\xNN`` / ``\\uNNNN`` / ``\\UNNNNNNNN``
escape, so text cannot move the cursor or restyle a terminal; a combining mark right after an escape
is escaped too (it would draw onto the escape's last character). Linear and fast on printable text
(``str.isprintable`` runs in C); only text that holds something to escape is walked per character.
"""

from __future__ import annotations

import unicodedata

FIELD_LIMIT = 300  # characters of a one-line field (a name, a message) shown before "…"


def escape(ch: str) -> str:
    """The visible escape of one character."""
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def combines(ch: str) -> bool:
    """A mark drawn onto the character before it (accents, variation selectors, enclosing marks).

    Right after an escape such a mark would be drawn onto the escape's last character (``\\x00``
    followed by U+FE0F renders as a keycap ``0``), so there it is escaped too.
    """
    return unicodedata.category(ch) in ("Mn", "Mc", "Me")


def printable(text: str, limit: int | None = FIELD_LIMIT) -> str:
    """``text`` on one line with every unsafe character (newlines too) replaced by its escape.

    At most ``limit`` characters of ``text`` are kept and ``…`` marks the cut (``None`` or 0: no limit).
    """
    cut = bool(limit) and len(text) > limit  # type: ignore[operator]
    if cut:
        text = text[:limit]
    if not text.isprintable():
        out: list[str] = []
        after_escape = False
        for ch in text:
            after_escape = not ch.isprintable() or (after_escape and combines(ch))
            out.append(escape(ch) if after_escape else ch)
        text = "".join(out)
    return text + "…" if cut else text
