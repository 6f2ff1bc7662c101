"""``LineView``: a ScrollView drawn with Textual's line API from a list of ``rich.text.Text`` lines.

One widget renders any number of rows (as Textualize/toolong does): ``render_line`` turns only
the visible rows into ``Strip``s. Subclasses build their lines with ``set_lines``; an optional
cursor row is highlighted and kept in view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from tokenbox.tui.redraw import runs, same_text
from tokenbox.tui.textrender import text_segments
from tokenbox.tui.textual_seams import grow_in_place


class LazyRows(Sequence[Text]):
    """Rows built when first read (drawn): a table of hundreds of rows costs what is on screen."""

    def __init__(self, count: int, build: Callable[[int], Text]) -> None:
        self._count = count
        self._build = build
        self._built: dict[int, Text] = {}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        row = self._built.get(index)
        if row is None:
            row = self._built[index] = self._build(index)
        return row

    def built(self, index: int) -> Text | None:
        """Row ``index`` if it has been built (None otherwise: nothing is built by asking)."""
        return self._built.get(index)


def _built(lines: Sequence[Text], index: int) -> Text | None:
    """Row ``index`` if it exists without building it (a lazy row never drawn has nothing to keep)."""
    if isinstance(lines, LazyRows):
        return lines.built(index)
    return lines[index] if index < len(lines) else None


class LineView(ScrollView, can_focus=True):
    """Rows of pre-styled, markup-free text; ``cursor`` (or None) is highlighted."""

    ELLIPSIS = False  # True: rows wider than the widget end in "…" (no horizontal scrolling)

    COMPONENT_CLASSES: ClassVar[set[str]] = {"lineview--cursor"}
    DEFAULT_CSS = """
    LineView > .lineview--cursor { background: $primary 35%; text-style: bold; }
    LineView:focus > .lineview--cursor { background: $primary 60%; }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: Sequence[Text] = []
        self._strips: dict[int, tuple[tuple[Style, Style | None, int], Strip]] = {}  # row → (the styles it was drawn with, strip)
        self.cursor: int | None = None
        self.cursor_height = 1
        self._pass: tuple[Style, int] | None = None  # the base style and width, worked out once per render pass
        self._lines_width: int | None = None  # the width the rows were set at (None: before the first layout)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def plain_lines(self) -> list[str]:
        """The rows as plain text (for tests and debugging)."""
        return [line.plain for line in self._lines]

    def set_lines(
        self, lines: Sequence[Text], cursor: int | None = None, *, keep_scroll: bool = True, cursor_height: int = 1
    ) -> None:
        """Show ``lines`` (a ``LazyRows`` stays lazy: with ``ELLIPSIS`` no row is built before it is drawn).

        Rows on screen that draw as before keep their strips, and only the rows that changed are
        repainted: a new plan usually changes a few rows of a table, not all of them.
        """
        old_lines, old_strips, old_highlighted = self._lines, self._strips, self.highlighted
        old_count = len(old_lines)
        self._lines_width = self.scrollable_content_region.width or None
        self._lines = lines if isinstance(lines, LazyRows) else list(lines)
        self._strips = {}
        self.cursor = cursor
        self.cursor_height = cursor_height
        width = 0 if self.ELLIPSIS else max((line.cell_len for line in lines), default=0)
        size = Size(width, len(lines))
        # a table that grows by a row (a followed session's next request) keeps its width: no layout pass
        # (the rows on screen that draw as before are not repainted either)
        in_place = size == self.virtual_size or grow_in_place(self, size)
        if not in_place:
            self.virtual_size = size
        if not keep_scroll:
            self.scroll_to(0, 0, animate=False)
        if cursor is not None:
            self.scroll_to_line(cursor + cursor_height - 1)
            self.scroll_to_line(cursor)
        changed = []
        for index in self._visible_rows():
            cached = old_strips.get(index)
            if (cached is not None and (index in old_highlighted) == (index in self.highlighted)
                    and same_text(_built(old_lines, index), self._lines[index])):
                self._strips[index] = cached  # drawn as before: nothing to repaint
            else:
                changed.append(index)
        view = self._visible_rows()
        # rows the shorter table no longer has, where they were on screen: drawn blank
        changed.extend(range(max(len(self._lines), view.start), min(old_count, view.start + self.scrollable_content_region.height)))
        if not in_place or self.scrollable_content_region.area == 0:
            # new geometry (a scroll repaints everything by itself); or not on screen (hidden, or an
            # ancestor is): what Textual kept of the rows drawn before must go, for when it shows again
            # (the strips of rows that draw as before are kept: they are checked when drawn)
            self.refresh()
            return
        for start, count in runs(changed):
            self.refresh_lines(start, count)

    def _visible_rows(self) -> range:
        """The rows in view now (the cache keeps strips of these only: others are rebuilt when drawn)."""
        top = int(self.scroll_y)
        return range(top, min(len(self._lines), top + self.scrollable_content_region.height))

    def add_lines(self, lines: list[Text]) -> None:
        """Append rows (built lazily by a subclass) without moving the scroll position or the cursor."""
        if not lines:
            return
        self._lines = [*self._lines, *lines]
        width = self.virtual_size.width
        if not self.ELLIPSIS:
            width = max(width, max(line.cell_len for line in lines))
        self.virtual_size = Size(width, len(self._lines))
        self.refresh()

    def scroll_to_line(self, index: int) -> None:
        """Scroll the least needed to show row ``index``."""
        top = int(self.scroll_y)
        height = max(1, self.scrollable_content_region.height)
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False)

    def render_lines(self, crop: Region) -> list[Strip]:
        width = self.scrollable_content_region.width
        if width and width != self._lines_width:
            # drawn at a new width before the resize event reached the widget (a sidebar that
            # narrows after a redraw): rows made for the old width would be drawn cut; or rows made
            # before the widget had a width (made for a default one) drawn once it has one
            self._resized()
        # the widget's style walks every ancestor's styles: once per pass, not once per row
        self._pass = (self.rich_style, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        base, width = self._pass or (self.rich_style, self.scrollable_content_region.width)
        if index >= len(self._lines):
            return Strip.blank(width, base)
        extra = self._cursor_style() if index in self.highlighted else None
        # a strip bakes in the widget's style, the cursor's and (cut with "…") the width: one kept by
        # ``set_lines`` for an unchanged row is used only while they are what they were
        key = (base, extra, width if self.ELLIPSIS else 0)
        cached = self._strips.get(index)
        if cached is not None and cached[0] == key:
            strip = cached[1]
        else:
            line = self._lines[index]
            if self.ELLIPSIS and line.cell_len > width > 1:
                line = line.copy()
                line.truncate(width, overflow="ellipsis")
            segments = []
            line_base = base + self.app.console.get_style(line.style) if line.style else base
            for text, style, _ in text_segments(line, self.app.console, line_base):
                style = style or line_base  # (a piece of no style, or of a null one, on a null base)
                segments.append(Segment(text, style + extra if extra else style))
            strip = Strip(segments, line.cell_len)
            if extra is not None:
                strip = strip.extend_cell_length(max(width, line.cell_len), base + extra)
            self._strips[index] = (key, strip)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _cursor_style(self) -> Style:
        full = self.get_component_rich_style("lineview--cursor")
        return Style(bgcolor=full.bgcolor, bold=full.bold)

    @property
    def highlighted(self) -> range:
        """The rows drawn as the cursor (one row, or the rows of a wrapped entry)."""
        if self.cursor is None:
            return range(0)
        return range(self.cursor, self.cursor + self.cursor_height)

    def on_mount(self) -> None:
        # rendered rows carry the theme's colours: a theme change (palette, light theme) redraws them
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._strips.clear()
        self.refresh()

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_resize(self) -> None:
        self._resized()  # (again, if drawn at this width already: the height may have changed too)

    def _resized(self) -> None:
        self._strips.clear()
        self._lines_width = self.scrollable_content_region.width or None
        self.on_lines_resized()

    def on_lines_resized(self) -> None:
        """Hook: subclasses whose lines depend on the width rebuild them here."""
