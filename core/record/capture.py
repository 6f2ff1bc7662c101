"""The capture log: which requests are captured, how a body is stored against an earlier one, writing.

Pure logic and file I/O, no aiohttp. The format, and what the writer shares with the reader
(``APIS``, ``message_key``, ``rebuild``), is ``tokenbox.core.sources.readers.capture_format``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from tokenbox.core.model.errors import ConfigError
from tokenbox.core.record.redact import REDACTED, redact  # noqa: F401 - REDACTED is part of this module's API
from tokenbox.core.sources.discovery import captures_dir
from tokenbox.core.sources.readers.capture_format import FORMAT_KEY, FORMAT_VERSION, message_key

# Request headers worth keeping (they change what the model sees); every other header may carry a
# credential and is never written.
SAFE_HEADERS = ("anthropic-version", "anthropic-beta", "openai-beta", "user-agent")
# How many recent requests' fields are kept to encode a new body against (the index of conversations
# below keeps pointing at them); the index itself holds at most ``INDEX_ENTRIES`` message prefixes.
BASE_RECORDS = 4096
INDEX_ENTRIES = 1 << 17
_DIR_MODE = 0o700
_FILE_MODE = 0o600


def safe_body(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body as stored: credentials redacted everywhere but in the messages (which are content)."""
    key = message_key(api, body)
    return {k: v if k == key else redact(v) for k, v in body.items()}


def digest(value: Any) -> bytes:
    """A 16-byte digest of a JSON value (equal values written alike have equal digests)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _chain(previous: bytes, item: bytes) -> bytes:
    return hashlib.blake2b(previous + item, digest_size=16).digest()


_LISTED = b""  # the field digest that stands for "the message list was a list"
_NO_FRAME = b"-"


class Deltas:
    """Chooses, for each new body, the earlier body of its conversation it shares most with, and encodes
    it against that one.

    Bodies are not kept: each is remembered by digests — of its top-level fields, and of every prefix
    of its message list — so memory stays a few dozen bytes per distinct message prefix, however many
    conversations interleave. A new body is stored against the latest earlier body with the longest
    shared message prefix and the same *frame* (system prompt, tools, instructions); failing that,
    against the longest shared prefix under another frame (then more messages are shared); failing
    that, against the latest body with the same frame (a new conversation of the same agent shares
    its system prompt and tools). Otherwise it is stored whole.
    """

    _FRAME_KEYS = ("system", "tools", "instructions")

    def __init__(self) -> None:
        # (api, frame digest or b"" for any frame, digest of the first k messages) -> latest record id
        self._index: OrderedDict[tuple[str, bytes, bytes], int] = OrderedDict()
        self._fields: OrderedDict[int, dict[str, bytes]] = OrderedDict()  # record id -> its field digests
        self.lookups = 0  # index look-ups made: one per message prefix, whatever the number of conversations

    def encode(self, record_id: int, api: str, body: dict[str, Any]) -> dict[str, Any]:
        """``{"body": …}`` or ``{"delta": …}`` for ``body``, and remember it as ``record_id``."""
        key = message_key(api, body)
        items = body.get(key)
        listed = isinstance(items, list)
        fields = {k: digest(v) for k, v in body.items() if not (k == key and listed)}
        framed = [fields[k] for k in self._FRAME_KEYS if k in fields]
        frame = digest([k for k in self._FRAME_KEYS if k in fields] + [f.hex() for f in framed]) if framed else _NO_FRAME
        chains = [b""]  # chains[k]: the digest of the first k messages
        if listed:
            for item in items:  # type: ignore[union-attr]
                chains.append(_chain(chains[-1], digest(item)))
        base_id, shared = self._find(api, frame, chains)
        self._remember(record_id, api, frame, chains, {**fields, key: _LISTED} if listed else fields)
        if base_id is None:
            return {"body": body}
        base = self._fields[base_id]
        delta: dict[str, Any] = {"base": base_id}
        if listed:
            delta["keep"] = shared
            delta["append"] = items[shared:]  # type: ignore[index]
        changed = {k: body[k] for k, d in fields.items() if base.get(k) != d}
        if changed:
            delta["set"] = changed
        removed = [k for k in base if k not in body]
        if removed:
            delta["unset"] = removed
        return {"delta": delta}

    def _find(self, api: str, frame: bytes, chains: list[bytes]) -> tuple[int | None, int]:
        """The base for a body with these prefix digests: ``(record id, messages shared)`` or ``(None, 0)``."""
        framed = self._longest(api, frame, chains, 0)
        least = framed[1] + 1 if framed is not None else 1
        other = self._longest(api, b"", chains, least)
        best = other if other is not None else framed
        return best if best is not None else (None, 0)

    def _longest(self, api: str, frame: bytes, chains: list[bytes], least: int) -> tuple[int, int] | None:
        for count in range(len(chains) - 1, least - 1, -1):
            self.lookups += 1
            record = self._index.get((api, frame, chains[count]))
            if record is not None and record in self._fields:
                return record, count
        return None

    def _remember(self, record_id: int, api: str, frame: bytes, chains: list[bytes], fields: dict[str, bytes]) -> None:
        index = self._index
        entries = [(api, frame, chain) for chain in chains]
        entries += [(api, b"", chain) for chain in chains[1:]]
        for entry in entries:
            index[entry] = record_id
            index.move_to_end(entry)
        while len(index) > INDEX_ENTRIES:
            index.popitem(last=False)
        self._fields[record_id] = fields
        while len(self._fields) > BASE_RECORDS:
            self._fields.popitem(last=False)

    def forget(self, record_id: int) -> None:
        """Drop ``record_id`` from the candidates (its body was not written)."""
        self._fields.pop(record_id, None)

    def reset(self) -> None:
        """Forget every body (a new capture file holds none of them)."""
        self._index.clear()
        self._fields.clear()


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def state_dir() -> str:
    """``$XDG_STATE_HOME/tokenbox/captures`` (``~/.local/state`` when unset): ``discovery.captures_dir``."""
    return captures_dir(os.environ)[0]


def new_capture_path() -> str:
    """A fresh file name in the captures folder (the folder is made 0700)."""
    folder = state_dir()
    os.makedirs(folder, mode=_DIR_MODE, exist_ok=True)
    os.chmod(folder, _DIR_MODE)  # makedirs honours the umask, and the folder may predate us
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return os.path.join(folder, f"capture-{stamp}-{os.getpid()}.jsonl")


def _finite(value: Any) -> Any:
    """``value`` with every float JSON cannot hold (NaN, ±Infinity) as the string Python's JSON reads it as."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def encode_line(record: dict[str, Any]) -> bytes:
    """One record as a complete JSON line that a strict JSON reader accepts.

    Lone surrogates in a body fall back to ASCII escapes; NaN and ±Infinity (which a request body may
    hold, and strict JSON cannot) are stored as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
    """
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a float JSON cannot hold
        return encode_line(_finite(record))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


def parse_body(data: bytes) -> Any:
    """A request body as JSON, with NaN and ±Infinity read as strings (as ``encode_line`` would store them)."""
    return json.loads(data, parse_constant=str, parse_float=_float)


def _float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text  # 1e999


Write = Callable[[int, "bytes | memoryview"], int]


class CaptureWriter:
    """Appends records to a new capture file (0600): each record one complete line, written whole or not at all.

    A write that fails part-way (a full disk, a file-size limit) is cut back to where the record began,
    so the file never holds half a record and the next record starts on a fresh line; when even that
    fails, the next record begins with a newline. Before each record the file is checked: a capture
    deleted or rotated away (renamed, replaced) while the proxy runs is started again — at its path
    when that is free, else beside it — with a new ``start`` line, and ``notice`` says so. Thread-safe:
    one lock around each record. ``write`` is ``os.write`` (tests inject a failing one).
    """

    def __init__(self, path: str, *, write: Write = os.write, notice: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.notice = notice
        self._write_bytes = write
        self._lock = threading.Lock()
        self._fd = self._create(path)
        self._next_id = 1
        self._deltas = Deltas()
        self._start: dict[str, Any] | None = None
        self._torn = False  # a failed write could not be cut back: start the next record on a new line
        self.reopened = 0

    @staticmethod
    def _create(path: str) -> int:
        folder = os.path.dirname(os.path.abspath(path))
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, mode=_DIR_MODE, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), _FILE_MODE)
        except FileExistsError:
            raise ConfigError("the capture file already exists", "name a new file with --out", path) from None
        except OSError as exc:
            raise ConfigError(f"cannot create the capture file: {exc.strerror}", "check the folder and its permissions", path) from None
        os.fchmod(fd, _FILE_MODE)
        return fd

    def start(self, upstream: str, listen: str) -> None:
        """The first line: where the proxy listens and what it forwards to."""
        self._start = {FORMAT_KEY: FORMAT_VERSION, "kind": "start", "upstream": upstream, "listen": listen, "started": now()}
        self._write(self._start)

    def next_id(self) -> int:
        """A new request id, taken when the request arrives (its record is written when its body has come)."""
        with self._lock:
            record_id = self._next_id
            self._next_id += 1
            return record_id

    def request(self, method: str, path: str, api: str, headers: dict[str, str], body: Any, body_bytes: int,
                *, record_id: int | None = None, body_error: str | None = None) -> int:
        """Record a captured request; returns its id (for ``response``).

        ``body`` is the parsed body (a dict is stored, by delta where it can be), or ``body_error`` says
        why it is not stored.
        """
        if record_id is None:
            record_id = self.next_id()
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
        with self._lock:
            self._check_file()
            line = None
            if body_error is None and isinstance(body, dict):
                try:
                    line = encode_line({**record, **self._deltas.encode(record_id, api, safe_body(api, body))})
                except RecursionError:
                    self._deltas.forget(record_id)  # never a base: it is not in the file
                    body_error = "the body is nested too deeply to store"
            elif body_error is None:
                body_error = "the body is not a JSON object"
            if line is None:
                line = encode_line({**record, "body_error": body_error, "body_bytes": body_bytes})
            try:
                self._append(line)
            except OSError:
                self._deltas.forget(record_id)
                raise
        return record_id

    def response(self, record_id: int, **fields: Any) -> None:
        """Record how request ``record_id`` ended (status, model, usage, error, …)."""
        self._write({FORMAT_KEY: FORMAT_VERSION, "kind": "response", "id": record_id, **fields})

    def _write(self, record: dict[str, Any]) -> None:
        line = encode_line(record)
        with self._lock:
            self._check_file()
            self._append(line)

    def _append(self, line: bytes) -> None:
        """Write ``line`` whole, or cut the file back to where it was and raise."""
        fd = self._fd
        if self._torn:
            line = b"\n" + line
        start = os.fstat(fd).st_size
        data = memoryview(line)
        try:
            while data:
                written = self._write_bytes(fd, data)
                data = data[written:]
        except OSError:
            try:
                os.ftruncate(fd, start)
                self._torn = False
            except OSError:
                self._torn = True
            raise
        self._torn = False

    def _check_file(self) -> None:
        """Start a new file when the capture was deleted or moved away while being written."""
        if self._fd < 0:
            return
        opened = os.fstat(self._fd)
        try:
            current = os.stat(self.path)
            same = (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)
        except FileNotFoundError:
            current, same = None, False
        if same and opened.st_nlink > 0:
            return
        old = self.path
        path = old
        if current is not None:  # another file took its name: write beside it
            stem, ext = os.path.splitext(old)
            number = 1
            while os.path.lexists(f"{stem}.{number}{ext}"):
                number += 1
            path = f"{stem}.{number}{ext}"
        try:
            fd = self._create(path)
        except ConfigError as exc:
            self._say(f"tokenbox record: the capture file {old} was deleted or moved and cannot be made again ({exc.problem})")
            return  # go on writing to the open file: nothing is lost that was not lost already
        os.close(self._fd)
        self._fd = fd
        self.path = path
        self.reopened += 1
        self._deltas.reset()  # the new file holds none of the earlier bodies
        self._torn = False
        what = "deleted" if current is None and opened.st_nlink == 0 else "moved away" if current is None else "replaced"
        self._say(f"tokenbox record: the capture file was {what}; capturing to {path} from here on")
        if self._start is not None:
            self._append(encode_line({**self._start, "restarted": now()}))

    def _say(self, message: str) -> None:
        if self.notice is not None:
            self.notice(message)

    def close(self) -> None:
        """Close the file; a capture that never started (nothing written) is removed."""
        with self._lock:
            if self._fd >= 0:
                if self._next_id == 1 and os.fstat(self._fd).st_size == 0:
                    with contextlib.suppress(OSError):
                        os.unlink(self.path)
                os.close(self._fd)
                self._fd = -1
