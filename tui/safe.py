"""Untrusted text as inert data: no markup, no escape codes, control characters made visible.

Section text, file names and error messages reach the screen only through these helpers, as
``rich.text.Text`` built without markup parsing, with every control or format character
(ESC, CSI/C1, CR, BEL, DEL, bidi overrides and isolates, zero-width characters, line and paragraph
separators...) replaced by a visible ``\\xNN`` / ``\\uNNNN`` escape. Markup brackets (``[bold]``,
``[@click=...]``) stay literal text because nothing here parses markup.

The escapes are the core's one escaper (``tokenbox.core.model.textsafe``); this module adds what a
Rich ``Text`` needs: tab stops, the escape style, and a huge line escaped a window at a time.
``plain(text, limit)`` caps one-line fields (names, notes, errors) that are redrawn on every key press.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from tokenbox.core.model.textsafe import FIELD_LIMIT, combines, escape, printable

__all__ = ["ESCAPE_STYLE", "FIELD_LIMIT", "TAB_SIZE", "escaped_before", "plain", "safe_line", "safe_lines"]

TAB_SIZE = 4
ESCAPE_STYLE = Style(italic=True)  # without a colour: the detail passes its themed ``detail--escape`` style
_CHUNK = 256


def plain(text: str, limit: int | None = None) -> str:
    """``text`` on one line, escaped (``printable``); with ``limit``, cut there and marked ``…``."""
    return printable(text, limit)


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
    if line.isprintable() and not (after_escape and combines(line[:1] or "a")):
        return Text(line, style=style, no_wrap=True, end="")  # the common case, checked in C (a tab is not printable)
    out = Text(style=style, no_wrap=True, end="")
    run: list[str] = []
    for start in range(0, len(line), _CHUNK):
        chunk = line[start : start + _CHUNK]
        if chunk.isprintable() and not (after_escape and combines(chunk[0])):
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
            elif ch.isprintable() and not (after_escape and combines(ch)):
                run.append(ch)
                column += 1
                after_escape = False
            else:
                after_escape = True
                if run:
                    out.append("".join(run))
                    run = []
                escaped = escape(ch)
                out.append(escaped, escape_style)
                column += len(escaped)
    if run:
        out.append("".join(run))
    return out


def escaped_before(text: str, index: int, lookback: int = 64) -> bool:
    """Whether ``safe_line(text)`` escaped the character before ``text[index]`` (to go on in pieces)."""
    i = index - 1
    while i >= max(0, index - lookback) and text[i].isprintable() and combines(text[i]):
        i -= 1  # marks after an escape are escaped too: look past them
    return i >= 0 and not text[i].isprintable() and text[i] != "\t"


def safe_lines(text: str, style: Style | str = "") -> list[Text]:
    """Untrusted multi-line text as one safe ``Text`` per line (``\\r\\n`` and ``\\n`` split lines)."""
    return [safe_line(line, style) for line in text.replace("\r\n", "\n").split("\n")]
