"""Detail: the selected section's text after the shown step, with what was cut marked.

Text is untrusted: it is shown line by line as plain ``Text`` (never markup), with control
characters and ANSI escapes made visible, soft-wrapped to the widget's width.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from tokenbox.tui.lines import LineView
from tokenbox.tui.safe import plain, safe_lines
from tokenbox.tui.view import View, fmt

MAX_LINES = 20_000
MAX_CHARS = 400_000  # per block: the detail stays responsive with huge sections
CUT_STYLE = Style(color="#e06c75", dim=True)
MARK_STYLE = Style(color="#e06c75", bold=True)
INFO_STYLE = Style(color="#61afef")


def _mark(text: str) -> Text:
    return Text(f"✂──── {text} ────", MARK_STYLE, no_wrap=True, end="")


def detail_blocks(view: View, index: int) -> list[tuple[str, str | Text]]:
    """The detail as ``(kind, text)`` blocks: ``info``, ``text``, ``cut``, ``mark`` (before wrapping)."""
    plan = view.plan
    result, state = plan.sections[index], view.state.sections[index]
    approx = view.approx
    section = result.section
    info = (f"{plain(result.id)} · {result.kind} · {state.action} · {fmt(state.tokens, approx)} of "
            f"{fmt(result.tokens_before, approx)} tokens · keep {section.keep}"
            + (" · critical" if result.critical else ""))
    blocks: list[tuple[str, str | Text]] = [("info", info)]
    applied = [s for s in plan.steps[: view.step] if s.section == result.id]
    if applied:
        blocks.append(("info", "steps: " + ", ".join(f"{s.index} {s.op} {plain(s.detail)}" for s in applied)))
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


def wrap(line: Text, width: int) -> list[Text]:
    """Hard-wrap one line at ``width`` cells (folding, so nothing is lost)."""
    if line.cell_len <= width or width < 4:
        return [line]
    pieces: list[Text] = []
    offsets: list[int] = []
    cells = 0
    for position, ch in enumerate(line.plain):
        w = cell_len(ch)
        if cells + w > width:
            offsets.append(position)
            cells = 0
        cells += w
    for piece in line.divide(offsets):
        pieces.append(piece)
    return pieces


class DetailView(LineView, inherit_bindings=False):
    """The selected section's text; focus it with Enter, scroll with ↑/↓/PgUp/PgDn, Esc to leave."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Scroll up", show=False),
        Binding("down", "move(1)", "Scroll down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("escape", "leave", "Back to sections", show=True),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: View | None = None
        self.index: int | None = None
        self.message: str | None = None
        self._last_key: tuple | None = None

    def show(self, view: View | None, index: int | None, message: str | None = None) -> None:
        key = (id(view.plan) if view else None, view.step if view else None, index, message)
        if key == self._last_key and view is not None and view.plan is self.view.plan:  # type: ignore[union-attr]
            return  # nothing changed: keep the (possibly large) text as it is
        same_section = self._last_key is not None and self._last_key[2] == index and self._last_key[0] == key[0]
        self.view, self.index, self.message = view, index, message
        self._last_key = key
        self._rebuild(keep_scroll=same_section)

    def _rebuild(self, keep_scroll: bool = True) -> None:
        width = max(10, (self.scrollable_content_region.width or 60) - 1)
        lines: list[Text] = []
        if self.message:
            for raw in safe_lines(self.message, Style(color="#e06c75", bold=True)):
                lines.extend(wrap(raw, width))
            lines.append(Text(""))
        if self.view is not None and self.index is not None and self.index < len(self.view.plan.sections):
            for kind, text in detail_blocks(self.view, self.index):
                if kind == "info":
                    lines.append(Text(str(text), INFO_STYLE, no_wrap=True, end=""))
                elif kind == "mark":
                    lines.append(_mark(str(text)))
                else:
                    gutter = Text("✂ " if kind == "cut" else "  ", MARK_STYLE if kind == "cut" else "dim")
                    body = str(text)
                    hidden = max(0, len(body) - MAX_CHARS)
                    body = body[:MAX_CHARS]
                    if body.endswith("\n"):
                        body = body[:-1]
                    for raw in safe_lines(body, CUT_STYLE if kind == "cut" else ""):
                        for piece in wrap(raw, width - 2):
                            lines.append(Text.assemble(gutter, piece, no_wrap=True, end=""))
                            if len(lines) >= MAX_LINES:
                                break
                    if hidden:
                        lines.append(Text(f"… {hidden} more characters not shown", "dim"))
                if len(lines) >= MAX_LINES:
                    lines.append(Text(f"… shown up to {MAX_LINES} lines", "dim"))
                    break
        elif not self.message:
            lines.append(Text("no section selected", "dim"))
        self.set_lines(lines, keep_scroll=keep_scroll)

    def on_lines_resized(self) -> None:
        self._rebuild()

    def action_move(self, rows: int) -> None:
        """Scroll by ``rows`` (while focused, ↑/↓ always scroll the text, never the selection)."""
        if abs(rows) > 1:
            rows = rows // abs(rows) * max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=max(0, self.scroll_y + rows), animate=False)

    def action_leave(self) -> None:
        self.app.action_focus_sections()  # type: ignore[attr-defined]
