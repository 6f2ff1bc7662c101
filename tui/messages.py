"""Messages posted to the app from worker threads (``post_message`` is thread-safe)."""

from __future__ import annotations

import threading

from textual.message import Message
from tokenbox.tui.glance import Glance
from tokenbox.tui.planner import Outcome


class PlanComputed(Message):
    """A plan request finished (with a plan, an error, or both); ``drawn`` is set once the screen has
    been refreshed after it (the worker's timeline fill waits for it)."""

    def __init__(self, outcome: Outcome, drawn: threading.Event | None = None) -> None:
        super().__init__()
        self.outcome = outcome
        self.drawn = drawn


class FileChanged(Message):
    """The followed file was modified, replaced, deleted or created."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what


class ConfigChanged(Message):
    """The config file was modified, replaced, deleted or created."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what


class TimelineFilled(Message):
    """Every turn of the timeline now has its estimate (posted after the newest plan)."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__()
        self.outcome = outcome


class TokenizersFound(Message):
    """The installed tokenizer plug-ins were looked up, and the plan on screen lists fewer tokenizers than
    there are (the tokenizer key cycles through the plan's list)."""


class GlanceComputed(Message):
    """The newest request of the big file at ``path``, from its tail, before its first plan (``None``: none found)."""

    def __init__(self, path: str, glance: Glance | None) -> None:
        super().__init__()
        self.path = path
        self.glance = glance
