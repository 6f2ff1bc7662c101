"""A file's identity and content stamp from ``stat`` (device, inode, size, mtime): how the watcher tells a
change and the first plan tells that the file it planned is still the one on disk. No import beyond
``os``: the console entry uses it before it forks.

Some sessions are more than one file, and the stamp covers what changes when they grow: a SQLite
database's write-ahead log (``FILE-wal``, where an agent's writes land first), the database of
``FILE#ID`` (one session in a database: ``tokenbox.core.sources.probe``), and the files directly in a
folder (a Cline task folder, an OpenCode message folder).
"""

from __future__ import annotations

import os

Stamp = tuple[int, int, int, int] | None
_SELECTOR = "#"


def _target(path: str) -> str:
    """The file behind ``path``: ``FILE`` of ``FILE#ID`` when ``path`` itself does not exist."""
    if _SELECTOR in os.path.basename(path) and not os.path.lexists(path):
        target = path.rpartition(_SELECTOR)[0]
        if target and os.path.isfile(target):
            return target
    return path


def stamp(path: str) -> Stamp:
    """``(st_dev, st_ino, size, mtime_ns)`` of ``path`` (with its write-ahead log, or of a folder its
    files' total size and newest mtime); ``None`` when it is missing."""
    target = _target(path)
    try:
        st = os.stat(target)
    except OSError:
        return None
    size, mtime = st.st_size, st.st_mtime_ns
    if os.path.isdir(target):
        try:
            entries = list(os.scandir(target))
        except OSError:
            entries = []
        for entry in entries:
            try:
                info = entry.stat()
            except OSError:
                continue  # removed while we looked
            size += info.st_size + 1
            mtime = max(mtime, info.st_mtime_ns)
    else:
        try:
            wal = os.stat(target + "-wal")
        except OSError:
            wal = None
        if wal is not None:
            size, mtime = size + wal.st_size, max(mtime, wal.st_mtime_ns)
    return (st.st_dev, st.st_ino, size, mtime)
