"""Every use of Textual's private parts, in one place, checked against Textual ``TEXTUAL_CHECKED``.

Textual is pinned exactly (pyproject.toml); ``tests/tui/test_textual_seams.py`` fails when the pin
moves past the version these were checked against, and checks each part is still what is used here:

* ``driver_class``: the terminal driver, Textual's ``LinuxDriver`` plus an exit when the terminal
  disappears. Started under ``su`` or ``setsid``, the app can lose its terminal without a hang-up
  signal: reads of the tty then return end of file (or fail with EIO) at once, forever, and Textual's
  input thread spins on them at full CPU. This driver posts ``TerminalGone`` instead, and the app
  quits. It copies the driver's input loop, which uses ``textual._xterm_parser.XTermParser`` and the
  driver's ``_debug`` and ``_app``.
* ``style_generation``: the app's ``_css_update_count``, which moves whenever Textual invalidates its
  styles; widgets that bake styles into their content remember them until it moves.
* ``called_by_textual``: whether a call came from Textual's own code (``sys._getframe``), for the
  notifications Textual writes itself with markup.
* ``grow_in_place``: a scrolled widget's virtual height set without a layout pass, its scrollbars brought
  up to date by ``Widget._scroll_update`` (what a layout pass would call for it). Setting ``virtual_size``
  lays out the whole screen (it is a layout reactive): a table one row longer reflowed every widget and
  repainted the table whole, and its scrollbar in a frame of its own. A vertical scrollbar that draws as it
  did (a table of hundreds of rows grows by a few: its thumb is one cell at the same place) takes the new
  height without a repaint: its ``render_bar`` (``ScrollBarRender``, the segments it draws) is compared.
* ``SettledModal``: a ``ModalScreen`` whose first ``Resize`` at the size it and the screens behind it are
  laid out at already lays nothing out again. Textual sends a pushed screen a ``Resize`` once it is shown,
  and ``Screen._on_resize`` then laid the screen out a second time and every screen behind it
  (``App._background_screens``, compared by ``Widget._size``: the whole main screen behind the help)
  at the size it had; each layout of the modal also draws the screen behind it again, tinted.
* ``offset_meta``, ``static_strips``: how a ``Static`` showing a rich ``Text`` draws it. Textual turns the
  text into its ``Content``, whose every piece carries its offset in the row (``Style.rich_style_with_offset``:
  where a mouse selection starts; in a screenshot, two neighbouring pieces of one style stay apart).
  ``tui/fitted.FittedStatic`` draws such rows itself (``OFFSETS``), and leaves a row that does not fit its
  width to Textual (``static_strips``: what ``Widget._render_content`` draws, the text cut as the stylesheet says).
* ``footer_items``: ``Footer.compose`` (its widgets from ``textual.widgets._footer``, its grouping by
  action and by consecutive group), over bindings given with whether each is shown, so that keys which
  come and go are composed once, hidden, and shown by ``display`` (``tui/footer.py``).
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from itertools import groupby
from math import ceil

from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.events import Resize
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen, ScreenResultType
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer

TEXTUAL_CHECKED = "8.2.8"  # the Textual version every seam below was read against


class TerminalGone(Message):
    """The terminal's input reached end of file or failed: nobody can see or answer the app any more."""


def driver_class() -> type[Driver] | None:
    """The driver for this platform (``None``: Textual's default, e.g. on Windows, or the driver named by
    ``TEXTUAL_DRIVER``, such as the web driver textual-serve runs each browser tab's app with)."""
    if sys.platform == "win32" or os.environ.get("TEXTUAL_DRIVER"):
        return None
    from textual.drivers.linux_driver import LinuxDriver

    class FollowingDriver(LinuxDriver):
        """``LinuxDriver`` whose input thread ends, and tells the app, when the terminal is gone."""

        def run_input_thread(self) -> None:
            """Textual's input loop (``LinuxDriver.run_input_thread``, 8.x), ending on end of file or EIO."""
            import selectors
            from codecs import getincrementaldecoder

            from textual._xterm_parser import XTermParser

            selector = selectors.SelectSelector()
            selector.register(self.fileno, selectors.EVENT_READ)
            parser = XTermParser(self._debug)
            decode = getincrementaldecoder("utf-8")().decode
            try:
                while not self.exit_event.is_set():
                    for _key, mask in selector.select(0.1):
                        if not mask & selectors.EVENT_READ:
                            continue
                        try:
                            data = os.read(self.fileno, 1024 * 4)
                        except OSError:
                            data = b""
                        if not data:  # readable yet empty: end of file, the terminal is gone
                            self._app.post_message(TerminalGone())
                            return
                        for event in parser.feed(decode(data)):
                            self.process_message(event)
                    for event in parser.tick():
                        self.process_message(event)
            finally:
                selector.close()

    return FollowingDriver


def style_generation(app: App) -> object:
    """A value that changes whenever Textual invalidates the app's styles (a theme, the ANSI theme, CSS)."""
    return getattr(app, "_css_update_count", None)


def called_by_textual(depth: int = 2) -> bool:
    """Whether the code ``depth`` frames up runs in a Textual module (1: the function that asks; 2, the
    default: its caller)."""
    frame = sys._getframe(depth)
    return str(frame.f_globals.get("__name__", "")).startswith("textual.")


def grow_in_place(widget: Widget, size: Size) -> bool:
    """Give ``widget`` (a ``ScrollView`` on screen) the virtual ``size`` without a layout pass when only its
    height changes; whether it was done so (False: nothing done, set ``virtual_size`` for a layout).

    What the layout pass did for such a widget is done here: its ``virtual_size`` set, and
    ``_scroll_update`` (Textual's own, called by ``ScrollView._size_updated`` in a layout pass) shows or
    hides its scrollbars, sets their thumbs (repainting them) and keeps the scroll offset in range. A
    scrollbar that appears or goes asks for its layout pass itself (``show_vertical_scrollbar`` is a
    layout reactive), so the table's width then changes as it did.
    """
    if size.width != widget.virtual_size.width or not widget.is_mounted or not widget.scrollable_content_region.area:
        return False
    bar = widget.vertical_scrollbar if widget.show_vertical_scrollbar else None
    before = _bar_drawn(bar, widget.virtual_size.height) if bar is not None and size.height > widget.virtual_size.height else None
    widget.set_reactive(Widget.virtual_size, size)
    if before is not None and before == _bar_drawn(bar, size.height):
        # longer, so the scrollbar stays shown (and the horizontal one as it was: the width is the same),
        # the scroll offset stays in range: only the bar's virtual size moves, drawn as it was
        bar.set_reactive(ScrollBar.window_virtual_size, size.height)
        return True
    widget._scroll_update(size)
    return True


def _bar_drawn(bar: ScrollBar, virtual_height: int) -> list | None:
    """The segments vertical scrollbar ``bar`` draws for a virtual height (``ScrollBar._render_bar``'s
    arguments, without its colours: the same for both heights); None while it has no size or a window."""
    window, height = bar.window_size, bar.size.height
    if not window or not height:
        return None
    return list(bar.renderer.render_bar(size=height, virtual_size=ceil(virtual_height),
                                        window_size=ceil(window if window < virtual_height else 0),
                                        position=bar.position, thickness=bar.thickness, vertical=True).segments)


class SettledModal(ModalScreen[ScreenResultType]):
    """A modal screen that takes a ``Resize`` to the size everything is laid out at already as done."""

    def _on_resize(self, event: Resize) -> None:
        # Textual calls every class's ``_on_resize`` down the MRO: preventing the default skips ``Screen``'s
        if self._size == event.size and all(screen._size == event.size for screen in self.app._background_screens):
            event.prevent_default()


def offset_meta(x: int, y: int) -> Style:
    """What Textual's ``Content`` adds to the style of a piece at character ``x`` of row ``y``
    (``Style.rich_style_with_offset``)."""
    return Style.from_meta({"offset": (x, y)})


def static_strips(widget: Widget, text: Text) -> list[Strip]:
    """The rows a ``Static`` the size and style of ``widget`` draws for ``text`` (``Widget._render_content``)."""
    from textual.visual import Visual, visualize

    width, height = widget.size
    return Visual.to_strips(widget, visualize(widget, text, markup=False), width, height, widget.visual_style)


FooterEntry = tuple[Binding, bool, str, bool]  # a binding, enabled, its tooltip (``ActiveBinding``'s), shown
FooterItem = tuple[tuple, bool, tuple[Widget, ...]]  # what an item shows (``tui/footer.py`` compares it), shown, widgets


def footer_items(footer: Footer, entries: Sequence[FooterEntry], build: bool = True,
                 labels: Mapping[str, str] | None = None) -> Iterator[FooterItem]:
    """``Footer.compose``'s key widgets (Textual 8.2.8) for ``entries`` (``footer.screen.active_bindings``'s
    values, in its order, with keys not shown among them), each item as what it shows and its widgets, hidden
    (``display`` False) where its entry is not shown. Items are a group's keys and label (a group of more than
    one action), or one key; with ``build`` False, what each shows only (no widgets). The command palette's
    key is not among them (``footer_palette_key``). ``labels``: the words shown for some groups instead of
    their description (what an item shows is still named by the description)."""
    from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

    app = footer.app
    by_action: defaultdict[str, list[FooterEntry]] = defaultdict(list)
    for entry in entries:
        if entry[0].show:
            by_action[entry[0].action].append(entry)
    for group, grouped in groupby(by_action.values(), lambda same: same[0][0].group):
        actions = list(grouped)
        if group is not None and len(actions) > 1:
            keys = [(b.key, app.get_key_display(b), b.action, not enabled, tooltip or b.description, shown)
                    for b, enabled, tooltip, shown in (same[0] for same in actions)]
            shown = any(key[-1] for key in keys)
            what = ("group", group.description, group.compact, tuple(key[:-1] for key in keys))
            if not build:
                yield what, shown, ()
                continue
            # the keys as children (what Textual's ``with KeyGroup(): yield FooterKey(...)`` adds them as)
            box = KeyGroup(*(FooterKey(key, display, "", action, disabled=disabled, tooltip=tooltip,
                                       classes="-grouped").data_bind(compact=Footer.compact)
                             for key, display, action, disabled, tooltip, _ in keys),
                           classes="-compact" if group.compact else "")
            box.display = shown
            label = FooterLabel((labels or {}).get(group.description, group.description))
            label.display = shown
            yield what, shown, (box, label)
        else:
            for binding, enabled, tooltip, shown in (same[0] for same in actions):
                display = app.get_key_display(binding)
                what = ("key", binding.key, display, binding.description, binding.action, not enabled, tooltip)
                if not build:
                    yield what, shown, ()
                    continue
                widget = FooterKey(binding.key, display, binding.description, binding.action, disabled=not enabled,
                                   tooltip=tooltip).data_bind(compact=Footer.compact)
                widget.display = shown
                yield what, shown, (widget,)


def footer_palette_key(footer: Footer) -> Widget | None:
    """The command palette's key, as ``Footer.compose`` adds it last (docked right); ``None`` without it."""
    from textual.widgets._footer import FooterKey

    app = footer.app
    if not (footer.show_command_palette and app.ENABLE_COMMAND_PALETTE):
        return None
    found = footer.screen.active_bindings.get(app.COMMAND_PALETTE_BINDING)
    if found is None:
        return None
    _node, binding, enabled, _tooltip = found
    return FooterKey(binding.key, app.get_key_display(binding), binding.description, binding.action,
                     classes="-command-palette", disabled=not enabled, tooltip=binding.tooltip or binding.description)
