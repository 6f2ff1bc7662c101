"""What a storage reader sees of a path before it claims it: ``Probe``.

Some agents keep a session in more than one file or in no text file at all: a task folder (Cline, Roo
Code, Kilo Code), a SQLite database (OpenCode, Kilo 5.x, Copilot's session store), a JSON tree
(OpenCode's ``storage/``), a markdown chat history (aider). The ``formats.FORMATS`` rows of shape
``SOURCE`` read such a path themselves; their ``detect`` is given a ``Probe``: the file's first bytes or
the folder's entry names, told apart by content, never by the path's name. ``FILE#ID`` names one
session inside a database file (``opencode.db#ses_…``): the probe is of ``FILE``, with ``selector`` ID.

Nothing here writes: a file is opened read-only and only its head is read.
"""

from __future__ import annotations

import os
import stat

from tokenbox.core.model.records import dataclass
from tokenbox.core.sources.files import open_read_only

HEAD_BYTES = 4096
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_PAGE_MIN = 512  # a database file is always a whole number of pages of 512 bytes or more
SELECTOR = "#"  # FILE#ID: one session of a database file


@dataclass(frozen=True, slots=True)
class Probe:
    """A path as a storage reader's ``detect`` sees it."""

    path: str  # as given
    target: str  # the file or folder on disk (``path`` without its ``#ID``)
    selector: str | None  # the ``ID`` of ``FILE#ID``
    is_dir: bool
    head: bytes  # a file's first ``HEAD_BYTES`` (empty for a folder)
    names: frozenset[str]  # a folder's entries (empty for a file)

    @property
    def sqlite(self) -> bool:
        """Whether the file is a SQLite database (by its header)."""
        return self.head.startswith(SQLITE_MAGIC)

    def text_head(self) -> str:
        """The head as text (a BOM and a character cut at the end left out)."""
        return self.head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="ignore")


def split_selector(path: str) -> tuple[str, str | None]:
    """``(file, ID)`` of ``FILE#ID`` when ``path`` itself does not exist but ``FILE`` does, else ``(path, None)``."""
    if SELECTOR not in os.path.basename(path) or os.path.lexists(path):
        return path, None
    target, _, selector = path.rpartition(SELECTOR)
    if not selector or not os.path.isfile(target):
        return path, None
    return target, selector


def probe(path: str, max_bytes: int | None = None) -> Probe | None:
    """The probe of ``path`` (``None`` when it cannot be read: the ordinary loaders report why).

    A file over ``max_bytes`` is not read as text, so nothing of it is read here either — unless its size
    is a whole number of 512-byte pages, as a SQLite database's always is (agents' databases grow past
    any text limit and are queried, not read): then only its 16-byte header is looked at.
    """
    target, selector = split_selector(path)
    try:
        info = os.stat(target)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        try:
            names = frozenset(os.listdir(target))
        except OSError:
            return None
        return Probe(path, target, selector, True, b"", names)
    if not stat.S_ISREG(info.st_mode):
        return None  # a pipe or a device is read once, by the ordinary loaders
    over = max_bytes is not None and info.st_size > max_bytes
    if over and (info.st_size % SQLITE_PAGE_MIN or info.st_size == 0):
        return None
    try:
        fd = open_read_only(target)
        try:
            head = os.read(fd, len(SQLITE_MAGIC) if over else HEAD_BYTES)
        finally:
            os.close(fd)
    except OSError:
        return None
    if over and head != SQLITE_MAGIC:
        return None
    return Probe(path, target, selector, False, head, frozenset())
