"""Text made for the width it is drawn at.

The gauge, the timelines and the status line lay their text out for a width (rows that move
under each other when narrow, a window of turns, a file name shortened to fit). Made when a plan
arrived, with the width the widget had then, the text went on being drawn after the width
changed: a resize that narrows the sidebar (its class changes after the redraw) left
"free ≈1…" cut until the next plan. A ``Fitted`` is a Rich renderable whose text is made when
Textual measures or draws it, at the width it is given, so every frame shows the text made for
its own width.

A ``FittedStatic`` draws its rows with Textual's line API (``render_line``), as a ``Static`` would draw
them (the same segments, styles and crop), each row's strip made once and kept while the row reads the
same: a new plan changes a few rows of the gauge or one field of the status line, and the ``Static``
pipeline (Rich's whole render of the text, then its lines cut apart) cost 0.5–1 ms per widget each time.
A new text as tall as the one drawn repaints only its rows that read differently: the others keep what
Textual drew of them (its styles cache), and the screen's update covers those rows only.

The one-row widgets a followed session's next request redraws (the top bar, the section header, the
breakdown's title) were ``Static``s of a ``Text``: Textual turns such a text into its ``Content`` at each
draw, 170–350 µs a row. They are ``FittedStatic``s drawn as a ``Static`` of the text draws it (``OFFSETS``:
each piece marked with its offset, ``textual_seams.offset_meta``), ≈100 µs; a row wider than the widget is
left to Textual (``textual_seams.static_strips``), which cuts it as the stylesheet says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Self

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import Static
from tokenbox.tui.redraw import row_count, runs, same_text
from tokenbox.tui.textrender import text_segments
from tokenbox.tui.textual_seams import offset_meta, static_strips

KEPT_WIDTHS = 4  # texts kept per ``Fitted``: the widths of one layout pass and a resize or two


class Fitted:
    """``make(width)`` → the text for a widget ``width`` cells wide, made at most once per width."""

    def __init__(self, make: Callable[[int], Text]) -> None:
        self._make = make
        self._texts: dict[int, Text] = {}

    def at(self, width: int) -> Text:
        """The text for ``width`` cells."""
        text = self._texts.get(width)
        if text is None:
            if len(self._texts) >= KEPT_WIDTHS:
                self._texts.pop(next(iter(self._texts)))
            text = self._texts[width] = self._make(width)
        return text

    def take_maker(self, other: Fitted, width: int) -> None:
        """Make texts as ``other`` does from now on, keeping only the text at ``width`` (the two draw it the
        same): a text shown unchanged at this width may differ at another (a wider timeline shows older
        turns), and a later resize must not draw the old maker's text there."""
        self._make = other._make
        self._texts = {width: self.at(width)} if width in self._texts else {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.at(options.max_width)
        yield text
        if not text.end.endswith("\n"):
            # Textual counts a renderable's rows by its newlines: the last row needs one too
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def text_rows(text: Text, width: int, console: Console) -> list[Text]:
    """``text``'s rows at ``width`` as Rich lays it out for a ``Static`` (``Text.__rich_console__``: its
    lines, each cut to the width as its overflow says).

    A text made for its width (the gauge, the timelines, the status line) is its lines as they are: when no
    line is wider than ``width`` (in cells, nor longer in characters: ``Text.rstrip_end`` counts those), none
    holds a tab and the text is not justified, ``Text.wrap`` breaks no line (``divide_line`` finds no break),
    crops nothing and pads nothing, so its rows are ``Text.split``'s (the breaks looked for, a copy of each line
    and its crops: a third more time for the gauge's text).
    """
    if fits(text, width):
        return list(text.split(allow_blank=True))
    return list(text.wrap(console, width, justify=text.justify or "default", overflow=text.overflow or "fold",
                          tab_size=text.tab_size or console.tab_size or 8, no_wrap=bool(text.no_wrap)))


def fits(text: Text, width: int) -> bool:
    """Whether ``text``'s rows are its lines as they are at ``width`` (none wider, in cells or in
    characters, no tab, not justified): nothing to wrap, cut or pad."""
    plain = text.plain
    return (text.justify in (None, "default") and "\t" not in plain
            and all(len(line) <= width and cell_len(line) <= width for line in plain.split("\n")))


def row_strip(row: Text, width: int, base: Style, console: Console, y: int | None = None) -> Strip:
    """One row as a ``Static`` draws it: its segments on the widget's ``base`` style (Textual's
    ``_Styled``), cut to ``width`` and not padded (``Segment.split_and_crop_lines``). Rendered alone, a
    row gives the segments it gives inside the whole text (every style of a row is a span of it), less
    the empty ones the whole render does not make. The row's own style is drawn under its spans, as the
    whole text's render draws it (``Text.join`` makes it a span; ``Text.render`` of a row without spans
    would leave it out). With ``y``, the row is row ``y`` of a ``Static`` showing a ``Text`` (Textual's
    ``Content``), whose pieces carry their offsets (``offset_meta``)."""
    line_base = base + console.get_style(row.style) if row.style else base
    segments = [segment for segment in text_segments(row, console, line_base) if segment.text]
    if y is not None:
        x, marked = 0, []
        for text, style, _ in segments:
            marked.append(Segment(text, style + offset_meta(x, y) if style else offset_meta(x, y)))
            x += len(text)
        segments = marked
    return Strip(Segment.adjust_line_length(segments, width, pad=False))


class FittedStatic(Static):
    """A ``Static`` showing a ``Fitted`` text (``last_text``: the text at its width now)."""

    FALLBACK_WIDTH = 34  # before the first layout (the sidebar's narrow width)
    # True: drawn as a ``Static`` showing the ``Text`` itself draws it (Textual's ``Content``, its pieces
    # marked with their offsets); False: as one showing a rich renderable draws it (no offsets)
    OFFSETS: ClassVar[bool] = False
    _fitted: Fitted | None = None
    # the rows drawn: the text they were made from, the width and base style they were made for, and each
    # row with its strip (a row that reads as before keeps its strip when the next text comes)
    _drawn: tuple[Text, int, Style, list[tuple[Text, Strip | None]]] | None = None
    _only_rows: list[int] | None = None  # the rows the next refresh repaints (None: the whole widget)
    _static_memo: tuple[Text, Size, Style, list[Strip]] | None = None  # rows Textual drew (``OFFSETS``, not fitting)

    @property
    def fitted_width(self) -> int:
        """The width the text is made for now (``FALLBACK_WIDTH`` before the first layout)."""
        return self.content_region.width or self.FALLBACK_WIDTH

    @property
    def last_text(self) -> Text:
        """The text as drawn at the widget's width now."""
        return self._fitted.at(self.fitted_width) if self._fitted is not None else Text()

    def show_fitted(self, make: Callable[[int], Text]) -> bool:
        """Show the text ``make`` makes for the widget's width, unless it draws as the one shown
        (an edit elsewhere often leaves it as it was); whether it was replaced. Of a text as tall as the
        one drawn, only the rows that read differently are repainted (``_changed_rows``)."""
        fitted, old = Fitted(make), self._fitted
        width = self.fitted_width
        layout = True
        if old is not None:
            before, after = old.at(width), fitted.at(width)
            if same_text(before, after):
                old.take_maker(fitted, width)  # nothing to redraw now; another width draws the new text
                return False
            layout = row_count(before) != row_count(after)  # the same height: no layout pass
            if not layout:
                self._only_rows = self._changed_rows(before, after, width)
        self._fitted = fitted
        self.update(fitted, layout=layout)
        return True

    def show_text(self, text: Text) -> bool:
        """Show ``text`` as it is at every width (a row laid out by its maker, such as a title), unless it
        draws as the one shown; whether it was replaced (``show_fitted``)."""
        return self.show_fitted(lambda _width: text)

    def _changed_rows(self, before: Text, after: Text, width: int) -> list[int] | None:
        """The rows of ``after`` that draw differently from those of ``before`` drawn now (None: all of
        them, when ``before``'s rows were not drawn at this width and style or the two wrap to different
        heights). ``after``'s rows are kept for drawing, with the strips of the rows that read the same."""
        drawn, base = self._drawn, self.visual_style.rich_style
        if (drawn is None or drawn[0] is not before or drawn[1] != width or drawn[2] != base
                or width != self.size.width or self.text_selection is not None
                or (self.OFFSETS and not fits(after, width))):  # Textual draws it (``render_line``)
            return None
        rows = self._rows_of(after, width, base, drawn[3])
        if len(rows) != len(drawn[3]):
            return None
        self._drawn = (after, width, base, rows)
        return [index for index, (row, strip) in enumerate(rows) if strip is None]

    def _rows_of(self, text: Text, width: int, base: Style, before: list[tuple[Text, Strip | None]]) -> list[tuple[Text, Strip | None]]:
        """``text``'s rows at ``width``, each with the strip of the row of ``before`` at its place if that
        reads the same (None: made when drawn)."""
        rows: list[tuple[Text, Strip | None]] = []
        for index, row in enumerate(text_rows(text, width, self.app.console)):
            kept = before[index] if index < len(before) else None
            rows.append((row, kept[1]) if kept is not None and kept[1] is not None and same_text(kept[0], row) else (row, None))
        return rows

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        """Textual's ``refresh``; the one ``show_fitted``'s ``update`` asks for repaints only the rows that changed."""
        rows, self._only_rows = self._only_rows, None
        if rows is not None and not regions and repaint and not layout and not recompose:
            if not rows:
                return self  # the new text draws as the old one (its spans differ, not its rows)
            width = self.size.width
            regions = tuple(Region(0, start, width, count) for start, count in runs(rows))
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def render_line(self, y: int) -> Strip:
        """Row ``y`` of the text at the widget's width, made once per row (see the module's docstring)."""
        if self._fitted is None or self.text_selection is not None:
            return super().render_line(y)  # nothing shown yet, or a mouse selection (Textual draws it)
        width = self.size.width
        base = self.visual_style.rich_style
        text = self._fitted.at(width)
        if self.OFFSETS and not fits(text, width):
            # cut or wrapped as the stylesheet says (a title wider than a narrow sidebar ends in "…"): Textual
            # draws it, as it draws a ``Static`` of the text (rare: the rows are made for their width)
            memo = self._static_memo
            if memo is None or memo[0] is not text or memo[1] != self.size or memo[2] != base:
                memo = self._static_memo = (text, self.size, base, static_strips(self, text))
            return memo[3][y] if y < len(memo[3]) else Strip.blank(width, base)
        drawn = self._drawn
        if drawn is None or drawn[0] is not text or drawn[1] != width or drawn[2] != base:
            before = drawn[3] if drawn is not None and drawn[1] == width and drawn[2] == base else []
            drawn = self._drawn = (text, width, base, self._rows_of(text, width, base, before))
        rows = drawn[3]
        if y >= len(rows):
            return Strip.blank(width, base)
        row, strip = rows[y]
        if strip is None:
            strip = row_strip(row, width, base, self.app.console, y if self.OFFSETS else None)
            rows[y] = (row, strip)
        return strip
