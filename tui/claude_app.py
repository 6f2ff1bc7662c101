"""``ClaudeApp``: the inspector following Claude Code (``tokenbox-tui --claude``).

It opens the transcript ``claude.discover`` found, follows it like any file, and polls the project's
transcript folder: when a new session starts there, it switches to that transcript and says so.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from textual import work
from textual.message import Message
from tokenbox.tui.app import TokenboxApp
from tokenbox.tui.claude import POLL_SECONDS, Discovery, SessionWatch


class NewSession(Message):
    """A newer Claude Code session appeared (posted by the folder poller)."""

    def __init__(self, discovery: Discovery) -> None:
        super().__init__()
        self.discovery = discovery


class ClaudeApp(TokenboxApp):
    """The inspector following Claude Code: the newest transcript of a project, switching to new sessions."""

    def __init__(
        self,
        discovery: Discovery,
        *,
        fallback: bool = False,
        poll_seconds: float = POLL_SECONDS,
        environ: Mapping[str, str] | None = None,
        **options,
    ) -> None:
        super().__init__(discovery.path, **options)
        self.discovery = discovery
        self.sessions = SessionWatch(discovery, fallback=fallback, environ=environ)
        self.poll_seconds = poll_seconds
        self._poll_stop = threading.Event()

    def on_mount(self) -> None:
        super().on_mount()
        if self.discovery.fallback:
            self.notify(self.discovery.explanation, title="Claude Code", severity="warning",
                        timeout=self.toast_seconds or 10, markup=False)
        if self.watching:
            self._poll_sessions()

    def on_unmount(self) -> None:
        super().on_unmount()
        self._poll_stop.set()

    @work(thread=True, group="sessions", exit_on_error=False)
    def _poll_sessions(self) -> None:
        while not self._poll_stop.wait(self.poll_seconds):
            found = self.sessions.check()
            if found is not None:
                self.post_message(NewSession(found))

    def on_new_session(self, message: NewSession) -> None:
        self.switch_to(message.discovery)

    def switch_to(self, discovery: Discovery) -> None:
        """Follow another transcript from now on (``follow_file``: a fresh planner, the watcher on it)."""
        self.discovery = discovery
        self.follow_file(discovery.path, "new session")
        self.notify(f"new Claude Code session: following {self.display_name}", title="Claude Code",
                    timeout=self.toast_seconds or 6, markup=False)

    def _note(self) -> str:
        notes = [note for note in (super()._note(), self.discovery.note) if note]
        return " · ".join(notes)
