"""The Textual private parts ``tokenbox.tui.textual_seams`` relies on are still there, as it uses them, in
the Textual version pinned; moving the pin past the version they were checked against fails here first."""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from importlib import metadata
from pathlib import Path

import textual
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.widgets import Static
from tokenbox.tui import textual_seams

ROOT = Path(__file__).resolve().parents[2]


def test_the_pin_is_the_version_the_seams_were_checked_against():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if re.split(r"[=<>~!\[ ]", d)[0] == "textual"]  # not textual-serve
    assert pin == f"textual=={textual_seams.TEXTUAL_CHECKED}"
    assert metadata.version("textual") == textual_seams.TEXTUAL_CHECKED, (
        "Textual moved: read every seam in tui/textual_seams.py against the new version, then update TEXTUAL_CHECKED"
    )


# sha256 (first 16 hex digits) of ``LinuxDriver.run_input_thread``'s source in the version checked
INPUT_LOOP_DIGEST = "d796af6d69db337d"


def test_the_driver_copies_the_input_loop_of_this_version():
    """The copied loop is Textual's own (``LinuxDriver.run_input_thread``) but for its ending: the same
    parser, reads, ticks and exit event; Textual's loop is the one that was read."""
    from textual._xterm_parser import XTermParser  # noqa: F401 - the private parser the loop uses

    source = inspect.getsource(LinuxDriver.run_input_thread)
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == INPUT_LOOP_DIGEST, "Textual's input loop changed: read it again"
    for part in ("XTermParser(self._debug)", "selector.select(0.1)", "read(fileno, 1024 * 4)", "feed(", "tick()",
                 "self.process_message(event)", "self.exit_event"):
        assert part in source, part
    assert "_app" in inspect.getsource(textual_seams.driver_class())  # the driver's app, set by Driver.__init__
    assert re.search(r"self\._app\s*=\s*app", inspect.getsource(textual.driver.Driver.__init__))


async def test_style_generation_moves_when_textual_invalidates_styles():
    app = App()
    async with app.run_test():
        before = textual_seams.style_generation(app)
        assert isinstance(before, int)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        assert textual_seams.style_generation(app) != before


def test_called_by_textual_tells_textual_frames_from_ours():
    def asks() -> bool:
        return textual_seams.called_by_textual()

    assert asks() is False  # called from this test module
    namespace = {"__name__": "textual.fake", "asks": asks}
    exec("def call():\n    return asks()\n", namespace)  # a caller whose module is Textual's
    assert namespace["call"]() is True


async def test_one_toast_at_a_time_through_the_public_notify_message():
    """``TokenboxApp.on_notify`` clears before ``App``'s own handler adds the toast (Textual calls the
    handlers of the class and of its bases in turn)."""
    from tokenbox.tui.app import TokenboxApp

    class Toasts(App):
        on_notify = TokenboxApp.on_notify

        def compose(self):
            yield Static("x")

    app = Toasts()
    async with app.run_test() as pilot:
        for text in ("one", "two", "three"):
            app.notify(text)
        await pilot.pause()
        assert [n.message for n in app._notifications] == ["three"]


def test_grow_in_place_does_what_a_layout_pass_does_for_a_scroll_view():
    """A layout pass brings a scroll view's scrollbars up to date through ``_scroll_update`` (its
    ``_size_updated``), which shows or hides them, sets their thumbs and clamps the scroll; a scrollbar
    that appears or goes lays the screen out itself."""
    from textual.scroll_view import ScrollView
    from textual.widget import Widget

    assert "self._scroll_update(" in inspect.getsource(ScrollView._size_updated)
    update = inspect.getsource(Widget._scroll_update)
    for part in ("self._refresh_scrollbars()", "window_virtual_size = virtual_size.height", "validate_scroll_y"):
        assert part in update, part
    assert Widget.show_vertical_scrollbar._layout and Widget.show_horizontal_scrollbar._layout
    assert Widget.virtual_size._layout  # what grow_in_place leaves out


def test_settled_modal_skips_what_screen_on_resize_does_for_the_screens_behind():
    """``Screen._on_resize`` lays out the screen and every background screen (``_screen_resized``), which
    ``SettledModal`` skips by preventing the default when each is laid out at the size (``Widget._size``);
    Textual calls every class's ``_on_resize`` down the MRO until the default is prevented."""
    from textual.message_pump import MessagePump
    from textual.screen import Screen
    from textual.widget import Widget

    seam = inspect.getsource(textual_seams.SettledModal._on_resize)
    for part in ("self._size == event.size", "self.app._background_screens", "event.prevent_default()"):
        assert part in seam, part
    resize = inspect.getsource(Screen._on_resize)
    for part in ("self._screen_resized(event.size)", "for screen in self.app._background_screens:",
                 "screen._screen_resized(event.size)"):
        assert part in resize, part
    assert "self._refresh_layout(size)" in inspect.getsource(Screen._screen_resized)
    assert "self._size = size" in inspect.getsource(Widget._size_updated)
    assert "if message._no_default_action:" in inspect.getsource(MessagePump._get_dispatch_methods)


# sha256 (first 16 hex digits) of ``Footer.compose``'s source in the version checked
FOOTER_COMPOSE_DIGEST = "8514ae6622cb1844"


def test_footer_items_follow_the_footer_compose_of_this_version():
    """``footer_items`` and ``footer_palette_key`` copy ``Footer.compose`` (its widgets, grouping and
    palette key); Textual's compose is the one that was read."""
    from textual.widgets import Footer

    source = inspect.getsource(Footer.compose)
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == FOOTER_COMPOSE_DIGEST, "Footer.compose changed: read it again"
    for part in ("groupby(", "len(multi_bindings) > 1", 'classes="-grouped"', "FooterLabel(group.description)",
                 "self.app.COMMAND_PALETTE_BINDING", 'classes="-command-palette"'):
        assert part in source, part
    assert callable(textual_seams.footer_items) and callable(textual_seams.footer_palette_key)


def test_offset_meta_and_static_strips_are_how_a_static_draws_a_text():
    """A ``Static`` of a rich ``Text`` draws its ``Content``, each piece's style marked with its offset
    (``Style.rich_style_with_offset``); ``Widget._render_content`` draws its visual at the widget's size
    and style (``tests/tui/test_fitted.py`` compares the rows drawn both ways)."""
    from textual.content import _FormattedLine
    from textual.style import Style as TextualStyle
    from textual.widget import Widget

    assert textual_seams.offset_meta(3, 1).meta == TextualStyle(bold=True).rich_style_with_offset(3, 1).meta
    assert textual_seams.offset_meta(3, 1) != textual_seams.offset_meta(4, 1)  # neighbours stay apart
    assert ".rich_style_with_offset(x, y)" in inspect.getsource(_FormattedLine.to_strip)
    render = inspect.getsource(Widget._render_content)
    assert "Visual.to_strips(self, visual, width, height, self.visual_style)" in render
