"""Reading session files: bytes with the size limit and the read-only open, UTF-8 text with positioned
decoding errors, and the checks on paths and sizes given through the API.
"""

from __future__ import annotations

import os
import stat

from tokenbox.core.model.errors import ConfigError, FileTooLarge, SessionError

# The size limits when none is given (``--max-file-size``, ``TOKENBOX_MAX_FILE_SIZE``, the config file's
# ``max_file_size``; a limit given is the limit of every read). A file read whole is held whole, decoded and
# parsed: 64 MiB. A log read from the top a block at a time (a Claude Code transcript: ``FileTail.read(each)``)
# holds one block, and what its reader keeps of it is bounded by the session (about the file's size once it
# has compacted, a few times it while it never has): 512 MiB, so that a long session with 1M-token windows,
# compacted a few times past 64 MiB, is still read (issue 27) while a runaway file is still refused.
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_STREAMED_BYTES = 512 * 1024 * 1024


def whole_limit(max_bytes: int | None) -> int:
    """The limit of a read that holds the file whole: ``max_bytes``, or the default when none was given."""
    return DEFAULT_MAX_FILE_BYTES if max_bytes is None else max_bytes


def streamed_limit(max_bytes: int | None) -> int:
    """The limit of a read from the top a block at a time: ``max_bytes``, or its default when none was given."""
    return DEFAULT_MAX_STREAMED_BYTES if max_bytes is None else max_bytes


def read_text(path: str, max_bytes: int | None = None) -> str:
    """Read ``path`` as UTF-8 text, refusing directories, oversized and binary files before parsing."""
    return decode_text(read_bytes(path, max_bytes), path, partial_tail=path.lower().endswith(".jsonl"))


def read_bytes(path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` as ``read_text`` reads them (same refusals), before decoding; ``max_bytes``:
    the limit (``None``: ``DEFAULT_MAX_FILE_BYTES``)."""
    max_bytes = whole_limit(max_bytes)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SessionError("no such file", "check the path", path) from None
    except OSError as exc:
        raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
    if stat.S_ISDIR(info.st_mode):
        raise SessionError("is a directory", "name a session file inside it", path)
    regular = stat.S_ISREG(info.st_mode)
    if regular and info.st_size > max_bytes:
        raise FileTooLarge(
            f"file is {info.st_size} bytes, over the {max_bytes}-byte limit",
            "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
            path,
        )
    try:
        fd = open_read_only(path)
        try:
            data = _read_at_most(fd, max_bytes + 1, info.st_size)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
    if len(data) > max_bytes:
        raise FileTooLarge(
            f"more than {max_bytes} bytes" + (" (the file grew while being read)" if regular else ""),
            "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
            path,
        )
    if not data and not regular:
        raise SessionError("nothing to read (not a regular file)", "pass the path of a session file", path)
    return data


_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_read_only(path: str) -> int:
    """A blocking, read-only descriptor of ``path`` (tokenbox never writes a session file); ``OSError``
    as ``os.open`` raises it. O_NONBLOCK only keeps the open of a named pipe from waiting for a writer;
    reads then block as usual (and end at once when none is there)."""
    fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if _O_NONBLOCK:
        try:
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            raise
    return fd
_READ_CHUNK = 1 << 20


def _read_at_most(fd: int, limit: int, size_hint: int) -> bytes:
    """Up to ``limit`` bytes of ``fd``, in one read when ``size_hint`` (the size ``stat`` saw) is right.

    Memory follows what is actually there, never the limit: a small file costs little however high
    ``--max-file-size`` is set, and pipes and devices (size 0) are read in chunks until they end.
    """
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(limit - total, max(size_hint + 1 - total, _READ_CHUNK)))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decode_text(data: bytes, path: str, *, partial_tail: bool = False) -> str:
    """Decode UTF-8 (a leading BOM is skipped); NUL bytes and invalid UTF-8 are errors with a position.

    With ``partial_tail`` (a JSON-lines log an agent appends to), a last line cut inside a multi-byte
    character is still being written: it is left out instead of being an encoding error.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, or UTF-32 LE (same start)
        raise SessionError("UTF-16 or UTF-32 text (a byte-order mark)", "save the file as UTF-8", path, 1, 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _byte_position(data, nul)
        raise SessionError("binary data (a NUL byte)", "a session file is UTF-8 text", path, line, col)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if partial_tail and exc.end == len(data) and exc.reason == "unexpected end of data":
            return data[: data.rfind(b"\n") + 1].decode("utf-8")  # everything before exc.start is valid
        line, col = _byte_position(data, exc.start)
        raise SessionError(
            f"invalid UTF-8 (byte 0x{data[exc.start]:02x})", "save the file as UTF-8", path, line, col
        ) from None


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    col = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, col


def path_argument(path: object) -> str:
    """A path given through the API; anything else is a typed error, not a raw TypeError."""
    try:
        text = os.fspath(path)  # type: ignore[arg-type]
    except TypeError:
        raise SessionError(f"a session path must be a str or os.PathLike, not {type(path).__name__}",
                           "pass the file's path") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise SessionError("the session path is empty or holds a NUL character", "pass the file's path")
    return text


def size_argument(max_bytes: object) -> None:
    """``max_bytes`` through the API: ``None`` (the defaults) or a positive whole number, else a typed error
    (not a 0-byte limit)."""
    if max_bytes is None:
        return
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ConfigError(f"max_bytes={max_bytes!r:.40} is not a positive whole number of bytes",
                          "leave it out for the default, or pass e.g. max_bytes=64 * 1024 * 1024")


def turn_argument(turn: object) -> None:
    """``turn`` through the API: ``None`` or a whole number (1-based, negative from the newest)."""
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise SessionError(f"turn={turn!r:.40} is not a whole number", "pass e.g. turn=1, or -1 for the newest")

