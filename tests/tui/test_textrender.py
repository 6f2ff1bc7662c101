"""The fast ways to draw a row give what rich gives: ``text_segments`` is ``Text.render``, ``text_rows`` is
``Text.wrap`` as a ``Static`` lays a text out (``tui/textrender.py``, ``tui/fitted.py``).

The reference is rich itself, called on the same texts: Hypothesis makes texts with overlapping, nested
and empty spans, styles given by name and by ``Style``, wide, combining and control characters.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text
from tokenbox.tui.fitted import text_rows
from tokenbox.tui.textrender import text_segments

CONSOLE = Console(width=80, color_system="truecolor")
STYLES = st.sampled_from([
    "", "dim", "bold", "bold red", "italic on blue", "not bold", Style.null(), Style(italic=False), Style(color="#4169e1"),
    Style(color="red", bgcolor="#121212", bold=True), Style(underline=True, meta={"offset": (3, 0)}), "link https://example.com",
])
CHARS = st.sampled_from([" ", "a", "Z", "7", "…", "≈", "█", "中", "e\u0301", "\t", "\n"])


@st.composite
def texts(draw: st.DrawFn) -> Text:
    plain = "".join(draw(st.lists(CHARS, max_size=24)))
    text = Text(plain, style=draw(STYLES), justify=draw(st.sampled_from([None, "default", "left", "center", "right", "full"])),
                overflow=draw(st.sampled_from([None, "fold", "crop", "ellipsis", "ignore"])),
                no_wrap=draw(st.sampled_from([None, False, True])), end=draw(st.sampled_from(["\n", ""])))
    for _ in range(draw(st.integers(0, 8))):
        start = draw(st.integers(0, len(plain)))  # within the text, as rich's own calls make them
        text.spans.append(Span(start, draw(st.integers(start, len(plain))), draw(STYLES)))
    return text


def _drawn_from(text: Text) -> tuple:
    return (text.plain, text.spans, text.style, text.justify, text.overflow, text.no_wrap, text.end, text.tab_size)


BASES = st.sampled_from([None, Style.null(), Style(color="#e4e6e7", bgcolor="#33424e"), Style(bold=True, meta={"offset": (0, 0)})])


@settings(max_examples=250, deadline=None)
@given(texts(), BASES)
def test_the_segments_of_a_text_are_rich_s(text: Text, base: Style | None) -> None:
    assert text_segments(text, CONSOLE) == list(text.render(CONSOLE))
    on_base = [Segment(piece, base + style if base else style) for piece, style, _ in text.render(CONSOLE)]
    made = text_segments(text, CONSOLE, base)
    assert made == on_base
    assert [segment.style for segment in made] == [segment.style for segment in on_base]


@settings(max_examples=250, deadline=None)
@given(texts(), st.integers(1, 30))
@example(Text("e\u0301e\u0301 "), 3)  # 3 cells wide but 5 characters long: rich strips the blank at its end
def test_the_rows_of_a_text_are_rich_s_wrapped_lines(text: Text, width: int) -> None:
    wrapped = text.copy().wrap(CONSOLE, width, justify=text.justify or "default", overflow=text.overflow or "fold",
                               tab_size=text.tab_size or CONSOLE.tab_size or 8, no_wrap=bool(text.no_wrap))
    assert [_drawn_from(row) for row in text_rows(text.copy(), width, CONSOLE)] == [_drawn_from(row) for row in wrapped]
