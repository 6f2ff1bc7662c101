"""A rich ``Text`` turned into its segments: ``Text.render``'s result, made in less time.

Every row a widget draws with Textual's line API (``LineView``, ``FittedStatic``) is a ``Text`` turned into
segments, and a followed session's next request redraws most rows on screen (the calibration moves each
part's ≈ figure). Rich's ``Text.render`` combines the styles over each piece anew for every text (its cache
of combinations lives for one call), sorts its span events by a key function and yields the pieces one by
one. ``text_segments`` takes the same events in the same order (a plain tuple sort: the order of events at one
offset changes nothing), keeps the combinations across texts (a table's rows share a few dozen) and returns a
list: the pieces are the same and so are their styles (``Style.combine`` of the same styles, in the same
order; rich's own ``Style.__add__`` cache keeps combinations across calls the same way). Texts a link's style
is in, and kinds of ``Text`` that may render themselves otherwise, are left to rich.
"""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_NULL = Style.null()
KEPT_COMBINATIONS = 4096  # styles combined, kept across texts (a table's rows share a few dozen)
_combined: dict[tuple[Style | None, tuple[Style, ...]], Style] = {}


def text_segments(text: Text, console: Console, base: Style | None = None) -> list[Segment]:
    """``list(text.render(console))``: the segments of ``text``, without its ``end``; with ``base``, each
    segment's style drawn on it (``base + style if base else style``, a piece of no style: ``base``)."""
    if type(text) is not Text:
        # a kind of Text that may render itself otherwise
        return [Segment(piece, base + style if base else style) for piece, style, _ in text.render(console)]
    plain = text.plain
    spans = text.spans
    if not spans:
        return [Segment(plain, base or None)]
    get_style = console.get_style
    own = text.style
    styles = [own if isinstance(own, Style) else get_style(own, default=_NULL)]
    events = [(0, False, 0)]
    ends = []
    for index, (start, end, style) in enumerate(spans, 1):
        styles.append(style if isinstance(style, Style) else get_style(style, default=_NULL))
        events.append((start, False, index))
        ends.append((end, True, index))
    if any(style.link for style in styles):
        # a link's style is copied, with a new id, each time it is combined
        return [Segment(piece, base + style if base else style) for piece, style, _ in text.render(console)]
    events += ends
    events.append((len(plain), True, 0))
    # rich sorts by offset, then starts before ends, keeping the spans' order among equals; the order of the
    # events at one offset changes nothing (a piece is made once all of them are taken), so tuples sort plain
    events.sort()
    stack: list[int] = []
    combined = _combined
    if len(combined) > KEPT_COMBINATIONS:
        combined.clear()
    segments: list[Segment] = []
    offset, leaving, index = events[0]
    for next_offset, next_leaving, next_index in events[1:]:
        if leaving:
            stack.remove(index)
        else:
            stack.append(index)
        if next_offset > offset:
            key = (base, tuple([styles[i] for i in sorted(stack)]))
            style = combined.get(key)
            if style is None:
                style = Style.combine(key[1])
                style = combined[key] = base + style if base else style
            segments.append(Segment(plain[offset:next_offset], style))
        offset, leaving, index = next_offset, next_leaving, next_index
    return segments
