"""Colours come from the stylesheet: component classes in ``app.tcss``, styled with theme variables.

No module of ``tokenbox.tui`` holds a colour. A widget declares its ``COMPONENT_CLASSES``
(``gauge--ok``, ``trace--drop``, ``bar--3``...), ``app.tcss`` gives each one a colour from the
theme (``$text-success``, ``$error``, ``$foreground 40%``...), and the widget hands the resulting
rich ``Style``s to its pure render function as a ``Styles`` mapping. Switching the theme (the
command palette, ``App.theme = "textual-light"``) restyles every widget: ``Themed`` widgets
rebuild their content when the theme changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.style import Style
from textual.theme import Theme
from textual.widget import Widget
from tokenbox.tui.textual_seams import style_generation
from tokenbox.tui.view import BAR_COUNT, bar_class

BAR_CLASSES = frozenset(bar_class(i) for i in range(BAR_COUNT))  # the per-section palette of bars


class Styles(dict[str, Style]):
    """Component class name → rich ``Style``; a name without a style (not mounted, not in the
    stylesheet) is a null style, so pure renderers work uncoloured (tests, a bare app)."""

    def __missing__(self, key: str) -> Style:
        return Style.null()


PLAIN = Styles()  # no colours: the default of every pure renderer
# Blanks that must stay a text element of their own in SVG screenshots: Textual joins neighbouring
# segments of one style into one element, and SVG viewers drop an element's leading blanks (the text
# after them moved left). A style set to what it is anyway keeps them apart without showing.
GAP = Style(italic=False)


def styles_of(widget: Widget, names: Iterable[str]) -> tuple[Styles, bool]:
    """The rich styles of ``widget``'s component classes ``names`` (those already styled).

    The colour is the fully resolved one (a translucent ``$foreground 40%`` blended onto the
    widget's background, ``auto`` made to contrast), the rest (background, text style) only what
    the class itself declares: a span never paints the widget's background over a cursor row.
    The flag says whether every name was styled.
    """
    out = Styles()
    complete = True
    for name in names:
        try:
            full = widget.get_component_rich_style(name)
            own = widget.get_component_rich_style(name, partial=True)
        except KeyError:  # not styled yet (before the stylesheet reached it)
            complete = False
            continue
        out[name] = own + Style.from_color(full.color if own.color is not None else None, full.bgcolor if own.bgcolor is not None else None)
    return out, complete


class Themed:
    """Mixin for widgets that bake component styles into their content (rich ``Text``, line
    strips): ``restyle`` rebuilds it once a new theme's styles are in place."""

    _styles_memo: tuple[object, Styles] | None = None

    def component_styles(self) -> Styles:
        """The rich styles of every component class the widget declares (its own and its bases').

        Remembered until the stylesheet or the theme changes, or the widget gains or loses focus:
        Textual drops its own style cache on every repaint, and working the styles out again cost
        more than drawing the rows.
        """
        widget: Any = self
        key = (widget.app.theme, style_generation(widget.app), widget.pseudo_classes, tuple(sorted(widget.classes)))
        memo = self._styles_memo
        if memo is not None and memo[0] == key:
            return memo[1]
        names = set().union(*(vars(cls).get("COMPONENT_CLASSES", ()) for cls in type(self).__mro__))
        styles, complete = styles_of(widget, sorted(names))
        self._styles_memo = (key, styles) if complete else None
        return styles

    def _on_mount(self) -> None:
        widget: Any = self
        widget.app.theme_changed_signal.subscribe(widget, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        self.restyle()

    def restyle(self) -> None:
        """Rebuild the content with the current styles (each widget redraws what it last showed)."""
        raise NotImplementedError
