"""Figure 9's uncompacted chain followed as an agent appends to it, for the tests that bound what a followed
transcript keeps per request (held inputs, section and block metas, nodes): the follower's reader, and the
bytes an object keeps beside the values it stands for."""

from __future__ import annotations

import sys

from tokenbox.core.sources.readers.claude_code import TranscriptFollower, TranscriptReader

from benchmarks.transcripts import write_chain

APPENDS = 6  # main-thread requests appended while followed


def followed(tmp_path, appends: int = APPENDS) -> tuple[object, TranscriptReader]:
    """The chain's path under ``tmp_path`` and the reader of a follower that read it after each of ``appends``
    main-thread requests was appended."""
    path = tmp_path / "chain.jsonl"
    texts = write_chain(path, 80_000, seed=15, appended=appends)
    follower = TranscriptFollower(str(path), None)
    reader = follower.read()
    for text in texts:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        reader = follower.read()
    return path, reader


def bytes_beside_values(meta: object, seen: set[int]) -> int:
    """The bytes of ``meta`` and of the containers it keeps its keys and values in (each counted once in
    ``seen``: what several metas share is paid once), not of the keys and values themselves."""
    if id(meta) in seen:
        return 0
    seen.add(id(meta))
    total = sys.getsizeof(meta)
    for name in getattr(type(meta), "__slots__", ()):
        part = getattr(meta, name)
        if isinstance(part, (tuple, dict)) and id(part) not in seen:
            seen.add(id(part))
            total += sys.getsizeof(part)
    return total
