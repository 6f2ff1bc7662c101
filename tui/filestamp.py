"""A file's identity and content stamp from one ``stat`` (device, inode, size, mtime): how the watcher
tells a change and the first plan tells that the file it planned is still the one on disk. No import
beyond ``os``: the console entry uses it before it forks."""

from __future__ import annotations

import os

Stamp = tuple[int, int, int, int] | None


def stamp(path: str) -> Stamp:
    """``(st_dev, st_ino, st_size, st_mtime_ns)`` of ``path``; ``None`` when it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
