"""The board's sessions: what the agents' table finds (``discovery.scan`` over ``discovery.SOURCES``), the
ones that changed within ``since`` as rows, each read by its own ``figures.SessionReader``.

Cost follows what changed. ``changed(paths)`` takes the paths the watcher reported, finds the session each
belongs to (the file itself, a file of its task or message folder, a Claude Code session's
``<id>/subagents/`` file, a database's ``-wal``), stats only those paths and reads only those sessions
again; a path no session claims makes its agent's storage be listed again, once per path (a new session);
a database's change lists that database's sessions again (a query). Sessions nothing changed are not
touched: a hundred idle transcripts cost nothing.

Start-up reads recorded usage first: ``step`` does one piece of background work at a time — the first
look of each recent session, newest first (a Claude Code transcript's or a Codex rollout's tail only;
another agent's session whole, planned when its headline is recorded), then the plans that predict or
estimate (a pending request, a session without recorded usage), then the whole read of sessions active
in the last ``WARM_SECONDS`` (followed from then on: their next append costs what was appended). Only the
``KEEP_FOLLOWED`` most recently active sessions keep their loader; an idle one is read whole again when it
wakes. Used by one thread (the board's worker); the UI gets the immutable ``Row``s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tokenbox.core.commands.thresholds import compact_buffer
from tokenbox.core.model.errors import ConfigError
from tokenbox.core.planning.engine import Engine
from tokenbox.core.sources.discovery import SOURCES, Agent, Found, Scan, scan
from tokenbox.tui.board.figures import Figures, SessionReader
from tokenbox.tui.filestamp import Stamp, stamp

KEEP_FOLLOWED = 24  # sessions whose loader is kept (the most recently active)
WARM_SECONDS = 600  # a session active this recently is read whole in the background: followed before it grows
DATABASE_SIDES = ("-wal", "-shm", "-journal")  # SQLite's files beside a database
OWNER_DEPTH = 4  # folders walked up from a changed path to the session it belongs to

Look = tuple[Stamp, Figures]  # a first look made elsewhere: the file's stamp before it was read, and its figures


@dataclass(frozen=True, slots=True)
class Row:
    """One session on the board."""

    key: str  # the session's path: what the inspector opens (a file, a folder, ``DB#ID``)
    agent: str  # its agent's name in the table (``claude``, ``codex``, ``record``…)
    label: str  # its agent's label (``Claude Code``…)
    project: str | None  # the project directory it ran in (None: the storage does not say)
    title: str | None
    mtime: float  # its last activity, seconds since the epoch
    figures: Figures | None  # None: not read yet
    reads: int  # how many times it was read (a glance counts): idle sessions stay put


class Sessions:
    """Every session the agents' table lists; the recent ones read, and read again when they change."""

    def __init__(
        self,
        environ: Mapping[str, str],
        since: float,
        clock: Callable[[], float],
        *,
        sources: tuple[Agent, ...] = SOURCES,
        scanner: Callable[..., Scan] = scan,
        engine_factory: Callable[[], Engine] = Engine,
        buffer: int | None = None,
    ) -> None:
        self.environ = environ
        self.since = since
        self.clock = clock
        self.sources = sources
        self.scanner = scanner
        self.buffer = buffer
        self._engine_factory = engine_factory
        self._engine: Engine | None = None
        self.found: dict[str, Found] = {}  # every session listed, by path
        self.mtimes: dict[str, int] = {}  # its last activity (ns), from the listing or a stat of what changed
        self.figures: dict[str, Figures] = {}
        self.readers: dict[str, SessionReader] = {}
        self.looked: list[tuple[str, str, str]] = []  # (agent, place, what chose it)
        self.skipped = 0  # folders the listing skipped (``tokenbox doctor`` says why)
        self._first: list[str] = []  # recent sessions waiting for their first figures (newest last: popped first)
        self._plans: list[str] = []  # sessions whose plan (a prediction or an estimate) waits
        self._warm: list[str] = []  # recently active sessions only glanced at: read whole, to be followed
        self._unknown: set[str] = set()  # changed paths no session claimed, already listed again for
        self._relist: set[str] = set()  # agents whose storage must be listed again (a database changed)

    # ------------------------------------------------------------------ listing

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._engine_factory()
        return self._engine

    def discover(self) -> None:
        """List every agent's sessions; the recent ones wait for their first look."""
        result = self.scanner(environ=self.environ, rows=self.sources)
        self.looked = list(result.looked)
        self.skipped = len(result.skipped)
        self._merge(result.found, {row.name for row in self.sources})
        horizon = self._horizon()
        recent = [key for key in self.found if self.mtimes[key] >= horizon]
        recent.sort(key=lambda key: (self.mtimes[key], key))
        self._first = recent  # popped from the end: newest first
        self._plans.clear()
        self._warm.clear()

    def _merge(self, found: Iterable[Found], agents: set[str]) -> set[str]:
        """Take ``found`` as the sessions of ``agents`` now: new and moved sessions are returned (to read)."""
        fresh: dict[str, Found] = {}
        for item in found:
            fresh.setdefault(item.path, item)
        gone = [key for key, item in self.found.items() if item.agent in agents and key not in fresh]
        for key in gone:
            self._drop(key)
        moved: set[str] = set()
        for key, item in fresh.items():
            before = self.mtimes.get(key)
            if key not in self.found or (before is not None and item.mtime_ns > before):
                moved.add(key)
            self.found[key] = item
            self.mtimes[key] = max(item.mtime_ns, before or 0)
        return moved

    def _drop(self, key: str) -> None:
        self.found.pop(key, None)
        self.mtimes.pop(key, None)
        self.figures.pop(key, None)
        self.readers.pop(key, None)

    def _horizon(self) -> int:
        return int((self.clock() - self.since) * 1e9)

    def places(self, *, existing: bool = True) -> list[str]:
        """What the watcher watches: every place the table looks (that exists, unless ``existing`` is False),
        and the aider histories found (kept in their projects, not under one folder)."""
        places = [place for _, place, _ in self.looked if not existing or os.path.exists(place)]
        places += [key for key, item in self.found.items() if item.agent == "aider"]
        return sorted(set(places))

    # ------------------------------------------------------------------ changes

    def changed(self, paths: Iterable[str]) -> set[str]:
        """The watcher reported ``paths``: read again the recent sessions they belong to (only those paths
        are stat'ed), list again the storage of an agent with a new path; the sessions read are returned."""
        touched: dict[str, int] = {}
        relist: set[str] = set()
        for path in paths:
            owner = self.owner(path)
            if owner is not None:
                stamp = _mtime(path)
                touched[owner] = max(touched.get(owner, 0), stamp or 0)
                continue
            database = _database(path)
            agent = self._agent_of(path)
            if agent is None:
                continue
            if database is not None and any(key.startswith(database + "#") for key in self.found):
                relist.add(agent)  # a database's sessions are in its rows: ask it which changed
            elif path not in self._unknown:
                self._unknown.add(path)  # a new path: a new session, perhaps (each path once)
                relist.add(agent)
        read: set[str] = set()
        for key, stamp in touched.items():
            if key not in self.found:
                continue
            if stamp == 0 and _mtime(key) is None:  # the session itself is gone
                self._drop(key)
                read.add(key)
                continue
            self.mtimes[key] = max(self.mtimes[key], stamp)
            read.add(key)
        for agent in relist | self._relist:
            read |= self._relisted(agent)
        self._relist.clear()
        horizon = self._horizon()
        for key in sorted(read):
            if key in self.found and self.mtimes[key] >= horizon:
                self._read(key, plan=True)
        self._keep_followed()
        return read

    def owner(self, path: str) -> str | None:
        """The session ``path`` belongs to: itself, or the session whose folder (or Claude Code session's
        ``<id>/`` folder beside ``<id>.jsonl``) holds it."""
        if path in self.found:
            return path
        probe = path
        for _ in range(OWNER_DEPTH):
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            if parent in self.found:
                return parent
            if parent + ".jsonl" in self.found:
                return parent + ".jsonl"
            probe = parent
        return None

    def _agent_of(self, path: str) -> str | None:
        """The agent whose storage holds ``path`` (the longest place that does)."""
        best: tuple[int, str] | None = None
        for agent, place, _ in self.looked:
            if path == place or path.startswith(place.rstrip(os.sep) + os.sep):
                if best is None or len(place) > best[0]:
                    best = (len(place), agent)
        return best[1] if best is not None else None

    def _relisted(self, agent: str) -> set[str]:
        """List ``agent``'s storage again; its new and changed sessions are returned."""
        rows = tuple(row for row in self.sources if row.name == agent)
        result = self.scanner(environ=self.environ, rows=rows)
        return self._merge(result.found, {agent})

    # ------------------------------------------------------------------ reading

    def _reader(self, key: str) -> SessionReader:
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = SessionReader(key, self.found[key].agent, self.environ, self.buffer)
        return reader

    def _read(self, key: str, *, plan: bool) -> None:
        figures = self._reader(key).read(self.engine, plan=plan)
        if figures is None:
            self._plans.append(key)
            return
        self.figures[key] = figures

    def step(self) -> bool:
        """One piece of background work (see the module docstring); False when there is none left."""
        horizon = self._horizon()
        while self._first:
            key = self._first.pop()
            if key not in self.found or key in self.figures or self.mtimes[key] < horizon:
                continue
            glance = self._reader(key).glance()
            if glance is not None:
                self._glanced(key, glance)
            else:
                self._read(key, plan=False)
            return True
        while self._plans:
            key = self._plans.pop(0)
            if key not in self.found or self.mtimes[key] < horizon:
                continue
            reader = self._reader(key)
            if reader.following:
                self.figures[key] = reader.plan_kept(self.engine)
            else:
                self._read(key, plan=True)
            self._keep_followed()
            return True
        while self._warm:
            key = self._warm.pop(0)
            reader = self.readers.get(key)
            if key not in self.found or reader is None or reader.following:
                continue
            self._read(key, plan=True)
            self._keep_followed()
            return True
        return False

    def _glanced(self, key: str, glance: Figures) -> None:
        """``glance`` is ``key``'s first look: its figures until its plan or whole read follows."""
        self.figures[key] = glance
        if not glance.planned:
            self._plans.append(key)  # a prediction from the tail only: the whole plan follows
        elif self.mtimes[key] >= int((self.clock() - WARM_SECONDS) * 1e9):
            self._warm.append(key)

    def glance_all(self, part: int = 0, parts: int = 1) -> dict[str, Look]:
        """The first look of every recent session a glance reads (a Claude Code transcript, a Codex rollout),
        newest first, each with its file's stamp from before it was read (``None`` from a glance is left out):
        what the board's forked processes work out, for ``adopt`` (``tui/board/firstlooks.py``); share
        ``part`` of ``parts`` (every ``parts``-th session from the ``part``-th newest)."""
        looks: dict[str, Look] = {}
        for key in list(reversed(self._first))[part::parts]:
            before = stamp(key)
            glance = self._reader(key).glance()
            if glance is not None:
                looks[key] = (before, glance)
        return looks

    def adopt(self, looks: Mapping[str, Look]) -> int:
        """Take the first looks ``glance_all`` made in another process, as ``step`` would have made them (in its
        order), for the recent sessions still waiting for theirs whose file has not changed since (the same
        stamp); the others wait for their own. How many were taken is returned."""
        horizon = self._horizon()
        taken: set[str] = set()
        for key in reversed(self._first):  # newest first, as ``step`` pops them
            look = looks.get(key)
            if look is None or key not in self.found or key in self.figures or self.mtimes[key] < horizon:
                continue
            before, glance = look
            if before is None or stamp(key) != before:
                continue  # written since: glanced at again here
            self._reader(key).reads += 1  # that process's glance is this session's read
            self._glanced(key, glance)
            taken.add(key)
        self._first = [key for key in self._first if key not in taken]
        return len(taken)

    def _keep_followed(self) -> None:
        """Only the ``KEEP_FOLLOWED`` most recently active sessions keep what they read."""
        followed = [key for key, reader in self.readers.items() if reader.following]
        if len(followed) <= KEEP_FOLLOWED:
            return
        followed.sort(key=lambda key: self.mtimes.get(key, 0), reverse=True)
        for key in followed[KEEP_FOLLOWED:]:
            self.readers[key].forget()

    @property
    def busy(self) -> bool:
        """Whether background work is left (first looks, plans, followers to warm)."""
        return bool(self._first or self._plans or self._warm)

    # ------------------------------------------------------------------ rows

    def rows(self) -> tuple[Row, ...]:
        """The sessions active within ``since``, newest first."""
        horizon = self._horizon()
        out = []
        for key, item in self.found.items():
            stamp = self.mtimes[key]
            if stamp < horizon:
                continue
            reader = self.readers.get(key)
            figures = self.figures.get(key)
            # the listing's project, else the one the session's own read found (a new transcript's first
            # lines may name none: it is listed once, read at each change)
            project = item.project or (figures.project if figures is not None else None)
            out.append(Row(key, item.agent, _label(self.sources, item.agent), project, item.title, stamp / 1e9,
                           figures, reader.reads if reader is not None else 0))
        out.sort(key=lambda row: (-row.mtime, row.key))
        return tuple(out)


def _label(sources: tuple[Agent, ...], name: str) -> str:
    return next((row.label for row in sources if row.name == name), name)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _database(path: str) -> str | None:
    """The database a changed path is (or is beside: its write-ahead log), when it may be one."""
    for side in DATABASE_SIDES:
        if path.endswith(side):
            return path[: -len(side)]
    return path if path.endswith(".db") else None


def board_buffer(environ: Mapping[str, str]) -> int | None:
    """The compaction buffer the settings in ``environ`` give (``None``: Claude Code's own rule, also when a
    setting is bad: ``tokenbox statusline`` reports it)."""
    try:
        return compact_buffer(None, environ)
    except ConfigError:
        return None
