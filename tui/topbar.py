"""The top bar: the session's fields on one row, fitted to the bar's own width each time it is drawn
(the keys panel or a resize changes that width without a new plan)."""

from __future__ import annotations

from rich.text import Text
from tokenbox.tui.fitted import FittedStatic
from tokenbox.tui.view import fitted


class TopBar(FittedStatic):
    """One row of `` · ``-separated fields: whole fields only, the name (at index ``name``) cut to make
    room for the fields up to ``essential`` (then the ``spare`` ones left out), "…" for the ones left out.
    Drawn with the line API (``FittedStatic``) as a ``Static`` of the ``Text`` draws it (``OFFSETS``)."""

    OFFSETS = True
    _fields: tuple[str, ...] = ("tokenbox",)
    _name: int | None = None
    _essential: int = 0
    _spare: tuple[int, ...] = ()

    def on_mount(self) -> None:
        self._show()

    def show(self, fields: list[str], name: int | None = None, essential: int = 0, spare: tuple[int, ...] = ()) -> None:
        """Show ``fields`` (inert text: they are never parsed as markup)."""
        shown = (tuple(fields), name, essential, spare)
        if shown == (self._fields, self._name, self._essential, self._spare):
            return
        self._fields, self._name, self._essential, self._spare = shown
        self._show()

    def _show(self) -> None:
        fields, name, essential, spare = list(self._fields), self._name, self._essential, self._spare
        self.show_fitted(lambda width: Text(fitted(fields, width, name=name, essential=essential, spare=spare),
                                            no_wrap=True, overflow="ellipsis", end=""))
