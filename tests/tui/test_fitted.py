"""A text made for its width (``tui/fitted.py``): after a resize, the newest text shown, never an older one."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
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
