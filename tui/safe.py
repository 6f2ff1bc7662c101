"""Untrusted text as inert data: no markup, no escape codes, control characters made visible.

Section text, file names and error messages reach the screen only through these helpers, as
``rich.text.Text`` built without markup parsing, with every control or format character
(ESC, CSI/C1, CR, BEL, DEL, bidi overrides and isolates, zero-width characters, line and paragraph
separators...) replaced by a visible ``\\xNN`` / ``\\uNNNN`` escape. Markup brackets (``[bold]``,
``[@click=...]``) stay literal text because nothing here parses markup.

Everything is linear and fast on printable text (``str.isprintable`` runs in C), so a megabyte
of text costs milliseconds; only the stretches that hold something to escape are walked per
character. ``plain(text, limit)`` caps one-line fields (names, notes, errors) that are redrawn
on every key press.
"""

from __future__ import annotations

import unicodedata

from rich.style import Style
from rich.text import Text

TAB_SIZE = 4
ESCAPE_STYLE = Style(italic=True)  # without a colour: the detail passes its themed ``detail--escape`` style
FIELD_LIMIT = 300  # characters of a one-line field shown before "…"
_CHUNK = 256


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_safe(ch: str) -> bool:
    """Printable: not Cc, Cf (bidi, zero-width, BOM), Cs, Co, Cn, Zl, Zp, nor a space other than U+0020."""
    return ch.isprintable()


def _combines(ch: str) -> bool:
    """A mark drawn onto the character before it (accents, variation selectors, enclosing marks).

    Right after an escape such a mark would be drawn onto the escape's last character (``\\x00``
    followed by U+FE0F renders as a keycap ``0``), so there it is escaped too.
    """
    return unicodedata.category(ch) in ("Mn", "Mc", "Me")


def plain(text: str, limit: int | None = None) -> str:
    """``text`` on one line with every unsafe character (newlines too) replaced by an escape.

    With ``limit``, at most ``limit`` characters of ``text`` are kept and ``…`` marks the cut.
    """
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    if not text.isprintable():
        out: list[str] = []
        after_escape = False
        for ch in text:
            after_escape = not _is_safe(ch) or (after_escape and _combines(ch))
            out.append(_escape(ch) if after_escape else ch)
        text = "".join(out)
    return text + "…" if cut else text


def safe_line(
    line: str,
    style: Style | str = "",
    escape_style: Style = ESCAPE_STYLE,
    *,
    column: int = 0,
    after_escape: bool = False,
) -> Text:
    """One line of untrusted text as a ``Text``: tabs expanded, other controls shown as escapes.

    The escapes are the only spans of the result. When ``line`` is a piece of a longer line (a
    huge line is escaped a window at a time), ``column`` is where it starts on its row (for tab
    stops) and ``after_escape`` whether the character before it was escaped.
    """
    if line.isprintable() and not (after_escape and _combines(line[:1] or "a")):
        return Text(line, style=style, no_wrap=True, end="")  # the common case, checked in C (a tab is not printable)
    out = Text(style=style, no_wrap=True, end="")
    run: list[str] = []
    for start in range(0, len(line), _CHUNK):
        chunk = line[start : start + _CHUNK]
        if chunk.isprintable() and not (after_escape and _combines(chunk[0])):
            run.append(chunk)
            column += len(chunk)
            after_escape = False
            continue
        for ch in chunk:
            if ch == "\t":
                pad = TAB_SIZE - column % TAB_SIZE
                run.append(" " * pad)
                column += pad
                after_escape = False
            elif _is_safe(ch) and not (after_escape and _combines(ch)):
                run.append(ch)
                column += 1
                after_escape = False
            else:
                after_escape = True
                if run:
                    out.append("".join(run))
                    run = []
                escaped = _escape(ch)
                out.append(escaped, escape_style)
                column += len(escaped)
    if run:
        out.append("".join(run))
    return out


def escaped_before(text: str, index: int, lookback: int = 64) -> bool:
    """Whether ``safe_line(text)`` escaped the character before ``text[index]`` (to go on in pieces)."""
    i = index - 1
    while i >= max(0, index - lookback) and text[i].isprintable() and _combines(text[i]):
        i -= 1  # marks after an escape are escaped too: look past them
    return i >= 0 and not text[i].isprintable() and text[i] != "\t"


def safe_lines(text: str, style: Style | str = "") -> list[Text]:
    """Untrusted multi-line text as one safe ``Text`` per line (``\\r\\n`` and ``\\n`` split lines)."""
    return [safe_line(line, style) for line in text.replace("\r\n", "\n").split("\n")]
