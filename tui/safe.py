"""Untrusted text as inert data: no markup, no escape codes, control characters made visible.

Section text, file names and error messages reach the screen only through these helpers, as
``rich.text.Text`` built without markup parsing, with every control or format character
(ESC, CR, BEL, bidi overrides, zero-width characters...) replaced by a visible ``\\xNN`` escape.
"""

from __future__ import annotations

import unicodedata

from rich.style import Style
from rich.text import Text

TAB_SIZE = 4
ESCAPE_STYLE = Style(color="magenta", reverse=False, italic=True)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_safe(ch: str) -> bool:
    return ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Zl", "Zp")


def plain(text: str) -> str:
    """``text`` on one line with every unsafe character (newlines too) replaced by an escape."""
    return "".join(ch if _is_safe(ch) else _escape(ch) for ch in text)


def safe_line(line: str, style: Style | str = "", escape_style: Style = ESCAPE_STYLE) -> Text:
    """One line of untrusted text as a ``Text``: tabs expanded, other controls shown as escapes."""
    out = Text(style=style, no_wrap=True, end="")
    run: list[str] = []
    column = 0
    for ch in line:
        if ch == "\t":
            pad = TAB_SIZE - column % TAB_SIZE
            run.append(" " * pad)
            column += pad
        elif _is_safe(ch):
            run.append(ch)
            column += 1
        else:
            if run:
                out.append("".join(run))
                run = []
            escaped = _escape(ch)
            out.append(escaped, escape_style)
            column += len(escaped)
    if run:
        out.append("".join(run))
    return out


def safe_lines(text: str, style: Style | str = "") -> list[Text]:
    """Untrusted multi-line text as one safe ``Text`` per line (``\\r\\n`` and ``\\n`` split lines)."""
    return [safe_line(line, style) for line in text.replace("\r\n", "\n").split("\n")]
