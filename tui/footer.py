"""The key footer: Textual's ``Footer``, rebuilt only when the keys it shows change, and keys that come and
go shown and hidden in place.

Textual's footer recomposes itself (a new ``FooterKey`` widget per key, each styled and laid out
again) on every bindings refresh: three times while the app starts (focus set, screen resumed,
first idle), and again whenever the help or the command palette closes, although the keys are
the same. This one compares what it would show with what it shows and rebuilds at most once per
frame, only when they differ (the detail's Esc key, the turn keys of a log, a plan's keys).

The keys that apply only to some states (``possible``: the app's, which ``check_action`` hides while they
do not apply) are composed from the start, hidden, each where Textual would place it: a state that shows
or hides only those sets their ``display``. The first plan shows eight more keys than the frame before it,
and composing them then (their widgets made, styled, mounted and laid out) took the interpreter for
tens of milliseconds just as an agent's next request came (``tmux_start_append``). What is shown is
Textual's own footer for the keys that apply (``textual_seams.footer_items``): where the keys shown
cannot be had by hiding composed ones (another key, a key enabled otherwise), the footer is composed again.
A group's label can be given another word in place (``relabel``: an agent's session counts requests, not
turns), its label widget updated; the keys shown and compared stay those of the bindings.

The command palette's key is docked at the right and would cover the last keys where they reach it (at 80
columns an agent's session's ``t`` and ``q`` keys): it is hidden while the keys fit without it (``ctrl+p``
still opens the palette, and the help says so), and shown again when there is room. Keys too many for the row
even without it are cut under it, as Textual's footer cuts them (the row ends with it, not a stray letter).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer
from tokenbox.tui.textual_seams import FooterEntry, FooterItem, footer_items, footer_palette_key

KeysShown = tuple[tuple[Any, ...], ...]
PALETTE_CLASS = "-command-palette"  # Textual's class of the palette's key (``footer_palette_key``)


def keys_shown(screen: Screen) -> KeysShown:
    """What the footer would show for ``screen``: each key, its label, group and state."""
    app = screen.app
    shown = []
    for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items():
        if not binding.show and key != app.COMMAND_PALETTE_BINDING:
            continue
        group = binding.group
        shown.append((key, binding.action, binding.description, app.get_key_display(binding), enabled, tooltip,
                      None if group is None else (group.description, group.compact)))
    return tuple(shown)


class KeysFooter(Footer):
    """A compact ``Footer`` that skips rebuilds showing the same keys and shows or hides the ``possible``
    keys (bindings of the app that come and go) without a rebuild."""

    def __init__(self, *, possible: Iterable[BindingType] = (), **options: Any) -> None:
        super().__init__(**options)
        self._possible = tuple(b for b in Binding.make_bindings(possible) if b.show)
        self._shown: KeysShown | None = None  # the keys of the last compose or switch (None: none yet)
        self._items: list[FooterItem] = []  # every key composed, shown or hidden
        self._rebuild_pending = False
        self._labels: dict[str, str] = {}  # the words shown for some groups instead of their description
        self._palette_width = 0  # the palette key's width when last shown (hidden, it has none)

    def relabel(self, group: str, label: str) -> None:
        """Show ``label`` as the footer label of the key group ``group`` (the turn keys of an agent's session:
        "request"), in place: the label's widget is updated, no key is composed again."""
        if self._labels.get(group, group) == label:
            return
        self._labels[group] = label
        for what, _, widgets in self._items:
            if what[0] == "group" and what[1] == group:
                widgets[-1].update(label)  # type: ignore[attr-defined]  (the group's FooterLabel, a Static)
        self.call_after_refresh(self.fit_palette)

    def compose(self):
        """Textual's footer keys, with the possible keys that do not apply now hidden among them."""
        if not self._bindings_ready:
            return  # as Textual's footer: nothing before the bindings are known
        active = self._active()
        wanted = [item[0] for item in footer_items(self, active, build=False)]
        items = list(footer_items(self, self._with_possible(active), labels=self._labels))
        if [what for what, shown, _ in items if shown] != wanted:  # a group shown in part: Textual's own keys
            items = list(footer_items(self, active, labels=self._labels))
        self._items = items
        self._shown = keys_shown(self.screen)
        self.styles.grid_size_columns = _actions(active)  # as Textual's compose (unused by the horizontal layout)
        for _, _, widgets in items:
            yield from widgets
        palette = footer_palette_key(self)
        if palette is not None:
            yield palette
        self.call_after_refresh(self.fit_palette)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_palette)

    def fit_palette(self) -> None:
        """Hide the palette's key (docked at the right) where it alone stands between the keys and the row's end."""
        keys = [child for child in self.children if child.display and not child.has_class(PALETTE_CLASS)]
        for palette in self.query_children(f".{PALETTE_CLASS}"):
            if palette.display:
                self._palette_width = palette.outer_size.width
            keys_end = max((key.virtual_region.right for key in keys), default=0)
            # where the keys are cut anyway, the palette's key ends the row cleanly (no stray letter after it)
            shown = not keys_end <= self.size.width < keys_end + self._palette_width
            if palette.display != shown:  # (set only when it changes: a layout pass each time otherwise)
                palette.display = shown

    def bindings_changed(self, screen: Screen) -> None:
        """A bindings refresh: rebuild after the next frame, once, if the keys differ."""
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return  # as Textual's footer: the app's focus event refreshes the bindings again
        if self._rebuild_pending or keys_shown(screen) == self._shown:
            return
        self._rebuild_pending = True
        self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        if not self.is_attached:
            return
        shown = keys_shown(self.screen)
        if shown == self._shown:
            return
        if self._switched(shown):
            return
        await self.recompose()

    def _switched(self, shown: KeysShown) -> bool:
        """Show the composed keys that apply now and hide the others, when that is what Textual would show
        (the same keys in the same order, and the palette's key as it was); whether it was done."""
        if not self._shown or self._shown[-1:] != shown[-1:] or shown[-1][0] != self.app.COMMAND_PALETTE_BINDING:
            return False  # the palette's key (last) must be the same: it is not switched
        active = self._active()
        wanted = [item[0] for item in footer_items(self, active, build=False)]
        show = []
        found = iter(wanted)
        want = next(found, None)
        for what, _, _ in self._items:
            show.append(what == want)
            if what == want:
                want = next(found, None)
        if want is not None:
            return False  # a key not composed, or not in Textual's order
        for (_what, _, widgets), visible in zip(self._items, show, strict=True):
            for widget in widgets:
                widget.display = visible
        self._items = [(what, visible, widgets) for (what, _, widgets), visible in zip(self._items, show, strict=True)]
        self._shown = shown
        self.styles.grid_size_columns = _actions(active)
        self.call_after_refresh(self.fit_palette)
        return True

    def _active(self) -> list[FooterEntry]:
        """The screen's active bindings as footer entries (all shown), in Textual's order."""
        return [(binding, enabled, tooltip, True) for _n, binding, enabled, tooltip in self.screen.active_bindings.values()]

    def _with_possible(self, active: list[FooterEntry]) -> list[FooterEntry]:
        """``active`` with every possible binding that is not among them, hidden, before the first active one
        that comes after it in ``possible`` (the app's bindings are active in that order)."""
        present = {(binding.key, binding.action) for binding, *_ in active}
        place = {(binding.key, binding.action): index for index, binding in enumerate(self._possible)}
        merged: list[FooterEntry] = []
        next_possible = 0
        for entry in active:
            index = place.get((entry[0].key, entry[0].action))
            if index is not None:
                for binding in self._possible[next_possible:index]:
                    if (binding.key, binding.action) not in present:
                        merged.append((binding, True, binding.tooltip, False))
                next_possible = max(next_possible, index + 1)
            merged.append(entry)
        merged.extend((binding, True, binding.tooltip, False) for binding in self._possible[next_possible:]
                      if (binding.key, binding.action) not in present)
        return merged


def _actions(entries: list[FooterEntry]) -> int:
    """How many actions the footer shows (Textual's compose sets its grid's columns to it)."""
    return len({binding.action for binding, *_ in entries if binding.show})
