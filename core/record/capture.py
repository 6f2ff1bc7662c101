"""The capture log: which requests are captured, how a body is stored against an earlier one, writing.

Pure logic and file I/O, no aiohttp. The format, and what the writer shares with the reader
(``APIS``, ``message_key``, ``rebuild``), is ``tokenbox.core.sources.readers.capture_format``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections import deque
from typing import Any

from tokenbox.core.model.errors import ConfigError
from tokenbox.core.sources.readers.capture_format import FORMAT_KEY, FORMAT_VERSION, message_key

# Request headers worth keeping (they change what the model sees); every other header may carry a
# credential and is never written.
SAFE_HEADERS = ("anthropic-version", "anthropic-beta", "openai-beta", "user-agent")
# Body keys (outside the message list) whose value is a credential or may hold one: Anthropic's
# ``mcp_servers[].authorization_token``, the Responses API's MCP tool ``headers`` / ``authorization``.
SECRET_KEYS = frozenset(
    {
        "authorization",
        "authorization_token",
        "headers",
        "api_key",
        "apikey",
        "x-api-key",
        "access_token",
        "refresh_token",
        "client_secret",
        "password",
        "secret",
        "cookie",
        "set-cookie",
        "token",
    }
)
REDACTED = "[redacted]"
# How many earlier bodies a new request is compared with to find its base (bounded memory and time).
BASE_CANDIDATES = 8
_DIR_MODE = 0o700
_FILE_MODE = 0o600


def redact(value: Any) -> Any:
    """``value`` with every credential-bearing key's value replaced by ``REDACTED`` (a new object)."""
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and k.lower() in SECRET_KEYS else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def safe_body(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body as stored: credential fields redacted everywhere but in the messages (which are content)."""
    key = message_key(api, body)
    return {k: v if k == key else redact(v) for k, v in body.items()}


def _shared_prefix(a: list[Any], b: list[Any]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        count += 1
    return count


class Deltas:
    """Chooses, for each new body, the recent body it shares most with, and encodes it against that.

    Keeps the last ``BASE_CANDIDATES`` bodies per API; a body is stored whole when nothing recent
    shares its message prefix or any top-level field.
    """

    def __init__(self) -> None:
        self._recent: dict[str, deque[tuple[int, dict[str, Any]]]] = {}

    def encode(self, record_id: int, api: str, body: dict[str, Any]) -> dict[str, Any]:
        """``{"body": …}`` or ``{"delta": …}`` for ``body``, and remember it as ``record_id``."""
        key = message_key(api, body)
        recent = self._recent.setdefault(api, deque(maxlen=BASE_CANDIDATES))
        items = body.get(key)
        best: tuple[int, int, int, dict[str, Any]] | None = None  # (shared messages, shared fields, base id, base)
        for base_id, base in recent:
            listed = isinstance(items, list) and isinstance(base.get(key), list)
            fields = sum(1 for k, v in body.items() if (k != key or not listed) and k in base and base[k] == v)
            shared = _shared_prefix(base[key], items) if listed else 0  # type: ignore[arg-type]
            if (shared or fields) and (best is None or (shared, fields, base_id) > best[:3]):
                best = (shared, fields, base_id, base)
        recent.append((record_id, body))
        if best is None:
            return {"body": body}
        shared, _, base_id, base = best
        listed = isinstance(items, list) and isinstance(base.get(key), list)
        delta: dict[str, Any] = {"base": base_id}
        if listed:
            delta["keep"] = shared
            delta["append"] = items[shared:]  # type: ignore[index]
        elif isinstance(items, list):
            delta["keep"] = 0
            delta["append"] = items
        ordinary = key if not isinstance(items, list) else None
        changed = {k: v for k, v in body.items() if (k != key or k == ordinary) and (k not in base or base[k] != v)}
        if changed:
            delta["set"] = changed
        removed = [k for k in base if k not in body]
        if removed:
            delta["unset"] = removed
        return {"delta": delta}


    def forget(self, record_id: int) -> None:
        """Drop ``record_id`` from the candidates (its body was not written)."""
        for recent in self._recent.values():
            for entry in list(recent):
                if entry[0] == record_id:
                    recent.remove(entry)


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def state_dir() -> str:
    """``$XDG_STATE_HOME/tokenbox/captures`` (``~/.local/state`` when unset)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "tokenbox", "captures")


def new_capture_path() -> str:
    """A fresh file name in the captures folder (the folder is made 0700)."""
    folder = state_dir()
    os.makedirs(folder, mode=_DIR_MODE, exist_ok=True)
    os.chmod(folder, _DIR_MODE)  # makedirs honours the umask, and the folder may predate us
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return os.path.join(folder, f"capture-{stamp}-{os.getpid()}.jsonl")


def encode_line(record: dict[str, Any]) -> bytes:
    """One record as a complete JSON line (lone surrogates in a body fall back to ASCII escapes)."""
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


class CaptureWriter:
    """Appends records to a new capture file (0600), one ``write`` per complete line, unbuffered."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, mode=_DIR_MODE, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), _FILE_MODE)
        except FileExistsError:
            raise ConfigError("the capture file already exists", "name a new file with --out", path) from None
        except OSError as exc:
            raise ConfigError(f"cannot create the capture file: {exc.strerror}", "check the folder and its permissions", path) from None
        os.fchmod(self._fd, _FILE_MODE)
        self._next_id = 1
        self._deltas = Deltas()

    def start(self, upstream: str, listen: str) -> None:
        """The first line: where the proxy listens and what it forwards to."""
        self._write({FORMAT_KEY: FORMAT_VERSION, "kind": "start", "upstream": upstream, "listen": listen, "started": now()})

    def request(self, method: str, path: str, api: str, headers: dict[str, str], body: Any, body_bytes: int) -> int:
        """Record a captured request; returns its id (for ``response``)."""
        record_id = self._next_id
        self._next_id += 1
        record: dict[str, Any] = {
            FORMAT_KEY: FORMAT_VERSION,
            "kind": "request",
            "id": record_id,
            "time": now(),
            "method": method,
            "path": path,
            "api": api,
            "headers": headers,
        }
        line = None
        if isinstance(body, dict):
            try:
                line = encode_line({**record, **self._deltas.encode(record_id, api, safe_body(api, body))})
            except RecursionError:
                self._deltas.forget(record_id)  # never a base: it is not in the file
                record["body_error"] = "the body is nested too deeply to store"
        else:
            record["body_error"] = "the body is not a JSON object"
        if line is None:
            record["body_bytes"] = body_bytes
            line = encode_line(record)
        self._append(line)
        return record_id

    def response(self, record_id: int, **fields: Any) -> None:
        """Record how request ``record_id`` ended (status, model, usage, error, …)."""
        self._write({FORMAT_KEY: FORMAT_VERSION, "kind": "response", "id": record_id, **fields})

    def _write(self, record: dict[str, Any]) -> None:
        self._append(encode_line(record))

    def _append(self, line: bytes) -> None:
        data = memoryview(line)
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def close(self) -> None:
        """Close the file; a capture that never started (nothing written) is removed."""
        if self._fd >= 0:
            if self._next_id == 1 and os.fstat(self._fd).st_size == 0:
                os.unlink(self.path)
            os.close(self._fd)
            self._fd = -1
