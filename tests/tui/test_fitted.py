"""A text made for its width (``tui/fitted.py``): after a resize, the newest text shown, never an older one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static
from tokenbox.tui.fitted import FittedStatic


def made_by(name: str):
    """Text that reads the same below 60 cells and names its maker from 60 on (as a timeline shows only the
    newest turns when narrow and older ones too when wide)."""
    return lambda width: Text("same" if width < 60 else f"{name} at {width}")


class OneText(App[None]):
    def compose(self) -> ComposeResult:
        yield FittedStatic()


async def test_a_text_unchanged_at_this_width_is_still_the_new_one_at_another():
    app = OneText()
    async with app.run_test(size=(40, 5)) as pilot:
        widget = app.query_one(FittedStatic)
        widget.show_fitted(made_by("old"))
        await pilot.pause()
        assert widget.last_text.plain == "same"
        replaced = widget.show_fitted(made_by("new"))
        assert not replaced  # it draws the same here: nothing to redraw now
        await pilot.resize_terminal(80, 5)
        await pilot.pause()
        assert widget.fitted_width == 80
        assert widget.last_text.plain == "new at 80"
        assert "new&#160;at&#160;80" in app.export_screenshot()  # drawn so, not only made


def gauge_like(headline: str) -> Text:
    """Rows as the gauge makes them: styled spans, a base style, a row longer than the widget (cut with
    "…"), a blank row."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    text.append("Context ", "bold")
    text.append(headline, "bold red")
    text.append("\n██▒▒··", "green")
    text.append("\nused        ")
    text.append("█", "blue")
    text.append(" 12 345 / 200 000 and a long tail that does not fit the widget's width at all")
    text.append("\n\npolicy      ")
    text.append("drop", "dim")
    return text


class Both(App[None]):
    CSS = "FittedStatic, Static { height: auto; width: 40; padding: 0 1; background: $panel; }"

    def compose(self) -> ComposeResult:
        yield FittedStatic()
        yield Static(id="plain")


async def test_rows_are_drawn_as_a_static_draws_them_and_a_row_that_reads_the_same_is_not_made_again(monkeypatch):
    from tokenbox.tui import fitted

    made: list[str] = []
    row_strip = fitted.row_strip
    monkeypatch.setattr(fitted, "row_strip", lambda row, *args: (made.append(row.plain), row_strip(row, *args))[1])
    app = Both()
    async with app.run_test(size=(60, 14)) as pilot:
        widget, static = app.query_one(FittedStatic), app.query_one("#plain", Static)
        for headline in ("41%", "42%"):
            widget.show_fitted(lambda width, headline=headline: gauge_like(headline))
            static.update(fitted.Fitted(lambda width, headline=headline: gauge_like(headline)))  # Textual draws it
            await pilot.pause()
            region = widget.size.region
            assert widget.size == static.size
            assert widget.render_lines(region) == static.render_lines(region)  # segments and styles alike
        assert made[-1:] == ["Context 42%"]  # the second text: only its changed row was made again
        assert len(made) == 6  # the first text's 5 rows, then 1


async def test_a_text_as_tall_as_the_one_drawn_repaints_only_its_changed_rows(monkeypatch):
    """The gauge's next text changes its headline: Textual draws that row again, and keeps the others (its
    styles cache); what is on screen is what a ``Static`` given the new text draws."""
    from tokenbox.tui import fitted

    app = Both()
    async with app.run_test(size=(60, 14)) as pilot:
        widget, static = app.query_one(FittedStatic), app.query_one("#plain", Static)
        widget.show_fitted(lambda width: gauge_like("41%"))
        await pilot.pause(0.1)  # (drawn: the screen's refresh runs on a timer)
        asked: list[int] = []
        render_line = fitted.FittedStatic.render_line
        monkeypatch.setattr(fitted.FittedStatic, "render_line", lambda self, y: (asked.append(y), render_line(self, y))[1])
        widget.show_fitted(lambda width: gauge_like("42%"))
        static.update(fitted.Fitted(lambda width: gauge_like("42%")))
        await pilot.pause(0.1)
        assert asked == [0]
        monkeypatch.setattr(fitted.FittedStatic, "render_line", render_line)
        region = widget.size.region
        assert widget.render_lines(region) == static.render_lines(region)
        assert [strip.text.strip() for strip in widget.render_lines(region)][:1] == ["Context 42%"]


class OneRowEach(App[None]):
    """A row drawn with the line API as a ``Static`` of its text, next to such a ``Static`` (the stylesheet
    of the one-row titles: not wrapped, cut with "…")."""

    CSS = """
    FittedStatic, Static { height: 2; width: 12; text-wrap: nowrap; text-overflow: ellipsis; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield TextRows()
        yield Static(id="plain")


class TextRows(FittedStatic):
    OFFSETS = True


PIECES = st.tuples(st.text(alphabet="ab ·█字", min_size=1, max_size=6),
                   st.sampled_from([None, "bold", "red", Style(italic=False), Style(bold=True)]))


async def test_a_row_of_a_text_is_drawn_as_a_static_of_the_text_draws_it():
    """Segments, styles and the offsets Textual's ``Content`` gives each piece (a screenshot keeps two
    neighbouring pieces of one style apart by them), with the text's own style, wide characters, a second
    line, and rows wider than the widget (cut as the stylesheet says, by Textual)."""
    app = OneRowEach()
    async with app.run_test(size=(30, 6)) as pilot:
        await pilot.pause()
        widget, static = app.query_one(TextRows), app.query_one("#plain", Static)
        region = widget.size.region

        @settings(max_examples=60, deadline=None)
        @given(pieces=st.lists(PIECES, min_size=1, max_size=5), own=st.sampled_from([None, "bold", "dim"]),
               newline=st.booleans())
        def drawn_alike(pieces, own, newline):
            text = Text(style=own or "", end="")
            for index, (piece, style) in enumerate(pieces):
                text.append(("\n" if newline and index == 1 else "") + piece, style)
            widget.show_text(text)
            static.update(text)
            assert widget.render_lines(region) == static.render_lines(region), text.spans

        drawn_alike()
