"""``tokenbox statusline``: one line for Claude Code's ``statusLine`` setting (README, "In Claude Code's status line").

Claude Code runs the command every few hundred milliseconds with a JSON object on stdin
(``transcript_path``, ``model`` {``id``, ``display_name``}, ``workspace``, ``session_id``, …) and shows
the first line it prints. This prints the context of the main thread's newest request as the
headline of README, "Real agents" (the recorded context, or the prediction of a pending request, marked ``≈``), its percent of
the window, the room left before Claude Code auto-compacts, and the biggest part::

    ctx 62% · 41k to compact · system+tools 17k

When the stdin carries Claude Code's own figures (``context_window.current_usage``, CONTRACT §11) they
are the headline: input + cache creation + cache read tokens, of ``context_window_size``; the
transcript only splits that figure into parts. Without them (before the session's first reply) the
headline is the transcript's, as ``tokenbox plan`` has it.

It reads only the transcript's tail (256 KiB, more only when no recorded request is in it) and, when
the tail does not reach the session's first request, its head up to that request: the hidden part
(system prompt, tools, memory) is what the first request recorded beyond what it showed, and the rest
of what the tail does not show is earlier history. Same reader as ``tokenbox plan``; no tokenizer
tables and no YAML. Whatever goes wrong (no input, bad JSON, a missing or unreadable transcript), it
prints a short marker and exits 0: a status line must never break the agent's screen.

``--format`` takes a template with ``{pct}``, ``{tokens}``, ``{window}``, ``{to_compact}``,
``{compact_at}``, ``{biggest}``, ``{biggest_tokens}``, ``{model}``, ``{pending}`` (``≈`` or empty),
``{thread}``, ``{cost}`` (the newest sent request's cost from tokenbox's price table, ``model.prices``)
and ``{session_cost}`` (Claude Code's own session total from stdin); colours follow the warning levels
(``--warn-levels``, ``TOKENBOX_WARN_LEVELS``, the config file; 75/90/100 by default) unless
``NO_COLOR`` is set or ``--no-color`` is given. ``--help`` prints the flags and placeholders.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections.abc import Mapping, Sequence

from tokenbox.core.commands.statusflags import DEFAULT_FORMAT, DESCRIPTION, add_arguments
from tokenbox.core.commands.thresholds import compact_buffer, prices_in_force, warn_levels
from tokenbox.core.model.compaction import compact_threshold, window_for
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import RecordedUsage, Session
from tokenbox.core.model.textsafe import printable
from tokenbox.core.sources.readers.claude_code import TranscriptReader, default_thread, thread_turns
from tokenbox.core.sources.readers.claude_truth import visible_tokens
from tokenbox.core.tokens.charclass import BaseEstimates

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from tokenbox.core.model.prices import Overrides
    from tokenbox.core.sources.turns import LazyTurns

MARKER = "ctx –"
TAIL_BYTES = 256 * 1024
TAIL_LIMIT = 8 * 1024 * 1024  # the most it reads back looking for a recorded request
STDIN_LIMIT = 1024 * 1024
STDIN_TIMEOUT = 2.0  # seconds to wait for Claude Code's JSON when stdin is not closed after it
LINE_LIMIT = 400  # characters of the printed line (escapes count)
_COLORS = ("\x1b[32m", "\x1b[33m", "\x1b[31m")  # below the first level, below the second, above
_RESET = "\x1b[0m"


@dataclass(frozen=True)
class Headline:
    """What the status line shows, computed from the transcript's tail."""

    tokens: int
    window: int
    pending: bool
    thread: str
    biggest: str
    biggest_tokens: int
    compact_at: int | None
    cost: float | None = None  # the newest sent request's cost (None: no recorded usage, or no price)

    @property
    def percent(self) -> int:
        """Of the window; a prediction above it is not clamped (it would exceed the window: the agent
        compacts first), as the plan's ``window.percent`` is not."""
        return max(0, 100 * self.tokens // self.window)


def short(tokens: int) -> str:
    """``41k``, ``1.2M``, ``1M``, ``950``: a count that fits a status line."""
    if tokens >= 1_000_000:
        text = f"{tokens / 1_000_000:.1f}"
        return f"{text.removesuffix('.0')}M"
    if tokens >= 10_000:
        return f"{tokens // 1000}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k"
    return str(tokens)


def read_tail(path: str, size: int) -> tuple[list[str], int]:
    """The complete lines in the last ``size`` bytes of ``path`` and the 1-based number of the first one
    (counted from the start of the tail: line numbers are only used in warnings, which are not shown)."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        start = max(0, end - size)
        handle.seek(start)
        data = handle.read(end - start)
    if start > 0:
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else b""
    text = data.decode("utf-8", "replace")
    return text.split("\n")[:-1], 1  # the last piece is empty or a line still being written


def head_hidden(path: str, limit: int = TAIL_LIMIT) -> int | None:
    """The hidden part of the session's first recorded main-thread request (its recorded context less
    the base estimate of what it showed), read from the head of the transcript up to that request."""
    reader = TranscriptReader(path)
    read = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            read += len(line)
            if read > limit:
                return None
            reader.feed_text(number, line)
            main = reader.threads.get(MAIN_THREAD)
            if main and main.requests and main.requests[0].usage is not None and len(main.requests) > 1:
                first = main.requests[0]
                return max(0, first.usage.context_tokens - round(first.context.estimate if first.context else 0.0))
    return None


@dataclass(frozen=True)
class Tail:
    """The transcript's default thread (the main one) as its tail shows it."""

    turns: Sequence[Session]  # its turns (empty: no thread in the tail)
    thread: str | None  # its name
    whole: bool  # the tail is the whole file (nothing before it is unseen)
    bases: BaseEstimates = field(default_factory=BaseEstimates, compare=False, repr=False)  # the reader's, by text


def read_tail_thread(path: str, size: int = TAIL_BYTES) -> Tail:
    """The default thread read from the transcript's last ``size`` bytes, four times more each time until a
    request of the main thread with recorded usage is in them (``TAIL_LIMIT`` at most; a sub-agent's own
    file, which has no main thread, is read that far back before its own thread is taken)."""
    file_size = os.path.getsize(path)
    while True:
        lines, first = read_tail(path, size)
        reader = TranscriptReader(path)
        for number, line in enumerate(lines, start=first):
            reader.feed_text(number, line)
        name = default_thread(reader)
        # a main transcript whose last lines are all a sub-agent's (older Claude Code wrote them into the
        # main file) has its newest main request further back: the sub-agent's would be shown instead
        recorded = name == MAIN_THREAD and any(r.usage is not None for r in reader.threads[name].requests)
        if recorded or size >= file_size or size >= TAIL_LIMIT:
            break
        size *= 4
    turns = thread_turns(reader, name) if name is not None else ()
    return Tail(turns, name, not lines or size >= file_size, reader.bases)


def tail_turns(path: str, size: int = TAIL_BYTES) -> Sequence[Session]:
    """The turns of the transcript's default thread read from its tail (``read_tail_thread``); the newest
    is the one the status line shows (the board's glance reads them too)."""
    return read_tail_thread(path, size).turns


def headline(path: str, model_id: str | None, environ: Mapping[str, str], buffer: int | None,
             prices: Overrides | None = None, given: tuple[int | None, int | None] = (None, None), *,
             priced: bool = True) -> Headline | None:
    """The headline of the main thread's newest turn, from the tail of the transcript at ``path``;
    ``given`` is what Claude Code's stdin says: ``(current context, window)``, either ``None``. Without
    ``priced`` the cost is not worked out (``Headline.cost`` is ``None``): the price table is not loaded."""
    tail = read_tail_thread(path)
    turns = tail.turns
    if not len(turns):
        return None
    session = turns[-1]
    current, size_given = given
    tokens = current if current is not None else session.context_tokens
    if tokens is None:
        return None
    window = size_given or window_for(model_id, session.budget.max_ctx)
    pending = session.pending and current is None
    if tokens > window and not pending:
        window = tokens  # a recorded context larger than the window: the request ran with a larger one (CONTRACT §11)
    scale = session.calibration.scale if session.calibration is not None else 1.0
    groups: dict[str, int] = {}
    for section in session.sections:
        category = section.meta.get("category")
        if category in ("reply", "inferred"):
            continue
        if category == "tool_result" or (category == "latest" and section.meta.get("tool")):
            key = str(section.meta.get("tool") or "tools")
            if key.startswith("mcp__") and key.count("__") >= 2:
                key = "mcp:" + key.split("__")[1]
        else:
            key = "history"
        groups[key] = groups.get(key, 0) + visible_tokens((section,), scale, tail.bases)  # estimated as the reader read them
    # What the transcript does not show is the hidden part (system prompt, tools, memory) and, when only
    # its tail was read, the history before the tail: the head of the file tells them apart.
    unseen = max(0, tokens - sum(groups.values()))
    hidden = unseen
    if not tail.whole and tail.thread == MAIN_THREAD:
        first_hidden = head_hidden(path)
        if first_hidden is not None and first_hidden < unseen:
            hidden = first_hidden
            groups["history"] = groups.get("history", 0) + unseen - first_hidden
    groups["system+tools"] = hidden
    biggest, biggest_tokens = max(groups.items(), key=lambda item: (item[1], item[0])) if groups else ("", 0)
    cost = newest_cost(turns, prices) if priced else None
    return Headline(
        tokens=tokens,
        window=window,
        pending=pending,
        thread=session.thread,
        biggest=biggest,
        biggest_tokens=biggest_tokens,
        compact_at=compact_threshold(window, environ, buffer),
        cost=cost,
    )


def newest_cost(turns: LazyTurns, prices: Overrides | None) -> float | None:
    """The cost of the newest request sent (not a pending one) among the last two turns, from tokenbox's
    price table (``None``: no recorded usage, or no price for its model)."""
    for index in range(len(turns) - 1, max(-1, len(turns) - 3), -1):
        info = turns.info(index)
        usage = info.get("recorded")
        if isinstance(usage, RecordedUsage):
            from tokenbox.core.model.prices import request_cost  # start-up: the price table only for {cost}

            model = info.get("model")
            priced = request_cost(model if isinstance(model, str) else None, usage, prices)
            return priced.usd if priced is not None else None
    return None


def stdin_context(data: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(current context, window)`` from Claude Code's status-line JSON (``context_window``), CONTRACT §11:
    the context is input + cache creation + cache read of ``current_usage`` (``None`` before the first
    reply, when Claude Code sends ``null``), the window ``context_window_size``."""
    block = data.get("context_window")
    if not isinstance(block, dict):
        return None, None
    size = block.get("context_window_size")
    window = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
    usage = block.get("current_usage")
    if not isinstance(usage, dict):
        return None, window
    numbers = [usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        return None, window
    return sum(numbers), window


def render(line: Headline, template: str, model: str, levels: Sequence[int], color: bool,
           session_cost: float | None = None) -> str:
    """The status line for ``line`` (``template`` placeholders: see the module docstring)."""
    room = None if line.compact_at is None else max(0, line.compact_at - line.tokens)
    values: dict[str, Any] = {
        "pct": line.percent,
        "tokens": short(line.tokens),
        "window": short(line.window),
        "to_compact": "no auto-compact" if room is None else short(room),
        "compact_at": "-" if line.compact_at is None else short(line.compact_at),
        "biggest": line.biggest,
        "biggest_tokens": short(line.biggest_tokens),
        "model": model,
        "pending": "≈" if line.pending else "",
        "thread": line.thread,
    }
    if "cost" in template:  # {cost}, {session_cost}: no other placeholder can name them
        from tokenbox.core.model.prices import usd  # start-up: the price table only for a cost

        values["cost"] = "–" if line.cost is None else usd(line.cost)
        values["session_cost"] = "–" if session_cost is None else usd(session_cost)
    try:
        text = template.format(**values)
    except (KeyError, IndexError, ValueError):
        text = DEFAULT_FORMAT.format(**values)
    if room is None:
        text = text.replace("no auto-compact to compact", "no auto-compact")
    # one line, whatever the template held; then the TUI's escaping of untrusted text (a tool name, a
    # model's display name or the template itself may hold escape sequences): nothing raw reaches the terminal
    text = printable(" ".join(text.split()), LINE_LIMIT)
    if not color:
        return text
    level = 0 if line.percent < levels[0] else 1 if line.percent < levels[1] else 2
    return f"{_COLORS[level]}{text}{_RESET}"


def help_text() -> str:
    """``tokenbox statusline --help``."""
    import argparse  # start-up: argparse only for --help (Claude Code runs the status line every few hundred ms)

    parser = argparse.ArgumentParser(prog="tokenbox statusline", description=DESCRIPTION,
                                     epilog="Prices (for {cost}) can be overridden under prices: in the config file.")
    add_arguments(parser)
    return parser.format_help()


def run(argv: Sequence[str], stdin: TextIO, stdout: TextIO, environ: Mapping[str, str]) -> int:
    """Print one line; always 0 (a broken status line would break Claude Code's screen). ``--help`` prints
    the flags and placeholders instead."""
    if "-h" in argv or "--help" in argv:
        stdout.write(help_text())
        stdout.flush()
        return 0
    try:
        stdout.write(_line(argv, stdin, environ) + "\n")
        stdout.flush()
    except Exception:
        try:
            stdout.write(MARKER + "\n")
            stdout.flush()
        except Exception:
            pass
    return 0


def _line(argv: Sequence[str], stdin: TextIO, environ: Mapping[str, str]) -> str:
    options = _options(argv)
    color = not options["no_color"] and not environ.get("NO_COLOR")
    raw = read_stdin(stdin)
    data = json.loads(raw) if raw.strip() else None
    if not isinstance(data, dict):
        return MARKER
    path = data.get("transcript_path")
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    model_id = model.get("id") if isinstance(model.get("id"), str) else None
    label = model.get("display_name") if isinstance(model.get("display_name"), str) else model_id or ""
    levels, buffer = _thresholds(options, environ)
    template = options["format"]
    try:
        prices = prices_in_force(environ) if "{cost" in template else None
    except Exception:
        prices = None  # a mistake in the config file's prices: the built-in table still prices
    current, window = stdin_context(data)
    line = None
    if isinstance(path, str) and os.path.isfile(path):
        try:
            line = headline(path, model_id, environ, buffer, prices, (current, window), priced="cost" in template)
        except (OSError, ValueError):
            line = None
    if line is None and current is not None:
        # Claude Code's own figure, with no transcript to split it into parts
        size = window or window_for(model_id, None)
        line = Headline(current, size, False, MAIN_THREAD, "", 0, compact_threshold(size, environ, buffer))
    if line is None:
        return MARKER if not isinstance(path, str) or not os.path.isfile(path) else MARKER + " (no request yet)"
    spent = data.get("cost", {}).get("total_cost_usd") if isinstance(data.get("cost"), dict) else None
    spent = float(spent) if isinstance(spent, (int, float)) and not isinstance(spent, bool) and spent >= 0 else None
    return render(line, template, label, levels, color, spent)


def read_stdin(stdin: TextIO, timeout: float = STDIN_TIMEOUT, limit: int = STDIN_LIMIT) -> str:
    """What Claude Code wrote on stdin: up to its end, a complete JSON object, ``limit`` bytes or ``timeout``
    seconds, whichever comes first (a caller that never closes stdin must not hang the status line)."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's StringIO)
        return stdin.read(limit)
    data = bytearray()
    deadline = time.monotonic() + timeout
    while len(data) < limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, min(65536, limit - len(data)))
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith(b"}"):
            try:
                json.loads(data)
                break  # the whole object is here: no need to wait for the end of the stream
            except ValueError:
                pass
    return data.decode("utf-8", "replace")


def _options(argv: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {"format": DEFAULT_FORMAT, "no_color": False, "warn_levels": None, "compact_buffer": None}
    items = list(argv)
    while items:
        item = items.pop(0)
        key, _, value = item.partition("=")
        if key in ("--format", "--warn-levels", "--compact-buffer") and not value and items:
            value = items.pop(0)
        if key == "--format":
            options["format"] = value
        elif key == "--no-color":
            options["no_color"] = True
        elif key == "--warn-levels":
            options["warn_levels"] = value
        elif key == "--compact-buffer":
            options["compact_buffer"] = value
    return options


def _thresholds(options: dict[str, Any], environ: Mapping[str, str]) -> tuple[tuple[int, int, int], int | None]:
    return warn_levels(options["warn_levels"], environ), compact_buffer(options["compact_buffer"], environ)


def main() -> int:
    """``tokenbox statusline`` as a process."""
    return run(sys.argv[2:], sys.stdin, sys.stdout, os.environ)
