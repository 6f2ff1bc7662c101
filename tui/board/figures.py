"""One row's figures: what a session's newest request of the main thread holds — the figure ``tokenbox plan``
gives (recorded usage for a request that recorded it, a prediction for a pending one, else an estimate) —
its window, the context at which the agent compacts, the model and the sub-agents still running.

``SessionReader`` reads one session for the board. Its ``Loader`` is its own and follows the file: a read
after an append costs what was appended. ``glance`` is the quick first look at a Claude Code transcript
(its tail, as the status line reads it) or a Codex rollout (its tail's newest ``token_count``): recorded
usage first; ``read`` loads the whole session and
plans its newest request (``plan=False``: only when the headline is recorded, so the plan is cheap — a
prediction or an estimate waits for the board's second pass). No Textual here: the board's worker thread
runs it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from tokenbox.core.analysis.compactions import auto_compact_at
from tokenbox.core.commands.statusline import TAIL_LIMIT, read_tail, tail_turns
from tokenbox.core.model.compaction import window_for
from tokenbox.core.model.errors import BadInput, NotYetComplete, TokenboxError
from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.session import Session
from tokenbox.core.model.textsafe import printable
from tokenbox.core.planning.engine import Engine
from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers.claude_code import SOURCE as CLAUDE_CODE
from tokenbox.core.sources.readers.codex import Glance, tail_glance

# Claude Code's tools that start a sub-agent ("Task", renamed "Agent"): a call without its result yet is a
# sub-agent still running
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
# the tail a glance reads first (times 4 until a recorded request is in it): a board glances at many. The
# window is what the tail shows (a 1M window known only from older requests is the whole read's)
GLANCE_BYTES = 32 * 1024


@dataclass(frozen=True, slots=True)
class Figures:
    """A session's newest request of the main thread, as the board shows it."""

    tokens: int | None  # the context: ``tokens.after`` of ``tokenbox plan`` (None: no request yet)
    window: int | None  # the context window the plan measures it against (CONTRACT §11; None: unknown)
    compact_at: int | None  # the context at which the agent compacts (None: not known, or turned off)
    model: str | None
    subagents: int | None  # sub-agent calls without a result yet (None: not an agent tokenbox reads them of)
    approx: bool = False  # the figure is an estimate or a prediction (shown with ≈)
    pending: bool = False  # a request about to be sent (its figure is a prediction)
    planned: bool = True  # the plan's own figure (False: the recorded usage of a glance; the plan follows)
    error: str | None = None  # why the session cannot be read now (one line)
    project: str | None = None  # the directory the session says it ran in (a listing that found none takes it)

    @property
    def limit(self) -> int | None:
        """Where the room ends: the compaction threshold, else the window."""
        return self.compact_at if self.compact_at is not None else self.window

    @property
    def room(self) -> int | None:
        """Tokens left before compaction (or the window's end); negative past it."""
        if self.tokens is None or self.limit is None:
            return None
        return self.limit - self.tokens

    @property
    def percent(self) -> int | None:
        """The context as a percentage of the window, as the plan JSON's ``window.percent``: floored, not
        clamped (a prediction may exceed its window); None when the window is unknown."""
        if self.tokens is None or not self.window:
            return None
        return max(0, 100 * self.tokens // self.window)

    @property
    def pressure(self) -> float:
        """How far along the way to compaction (or to the window's end) the context is: 0 at none, 1 there."""
        if self.tokens is None or not self.limit:
            return 0.0
        return self.tokens / self.limit


def failed(message: str) -> Figures:
    """The figures of a session that cannot be read now."""
    return Figures(None, None, None, None, None, error=message)


def open_subagents(session: Session) -> int:
    """Sub-agent calls of ``session`` whose result is not in it yet."""
    called: set[object] = set()
    answered: set[object] = set()
    for section in session.sections:
        meta = section.meta
        ident = meta.get("tool_use_id")
        if ident is None:
            continue
        if meta.get("block") == "tool_use" and meta.get("tool") in SUBAGENT_TOOLS:
            called.add(ident)
        elif meta.get("block") == "tool_result":
            answered.add(ident)
    return len(called - answered)


class SessionReader:
    """Reads one session of the board (a file, a task folder, a database's session ``DB#ID``)."""

    def __init__(self, path: str, agent: str, environ: Mapping[str, str], buffer: int | None = None) -> None:
        self.path = path
        self.agent = agent
        self.environ = environ
        self.buffer = buffer
        self.reads = 0  # how many times the session was read (a glance counts): the board's cost, for tests
        self._loader: Loader | None = None
        self._session: Session | None = None  # the newest turn of the last read, kept for its plan

    @property
    def following(self) -> bool:
        """Whether the session is followed (a loader holds what was read; the next read costs the append)."""
        return self._loader is not None

    def forget(self) -> None:
        """Drop what was read (an idle session's memory): the next read is whole again."""
        self._loader = None
        self._session = None

    def glance(self) -> Figures | None:
        """A Claude Code transcript's or a Codex rollout's newest main-thread request from the file's tail
        only (``None``: another agent's session, or no recorded request in its tail: ``read`` it whole)."""
        if not self.path.endswith(".jsonl") or self.agent not in ("claude", "codex"):
            return None
        self.reads += 1
        if self.agent == "codex":
            return self._codex_glance()
        try:
            turns = tail_turns(self.path, GLANCE_BYTES)  # as the status line reads it, from a smaller tail
            session = turns[-1] if len(turns) else None
        except Exception:  # a tail a reader cannot take: the whole read says what is wrong
            return None
        if session is None or session.context_tokens is None:
            return None
        tokens = session.context_tokens
        window = _window_of(session)
        # the plan's own figures when they are certain from the tail: a recorded request within a known
        # window (a raised or unknown window, a prediction: the whole plan follows)
        planned = not session.pending and window is not None and tokens <= window
        return Figures(tokens, window, _compact_at(session, window, self.environ, self.buffer), session.model_name,
                       open_subagents(session), approx=session.pending, pending=session.pending, planned=planned,
                       project=_cwd(session))

    def _codex_glance(self) -> Figures | None:
        try:
            found = _codex_tail(self.path)
        except Exception:  # as ``glance``
            return None
        if found is None:
            return None
        # the window as the plan resolves it (CONTRACT §11: recorded, the model table, the family rule);
        # without the window recorded beside it, or with a context above it, the plan's own follows
        window = resolve_window(found.model, found.window).tokens
        planned = not found.pending and found.window is not None and found.context <= found.window
        return Figures(found.context, window, None, found.model, None, approx=found.pending,
                       pending=found.pending, planned=planned)

    def read(self, engine: Engine, *, plan: bool = True) -> Figures | None:
        """Load the session (followed: only what was appended since the last read) and plan its newest
        request; ``None`` when ``plan`` is False and the plan would be an estimate or a prediction (``plan_kept``
        does it later)."""
        if self._loader is None:
            self._loader = Loader(readers_kept=2, documents_kept=1)
        self.reads += 1
        try:
            turns = self._loader.load_turns(self.path, max_bytes=engine.settings.max_file_size)
            if not len(turns):
                return failed("no request yet")
            session = turns[-1]
        except NotYetComplete:
            self._session = None
            return failed("no request yet")
        except (TokenboxError, OSError, ValueError, RecursionError, MemoryError) as exc:
            self._session = None
            return failed(self._problem(exc))
        except Exception as exc:  # the board must never die of one session: said on its row
            self._session = None
            return failed(f"internal error: {printable(repr(exc), 200)}")
        self._session = session
        if not plan and (session.recorded is None or session.pending):
            return None
        return self.plan_kept(engine)

    def _problem(self, exc: BaseException) -> str:
        """One line for the row: the problem where it is (the session's own path left out: the row names
        it; a line number kept), its remedy after it."""
        if not isinstance(exc, BadInput):
            return printable(str(exc), 300)
        where = ""
        if exc.path is not None and os.path.abspath(exc.path) != os.path.abspath(self.path):
            where = os.path.basename(exc.path) + " "
        if exc.line is not None:
            where += f"line {exc.line}"
        text = printable(exc.problem, 200)
        if exc.remedy:
            text += f" ({printable(exc.remedy, 100)})"
        return f"{where.strip()}: {text}" if where.strip() else text

    def plan_kept(self, engine: Engine) -> Figures:
        """The figures of the newest request read last (``read`` first)."""
        session = self._session
        if session is None:
            return failed("not read")
        try:
            planned = engine.plan(session)
        except (TokenboxError, ValueError, RecursionError, MemoryError) as exc:
            return failed(self._problem(exc))
        except Exception as exc:  # as ``read``
            return failed(f"internal error: {printable(repr(exc), 200)}")
        # the window the plan measures its headline against (CONTRACT §11: recorded, table, family, raised
        # for a recorded context above it; None when unknown), the same as ``tokenbox plan``'s
        window = planned.window_tokens
        subagents = open_subagents(session) if session.source_format == CLAUDE_CODE else None
        return Figures(planned.tokens_after, window, _compact_at(session, window, self.environ, self.buffer),
                       session.model_name, subagents, approx=planned.headline_kind.approximate, pending=planned.pending,
                       project=_cwd(session))


def _cwd(session: Session) -> str | None:
    cwd = session.meta.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def _window_of(session: Session) -> int | None:
    """The window a session's plan measures it against before any raise: the reader's resolved window
    (CONTRACT §11), else the budget a tokenbox session sets."""
    if session.window is not None:
        return session.window.tokens
    return window_for(session.model, session.budget.max_ctx)


def _compact_at(session: Session, window: int | None, environ: Mapping[str, str], buffer: int | None) -> int | None:
    """``analysis.compactions.auto_compact_at`` for a known window (an unknown one has no threshold)."""
    return auto_compact_at(session, window, environ, buffer) if window else None


def _codex_tail(path: str) -> Glance | None:
    """``codex.tail_glance`` of the rollout's tail, grown four times at a time until it finds a request."""
    size = GLANCE_BYTES
    file_size = os.path.getsize(path)
    while True:
        found = tail_glance(read_tail(path, size)[0])
        if found is not None or size >= file_size or size >= TAIL_LIMIT:
            return found
        size *= 4

