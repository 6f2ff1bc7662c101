"""Detail: the selected section's text after the shown step, with what was cut marked.

Text is untrusted: it is shown line by line as plain ``Text`` (never markup), with control
characters and ANSI escapes made visible, soft-wrapped to the widget's width.

Rows are built lazily: a generator escapes and wraps the text a window at a time, and only the
rows on screen plus a margin exist; scrolling builds more. A section of megabytes (or one line
of a megabyte) costs the same to open as a small one, and nothing is rebuilt per frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice, pairwise
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from tokenbox.core.model.names import NATIVE_FORMAT
from tokenbox.tui.lines import LineView
from tokenbox.tui.safe import ESCAPE_STYLE, FIELD_LIMIT, escaped_before, plain, safe_line
from tokenbox.tui.styles import Themed
from tokenbox.tui.view import View, fmt

MAX_LINES = 20_000  # rows of one detail at most (a note says when more were not shown)
MAX_CHARS = 400_000  # characters shown per block (a note says how many more there are)
FIRST_ROWS = 300  # rows built when a section is opened
MORE_ROWS = 300  # rows built each time scrolling comes near the end of the built ones
WINDOW = 8192  # characters of one huge line escaped and wrapped at a time


def _mark(text: str, style: Style | str = "") -> Text:
    return Text(f"✂──── {text} ────", style, no_wrap=True, end="")


def detail_blocks(view: View, index: int, as_sent: bool = False) -> list[tuple[str, str | Text]]:
    """The detail as ``(kind, text)`` blocks: ``info``, ``text``, ``cut``, ``mark`` (before wrapping);
    ``as_sent``: a part of an agent's request as it was sent (its label whole first, its share)."""
    plan = view.plan
    result, state = plan.sections[index], view.state.sections[index]
    approx = view.approx
    section = result.section
    agent = as_sent
    if agent:  # an agent's request as it was sent: its size and share (the title holds its label)
        where = section.meta.get("line")
        info = (f"{fmt(state.tokens, approx)} tokens · {100 * state.tokens / max(1, view.total):.1f}% of the request"
                + (f" · line {where}" if isinstance(where, int) else "") + f" · id {plain(result.id, FIELD_LIMIT)}")
    elif plan.session.source_format != NATIVE_FORMAT:  # an agent's request packed by a what-if budget
        # the part named as the table and the title name it (a hidden part, a message), its id as sent names it
        info = (f"{view.figures.kinds.words[index]} · {plain(state.action)} · {fmt(state.tokens, approx)} of "
                f"{fmt(result.tokens_before, approx)} tokens · keep {plain(section.keep)}"
                + (" · critical" if result.critical else "") + f" · id {plain(result.id, FIELD_LIMIT)}")
    else:
        info = (f"{plain(result.id, FIELD_LIMIT)} · {plain(result.kind, FIELD_LIMIT)} · {plain(state.action)} · "
                f"{fmt(state.tokens, approx)} of {fmt(result.tokens_before, approx)} tokens · keep {plain(section.keep)}"
                + (" · critical" if result.critical else ""))
    blocks: list[tuple[str, str | Text]] = [("info", info)]
    label = section.meta.get("label")
    if isinstance(label, str) and label:
        # what a person calls this part; for an agent's request whole, first (the table cuts it where narrow)
        blocks.insert(0 if agent else 1, ("info", plain(label) if agent else plain(label, FIELD_LIMIT)))
    if section.tokens is not None and not section.text:
        if section.kind == "inferred":
            what = ("what the request held that the file does not: sized from the recorded usage, so that the parts add "
                    "up to it" if section.meta.get("known", True) else
                    "what the request held that the file does not: no request has recorded its size yet")
            blocks.append(("info", what))
            if plan.calibration is not None:
                blocks.append(("info", "how: " + plain(plan.calibration.method)))
        else:
            blocks.append(("info", "a part with a fixed size and no text of its own"))
        return blocks
    applied = [s for s in plan.steps[: view.step] if s.section == result.id]
    if applied:
        blocks.append(("info", "steps: " + ", ".join(f"{s.index} {plain(s.op)} {plain(s.detail, FIELD_LIMIT)}" for s in applied)))
    if state.action == "skipped":
        blocks.append(("info", "(skipped: context is not assembled on heartbeat/delegation turns)"))
        return blocks
    if state.action == "dropped":
        last = applied[-1] if applied else None
        previous = result.text_before
        for s in applied[:-1]:
            previous = s.text_after
        blocks.append(("mark", f"dropped at step {last.index if last else '?'}: all {fmt(last.tokens_before if last else 0, approx)} tokens cut"))
        blocks.append(("cut", previous))
        return blocks
    truncated = any(s.op == "truncate" for s in applied) and result.cut
    if truncated and section.keep == "tail":
        blocks.append(("mark", f"cut from the head ({len(result.cut)} chars), the tail below is kept"))
        blocks.append(("cut", result.cut))
        blocks.append(("mark", "kept"))
    blocks.append(("text", state.text if state.text else ""))
    if truncated and section.keep != "tail":
        blocks.append(("mark", f"cut from here to the end ({len(result.cut)} chars)"))
        blocks.append(("cut", result.cut))
    if not state.text and not truncated:
        blocks.append(("info", "(empty)"))
    lens_steps = [s for s in applied if s.op == "lens"]
    if lens_steps and state.text != result.text_before:
        blocks.append(("mark", f"before the lenses ({fmt(result.tokens_before, approx)} tokens)"))
        blocks.append(("cut", result.text_before))
    return blocks


def _graphemes(text: str, bounds: Iterable[int] = ()) -> list[tuple[int, int, int]]:
    """``(start, end, cells)`` of each grapheme (emoji with modifiers stay whole), never across one
    of ``bounds``: a modifier after an escape (``\\x07`` then U+1F3FD) belongs to no character of it."""
    try:
        from rich.cells import split_graphemes
    except ImportError:  # pragma: no cover - an older rich: one character at a time
        return [(i, i + 1, cell_len(ch)) for i, ch in enumerate(text)]
    units: list[tuple[int, int, int]] = []
    cuts = sorted({0, len(text), *(b for b in bounds if 0 < b < len(text))})
    for start, end in pairwise(cuts):
        units.extend((start + a, start + b, cells) for a, b, cells in split_graphemes(text[start:end])[0])
    return units


def _one_cell_each(text: str) -> bool:
    """Whether every character of ``text`` takes one cell: equal totals are not enough, a wide
    character and a zero-width one ("漢" and U+FE0F) add up to two characters' worth."""
    return text.isascii() or all(get_character_cell_size(ch) == 1 for ch in set(text))


def _word_cuts(text: str, width: int) -> list[int]:
    """Where to cut plain ASCII ``text`` into rows of at most ``width``: after a space when one is in
    the second half of the row (the detail wraps at words), else at the width (long words fold)."""
    cuts: list[int] = []
    start = 0
    while len(text) - start > width:
        space = text.rfind(" ", start + 1, start + width)
        cut = space + 1 if space > start + width // 2 else start + width
        cuts.append(cut)
        start = cut
    return cuts


def wrap(line: Text, width: int) -> list[Text]:
    """Hard-wrap one line at ``width`` cells (folding, so nothing is lost).

    Rows end after a space when one falls in the row's second half (the detail wraps at words; a
    longer word folds). Graphemes (an emoji and its modifiers) and the ``\\xNN`` escapes of
    ``safe_line`` (its only spans) are never split. Safe text is printable, so plain ASCII wraps by
    arithmetic; only lines with escapes, wide or combining characters are walked piece by piece.
    """
    text = line.plain
    if width < 4 or len(text) <= width // 2:
        return [line]
    ascii_text = text.isascii()
    cells_total = len(text) if ascii_text else cell_len(text)
    if cells_total <= width:
        return [line]
    if not line.spans and cells_total == len(text) and _one_cell_each(text):  # ASCII, "§", "≈"…: at words
        return list(line.divide(_word_cuts(text, width)))
    inside: dict[int, int] = {}  # a position strictly inside an escape that fits a row -> where it starts
    for span in line.spans:
        if span.end - span.start <= width:
            for position in range(span.start + 1, span.end):
                inside[position] = span.start
    bounds = (edge for span in line.spans for edge in (span.start, span.end))
    units = ((i, i + 1, 1) for i in range(len(text))) if ascii_text else _graphemes(text, bounds)
    offsets: list[int] = []
    cells = 0
    row_start = previous = 0
    after_space, cells_to_space = -1, 0  # where this row's last space ends, and its cells up to there
    for start, end, size in units:
        if not size and start > row_start:  # a zero-width mark can widen what it follows ("7" + U+FE0F)
            size = cell_len(text[previous:end]) - cell_len(text[previous:start])
        previous = start
        if cells + size > width and cells:
            cut = inside.get(start, start)
            if cut <= row_start:  # the escape started the row (after zero-width marks): split it after all
                cut = start
            elif cut == start and after_space > row_start and cells_to_space > width // 2:
                cut = after_space  # at a word, as plain text wraps (a space in the row's second half)
            offsets.append(cut)
            row_start, after_space = cut, -1
            cells = cell_len(text[cut:end])  # what moved to the new row (a word, an escape's head) and this unit
            continue
        cells += size
        if text[start] == " ":
            after_space, cells_to_space = end, cells
    return list(line.divide(offsets))


def iter_wrap(raw: str, width: int, style: Style | str = "", escape_style: Style = ESCAPE_STYLE) -> Iterator[Text]:
    """The rows of one untrusted line: escaped, wrapped at ``width``; a huge line a window at a time."""
    if len(raw) <= WINDOW:
        yield from wrap(safe_line(raw, style, escape_style), width)
        return
    carry = Text(style=style, no_wrap=True, end="")
    column = 0
    for start in range(0, len(raw), WINDOW):
        piece = safe_line(raw[start : start + WINDOW], "", escape_style, column=column, after_escape=escaped_before(raw, start))
        column += len(piece.plain)
        carry.append_text(piece)
        rows = wrap(carry, width)
        yield from rows[:-1]
        carry = rows[-1]  # the last row may continue in the next window
    yield carry


class DetailView(Themed, LineView, inherit_bindings=False):
    """The selected section's text; focus it with Enter, scroll with ↑/↓/PgUp/PgDn, Esc to leave."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Scroll up", show=False),
        Binding("down", "move(1)", "Scroll down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("escape", "leave", "Back to sections", show=True),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"detail--error", "detail--info", "detail--cut", "detail--mark", "detail--escape"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: View | None = None
        self.index: int | None = None
        self.message: str | None = None
        self._last_key: tuple | None = None
        self._content: tuple | None = None  # what the rows were built from (``_content_of``)
        self._source: Iterator[Text] | None = None
        self._count = 0
        self.as_sent = False  # a part of an agent's request as it was sent (``detail_blocks``)

    def show(self, view: View | None, index: int | None, message: str | None = None, *, as_sent: bool = False) -> None:
        self.as_sent = as_sent
        key = (id(view.plan) if view else None, view.step if view else None, index, message, as_sent)
        if key == self._last_key and view is not None and view.plan is self.view.plan:  # type: ignore[union-attr]
            return  # nothing changed: keep the (possibly large) text as it is
        same_section = self._last_key is not None and self._last_key[2] == index and self._last_key[0] == key[0]
        self.view, self.index, self.message = view, index, message
        self._last_key = key
        content = self._content_of(view, index, message, as_sent)
        if content == self._content:
            return  # a new plan, but this section's detail reads the same (an edit elsewhere): keep the rows
        self._content = content
        self._rebuild(keep_scroll=same_section)

    @staticmethod
    def _content_of(view: View | None, index: int | None, message: str | None, as_sent: bool = False) -> tuple:
        """What the rows are built from (but the width and the styles, which rebuild them by themselves)."""
        shown = view is not None and index is not None and index < len(view.plan.sections)
        return (index, message, tuple(detail_blocks(view, index, as_sent)) if shown else None)  # type: ignore[arg-type]

    def _rebuild(self, keep_scroll: bool = True) -> None:
        width = max(10, (self.scrollable_content_region.width or 60) - 1)
        self._source = self._rows(width)
        self._count = 0
        first = FIRST_ROWS + (int(self.scroll_y) + self.scrollable_content_region.height if keep_scroll else 0)
        self.set_lines(self._take(first), keep_scroll=keep_scroll)

    def _take(self, rows: int) -> list[Text]:
        """Up to ``rows`` more rows from the generator (and the note when ``MAX_LINES`` is reached)."""
        if self._source is None:
            return []
        wanted = max(0, min(rows, MAX_LINES - self._count))
        out = list(islice(self._source, wanted))
        self._count += len(out)
        if len(out) < wanted:
            self._source = None  # all built
        elif self._count >= MAX_LINES:
            if next(self._source, None) is not None:
                out.append(Text(f"… shown up to {MAX_LINES} lines", "dim"))
            self._source = None
        return out

    @property
    def complete(self) -> bool:
        """Every row has been built."""
        return self._source is None

    def build_all(self) -> None:
        """Build every remaining row (tests, and anything that needs the whole text)."""
        while self._source is not None:
            self.add_lines(self._take(MAX_LINES))

    def plain_lines(self) -> list[str]:
        """Every row as plain text (all of them are built first)."""
        self.build_all()
        return super().plain_lines()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolling near the end of the built rows builds more."""
        super().watch_scroll_y(old_value, new_value)
        height = max(1, self.scrollable_content_region.height)
        if self._source is not None and new_value + 2 * height >= self.line_count:
            self.add_lines(self._take(MORE_ROWS + 2 * height))

    def _rows(self, width: int) -> Iterator[Text]:
        """Every row of the detail, in order, built only when asked for."""
        styles = self.component_styles()
        escape = ESCAPE_STYLE + styles["detail--escape"]
        mark = styles["detail--mark"]
        if self.message:
            for raw in self.message.replace("\r\n", "\n").split("\n"):
                yield from iter_wrap(raw, width, styles["detail--error"], escape)
            yield Text("")
        view, index = self.view, self.index
        if view is None or index is None or index >= len(view.plan.sections):
            if not self.message:
                yield Text("no section selected", "dim")
            return
        for kind, text in detail_blocks(view, index, self.as_sent):
            if kind == "info":  # wrapped like the text: an explanation can be longer than the pane
                yield from iter_wrap(str(text), width, styles["detail--info"], escape)
            elif kind == "mark":
                yield _mark(str(text), mark)
            else:
                gutter = Text("✂ " if kind == "cut" else "  ", mark if kind == "cut" else "dim")
                style = styles["detail--cut"] if kind == "cut" else ""
                body = str(text)
                hidden = max(0, len(body) - MAX_CHARS)
                body = body[:MAX_CHARS]
                if body.endswith("\n"):
                    body = body[:-1]
                for raw in body.replace("\r\n", "\n").split("\n"):
                    for piece in iter_wrap(raw, width - 2, style, escape):
                        yield Text.assemble(gutter, piece, no_wrap=True, end="")
                if hidden:
                    yield Text(f"… {hidden} more characters not shown", "dim")

    def on_lines_resized(self) -> None:
        self._rebuild()

    def restyle(self) -> None:
        self._rebuild()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """The scrollbar appears once the rows are set (no resize event then) and takes columns:
        wrap again, or the end of every full row would be hidden under it."""
        if self.is_mounted:
            self.call_after_refresh(self._rebuild)

    def action_move(self, rows: int) -> None:
        """Scroll by ``rows`` (while focused, ↑/↓ always scroll the text, never the selection)."""
        if abs(rows) > 1:
            rows = rows // abs(rows) * max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=max(0, self.scroll_y + rows), animate=False)

    class Left(Message):
        """Esc in the detail: the user is done reading (the app moves the focus back to the sections)."""

    def action_leave(self) -> None:
        self.post_message(self.Left())
