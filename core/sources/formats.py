"""The one ordered table of the formats tokenbox reads besides its own sessions: ``FORMATS``.

Formats are told apart by content, never by file name. The loaders (``documents.parse_turns``,
``logreader.LogReader``, ``loader.Loader``) are given this table and try its rows in order, by shape:

* ``Shape.TRANSCRIPT``: a JSON-lines log read as threads and followed as it grows; ``detect`` gets the
  parsed values of the file's first ``SNIFF_LINES`` non-blank lines, ``convert(text, path)`` returns
  the main thread's turns and ``follow(path, max_bytes)`` a follower whose ``read()`` gives a
  ``ThreadedLog``;
* ``Shape.LINES``: a JSON-lines log; ``detect`` gets the list of parsed lines (``Node``),
  ``convert(nodes, path)`` returns the turns;
* ``Shape.DOCUMENT``: one JSON or YAML document; ``detect`` gets its root ``Node``, ``convert(root,
  path)`` returns the turns;
* ``Shape.SOURCE``: a storage the row reads itself — a task folder, a SQLite database, a markdown chat
  history; ``detect`` gets a ``probe.Probe`` (the file's first bytes or the folder's names),
  ``follow(path, max_bytes)`` a follower whose ``read()`` gives a ``ThreadedLog`` and costs what changed
  since the last, and ``convert(probe, path)`` the main thread's turns of one cold read. The loaders
  try these rows first, for any path.

Whatever no row claims is read as a tokenbox session, unless ``foreign`` recognises another tool's
format and refuses it by name. Order matters among rows of one shape: the first that detects wins
(a Gemini CLI chat also has ``messages``, a request's sign, so Gemini comes before the API bodies).

A new agent's reader is one module under ``readers/`` with ``detect`` and ``convert``, and one row
here (see ARCHITECTURE.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Protocol

from tokenbox.core.model.records import dataclass
from tokenbox.core.model.session import Session
from tokenbox.core.sources import foreign
from tokenbox.core.sources.files import whole_limit
from tokenbox.core.sources.probe import Probe, probe
from tokenbox.core.sources.readers import (
    aider,
    anthropic,
    capture,
    claude_code,
    cline,
    codex,
    copilot,
    exchange,
    gemini,
    gemini_api,
    openai_chat,
    openai_responses,
    opencode,
)
from tokenbox.core.sources.readers.capture_follow import CaptureFollower
from tokenbox.core.sources.readers.codex_follow import RolloutFollower
from tokenbox.core.sources.readers.gemini_follow import ChatFollower

SNIFF_LINES = 50  # non-blank lines at the start of a log that content detection looks at


class Shape(StrEnum):
    """What a row's ``detect`` and ``convert`` are given (see the module docstring)."""

    DOCUMENT = "document"
    LINES = "lines"
    TRANSCRIPT = "transcript"
    SOURCE = "source"


class ThreadedLog(Protocol):
    """What a ``TRANSCRIPT`` row's follower reads: a log of several threads."""

    def main_turns(self) -> Sequence[Session]:
        """The turns of the default thread (the main one when it has any)."""
        ...

    def all_threads(self, max_bytes: int | None) -> dict[str, Sequence[Session]]:
        """Every thread by name, ``main`` first (files beside the log read within ``max_bytes``)."""
        ...


class Follower(Protocol):
    """Follows one file of a ``TRANSCRIPT`` format: each ``read`` costs what was appended since the last."""

    def read(self) -> ThreadedLog: ...


class LineFollower(Protocol):
    """Follows a log of a ``LINES`` format line by line (``line_follower``): each complete line is fed once."""

    def feed(self, number: int, text: str) -> None: ...

    def turns(self) -> Sequence[Session]: ...


@dataclass(frozen=True, slots=True)
class Format:
    """One row of the table: a format's name, its shape and the reader's functions.

    Optional, for what a format needs besides reading a whole file: ``follow(path, max_bytes)`` (a
    ``TRANSCRIPT`` format's follower), ``line_follower(path)`` (a ``LINES`` format followed line by line
    instead of converted again at each append), ``torn_line(first line)`` (the text a ``LINES``
    format reads in place of a line that does not parse — a record its writer cut short — or ``None``
    when the log, known by its first line, is not of this format) and ``threads(path, max_bytes, main
    turns)`` (the sub-agent threads kept in other files beside it, by name).
    """

    name: str
    shape: Shape
    detect: Callable[[Any], bool]
    convert: Callable[[Any, str], Sequence[Session]]
    follow: Callable[[str, int | None], Follower] | None = None  # (path, max_bytes: None for the defaults)
    line_follower: Callable[[str], LineFollower] | None = None
    torn_line: Callable[[str], str | None] | None = None
    # more threads kept beside the file (sub-agent chats), given its main turns: name -> turns ({} if none)
    threads: Callable[[str, int | None, Sequence[Session]], dict[str, Sequence[Session]]] | None = None


def _claude_code_head(values: list[Any]) -> bool:
    """One of the first lines is a Claude Code record and none is a tokenbox session or a Gemini CLI
    record (a Gemini CLI log also carries ``sessionId`` on its records), and the lines are not another
    agent's log of a look-alike layout (``foreign.agent_log``: refused by name instead)."""
    for value in values:
        if isinstance(value, dict) and ("tokenbox" in value or gemini.is_gemini_record(value)):
            return False
    if foreign.agent_log(values) is not None:
        return False
    return any(claude_code.looks_like_transcript(value) for value in values)


FORMATS: tuple[Format, ...] = (
    Format("cline", Shape.SOURCE, cline.detect, cline.convert, cline.follow),
    Format("opencode", Shape.SOURCE, opencode.detect, opencode.convert, opencode.follow),
    Format("aider-chat", Shape.SOURCE, aider.detect_chat, aider.convert_chat, aider.follow_chat),
    Format("aider-llm-history", Shape.SOURCE, aider.detect_llm, aider.convert_llm, aider.follow_llm),
    Format("claude-code", Shape.TRANSCRIPT, _claude_code_head, claude_code.transcript_turns, claude_code.TranscriptFollower),
    Format("copilot", Shape.TRANSCRIPT, copilot.detect, copilot.convert, copilot.follow),
    Format("codex", Shape.TRANSCRIPT, codex.detect, codex.convert, RolloutFollower),
    Format("gemini-lines", Shape.LINES, gemini.detect_lines, gemini.convert_lines, line_follower=ChatFollower,
           threads=gemini.subagent_threads),
    Format("gemini", Shape.DOCUMENT, gemini.detect_document, gemini.convert_document, threads=gemini.subagent_threads),
    Format("request-response-pair", Shape.DOCUMENT, exchange.detect_document, exchange.convert_document),
    Format("gemini-api", Shape.DOCUMENT, gemini_api.detect, gemini_api.convert),
    Format("gemini-checkpoint", Shape.DOCUMENT, gemini_api.detect_checkpoint, gemini_api.convert_checkpoint),
    Format("cline-cli-session", Shape.DOCUMENT, cline.detect_cli_session, cline.convert_cli_session),
    # Amp threads look like Anthropic requests (role/content messages): refused here, before those rows
    Format("amp-thread", Shape.DOCUMENT, foreign.amp_thread, foreign.refuse_amp),
    Format("openai-responses", Shape.DOCUMENT, openai_responses.detect, openai_responses.convert),
    Format("capture", Shape.LINES, capture.detect, capture.convert, line_follower=CaptureFollower, torn_line=capture.torn_line),
    Format("claude-trace", Shape.LINES, exchange.detect_trace, exchange.convert_trace, line_follower=exchange.trace_follower),
    Format("context-lens", Shape.LINES, exchange.detect_lhar, exchange.convert_lhar, line_follower=exchange.lhar_follower),
    Format("anthropic", Shape.DOCUMENT, anthropic.detect, anthropic.convert),
    Format("openai-chat", Shape.DOCUMENT, openai_chat.detect, openai_chat.convert),
)


def source_format(formats: Sequence[Format], path: str, max_bytes: int | None = None) -> tuple[Format | None, Probe] | None:
    """The ``SOURCE`` row that claims ``path`` and its probe; ``(None, probe)`` for a SQLite database no
    row claims (it is no text to read: the loader refuses it by name); ``None`` for anything else."""
    rows = of_shape(formats, Shape.SOURCE)
    if not rows:
        return None
    found = probe(path, whole_limit(max_bytes))  # over what a whole read takes: only a database's header
    if found is None:
        return None
    row = next((row for row in rows if row.detect(found)), None)
    if row is None:
        return (None, found) if found.sqlite else None
    return row, found


def read_source(row: Format, path: str, max_bytes: int | None) -> Sequence[Session]:
    """A ``SOURCE`` row's main-thread turns of one cold read (its ``convert``)."""
    assert row.follow is not None
    return row.follow(path, max_bytes).read().main_turns()


def of_shape(formats: Sequence[Format], shape: Shape) -> tuple[Format, ...]:
    """The rows of ``formats`` of one shape, in table order."""
    return tuple(row for row in formats if row.shape is shape)


def torn_line_stand_in(formats: Sequence[Format], first: str | None) -> str | None:
    """What a line that does not parse is read as in a log whose first line is ``first`` (``None``: it is
    an error)."""
    if first is None:
        return None
    for row in formats:
        if row.torn_line is not None:
            text = row.torn_line(first)
            if text is not None:
                return text
    return None


def head_values(text: str) -> list[Any]:
    """The parsed values of the first ``SNIFF_LINES`` non-blank lines of ``text`` (unparsable ones left out)."""
    values: list[Any] = []
    seen = 0
    start = 0
    while seen < SNIFF_LINES and start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        start = end + 1
        if not line.strip():
            continue
        seen += 1
        try:
            values.append(json.loads(line))
        except (ValueError, RecursionError):
            continue
    return values


def transcript_format(formats: Sequence[Format], text: str) -> Format | None:
    """The ``TRANSCRIPT`` row that claims the JSON-lines ``text`` (its first lines), if one does."""
    rows = of_shape(formats, Shape.TRANSCRIPT)
    if not rows:
        return None
    values = head_values(text)
    return next((row for row in rows if row.detect(values)), None)
