"""The newest request of a big session at once, from the file's tail, while the whole file is read.

A 50 MB transcript takes the app about two seconds to read and plan (what ``tokenbox plan`` does); a
smaller file's first plan is worked out in a forked process while Textual starts
(``tui/firstplan.py``) and arrives with the first frame. Above that size (``GLANCE_FROM_BYTES``) the
app first reads the file's tail as the status line and the board do — a Claude Code transcript's newest
main-thread request and its recorded usage (``statusline.read_tail_thread``), a Codex rollout's newest
``token_count`` — and shows that figure, labelled as the recorded (or predicted) context of the newest
request, on the gauge and in the top bar; the parts, the timeline and every key follow with the plan,
which replaces the glance. A write while the file is still being read is glanced at again, so the
newest request is on screen from the start. Other formats have no tail to glance at: they show
"loading…" until their plan, as before.

No Textual here: the plan worker and a glance worker run it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from tokenbox.core.commands.thresholds import compact_buffer
from tokenbox.core.model.errors import ConfigError
from tokenbox.core.sources.formats import FORMATS, SNIFF_LINES, transcript_format
from tokenbox.core.sources.readers import claude_code, codex
from tokenbox.core.sources.tail import FileTail
from tokenbox.tui.board.figures import Figures, SessionReader
from tokenbox.tui.firstplan import FORK_MAX_BYTES

# Files from this size on are glanced at before their first plan: below it the forked first plan is on
# screen as soon as the app is (a glance would only flash before it)
GLANCE_FROM_BYTES = FORK_MAX_BYTES
# the board's agent names (``SessionReader``) of the two logs whose tail holds the newest request
_AGENTS = {claude_code.SOURCE: "claude", codex.SOURCE: "codex"}
_ROW_SOURCES = {"claude-code": claude_code.SOURCE, "codex": codex.SOURCE}  # the formats table's rows glanced at


@dataclass(frozen=True, slots=True)
class Glance:
    """The newest main-thread request of a session, as its file's tail records it (the plan follows)."""

    figures: Figures  # tokens (recorded, or predicted when pending), window, compaction point, model
    source_format: str  # whose log it is (``claude_code.SOURCE``, ``codex.SOURCE``): the agent's name on screen
    size: int  # the file's size in bytes when glanced at (the status says what is being read)

    @property
    def window(self) -> int | None:
        """The window the figure is measured against: the one the tail resolves, raised to a recorded
        context above it (CONTRACT §11, as the plan and the status line do); ``None`` when unknown."""
        figures = self.figures
        window, tokens = figures.window, figures.tokens
        if window is not None and tokens is not None and tokens > window and not figures.pending:
            return tokens
        return window

    @property
    def percent(self) -> int | None:
        """The context as a percentage of ``window`` (floored, as the plan's ``window.percent``)."""
        window, tokens = self.window, self.figures.tokens
        if tokens is None or not window:
            return None
        return max(0, 100 * tokens // window)


def log_source(path: str) -> str | None:
    """Whose log ``path`` is, by its first lines: ``claude_code.SOURCE`` or ``codex.SOURCE``; ``None`` for
    anything else (a tokenbox session, another agent's file, a file that cannot be read)."""
    try:
        head = FileTail(path).head(SNIFF_LINES)
    except (OSError, ValueError):
        return None
    if head is None:
        return None
    found = transcript_format(FORMATS, head.text)  # the row that reads the file, decided as the loader decides
    return _ROW_SOURCES.get(found.name) if found is not None else None


def glance(path: str, environ: Mapping[str, str]) -> Glance | None:
    """The newest request of the session at ``path`` from its tail, when the file is big enough for its
    whole read to be slow (``GLANCE_FROM_BYTES``) and is a Claude Code transcript or a Codex rollout;
    ``None`` otherwise, or when its tail holds no request with recorded usage. Never raises. The
    compaction point is the plan's (the environment's buffer, as ``Planner`` reads it)."""
    try:
        size = os.path.getsize(path)
        if size < GLANCE_FROM_BYTES or not path.endswith(".jsonl"):
            return None
        source = log_source(path)
        if source is None:
            return None
        try:
            buffer = compact_buffer(None, environ)
        except ConfigError:
            buffer = None  # the engine reports the mistake with the plan
        figures = SessionReader(path, _AGENTS[source], environ, buffer).glance()
    except Exception:  # best effort: the whole read says what is wrong with the file
        return None
    if figures is None or figures.tokens is None:
        return None
    return Glance(figures, source, size)
