"""Loading session files by path, remembering what was read so that loading a growing file again costs
only what changed: the ``Loader``.

A ``Loader`` is given the table of formats it reads (``formats.FORMATS`` by default) and owns its
caches: a ``logreader.LogReader`` per followed ``.jsonl`` log, the follower of a transcript format's
row (Claude Code's ``TranscriptFollower``) per transcript (both parse only the lines appended since the
last load), and the last JSON document read under each path (only the sections whose text changed are
validated again). Each is bounded (least recently used dropped) and guarded by a lock, so one loader
can serve several threads. ``load_session``/``load_turns``/``load_threads`` here (and in the
``tokenbox.core`` facade) use the package's default loader; an application that wants its own (the
TUI's planner does) makes one. A command that loads one turn and exits makes ``Loader(one_shot=True)``:
a Claude Code transcript is then read for its main thread only and forgotten once the turn is built.
"""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from tokenbox.core.model.errors import NotYetComplete, SessionError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import FastDocument, Reuse, fast_json
from tokenbox.core.parse.schema import Reusable
from tokenbox.core.sources import foreign
from tokenbox.core.sources.database import tables
from tokenbox.core.sources.documents import fast_turns, format_of, parse_turns, turns_of
from tokenbox.core.sources.files import (
    decode_text,
    path_argument,
    read_bytes,
    read_text,
    size_argument,
    turn_argument,
)
from tokenbox.core.sources.formats import FORMATS, Format, ThreadedLog, source_format
from tokenbox.core.sources.logreader import LogReader
from tokenbox.core.sources.turns import select_turn, with_histories

READERS_KEPT = 8  # logs followed at once (each holds its turns)
DOCUMENTS_KEPT = 4  # JSON session files remembered for their next load (each: text, values, session)
MAX_SKIPPED_LINES = 100  # bad lines ``load_turns_skipping`` skips in one log before it gives up


class _Loaded:
    """A JSON session file as last loaded: its text, its fast-read document and its session."""

    __slots__ = ("data", "doc", "session", "text")

    def __init__(self, text: str, doc: FastDocument, session: Session, data: bytes | None) -> None:
        self.text = text
        self.data = data  # the bytes ``text`` was decoded from, when known
        self.doc = doc
        self.session = session

    def reusable(self) -> Reusable:
        return {
            id(raw): (raw, index, section)
            for index, ((_, _, raw, _), section) in enumerate(zip(self.doc.items, self.session.sections, strict=True), start=1)
        }


FOLLOWED_SUFFIXES = (".jsonl", ".lhar")  # JSON-lines logs an agent appends to (context-lens writes .lhar)


def _followed(path: str) -> bool:
    return path.lower().endswith(FOLLOWED_SUFFIXES)


class Loader:
    """Loads session files by path and follows them as they grow (see the module docstring)."""

    def __init__(
        self,
        readers_kept: int = READERS_KEPT,
        documents_kept: int = DOCUMENTS_KEPT,
        *,
        formats: Sequence[Format] = FORMATS,
        one_shot: bool = False,
    ) -> None:
        # one_shot: a command's loader, not an app's: a transcript's reader drops what the turn asked for
        # does not need before it is built, and the transcript is forgotten once the turn is made
        self.one_shot = one_shot
        self.formats = tuple(formats)
        self._readers_kept = readers_kept
        self._documents_kept = documents_kept
        self._readers: OrderedDict[tuple, Any] = OrderedDict()
        self._documents: OrderedDict[tuple[str, str], _Loaded] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the public loads

    def load_session(
        self,
        path: str | os.PathLike[str],
        turn: int | None = None,
        *,
        max_bytes: int | None = None,
        thread: str | None = None,
    ) -> Session:
        """One turn of a session file (the newest by default), validated, with earlier turns as history.

        ``thread`` picks a sub-agent's thread of a log (README, "Real agents"; ``load_threads`` lists them); the
        default is the main thread. ``max_bytes`` refuses a bigger file; ``None``: each read's default
        (``sources.files``: 64 MiB for a file read whole, 512 MiB for a Claude Code transcript, read a block at a time).
        """
        path = path_argument(path)
        size_argument(max_bytes)
        turn_argument(turn)
        source = self._source(path, max_bytes)
        if source is not None:  # a storage a reader follows itself (a task folder, a database)
            threads = source.all_threads(max_bytes) if thread is not None else {MAIN_THREAD: source.main_turns()}
            if thread is not None and thread not in threads:
                raise SessionError(f"no thread {thread!r} in the session", f"threads: {', '.join(threads)}", path)
            return select_turn(threads[thread or MAIN_THREAD], turn, path)  # type: ignore[arg-type]
        if thread is not None:
            threads = self.load_threads(path, max_bytes=max_bytes)
            if thread not in threads:
                raise SessionError(f"no thread {thread!r} in the file", f"threads: {', '.join(threads)}", path)
            return select_turn(threads[thread], turn, path)  # type: ignore[arg-type]
        if _followed(path):
            followed = self._reader(path, max_bytes).read()
            if followed is not None:  # a tokenbox log
                if turn is None:
                    return followed[-1]
                chosen = select_turn(followed, turn, path)  # checks the range
                return followed[chosen.turn - 1]  # already carries its history
            if self.one_shot:
                chosen = self._transcript_once(path, turn, max_bytes)
                if chosen is not None:
                    return chosen
            else:
                transcript = self._followed_transcript(path, max_bytes)
                if transcript is not None:
                    return select_turn(transcript.main_turns(), turn, path)  # type: ignore[arg-type]
        data = read_bytes(path, max_bytes)
        text = decode_text(data, path, partial_tail=_followed(path))
        return select_turn(self._document_turns(text, path, data), turn, path)

    def load_turns(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> list[Session]:
        """Every turn of a session file, each with its history, oldest first.

        A ``.jsonl`` log is read through the ``LogReader`` kept for the path: loading it again parses
        only the lines appended since.
        """
        path = path_argument(path)
        size_argument(max_bytes)
        source = self._source(path, max_bytes)
        if source is not None:
            return source.main_turns()  # type: ignore[return-value]  (a lazy sequence)
        if _followed(path):
            followed = self._reader(path, max_bytes).read()
            if followed is not None:  # a tokenbox log
                return followed  # type: ignore[return-value]  (a lazy sequence: turns are built when read)
            transcript = self._followed_transcript(path, max_bytes)
            if transcript is not None:
                return transcript.main_turns()  # type: ignore[return-value]  (a lazy sequence)
        data = read_bytes(path, max_bytes)
        turns = self._document_turns(decode_text(data, path, partial_tail=_followed(path)), path, data)
        if not isinstance(turns, list):
            return turns  # type: ignore[return-value]  (a lazy sequence of a transcript's turns)
        return with_histories(turns)

    def load_threads(
        self, path: str | os.PathLike[str], *, max_bytes: int | None = None
    ) -> dict[str, Sequence[Session]]:
        """Every thread of a log (README, "Real agents"): ``main`` and each sub-agent's, each a sequence of turns.

        A transcript format reads its threads (Claude Code's also reads its
        ``<session>/subagents/agent-*.jsonl`` files, and ``subagents/workflows/<run>/agent-*.jsonl``); any
        other session file has one thread, ``main``.
        """
        path = path_argument(path)
        size_argument(max_bytes)
        source = self._source(path, max_bytes)
        if source is not None:
            return source.all_threads(max_bytes)
        transcript = self._followed_transcript(path, max_bytes)
        if transcript is None:
            main = self.load_turns(path, max_bytes=max_bytes)
            threads: dict[str, Sequence[Session]] = {MAIN_THREAD: main}
            for row in self.formats:
                if row.threads is not None:
                    for name, turns in row.threads(path, max_bytes, main).items():
                        threads.setdefault(name, with_histories(list(turns)))
            return threads
        return transcript.all_threads(max_bytes)

    def load_turns_skipping(
        self, path: str | os.PathLike[str], *, max_bytes: int | None = None
    ) -> tuple[Sequence[Session], tuple[str, ...]]:
        """``load_turns``; in a ``.jsonl`` log a bad complete line is skipped with a warning (one per line
        skipped, at most ``MAX_SKIPPED_LINES``), so that one bad line in the middle does not hide every
        later turn. Other files fail as a whole; a file with no complete turn yet raises ``NotYetComplete``."""
        path = path_argument(path)
        try:
            return self.load_turns(path, max_bytes=max_bytes), ()
        except NotYetComplete:
            raise
        except SessionError as exc:
            if not path.lower().endswith(".jsonl") or exc.line is None:
                raise
        lines = read_text(path, max_bytes).split("\n")
        warnings: list[str] = []
        for _ in range(MAX_SKIPPED_LINES):
            try:
                turns = turns_of("\n".join(lines), path, self.formats)
            except NotYetComplete:
                raise
            except SessionError as exc:
                line = exc.line
                if line is None or not 1 <= line < len(lines) or not lines[line - 1].strip():
                    raise
                warnings.append(f"{exc} — line {line} skipped")
                lines[line - 1] = ""  # blank: the other lines keep their numbers
                continue
            return turns, tuple(warnings)
        raise SessionError(f"more than {MAX_SKIPPED_LINES} bad lines", "fix the log", path)

    def forget(self, path: str | os.PathLike[str] | None = None) -> None:
        """Drop what this loader remembers of ``path`` (of every file by default): its next load is cold."""
        with self._lock:
            if path is None:
                dropped = list(self._readers.values())
                self._readers.clear()
                self._documents.clear()
            else:
                where = os.path.abspath(os.fspath(path))
                dropped = [found for key, found in self._readers.items() if key[0] == where]
                for memo in (self._readers, self._documents):
                    for key in [key for key in memo if key[0] == where]:
                        del memo[key]
        for found in dropped:
            # a follower whose reader refers back to itself is freed now, not at the next full collection
            release = getattr(found, "release", None)
            if release is not None:
                release()

    # ------------------------------------------------------------------ the caches

    def _document_turns(self, text: str, path: str, data: bytes | None = None) -> list[Session]:
        """``parse_turns(text, path)``; a JSON session read before under this path is read incrementally.

        Only the sections whose text changed since the previous load are scanned and validated again
        (``nodes.Reuse``); the others are the previous load's ``Section`` objects, so the engine's caches
        by identity recognise them. The same text again gives the same session object.
        """
        if format_of(path, text) != "json":
            return parse_turns(text, path, formats=self.formats)  # type: ignore[return-value]
        key = (os.path.abspath(path), path)
        with self._lock:
            before = self._documents.get(key)
        if before is not None and before.text == text:
            return [before.session]
        reuse = None
        if before is not None and len(before.doc.items) == len(before.session.sections):
            try:
                reuse = Reuse(before.text, before.doc, text, before.data, data if not _followed(path) else None)
            except Exception:  # a slip in what is kept costs the reuse, never the load
                reuse = None
        doc = fast_json(text, reuse=reuse)
        turns = None
        if doc is not None:
            previous = before.reusable() if reuse is not None and before is not None else None
            turns = fast_turns(doc, path, previous, self.formats)
        if turns is None:
            with self._lock:
                self._documents.pop(key, None)
            return parse_turns(text, path, "json", self.formats)  # type: ignore[return-value]
        with self._lock:
            self._documents.pop(key, None)
            # the bytes only help to find the change in a text of wide characters (an ASCII text's
            # slices are plain copies); kept only then
            self._documents[key] = _Loaded(text, doc, turns[0], None if text.isascii() else data)  # type: ignore[arg-type]
            while len(self._documents) > self._documents_kept:
                self._documents.popitem(last=False)
        return turns

    def _transcript_once(self, path: str, turn: int | None, max_bytes: int | None) -> Session | None:
        """A one-shot loader's turn of a transcript (``None``: no transcript format claims the file), then
        the transcript forgotten. A follower that can (``read_main_only``) reads for the main thread only and
        its reader drops what the turn does not need (``main_turns_only``); meanwhile the cyclic collector
        waits: what that read builds is millions of objects that live on and form no cycle (the collector's
        passes over them were ≈5 % of a 50 MB transcript's plan)."""
        follower = self._transcript_follower(path, max_bytes)
        if follower is None:
            return None
        once = getattr(follower, "read_main_only", None)
        enabled = gc.isenabled()
        if once is not None:
            gc.disable()
        try:
            if once is None:
                return select_turn(follower.read().main_turns(), turn, path)  # type: ignore[arg-type]
            return select_turn(once().main_turns_only(), turn, path)  # type: ignore[arg-type]
        finally:
            self.forget(path)  # the reader was read for this turn only: it cannot follow the file
            if enabled:
                gc.enable()

    def _kept(self, key: tuple, make: Any) -> Any:
        """The object kept under ``key`` (made by ``make()`` on first use), now the most recently used."""
        with self._lock:
            found = self._readers.pop(key, None)
            if found is None:
                found = make()
            self._readers[key] = found
            while len(self._readers) > self._readers_kept:
                self._readers.popitem(last=False)
        return found

    def _reader(self, path: str, max_bytes: int | None) -> LogReader:
        """The ``LogReader`` kept for ``path`` (created on first use)."""
        return self._kept(
            (os.path.abspath(path), path, max_bytes), lambda: LogReader(path, max_bytes=max_bytes, formats=self.formats)
        )

    def _source(self, path: str, max_bytes: int | None) -> ThreadedLog | None:
        """The storage at ``path`` read by a ``SOURCE`` row's follower, fed what changed since the last
        load (``None`` when no such row claims the path). The follower is kept like a log's reader."""
        found = source_format(self.formats, path, max_bytes)
        if found is None:
            return None
        row, seen = found
        if row is None:  # a database no reader claims: named, not read as text
            raise foreign.sniff_database(tables(seen.target), path)
        follow = row.follow
        assert follow is not None
        key = (os.path.abspath(path), path, max_bytes, row.name)
        return self._kept(key, lambda: follow(path, max_bytes)).read()

    def _followed_transcript(self, path: str, max_bytes: int | None) -> ThreadedLog | None:
        """The transcript of ``path``, fed the lines appended since the last load (``None`` when no
        transcript format claims the file). The follower is kept beside the path's ``LogReader``."""
        follower = self._transcript_follower(path, max_bytes)
        return follower.read() if follower is not None else None

    def _transcript_follower(self, path: str, max_bytes: int | None) -> Any:
        """The follower kept for the transcript of ``path`` (``None`` when no transcript format claims it)."""
        if not _followed(path):
            return None
        reader = self._reader(path, max_bytes)
        row = reader.transcript if reader.read() is None else None
        if row is None or row.follow is None:
            return None
        follow = row.follow
        key = (os.path.abspath(path), path, max_bytes, row.name)
        return self._kept(key, lambda: follow(path, max_bytes))


DEFAULT_LOADER = Loader()
"""The loader behind ``tokenbox.core.load_session``, ``load_turns`` and ``load_threads``."""


def load_threads(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> dict[str, Sequence[Session]]:
    """Every thread of a log (README, "Real agents"), through the package's default ``Loader``."""
    return DEFAULT_LOADER.load_threads(path, max_bytes=max_bytes)


def load_session(
    path: str | os.PathLike[str],
    turn: int | None = None,
    *,
    max_bytes: int | None = None,
    thread: str | None = None,
) -> Session:
    """``Loader.load_session`` through the package's default ``Loader`` (it follows a growing file at the
    cost of what was appended)."""
    return DEFAULT_LOADER.load_session(path, turn, max_bytes=max_bytes, thread=thread)


def load_turns(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> list[Session]:
    """Every turn of a session file, each with its history, oldest first (through the package's
    default ``loader.Loader``: loading a growing log again parses only the lines appended since)."""
    return DEFAULT_LOADER.load_turns(path, max_bytes=max_bytes)


def forget_loaded(path: str | os.PathLike[str] | None = None) -> None:
    """Drop what the default loader remembers of ``path`` (of every file by default): the next load of
    it is cold (benchmarks compare cold loads with followed ones)."""
    DEFAULT_LOADER.forget(path)
