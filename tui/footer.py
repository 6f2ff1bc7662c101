"""The key footer: Textual's ``Footer``, rebuilt only when the keys it shows change.

Textual's footer recomposes itself (a new ``FooterKey`` widget per key, each styled and laid out
again) on every bindings refresh: three times while the app starts (focus set, screen resumed,
first idle), and again whenever the help or the command palette closes, although the keys are
the same. This one compares what it would show with what it shows and rebuilds at most once per
frame, only when they differ (the detail's Esc key, the turn keys of a log, a plan's keys).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer

KeysShown = tuple[tuple[Any, ...], ...]


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
    """A compact ``Footer`` that skips rebuilds showing the same keys."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._shown: KeysShown | None = None  # the keys of the last compose (None: none yet)
        self._rebuild_pending = False

    def compose(self):
        """Textual's footer keys, remembering which they are."""
        if self._bindings_ready:
            self._shown = keys_shown(self.screen)
        yield from super().compose()

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
        if self.is_attached and keys_shown(self.screen) != self._shown:
            await self.recompose()
