"""Lens names and their arguments: parsing and validating ``strategy`` entries."""

from __future__ import annotations

from tokenbox.core.model.errors import SessionError

LENSES_WITH_COUNT = ("tail_lines", "head_lines")
LENSES_PLAIN = ("summary", "drop", "demote", "dedupe_lines")
LENS_NAMES = LENSES_WITH_COUNT + LENSES_PLAIN
MAX_LINES_ARG = 10**9


# Specs parsed already (valid ones only): the layout asks again at every step of a long trim.
_PARSED: dict[str, tuple[str, int | None]] = {}


def parse_lens(spec: str) -> tuple[str, int | None]:
    """Split ``"tail_lines:5"`` into ``("tail_lines", 5)``; raise ``SessionError`` on a bad spec."""
    found = _PARSED.get(spec)
    if found is None:
        found = _parse(spec)
        if len(_PARSED) >= 1024:
            _PARSED.clear()
        _PARSED[spec] = found
    return found


def _parse(spec: str) -> tuple[str, int | None]:
    name, sep, arg = spec.partition(":")
    name = name.strip()
    if name not in LENS_NAMES:
        known = ", ".join(f"{n}:N" if n in LENSES_WITH_COUNT else n for n in LENS_NAMES)
        raise SessionError(f"unknown lens {spec!r}", f"known lenses: {known}")
    if name in LENSES_WITH_COUNT:
        arg = arg.strip()
        if not sep or not arg.isdigit() or not arg.isascii():
            raise SessionError(f"lens {spec!r} needs a line count", f"write e.g. {name}:5")
        count = int(arg)
        if not 1 <= count <= MAX_LINES_ARG:
            raise SessionError(f"lens {spec!r}: the line count must be at least 1", f"write e.g. {name}:5")
        return name, count
    if sep:
        raise SessionError(f"lens {name!r} takes no argument", f"write just {name}")
    return name, None
