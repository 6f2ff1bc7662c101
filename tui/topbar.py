"""The top bar: the session's fields on one row, fitted to the bar's own width each time it is drawn
(the keys panel or a resize changes that width without a new plan)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static
from tokenbox.tui.view import fitted


class TopBar(Static):
    """One row of `` · ``-separated fields: whole fields only, the name (at index ``name``) cut to make
    room for the fields up to ``essential`` (then the ``spare`` ones left out), "…" for the ones left out."""

    _fields: tuple[str, ...] = ("tokenbox",)
    _name: int | None = None
    _essential: int = 0
    _spare: tuple[int, ...] = ()

    def show(self, fields: list[str], name: int | None = None, essential: int = 0, spare: tuple[int, ...] = ()) -> None:
        """Show ``fields`` (inert text: they are never parsed as markup)."""
        shown = (tuple(fields), name, essential, spare)
        if shown == (self._fields, self._name, self._essential, self._spare):
            return
        self._fields, self._name, self._essential, self._spare = shown
        self.refresh()

    def render(self) -> Text:
        width = self.content_region.width or 80  # before the first layout: any width, redrawn after it
        return Text(fitted(list(self._fields), width, name=self._name, essential=self._essential,
                           spare=self._spare),
                    no_wrap=True, overflow="ellipsis", end="")
