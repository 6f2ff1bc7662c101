"""Incremental reading of a file that an agent appends lines to (a turn log, a transcript).

``FileTail(path).read()`` returns only what was appended since the previous read, as complete lines
with their 1-based line numbers, plus the unterminated text after the last newline (an agent may
still be writing it). Between reads it remembers the file's identity (``st_dev``, ``st_ino``), the
byte offset just past the last complete line and a digest of that line. When any of them no longer
holds — the file was truncated, rotated, replaced (an editor's atomic save) or rewritten in place —
the next read starts again from the top and says so (``reset=True``): the caller drops what it built
from earlier reads. Files that are not regular (pipes, devices) are read whole every time.

Memory is bounded by what is new: a read holds the new bytes only (plus the last complete line, to
check its digest), never the whole file again. The size limit works as ``files.read_text``'s does
for what one read takes in: a file read from the top over ``max_bytes`` is refused with
``FileTooLarge``, and so is more than ``max_bytes`` appended between two reads; a log followed from
its start may grow past the limit (the limit is for one-shot reads, not for a tail). With no
``max_bytes`` given, a read that holds what it takes in is limited to ``files.DEFAULT_MAX_FILE_BYTES``
and a read from the top a block at a time (``read(each)``, which holds one block) to
``files.DEFAULT_MAX_STREAMED_BYTES``; a limit given is the limit of both. Decoding follows
``files.decode_text`` (UTF-8, a leading BOM skipped; NUL bytes and invalid UTF-8 are errors with
their line and column; a last line cut inside a character is left for later).

Typical use (a follower that is told the file changed)::

    tail = FileTail(path)
    while waiting_for_changes():
        chunk = tail.read()
        if chunk.reset:
            records.clear()
        for number, line in chunk.numbered():
            records.append(parse(number, line))
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tokenbox.core.model.errors import FileTooLarge, SessionError
from tokenbox.core.model.records import dataclass
from tokenbox.core.sources.files import decode_text, open_read_only, read_text, streamed_limit, whole_limit

_BOM = b"\xef\xbb\xbf"
_CHECKED = 4096  # bytes before the offset whose digest must match for a read to go on from there


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class TailRead:
    """What one ``FileTail.read`` found.

    ``lines`` are the new complete lines (without their ``"\\n"``), the first numbered
    ``first_line``; ``partial`` is the text after the last newline (``""`` when the file ends with
    one). ``reset`` is true when the file was read from the top: ``lines`` then start at line 1 and
    replace everything read before.
    """

    lines: list[str]
    first_line: int
    partial: str
    reset: bool

    def numbered(self) -> list[tuple[int, str]]:
        """``(line number, text)`` of each new complete line, 1-based."""
        return list(enumerate(self.lines, start=self.first_line))

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Head:
    """The first lines of a file as ``FileTail.head`` read them (``length`` bytes, digested)."""

    text: str
    identity: tuple[int, int]
    length: int
    digest: bytes


def _head_lines(data: bytes, wanted: int, *, at_end: bool) -> tuple[int, str] | None:
    """``(bytes used, text)`` of the first ``wanted`` non-blank lines of ``data`` (the whole of it when
    ``at_end`` and it has fewer), or ``None`` when ``data`` is too short to tell or does not decode."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data:
        return None
    base = len(_BOM) if data.startswith(_BOM) else 0
    seen = 0
    pos = base
    while seen < wanted:
        end = data.find(b"\n", pos)
        if end < 0:
            if not at_end:
                return None  # the line goes on past what was read
            end = len(data)
        if data[pos:end].strip():
            seen += 1
        pos = end + 1
        if end >= len(data):
            break
    used = min(pos, len(data))
    try:
        text = data[base:used].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return used, text.removesuffix("\n")


class FileTail:
    """Reads the lines appended to ``path`` since the previous ``read`` (see the module docstring).

    Public state, for callers and statistics: ``offset`` (bytes of complete lines consumed),
    ``line_count`` (complete lines so far), ``reads`` and ``resets`` (how many reads started from
    the top, the first one included), ``bytes_read`` (bytes read from the file in total).
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> None:
        self.path = os.fspath(path)
        self.max_bytes = whole_limit(max_bytes)  # what a read that holds what it takes in may take
        self.max_streamed = streamed_limit(max_bytes)  # a read from the top a block at a time (``read(each)``)
        self.offset = 0
        self.line_count = 0
        self.reads = 0
        self.resets = 0
        self.bytes_read = 0
        self._identity: tuple[int, int] | None = None
        self._last_start = 0  # byte offset of the last complete line
        self._last_digest = b""

    def forget(self) -> None:
        """Start from the top on the next read (as after a rotation)."""
        self._identity = None
        self.offset = self.line_count = self._last_start = 0
        self._last_digest = b""

    def read(self, each: Callable[[int, str], None] | None = None, *, raw: bool = False) -> TailRead:
        """The complete lines appended since the last read (all of them after a reset).

        With ``each``, the lines are handed to ``each(number, line)`` as they are decoded, a block of
        about ``STREAM_BLOCK`` bytes at a time, instead of being returned (``lines`` is then empty): a
        big file is never held decoded whole. A read that fails part-way (a bad byte further on) has
        handed over the lines before the failure and consumed nothing: the caller starts again.

        ``raw`` (with ``each``): each line is handed over as its bytes, not decoded (a JSON reader that
        decodes as it parses decodes once); ``each`` decodes what it needs with ``line.decode("utf-8")``.
        A ``UnicodeDecodeError`` out of ``each`` is the file's error, placed as a decoded read places it
        (its line and column). A block with a NUL byte is decoded first, as without ``raw`` (its error).
        """
        self.reads += 1
        path = self.path
        try:
            info = os.stat(path)
        except OSError:
            self.forget()
            read_text(path, self.max_bytes)  # raises the error a cold load gives
            raise  # pragma: no cover  (read_text raised)
        if not stat.S_ISREG(info.st_mode):
            self.forget()
            self.resets += 1
            text = read_text(path, self.max_bytes)  # directories, pipes, devices: as a cold load
            self.bytes_read += len(text)
            lines = text.split("\n")
            return TailRead(lines[:-1], 1, lines[-1], True)
        identity = (info.st_dev, info.st_ino)
        following = self._identity == identity and self.offset > 0 and info.st_size >= self.offset
        # The limit is for what one read takes in: a file read from the top, or what was appended since
        # the last read. A log followed from its start may grow past it (a tail is not a one-shot read).
        # A read from the top a block at a time holds one block: its own (larger) default limit.
        limit = self.max_streamed if each is not None and not following else self.max_bytes
        if info.st_size - (self.offset if following else 0) > limit:
            self.forget()
            size = f"{info.st_size - self.offset} bytes appended since the last read are" if following else f"file is {info.st_size} bytes,"
            raise FileTooLarge(
                f"{size} over the {limit}-byte limit",
                "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
                path,
            )
        try:
            fd = open_read_only(path)
        except OSError as exc:
            self.forget()
            raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != identity:  # replaced between stat and open
                identity = (opened.st_dev, opened.st_ino)
                info = opened
            lines_before = self.line_count
            data, start, reset = self._new_bytes(fd, identity, info.st_size, whole=each is None)
            hand = _handing(each, raw, path)
            if data is None:  # streamed from the top, a block at a time
                result = self._consume_blocks(fd, reset, identity, hand)  # type: ignore[arg-type]
            else:
                result = self._consume(data, start, reset, identity, hand)
            if self.line_count != lines_before or (reset and self.line_count):
                # What is checked next time: the last complete line and at least _CHECKED bytes
                # before the offset (a short last line alone is too easily the same after a rewrite).
                self._last_start = min(self._last_start, max(0, self.offset - _CHECKED))
                self._last_digest = _digest(_pread_all(fd, self._last_start, self.offset - self._last_start))
        except OSError as exc:
            self.forget()
            raise SessionError(f"cannot read: {exc.strerror}", "check the path and permissions", path) from None
        finally:
            os.close(fd)
        return result

    def head(self, lines: int, *, first_block: int = 1 << 16, limit: int = 1 << 23) -> Head | None:
        """The file's first ``lines`` non-blank lines (all of them, the unterminated last one included,
        when the file has fewer), read without consuming anything; with what identifies them (``Head.same``).

        ``None`` when they cannot be had cheaply and exactly as a whole read would give them: not a
        regular file, a UTF-16 byte-order mark, bytes that do not decode, or more than ``limit`` bytes
        before the last of them. The caller then reads the file as usual.
        """
        def first_lines(fd: int, info: os.stat_result) -> Head | None:
            # a file of any size: its first lines say what reads it and so which limit refuses it (a transcript
            # read a block at a time, or a log read whole), in that reader's words
            if not stat.S_ISREG(info.st_mode):
                return None
            size = first_block
            while True:
                data = _pread_all(fd, 0, min(size, limit))
                found = _head_lines(data, lines, at_end=len(data) < min(size, limit))
                if found is not None:
                    used, text = found
                    return Head(text, (info.st_dev, info.st_ino), used, _digest(data[:used]))
                if size >= limit:
                    return None
                size *= 4

        return _on_open(self.path, first_lines, None)

    def unchanged(self, head: Head) -> bool:
        """Whether the file is still the one ``head`` was read from, with the same first bytes."""

        def same(fd: int, info: os.stat_result) -> bool:
            if (info.st_dev, info.st_ino) != head.identity or info.st_size < head.length:
                return False
            return _digest(_pread_all(fd, 0, head.length)) == head.digest

        return _on_open(self.path, same, False)

    def _new_bytes(self, fd: int, identity: tuple[int, int], size: int, *, whole: bool = True) -> tuple[bytes | None, int, bool]:
        """The bytes to look at, where they start and whether this is a reset: from the last complete
        line (read again to check its digest) when the file is the same and did not shrink, else from
        the top (no reset when nothing had been consumed from this very file yet). Not ``whole``: a
        read from the top is left to the caller (``None``), to be read a block at a time."""
        same = self._identity == identity and size >= self.offset
        if same and self.offset > 0:
            data = _pread_all(fd, self._last_start, self.offset - self._last_start + self.max_bytes + 1)
            self.bytes_read += len(data)
            if _digest(data[: self.offset - self._last_start]) == self._last_digest:
                return data, self._last_start, False
        if not whole:
            return None, 0, not (same and self.offset == 0 and self.reads > 1)
        data = _pread_all(fd, 0, self.max_bytes + 1)
        self.bytes_read += len(data)
        return data, 0, not (same and self.offset == 0 and self.reads > 1)

    def _consume(
        self, data: bytes, start: int, reset: bool, identity: tuple[int, int], each: _Hand | None = None
    ) -> TailRead:
        path = self.path
        if len(data) - (self.offset - start if not reset and self.offset else 0) > self.max_bytes:
            self.forget()
            raise FileTooLarge(
                f"more than {self.max_bytes} bytes (the file grew while being read)",
                "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
                path,
            )
        if reset:
            self.resets += 1
            self.forget()
        if not self.offset:  # from the top
            if data.startswith((b"\xff\xfe", b"\xfe\xff")):
                decode_text(data[:4], path)  # raises the byte-order-mark error
            base = len(_BOM) if data.startswith(_BOM) else 0
            body = data[base:]
        else:
            base = self.offset
            body = data[self.offset - start :]
        end = body.rfind(b"\n") + 1  # bytes of complete lines
        first_line = self.line_count + 1
        if each is None:
            complete = _decode(body[:end], path, first_line)
            lines = complete.split("\n")[:-1] if end else []
            count = len(lines)
        else:
            lines = []
            count = _stream(body, end, path, first_line, each)
        partial = _decode(body[end:], path, first_line + count, partial=True)
        if end:
            self._last_start = base + body.rfind(b"\n", 0, end - 1) + 1  # read() digests from there
            self.offset = base + end
            self.line_count += count
        self._identity = identity
        return TailRead(lines, first_line, partial, reset)


    def _consume_blocks(self, fd: int, reset: bool, identity: tuple[int, int], each: _Hand) -> TailRead:
        """``_consume`` of the whole file read from the top a block at a time, each block's complete
        lines handed to ``each``: what is held is one block (and a line that spans several)."""
        path = self.path
        if reset:
            self.resets += 1
        self.forget()
        number = 1
        position = 0  # file offset of the next block
        held: list[bytes] = []  # bytes after the last newline so far (a line still going on)
        held_at = 0  # file offset of their start
        last_start = 0
        while True:
            block = os.pread(fd, STREAM_BLOCK, position)
            if not block:
                break
            if position == 0:
                if block.startswith((b"\xff\xfe", b"\xfe\xff")):
                    decode_text(block[:4], path)  # raises the byte-order-mark error
                if block.startswith(_BOM):
                    block = block[len(_BOM) :]
                    held_at = len(_BOM)
            position += len(block) + (held_at if position == 0 else 0)
            self.bytes_read += len(block)
            if position > self.max_streamed:
                self.forget()
                raise FileTooLarge(
                    f"more than {self.max_streamed} bytes (the file grew while being read)",
                    "raise the limit with --max-file-size or TOKENBOX_MAX_FILE_SIZE",
                    path,
                )
            cut = block.rfind(b"\n") + 1
            if not cut:
                held.append(block)
                continue
            data = b"".join([*held, block[:cut]]) if held else block[:cut]
            number = each(data, number)
            last_start = held_at + data.rfind(b"\n", 0, len(data) - 1) + 1
            held_at += len(data)
            held = [block[cut:]] if cut < len(block) else []
        partial = _decode(b"".join(held), path, number, partial=True)
        if number > 1:
            self._last_start = last_start
            self.offset = held_at
            self.line_count = number - 1
        self._identity = identity
        return TailRead([], 1, partial, reset)


STREAM_BLOCK = 1 << 20  # bytes decoded at a time when the lines are streamed (``FileTail.read(each)``)


def lines_between(path: str, first: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """The complete lines ``first`` to ``stop - 1`` of ``path`` as their bytes, numbered as ``FileTail.read``
    numbers them (a byte-order mark before the first line is not part of it); the lines before ``first``
    are counted a block at a time, not split."""
    number = 1
    held = b""
    with open(path, "rb") as handle:
        block = handle.read(STREAM_BLOCK)
        if block.startswith(_BOM):
            block = block[len(_BOM) :]
        while block and number < stop:
            newlines = block.count(b"\n")
            if number + newlines < first:  # every line that ends in this block is before ``first``
                number += newlines
                held = block[block.rfind(b"\n") + 1 :] if newlines else held + block
            else:
                lines = (held + block).split(b"\n")
                held = lines.pop()
                for line in lines:
                    if number >= stop:
                        return
                    if number >= first:
                        yield number, line
                    number += 1
            block = handle.read(STREAM_BLOCK)


def _stream(body: bytes, end: int, path: str, first_line: int, each: _Hand) -> int:
    """Hand the complete lines of ``body[:end]`` to ``each``, a block at a time; their count."""
    pos = 0
    number = first_line
    while pos < end:
        stop = body.rfind(b"\n", pos, min(end, pos + STREAM_BLOCK)) + 1
        if stop <= pos:  # a line longer than a block
            stop = body.find(b"\n", pos, end) + 1
        number = each(body[pos:stop], number)
        pos = stop
    return number - first_line


_Hand = Callable[[bytes, int], int]  # hands a block's complete lines (its bytes, its first line's number) over; the next number


def _handing(each: Callable[[int, Any], None] | None, raw: bool, path: str) -> _Hand | None:
    """What hands a block of complete lines to ``each``: decoded, or (``raw``) as bytes (see ``FileTail.read``)."""
    if each is None:
        return None

    def decoded(data: bytes, number: int) -> int:
        lines = _decode(data, path, number).split("\n")
        lines.pop()  # after the block's last newline
        for line in lines:
            each(number, line)
            number += 1
        return number

    if not raw:
        return decoded

    def as_bytes(data: bytes, number: int) -> int:
        if b"\x00" in data:
            return decoded(data, number)  # raises the NUL byte's error, placed
        first = number
        lines = data.split(b"\n")
        lines.pop()
        try:
            for line in lines:
                each(number, line)
                number += 1
        except UnicodeDecodeError:
            _decode(data, path, first)  # the lines before were read whole: the first bad byte is this line's
            raise
        return number

    return as_bytes


def _on_open(path: str, use: Callable[[int, os.stat_result], _T], failed: _T) -> _T:
    """``use(fd, its stat)`` of ``path`` opened read-only (closed after); ``failed`` when it cannot be
    opened or read."""
    try:
        fd = open_read_only(path)
    except OSError:
        return failed
    try:
        return use(fd, os.fstat(fd))
    except OSError:
        return failed
    finally:
        os.close(fd)


def _pread_all(fd: int, offset: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``fd`` from ``offset`` (to the end of the file)."""
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.pread(fd, min(limit - total, 1 << 24), offset + total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _decode(data: bytes, path: str, first_line: int, *, partial: bool = False) -> str:
    """``decode_text`` of bytes that start at line ``first_line`` (errors placed in the file)."""
    if not data:
        return ""
    if b"\x00" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if partial and exc.end == len(data) and exc.reason == "unexpected end of data":
                return data[: exc.start].decode("utf-8")  # a character still being written
    try:
        return decode_text(data, path, partial_tail=partial)
    except SessionError as exc:
        if exc.line is None or type(exc) is not SessionError:
            raise
        raise SessionError(exc.problem, exc.remedy, path, exc.line + first_line - 1, exc.col) from None
