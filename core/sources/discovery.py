"""Where each agent keeps its sessions: one table (``AGENTS``), for ``tokenbox-tui --agent NAME``, the board
of every recent session and ``tokenbox doctor``.

Each row knows an agent's storage roots (with the environment variables that move them), how to list
its sessions newest first (``Found``: agent, project directory, the path tokenbox opens, its time) and
why a folder it looked at was skipped (``Skipped``). ``scan()`` lists the recent sessions of every
agent (or of some); ``newest(name, project)`` picks the newest session of one agent for a project
directory (default: the current one), or raises ``DiscoveryError`` with a one-line reason and remedy.

| agent | where (overrides) | a session is |
| --- | --- | --- |
| claude | ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, ``projects/<cwd, non-alphanumerics as ->/`` | ``<id>.jsonl`` |
| codex | ``$CODEX_HOME`` or ``~/.codex``, ``sessions/YYYY/MM/DD/``, ``archived_sessions/`` | ``rollout-*.jsonl`` (its ``session_meta.cwd``) |
| gemini | ``~/.gemini/tmp/<sha256 of the project, or its name in projects.json>/chats/`` | ``session-*.json``/``.jsonl`` |
| copilot | ``~/.copilot/session-state/`` | ``<id>/events.jsonl`` (its ``session.start`` cwd) |
| cline, roo, kilo | VS Code's ``User/globalStorage/<extension>/tasks/`` of Code, Insiders, VSCodium, Cursor, Windsurf and the remote server, per OS (``$XDG_CONFIG_HOME``, ``%APPDATA%``); Cline also ``~/.cline/data/tasks/`` and the CLI's ``sessions/`` (``$CLINE_DIR``) | a task folder (its working directory from the environment details); a CLI session file |
| kilo (5.x), opencode | ``$XDG_DATA_HOME/kilo/kilo.db``, ``$XDG_DATA_HOME/opencode/opencode*.db`` and ``storage/`` | ``DB#SESSION_ID``, a session's message folder |
| aider | the project's ``.aider.chat.history.md`` (``$AIDER_CHAT_HISTORY_FILE``), in it or its git root | the file |
| record (``CAPTURES``, not in ``AGENTS``) | ``$XDG_STATE_HOME/tokenbox/captures`` or ``~/.local/state/tokenbox/captures`` | ``capture-*.jsonl`` of ``tokenbox record`` |

``SOURCES`` is ``AGENTS`` and the capture logs: what the board (``tokenbox-tui --all``) and ``tokenbox doctor``
look through (``scan(rows=SOURCES)``).

Nothing here writes; databases are read read-only (``database``), files by their first bytes only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

HEAD_BYTES = 64 * 1024  # what is read of a session file to learn its project
SCAN_LIMIT = 200  # sessions looked at per storage root, newest first
_UNSAFE = re.compile(r"[^A-Za-z0-9]")
_CLINE_CWD = re.compile(r"# Current Working Directory \(([^)\n]+)\)")
_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
EXTENSIONS = {"cline": "saoudrizwan.claude-dev", "roo": "rooveterinaryinc.roo-cline", "kilo": "kilocode.kilo-code"}


class DiscoveryError(Exception):
    """No session to follow; ``str()`` is one line with its remedy in parentheses."""


@dataclass(frozen=True, slots=True)
class Found:
    """One session of an agent."""

    agent: str
    project: str | None  # the project directory it ran in (None when the storage does not say)
    path: str  # what ``tokenbox plan`` / ``tokenbox-tui`` open
    mtime_ns: int
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A folder (or file) an agent's row looked at and did not use, and why."""

    agent: str
    path: str
    reason: str


@dataclass
class Scan:
    """What ``scan`` found: sessions newest first, what it skipped, and where it looked."""

    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    looked: list[tuple[str, str, str]] = field(default_factory=list)  # (agent, folder, what chose it)


@dataclass(frozen=True)
class Agent:
    """One row of the table: an agent's name, its label, and how its sessions are found."""

    name: str
    label: str
    roots: Callable[[Mapping[str, str]], list[tuple[str, str]]]  # (folder or file, what chose it)
    sessions: Callable[[str, Mapping[str, str], Scan], Iterator[Found]]  # a root's sessions (newest first or not)


# ---------------------------------------------------------------- places


def home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or env.get("USERPROFILE") or os.path.expanduser("~")


def _env_dir(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return os.path.abspath(os.path.expanduser(value)) if value else None


def claude_dir(env: Mapping[str, str]) -> tuple[str, str]:
    """Claude Code's data folder and what chose it (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``)."""
    chosen = _env_dir(env, "CLAUDE_CONFIG_DIR")
    return (chosen, "$CLAUDE_CONFIG_DIR") if chosen else (os.path.join(home(env), ".claude"), "default")


def codex_dir(env: Mapping[str, str]) -> tuple[str, str]:
    """Codex's data folder and what chose it (``$CODEX_HOME``, else ``~/.codex``)."""
    chosen = _env_dir(env, "CODEX_HOME")
    return (chosen, "$CODEX_HOME") if chosen else (os.path.join(home(env), ".codex"), "default")


def captures_dir(env: Mapping[str, str]) -> tuple[str, str]:
    """The folder of ``tokenbox record``'s capture logs and what chose it (``$XDG_STATE_HOME``, else
    ``~/.local/state``), ``…/tokenbox/captures``."""
    chosen = _env_dir(env, "XDG_STATE_HOME")
    base, how = (chosen, "$XDG_STATE_HOME") if chosen else (os.path.join(home(env), ".local", "state"), "default")
    return os.path.join(base, "tokenbox", "captures"), how


def data_home(env: Mapping[str, str]) -> tuple[str, str]:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (OpenCode uses it on every OS)."""
    chosen = _env_dir(env, "XDG_DATA_HOME")
    return (chosen, "$XDG_DATA_HOME") if chosen else (os.path.join(home(env), ".local", "share"), "default")


def editor_user_dirs(env: Mapping[str, str], platform: str = sys.platform) -> list[tuple[str, str]]:
    """Every VS Code-family ``User`` folder this OS may have (editors, Insiders, VSCodium, Cursor,
    Windsurf, and the remote servers'), with what chose it."""
    found: list[tuple[str, str]] = []
    if platform == "darwin":
        base, how = os.path.join(home(env), "Library", "Application Support"), "default"
    elif platform.startswith("win"):
        appdata = _env_dir(env, "APPDATA")
        base, how = (appdata, "%APPDATA%") if appdata else (os.path.join(home(env), "AppData", "Roaming"), "default")
    else:
        config = _env_dir(env, "XDG_CONFIG_HOME")
        base, how = (config, "$XDG_CONFIG_HOME") if config else (os.path.join(home(env), ".config"), "default")
    found.extend((os.path.join(base, editor, "User"), how) for editor in _EDITORS)
    for remote in (".vscode-server", ".vscode-remote", ".cursor-server", ".windsurf-server"):
        found.append((os.path.join(home(env), remote, "data", "User"), "remote server"))
    return found


def claude_project_folder(directory: str) -> str:
    """Claude Code's folder name for a project: its absolute path, non-alphanumerics as ``-``."""
    return _UNSAFE.sub("-", os.path.abspath(directory))


# ---------------------------------------------------------------- reading a little of a session


def _head(path: str, limit: int = HEAD_BYTES) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def _first_json_lines(path: str, count: int = 8) -> Iterator[dict]:
    for line in _head(path).split(b"\n")[:count]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _newest_files(paths: list[str], limit: int = SCAN_LIMIT) -> list[tuple[int, str]]:
    stamped = [(m, p) for p in paths if (m := _mtime(p)) is not None]
    stamped.sort(key=lambda item: (-item[0], item[1]))
    return stamped[:limit]


def _listdir(folder: str, agent: str, scan: Scan) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        scan.skipped.append(Skipped(agent, folder, f"unreadable ({exc.strerror})"))
        return []


# ---------------------------------------------------------------- each agent


def _claude_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    folder, how = claude_dir(env)
    return [(os.path.join(folder, "projects"), how)]


def _claude_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    files = []
    for project in _listdir(root, "claude", scan):
        folder = os.path.join(root, project)
        if not os.path.isdir(folder):
            continue
        files.extend(os.path.join(folder, n) for n in _listdir(folder, "claude", scan)
                     if n.endswith(".jsonl") and not n.startswith("agent-"))
    for mtime, path in _newest_files(files):
        cwd = next((v["cwd"] for v in _first_json_lines(path, 20) if isinstance(v.get("cwd"), str)), None)
        yield Found("claude", cwd, path, mtime)


def _claude_matches(found: Found, directory: str) -> bool:
    """A transcript belongs to a project by its folder's name (the cwd it records may be a sub-folder)."""
    return os.path.basename(os.path.dirname(found.path)) == claude_project_folder(directory)


def _codex_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    folder, how = codex_dir(env)
    return [(os.path.join(folder, "sessions"), how), (os.path.join(folder, "archived_sessions"), how)]


def _codex_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    files = []
    for where, dirs, names in os.walk(root):
        dirs.sort()
        files.extend(os.path.join(where, n) for n in names if n.startswith("rollout-") and n.endswith(".jsonl"))
    for mtime, path in _newest_files(files):
        meta = next((v.get("payload") for v in _first_json_lines(path, 1) if v.get("type") == "session_meta"), None)
        cwd = meta.get("cwd") if isinstance(meta, dict) and isinstance(meta.get("cwd"), str) else None
        if cwd is None:
            scan.skipped.append(Skipped("codex", path, "no session_meta line with its cwd"))
            continue
        yield Found("codex", cwd, path, mtime)


def _gemini_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(os.path.join(home(env), ".gemini", "tmp"), "default")]


def _gemini_projects(env: Mapping[str, str]) -> dict[str, str]:
    """Gemini CLI's project folders by name: the SHA-256 of each project's path, or its short name in
    ``~/.gemini/projects.json``; both map to the project directory."""
    try:
        with open(os.path.join(home(env), ".gemini", "projects.json"), "rb") as handle:
            value = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return {}
    projects = value.get("projects") if isinstance(value, dict) else None
    found: dict[str, str] = {}
    for directory, name in (projects.items() if isinstance(projects, dict) else []):
        if isinstance(name, str):
            found[name] = directory
            found[hashlib.sha256(directory.encode()).hexdigest()] = directory
    return found


def _gemini_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    projects = _gemini_projects(env)
    files: list[str] = []
    owner: dict[str, str] = {}
    for project in _listdir(root, "gemini", scan):
        chats = os.path.join(root, project, "chats")
        for name in _listdir(chats, "gemini", scan):
            if name.startswith("session-") and name.endswith((".json", ".jsonl")):
                path = os.path.join(chats, name)
                files.append(path)
                owner[path] = project
    for mtime, path in _newest_files(files):
        yield Found("gemini", projects.get(owner[path]), path, mtime, title=owner[path])


def _gemini_matches(found: Found, directory: str) -> bool:
    return found.project == directory or found.title == hashlib.sha256(directory.encode()).hexdigest()


def _copilot_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(os.path.join(home(env), ".copilot", "session-state"), "default")]


def _copilot_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    files = []
    for name in _listdir(root, "copilot", scan):
        path = os.path.join(root, name)
        if os.path.isdir(path):
            journal = os.path.join(path, "events.jsonl")
            if os.path.isfile(journal):
                files.append(journal)
            else:
                scan.skipped.append(Skipped("copilot", path, "no events.jsonl (a session of an older CLI, or empty)"))
        elif name.endswith(".jsonl"):
            files.append(path)  # the older flat layout
    for mtime, path in _newest_files(files):
        cwd = None
        for value in _first_json_lines(path, 4):
            data = value.get("data") if isinstance(value.get("data"), dict) else {}
            context = data.get("context") if isinstance(data.get("context"), dict) else {}
            if isinstance(context.get("cwd"), str):
                cwd = context["cwd"]
                break
        yield Found("copilot", cwd, path, mtime)


def _task_roots(agent: str) -> Callable[[Mapping[str, str]], list[tuple[str, str]]]:
    def roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
        found = [(os.path.join(user, "globalStorage", EXTENSIONS[agent], "tasks"), how) for user, how in editor_user_dirs(env)]
        if agent == "cline":
            chosen = _env_dir(env, "CLINE_DIR")
            found.append((os.path.join(chosen or os.path.join(home(env), ".cline"), "data", "tasks"),
                          "$CLINE_DIR" if chosen else "default"))
            found.append((os.path.join(chosen or os.path.join(home(env), ".cline"), "data", "sessions"),
                          "$CLINE_DIR" if chosen else "default"))
        return found

    return roots


def task_project(folder: str) -> str | None:
    """A task's working directory: Roo's ``history_item.json`` ``workspace``, else the environment
    details of its first request (``# Current Working Directory (…)``)."""
    try:
        with open(os.path.join(folder, "history_item.json"), "rb") as handle:
            item = json.loads(handle.read(1 << 20))
        if isinstance(item, dict) and isinstance(item.get("workspace"), str):
            return item["workspace"]
    except (OSError, ValueError):
        pass
    for name in ("api_conversation_history.json", "ui_messages.json"):
        match = _CLINE_CWD.search(_head(os.path.join(folder, name)).decode("utf-8", "ignore").replace("\\n", "\n"))
        if match:
            return match.group(1).strip()
    return None


def _task_sessions(agent: str) -> Callable[[str, Mapping[str, str], Scan], Iterator[Found]]:
    def sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
        if os.path.basename(root) == "sessions":  # the Cline CLI: <id>/<id>.messages.json
            files = [os.path.join(root, n, f"{n}.messages.json") for n in _listdir(root, agent, scan)]
            for mtime, path in _newest_files([f for f in files if os.path.isfile(f)]):
                yield Found(agent, None, path, mtime)
            return
        folders = []
        for name in _listdir(root, agent, scan):
            folder = os.path.join(root, name)
            files = [os.path.join(folder, f) for f in ("ui_messages.json", "api_conversation_history.json")]
            present = [f for f in files if os.path.isfile(f)]
            if present:
                folders.append((max(m for f in present if (m := _mtime(f)) is not None), folder))
            elif os.path.isdir(folder):
                scan.skipped.append(Skipped(agent, folder, "a task folder without ui_messages.json or api_conversation_history.json"))
        folders.sort(key=lambda item: (-item[0], item[1]))
        for mtime, folder in folders[:SCAN_LIMIT]:
            yield Found(agent, task_project(folder), folder, mtime)

    return sessions


def _opencode_roots(folder: str) -> Callable[[Mapping[str, str]], list[tuple[str, str]]]:
    def roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
        base, how = data_home(env)
        return [(os.path.join(base, folder), how)]

    return roots


def _database_sessions(agent: str, database: str, scan: Scan) -> Iterator[Found]:
    from tokenbox.core.sources.database import query, tables  # start-up: sqlite3 loads only when a database is there

    if not {"session", "message", "part"} <= tables(database):
        scan.skipped.append(Skipped(agent, database, "not an OpenCode database (no session, message and part tables)"))
        return
    try:
        rows = query(database, "SELECT id, directory, title, time_updated FROM session WHERE parent_id IS NULL "
                               "ORDER BY time_updated DESC, id DESC LIMIT ?", [SCAN_LIMIT])
    except Exception as exc:  # a database being rewritten: skipped, said why
        scan.skipped.append(Skipped(agent, database, f"unreadable ({exc})"))
        return
    for ident, directory, title, updated in rows:
        yield Found(agent, directory if isinstance(directory, str) else None, f"{database}#{ident}",
                    int(updated) * 1_000_000 if isinstance(updated, int) else 0, title if isinstance(title, str) else None)


def _opencode_sessions(agent: str) -> Callable[[str, Mapping[str, str], Scan], Iterator[Found]]:
    def sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
        for name in _listdir(root, agent, scan):
            if name.endswith(".db") and (name.startswith(("opencode", "kilo"))):
                yield from _database_sessions(agent, os.path.join(root, name), scan)
        storage = os.path.join(root, "storage", "session")
        for project in _listdir(storage, agent, scan):
            for name in _listdir(os.path.join(storage, project), agent, scan):
                path = os.path.join(storage, project, name)
                try:
                    with open(path, "rb") as handle:
                        info = json.loads(handle.read(1 << 20))
                except (OSError, ValueError):
                    scan.skipped.append(Skipped(agent, path, "not a readable session file"))
                    continue
                if not isinstance(info, dict) or info.get("parentID") or not isinstance(info.get("id"), str):
                    continue
                messages = os.path.join(root, "storage", "message", info["id"])
                mtime = _mtime(messages) or _mtime(path) or 0
                yield Found(agent, info.get("directory") if isinstance(info.get("directory"), str) else None,
                            messages if os.path.isdir(messages) else path, mtime,
                            info.get("title") if isinstance(info.get("title"), str) else None)

    return sessions


def _kilo_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    """Kilo Code before 5.x keeps Cline's task folders; 5.x and the Kilo CLI OpenCode's database (``kilo/``)."""
    if os.path.basename(root) == "kilo":
        return _opencode_sessions("kilo")(root, env, scan)
    return _task_sessions("kilo")(root, env, scan)


def _aider_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    chosen = env.get("AIDER_CHAT_HISTORY_FILE", "").strip()
    return [(os.path.abspath(os.path.expanduser(chosen)), "$AIDER_CHAT_HISTORY_FILE")] if chosen else []


def _aider_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    mtime = _mtime(root)
    if mtime is not None:
        yield Found("aider", os.path.dirname(root), root, mtime)


def aider_history(directory: str, env: Mapping[str, str]) -> str | None:
    """The chat history of the project in ``directory``: ``$AIDER_CHAT_HISTORY_FILE``, else
    ``.aider.chat.history.md`` in the directory or in its git root (where aider writes it)."""
    chosen = env.get("AIDER_CHAT_HISTORY_FILE", "").strip()
    if chosen:
        path = os.path.join(directory, os.path.expanduser(chosen))
        return path if os.path.isfile(path) else None
    folder = directory
    while True:
        candidate = os.path.join(folder, ".aider.chat.history.md")
        if os.path.isfile(candidate):
            return candidate
        if os.path.exists(os.path.join(folder, ".git")) or os.path.dirname(folder) == folder:
            return None
        folder = os.path.dirname(folder)


def _capture_roots(env: Mapping[str, str]) -> list[tuple[str, str]]:
    return [captures_dir(env)]


def _capture_sessions(root: str, env: Mapping[str, str], scan: Scan) -> Iterator[Found]:
    names = [os.path.join(root, n) for n in _listdir(root, "record", scan) if n.endswith(".jsonl")]
    for mtime, path in _newest_files(names):
        yield Found("record", None, path, mtime)


AGENTS: tuple[Agent, ...] = (
    Agent("claude", "Claude Code", _claude_roots, _claude_sessions),
    Agent("codex", "Codex CLI", _codex_roots, _codex_sessions),
    Agent("gemini", "Gemini CLI", _gemini_roots, _gemini_sessions),
    Agent("copilot", "GitHub Copilot CLI", _copilot_roots, _copilot_sessions),
    Agent("cline", "Cline", _task_roots("cline"), _task_sessions("cline")),
    Agent("roo", "Roo Code", _task_roots("roo"), _task_sessions("roo")),
    Agent("kilo", "Kilo Code", lambda env: [*_task_roots("kilo")(env), *_opencode_roots("kilo")(env)], _kilo_sessions),
    Agent("opencode", "OpenCode", _opencode_roots("opencode"), _opencode_sessions("opencode")),
    Agent("aider", "aider", _aider_roots, _aider_sessions),
)
NAMES: tuple[str, ...] = tuple(a.name for a in AGENTS)
CAPTURES = Agent("record", "tokenbox record", _capture_roots, _capture_sessions)  # capture logs: no project to follow
SOURCES: tuple[Agent, ...] = (*AGENTS, CAPTURES)
_MATCHES: dict[str, Callable[[Found, str], bool]] = {"claude": _claude_matches, "gemini": _gemini_matches}


def agent(name: str) -> Agent:
    """The row of ``name`` (one of ``NAMES``)."""
    for row in AGENTS:
        if row.name == name:
            return row
    raise DiscoveryError(f"unknown agent {name!r} (known agents: {', '.join(NAMES)})")


def scan(names: tuple[str, ...] | None = None, *, environ: Mapping[str, str] | None = None,
         rows: tuple[Agent, ...] = AGENTS) -> Scan:
    """The recent sessions of every agent of ``rows`` (or of ``names``), newest first, with what was skipped
    and where each agent's row looked (a root that does not exist is listed as looked at, not as skipped)."""
    env = os.environ if environ is None else environ
    result = Scan()
    for row in rows:
        if names is not None and row.name not in names:
            continue
        for root, how in row.roots(env):
            result.looked.append((row.name, root, how))
            if not os.path.exists(root):
                continue
            result.found.extend(row.sessions(root, env, result))
    if names is None or "aider" in names:  # aider keeps its history in the project: the current one
        path = aider_history(os.getcwd(), env)
        if path is not None and not any(f.path == path for f in result.found):
            result.found.append(Found("aider", os.path.dirname(path), path, _mtime(path) or 0))
    result.found.sort(key=lambda f: (-f.mtime_ns, f.agent, f.path))
    return result


def _same(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def belongs(found: Found, directory: str) -> bool:
    """Whether a session ran in the project ``directory`` (or in a folder inside it)."""
    match = _MATCHES.get(found.agent)
    if match is not None and match(found, directory):
        return True
    if found.project is None:
        return False
    return _same(found.project, directory) or os.path.realpath(directory).startswith(os.path.realpath(found.project) + os.sep)


def newest(name: str, project: str | None = None, *, environ: Mapping[str, str] | None = None) -> Found:
    """The newest session of agent ``name`` for the project ``project`` (default: the current directory)."""
    env = os.environ if environ is None else environ
    row = agent(name)
    directory = os.path.abspath(os.path.expanduser(project)) if project else os.getcwd()
    if row.name == "aider":
        path = aider_history(directory, env)
        if path is None:
            raise DiscoveryError(f"no aider chat history for {directory} (run aider there first, or open the file: "
                                 "tokenbox-tui .aider.chat.history.md)")
        return Found("aider", directory, path, _mtime(path) or 0)
    result = scan((row.name,), environ=env)
    for found in result.found:
        if belongs(found, directory):
            return found
    places = ", ".join(root for agent_name, root, _ in result.looked if os.path.exists(root)) or "nowhere that exists"
    count = len(result.found)
    raise DiscoveryError(f"no {row.label} session for {directory} among the {count} found in {places} "
                         f"(run {row.label} in that directory first, or open a session: tokenbox-tui PATH)")
