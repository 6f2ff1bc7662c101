"""The API inside an agent's loop (README, "Inside an agent's loop"): sessions from plain data, and a log the TUI follows.

``session_from_dict(mapping)`` validates a mapping exactly as a session file is validated (the same
presets, rules and typed errors); a position is the path to the value, ``<dict>:sections[2].priority``,
since a mapping has no lines. ``SessionLog(path).append(session)`` adds one complete JSON line per
call, safe from several threads and processes (one ``write`` on an ``O_APPEND`` descriptor under an
exclusive ``flock``), so ``tokenbox-tui path`` can follow the agent turn by turn::

    from tokenbox.core import Engine, SessionLog, session_from_dict
    session = session_from_dict({"tokenbox": 1, "tokenizer": "o200k_base", "sections": [...]})
    plan = Engine().plan(session)
    SessionLog("agent.jsonl").append(session)
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.parse.schema import session_from_node
from tokenbox.core.sources.export import session_document

DICT = "<dict>"
_MAX_DEPTH = 64


class _Paths:
    """Numbers stand in for lines while validating; each number is the path of one value."""

    def __init__(self) -> None:
        self.paths: list[str] = [""]

    def node(self, value: Any, path: str, depth: int = 0) -> Node:
        number = len(self.paths)
        self.paths.append(path)
        if depth > _MAX_DEPTH:
            raise SessionError("the mapping is nested too deeply", f"keep it under {_MAX_DEPTH} levels", DICT + ":" + path)
        if isinstance(value, Mapping):
            items = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SessionError(f"key {key!r} is not a string", "use string keys", f"{DICT}:{path or '(top)'}")
                items[key] = self.node(item, f"{path}.{key}" if path else key, depth + 1)
            return Node(items, number, 1)
        if isinstance(value, (list, tuple)):
            return Node([self.node(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)], number, 1)
        if value is None or isinstance(value, (str, bool, int)):
            return Node(value, number, 1)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise SessionError(f"{value} is not a finite number", "use a finite number", f"{DICT}:{path}")
            return Node(value, number, 1)
        raise SessionError(
            f"a value of type {type(value).__name__} is not allowed", "use JSON values: dict, list, str, int, float, bool, None",
            f"{DICT}:{path}",
        )

    def where(self, error: SessionError) -> SessionError:
        """``error`` with its position written as the path of the value it is about."""
        path = self.paths[error.line] if error.line is not None and 0 < error.line < len(self.paths) else ""
        return type(error)(error.problem, error.remedy, f"{DICT}:{path}" if path else DICT, field=error.field)


def session_from_dict(mapping: Mapping[str, Any]) -> Session:
    """A validated ``Session`` from plain data in the session-file format (README, "Session files")."""
    if not isinstance(mapping, Mapping):
        raise SessionError(f"a session is a mapping, not {type(mapping).__name__}", "pass a dict with `tokenbox: 1`", DICT)
    paths = _Paths()
    root = paths.node(mapping, "")
    try:
        session = session_from_node(root, DICT)
    except SessionError as exc:
        raise paths.where(exc) from None
    # numbers that stood in for lines mean nothing to a reader of the session
    sections = tuple(replace(s, line=0, col=0) for s in session.sections)
    return replace(session, sections=sections, line=1, positions={})


def session_dict(session: Session | Mapping[str, Any]) -> dict[str, Any]:
    """The session as plain data in the file format (a mapping is validated first)."""
    if isinstance(session, Mapping):
        session_from_dict(session)
        return dict(session)
    if not isinstance(session, Session):
        raise SessionError(f"cannot log a {type(session).__name__}", "append a Session or a session mapping", DICT)
    return session_document(session)


class SessionLog:
    """A ``.jsonl`` turn log an agent appends to and ``tokenbox-tui`` follows (one turn per line)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def append(self, session: Session | Mapping[str, Any]) -> None:
        """Append ``session`` as one complete line; never a torn or interleaved line."""
        line = json.dumps(session_dict(session), ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _lock_file(fd)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)  # closing releases the lock


def _lock_file(fd: int) -> None:
    if fcntl is None:  # pragma: no cover - not on POSIX: O_APPEND writes of one line still do not interleave
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
