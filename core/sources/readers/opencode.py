"""OpenCode sessions (and its forks' that keep OpenCode's layout: Kilo Code 5.x, Kilo CLI), one turn per step.

OpenCode keeps every session of every project in ``$XDG_DATA_HOME/opencode/`` (``~/.local/share/opencode``):
newer versions in a SQLite database (``opencode.db``; Kilo: ``kilo/kilo.db``), older ones in a JSON
tree (``storage/session/<project>/<session>.json``, ``storage/message/<session>/<message>.json``,
``storage/part/<message>/<part>.json``). Both hold the same records: a session (``parent_id`` names the
session of a sub-agent's parent), its messages (``data``: role, model, and for a reply ``tokens``) and
their parts (text, reasoning, file, tool with its input and output, ``step-start``/``step-finish``).

**One model request is one step**: the parts from a ``step-start`` to its ``step-finish``, whose
``tokens{input, output, reasoning, cache{read, write}}`` is that request's usage. Its **context is
input + cache.read + cache.write** (OpenCode writes ``input`` without the cached tokens, normalising
each provider's figure). The request sent every earlier message as OpenCode rebuilds it — text,
files, tool calls with their results (a result cleared by compaction as ``[Old tool result content
cleared]``) — and the parts of its own message before the step. A compaction (a user message with a
``compaction`` part, answered by a ``summary`` reply) starts a new context with the summary. A user
message with no reply yet, or a step still running, is the pending turn. The built-in system prompt
and the tool definitions are not stored: they are the ``inferred`` part; a user message's own
``system`` addition is shown. Sub-agents (child sessions) are threads.

A path is the database (its newest top-level session), ``DB#SESSION_ID`` (that session), a session's
JSON file of the older tree, or the ``storage`` folder (its newest session). The database is opened
read-only (``mode=ro``), each read is one short transaction and a busy database is retried, so the
agent is never locked out; a followed database is queried again only for rows changed since.
"""

from __future__ import annotations

import json
import os
import re
from functools import partial
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import dataclass, field
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.database import query, tables
from tokenbox.core.sources.probe import Probe
from tokenbox.core.sources.readers import images
from tokenbox.core.sources.readers.agentlog import AgentLog, HistoryPrefix, Request
from tokenbox.core.sources.readers.anthropic import call_text
from tokenbox.core.sources.readers.common import CALL, MEDIA, RESULT, TEXT, THINKING, Block, Message, compact

SOURCE = "opencode"
HIDDEN_LABEL = "system prompt and tool definitions (not in OpenCode's storage)"
NOT_RECORDED = "the built-in system prompt and the tool definitions (OpenCode does not store them)"
CLEARED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"
COMPACTION_PROMPT = "What did we do so far?"
TABLES = frozenset({"session", "message", "part"})
_SESSION_HEAD = re.compile(rb'^\s*\{[^{}]*?"id"\s*:\s*"[^"]*"[^{}]*?"projectID"\s*:', re.S)
_USAGE_MAX = 10**12


def detect(found: Probe) -> bool:
    """An OpenCode database (a SQLite file with its ``session``, ``message`` and ``part`` tables), a
    session file of the older JSON tree, or that tree's ``storage`` folder."""
    if found.is_dir:
        return {"session", "message", "part"} <= found.names or message_folder(found.target) is not None
    if found.sqlite:
        return tables(found.target) >= TABLES
    return found.selector is None and bool(_SESSION_HEAD.match(found.head)) and _storage_root(found.target) is not None


def message_folder(folder: str) -> str | None:
    """The ``storage`` folder of a session's message folder (``storage/message/<session id>/``), else ``None``."""
    parent = os.path.dirname(os.path.abspath(folder))
    storage = os.path.dirname(parent)
    if os.path.basename(parent) == "message" and os.path.isdir(os.path.join(storage, "part")):
        return storage
    return None


def _storage_root(session_file: str) -> str | None:
    """The ``storage`` folder of a session file (``storage/session/<project>/<id>.json``)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(session_file))))
    return root if os.path.isdir(os.path.join(root, "message")) else None


# ---------------------------------------------------------------- the records, from either storage


@dataclass
class _Records:
    """One session tree's records as last read: sessions, messages and parts by id."""

    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: dict[str, tuple[str, int, dict[str, Any]]] = field(default_factory=dict)  # id -> (session, created, data)
    parts: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # id -> (message id, data)


class _Database:
    """Reads a session tree from the database, again only the rows changed since (``time_updated``)."""

    def __init__(self, path: str, selector: str | None) -> None:
        self.path = path
        self.selector = selector
        self.root: str | None = None
        self.records = _Records()
        self.since = (-1, -1)  # the newest time_updated of messages and of parts seen
        self.counts = (0, 0)

    def read(self) -> _Records:
        if self.root is None:
            self.root = self.selector or self._newest()
        tree = self._tree(self.root)
        marks = ",".join("?" * len(tree))
        counts = tuple(query(self.path, f"SELECT (SELECT count(*) FROM message WHERE session_id IN ({marks})), "
                                        f"(SELECT count(*) FROM part WHERE session_id IN ({marks}))", [*tree, *tree])[0])
        if counts < self.counts or set(tree) != set(self.records.sessions):  # rows went away (a revert), or a new sub-agent
            self.records, self.since = _Records(sessions=self.records.sessions), (-1, -1)
        self.counts = counts  # type: ignore[assignment]
        records = self.records
        for row in query(self.path, f"SELECT id, parent_id, directory, title, version, time_updated FROM session "
                                    f"WHERE id IN ({marks})", tree):
            records.sessions[row[0]] = {"id": row[0], "parentID": row[1], "directory": row[2], "title": row[3], "version": row[4]}
        newest_message, newest_part = self.since
        for ident, session, created, updated, data in query(
                self.path, f"SELECT id, session_id, time_created, time_updated, data FROM message "
                           f"WHERE session_id IN ({marks}) AND time_updated >= ?", [*tree, self.since[0]]):
            records.messages[ident] = (session, created, _json(data))
            newest_message = max(newest_message, updated)
        for ident, message, updated, data in query(
                self.path, f"SELECT id, message_id, time_updated, data FROM part "
                           f"WHERE session_id IN ({marks}) AND time_updated >= ?", [*tree, self.since[1]]):
            records.parts[ident] = (message, _json(data))
            newest_part = max(newest_part, updated)
        self.since = (newest_message, newest_part)
        return records

    def _newest(self) -> str:
        rows = query(self.path, "SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_updated DESC, id DESC LIMIT 1")
        if not rows:
            raise SessionError("the OpenCode database has no session yet", "start a session, or name one: DB#ses_…", self.path)
        return rows[0][0]

    def _tree(self, root: str) -> list[str]:
        """The session and its sub-agents' sessions, at any depth."""
        found = [root]
        if not query(self.path, "SELECT 1 FROM session WHERE id = ?", [root]):
            raise SessionError(f"no session {root!r} in the database", "list them: sqlite3 -readonly DB 'select id, title from session'",
                               self.path)
        frontier = [root]
        while frontier:
            marks = ",".join("?" * len(frontier))
            frontier = [r[0] for r in query(self.path, f"SELECT id FROM session WHERE parent_id IN ({marks}) ORDER BY time_created, id",
                                            frontier) if r[0] not in found]
            found.extend(frontier)
        return found


class _Tree:
    """Reads a session tree from the older JSON storage, again only the files whose stamp changed."""

    def __init__(self, storage: str, session_file: str | None, session_id: str | None = None) -> None:
        self.storage = storage
        self.session_file = session_file
        self.session_id = session_id
        self.records = _Records()
        self.cache: dict[str, tuple[tuple[int, int], dict[str, Any] | None]] = {}

    def read(self) -> _Records:
        sessions = self._sessions()
        root = self._root(sessions)
        tree = [root]
        for ident in tree:  # grows while it is walked: children of children
            tree.extend(s for s, info in sessions.items() if info.get("parentID") == ident and s not in tree)
        records = _Records(sessions={s: sessions[s] for s in tree})
        for session in tree:
            for path in _files(os.path.join(self.storage, "message", session)):
                info = self._load(path)
                if info is None or not isinstance(info.get("id"), str):
                    continue
                created = info.get("time", {}).get("created", 0) if isinstance(info.get("time"), dict) else 0
                records.messages[info["id"]] = (session, created if isinstance(created, int) else 0, info)
                for part_path in _files(os.path.join(self.storage, "part", info["id"])):
                    part = self._load(part_path)
                    if part is not None and isinstance(part.get("id"), str):
                        records.parts[part["id"]] = (info["id"], part)
        self.records = records
        return records

    def _sessions(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        folder = os.path.join(self.storage, "session")
        for project in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            for path in _files(os.path.join(folder, project)):
                info = self._load(path)
                if info is not None and isinstance(info.get("id"), str):
                    info["_file"] = path
                    found[info["id"]] = info
        return found

    def _root(self, sessions: dict[str, dict[str, Any]]) -> str:
        if self.session_id is not None:
            if self.session_id not in sessions:
                sessions[self.session_id] = {"id": self.session_id}  # messages without their session file
            return self.session_id
        if self.session_file is not None:
            info = self._load(self.session_file)
            if info is None or not isinstance(info.get("id"), str):
                raise SessionError("not an OpenCode session file", "name a file under storage/session/", self.session_file, 1, 1)
            sessions.setdefault(info["id"], info)
            return info["id"]
        roots = [(_updated(i), s) for s, i in sessions.items() if not i.get("parentID")]
        if not roots:
            raise SessionError("the OpenCode storage has no session yet", "start a session first", self.storage)
        return max(roots)[1]

    def _load(self, path: str) -> dict[str, Any] | None:
        """A JSON file of the tree, parsed again only when its size or time changed."""
        cache = self.cache
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_size, st.st_mtime_ns)
        entry = cache.get(path)
        if entry is not None and entry[0] == stamp:
            return entry[1]
        try:
            with open(path, "rb") as handle:
                value = json.loads(handle.read())
        except (OSError, ValueError):
            value = None  # being written: read again next time
            stamp = (-1, -1)
        value = value if isinstance(value, dict) else None
        cache[path] = (stamp, value)
        return value


def _files(folder: str) -> list[str]:
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []


def _updated(info: dict[str, Any]) -> int:
    stamp = info.get("time", {}).get("updated", 0) if isinstance(info.get("time"), dict) else 0
    return stamp if isinstance(stamp, int) else 0


def _json(data: Any) -> dict[str, Any]:
    try:
        value = json.loads(data) if isinstance(data, (str, bytes)) else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- requests from the records


class SessionFollower:
    """Follows one OpenCode session (its database or its JSON tree): each ``read`` fetches what changed."""

    def __init__(self, path: str, max_bytes: int | None = None) -> None:
        from tokenbox.core.sources.probe import probe  # start-up: only when a path is followed

        self.path = path
        found = probe(path)
        if found is None:
            raise SessionError("cannot read", "check the path", path)
        if found.is_dir and message_folder(found.target) is not None:
            self.store: _Database | _Tree = _Tree(message_folder(found.target) or "", None,  # type: ignore[arg-type]
                                                  os.path.basename(os.path.abspath(found.target)))
        elif found.is_dir:
            self.store = _Tree(found.target, None)
        elif found.sqlite:
            self.store = _Database(found.target, found.selector)
        else:
            storage = _storage_root(found.target)
            assert storage is not None
            self.store = _Tree(storage, found.target)
        self.messages: dict[tuple[str, int], tuple[str, list[Message]]] = {}  # (message id, step) -> (source, messages)
        self.log: AgentLog | None = None

    def read(self) -> AgentLog:
        records = self.store.read()
        threads, warnings, meta = self._threads(records)
        log = AgentLog(SOURCE, self.path, f"OpenCode session {meta.get('session_id', '')}".strip(), HIDDEN_LABEL,
                       NOT_RECORDED, threads, warnings, meta)
        if self.log is not None:
            log.cache, log.bases = self.log.cache, self.log.bases
        self.log = log
        return log

    def _threads(self, records: _Records) -> tuple[dict[str, list[Request]], list[str], dict[str, Any]]:
        by_session: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        for ident, (session, created, data) in records.messages.items():
            by_session.setdefault(session, []).append((created, ident, data))
        parts: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for ident, (message, data) in records.parts.items():
            parts.setdefault(message, []).append((ident, data))
        sessions = records.sessions
        root = next((s for s, info in sessions.items() if not info.get("parentID") or info.get("parentID") not in sessions), None)
        warnings: list[str] = []
        meta: dict[str, Any] = {}
        if root is not None:
            info = sessions[root]
            meta = {k: v for k, v in (("session_id", root), ("title", info.get("title")), ("cwd", info.get("directory")),
                                      ("version", info.get("version"))) if isinstance(v, str) and v}
        threads: dict[str, list[Request]] = {}
        for session in sessions:
            name = MAIN_THREAD if session == root else f"subagent-{session.removeprefix('ses_')[:12]}"
            rows = sorted(by_session.get(session, []))
            threads[name] = self._requests(rows, parts, warnings)
        return threads, warnings, meta

    def _requests(self, rows: list[tuple[int, str, dict[str, Any]]], parts: dict[str, list[tuple[str, dict[str, Any]]]],
                  warnings: list[str]) -> list[Request]:
        history: list[Message] = []
        requests: list[Request] = []
        epoch = 0
        waiting = False  # a user message since the last request
        asked: str | None = None  # the model the last user message names: OpenCode answers it with that one
        for _, ident, data in rows:
            own = sorted(parts.get(ident, []))
            role = data.get("role")
            if role == "user":
                history.extend(self._made((ident, 0), [data, own], partial(_user_messages, ident, data, own, len(history))))
                waiting = True
                chosen = data.get("model") if isinstance(data.get("model"), dict) else {}
                asked = chosen.get("modelID") if isinstance(chosen.get("modelID"), str) and chosen.get("modelID") else asked
                continue
            if role != "assistant":
                warnings.append(f"message {ident}: role {role!r} is not placed")
                continue
            steps = _steps(own)
            model = data.get("modelID") if isinstance(data.get("modelID"), str) and data.get("modelID") else asked
            for number, (step, finish) in enumerate(steps):
                made = self._made((ident, number), [data, step, finish],
                                  partial(_assistant_messages, ident, number, step, len(history)))
                usage = _usage(finish.get("tokens")) if finish is not None else None
                done = bool(data.get("time", {}).get("completed")) or bool(data.get("error"))
                if finish is None and done and number == len(steps) - 1:
                    usage = _usage(data.get("tokens"))  # older versions: the reply's usage, no step parts
                running = finish is None and not done
                reply = [b for m in made if m.role == "assistant" for b in m.blocks]
                requests.append(Request(HistoryPrefix(history), usage, len(requests) + 1, model, epoch, reply=reply,
                                        pending=running, key=None if running else f"{ident}#{number + 1}",
                                        meta={"message_id": ident, "step": number + 1}))
                history.extend(made)
                waiting = False
            if data.get("summary") is True and data.get("time", {}).get("completed"):
                # a compaction's summary: the next requests send the compaction prompt, the summary and what follows
                epoch += 1
                history = [m for m in history if m.meta.get("compaction") or m.meta.get("message_id") == ident][-2:]
        if waiting and history and not (requests and requests[-1].pending):
            model = asked or (requests[-1].model if requests else None)
            requests.append(Request(HistoryPrefix(history), None, len(requests) + 1, model, epoch, pending=True))
        return requests

    def _made(self, key: tuple[str, int], source: Any, make) -> list[Message]:
        """The messages of a record, made again only when the record changed (the same objects otherwise)."""
        text = json.dumps(source, sort_keys=True, default=str)  # the record as it was: rows are replaced on change
        entry = self.messages.get(key)
        if entry is not None and entry[0] == text:
            return entry[1]
        made = make()
        self.messages[key] = (text, made)
        return made


def follow(path: str, max_bytes: int | None = None) -> SessionFollower:
    """The follower of an OpenCode session (a database, ``DB#ID``, a session file or the storage folder)."""
    return SessionFollower(path, max_bytes)


def convert(found: Probe, path: str) -> Any:
    """The main thread's turns of one cold read."""
    return follow(path).read().main_turns()


def _steps(parts: list[tuple[str, dict[str, Any]]]) -> list[tuple[list[dict[str, Any]], dict[str, Any] | None]]:
    """A reply's parts cut into steps: each step's parts and its ``step-finish`` (``None`` while it runs)."""
    steps: list[tuple[list[dict[str, Any]], dict[str, Any] | None]] = []
    current: list[dict[str, Any]] = []
    started = False
    for _, part in parts:
        kind = part.get("type")
        if kind == "step-start":
            if started:
                steps.append((current, None))
            current, started = [], True
        elif kind == "step-finish":
            steps.append((current, part))
            current, started = [], False
        else:
            current.append(part)
    if started or current or not steps:
        steps.append((current, None))
    return steps


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _USAGE_MAX:
        return None
    return value


def _usage(tokens: Any) -> RecordedUsage | None:
    """A step's ``tokens``: context = input + cache.read + cache.write (OpenCode's input excludes the cache)."""
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    numbers = [_count(tokens.get("input", 0)), _count(cache.get("write", 0)), _count(cache.get("read", 0)),
               _count(tokens.get("output", 0))]
    if any(n is None for n in numbers):
        return None
    inp, write, read, out = numbers  # type: ignore[misc]
    if inp + write + read == 0:  # type: ignore[operator]
        return None
    return RecordedUsage(inp + write + read, inp, write, read, out)  # type: ignore[operator]


def _user_messages(ident: str, data: dict[str, Any], parts: list[tuple[str, dict[str, Any]]], index: int) -> list[Message]:
    """A user message as OpenCode sends it: its text and files (a compaction part asks for the summary)."""
    blocks: list[Block] = []
    system = data.get("system")
    if isinstance(system, str) and system.strip():
        blocks.append(Block("system", TEXT, system, meta={"custom_system": True}))
    compaction = False
    for _, part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and not part.get("ignored"):
            blocks.append(Block("text", TEXT, part["text"], meta={"synthetic": True} if part.get("synthetic") else {}))
        elif kind == "file":
            blocks.append(_file(part))
        elif kind == "compaction":
            compaction = True
            blocks.append(Block("compaction", TEXT, COMPACTION_PROMPT, meta={"compaction": True}))
        elif kind == "subtask" and isinstance(part.get("prompt"), str):
            blocks.append(Block("subtask", TEXT, part["prompt"]))
    meta = {"message_id": ident, **({"compaction": True} if compaction else {})}
    return [Message("user", blocks, index, meta)] if blocks else []


def _assistant_messages(ident: str, step: int, parts: list[dict[str, Any]], index: int) -> list[Message]:
    """One step of a reply as it is sent back: the assistant's text, reasoning and tool calls, then the
    tool results (a message of role ``tool``)."""
    said: list[Block] = []
    results: list[Block] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
            said.append(Block("text", TEXT, part["text"]))
        elif kind == "reasoning" and isinstance(part.get("text"), str) and part["text"]:
            said.append(Block("reasoning", THINKING, part["text"]))
        elif kind == "tool":
            call, result = _tool(part)
            said.append(call)
            results.append(result)
        elif kind == "file":
            said.append(_file(part))
    meta = {"message_id": ident, "step": step + 1}
    out = [Message("assistant", said, index, meta)] if said else []
    if results:
        out.append(Message("tool", results, index + len(out), meta))
    return out


def _tool(part: dict[str, Any]) -> tuple[Block, Block]:
    name = part.get("tool") if isinstance(part.get("tool"), str) else "tool"
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    meta: dict[str, Any] = {"tool_input": state.get("input", {})}
    if isinstance(part.get("callID"), str):
        meta["tool_use_id"] = part["callID"]
    call = Block("tool-call", CALL, call_text("tool_use", name, state.get("input", {})), name, meta)
    status = state.get("status")
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    result_meta = {"tool_use_id": meta["tool_use_id"]} if "tool_use_id" in meta else {}
    if status == "completed":
        output = state.get("output")
        text = CLEARED if times.get("compacted") else output if isinstance(output, str) else compact(output)
    elif status == "error":
        text = state.get("error") if isinstance(state.get("error"), str) else "error"
        result_meta["is_error"] = True
    else:
        text = INTERRUPTED
    return call, Block("tool-result", RESULT, text, name, result_meta)


def _file(part: dict[str, Any]) -> Block:
    mime = part.get("mime") if isinstance(part.get("mime"), str) else "application/octet-stream"
    url = part.get("url") if isinstance(part.get("url"), str) else ""
    meta: dict[str, Any] = {}
    if mime.startswith("image/") and url.startswith("data:"):
        size = images.data_url_size(url)
        if size is not None:
            meta["width"], meta["height"] = size
            meta["tokens"] = images.anthropic_tokens(*size)
        return Block("image", MEDIA, f"[image: {mime}, {len(url)} characters]", None, meta)
    name = part.get("filename") if isinstance(part.get("filename"), str) else url
    return Block("file", TEXT, f"[file: {name} ({mime})]", None, meta)
