"""Deterministic compression lenses. Each takes a section's current text and returns a shorter one.

``tail_lines:N`` / ``head_lines:N`` keep the last / first N lines; ``summary`` replaces the text with
the section's ``summary`` (context: ``[Context trimmed: N items]``); ``drop`` removes the section;
``demote`` moves the lowest-activation behaviour one floop tier down; ``dedupe_lines`` removes repeated
lines. No lens calls a model.
"""

from __future__ import annotations

from collections.abc import Callable

from tokenbox.core.model.records import dataclass
from tokenbox.core.model.session import Section
from tokenbox.core.parse.lensspec import parse_lens
from tokenbox.core.planning import behaviors


@dataclass
class LensResult:
    """What one application produced: the new text, and new tiers for ``demote``."""

    text: str
    tiers: list[behaviors.Tier] | None = None
    note: str = ""
    # how to rebuild ``text`` later, so a long trace need not keep every intermediate text
    rebuild: Callable[[], str] | None = None


def _lines(text: str) -> tuple[list[str], bool]:
    trailing = text.endswith("\n")
    body = text[:-1] if trailing else text
    return body.split("\n"), trailing


def _join(lines: list[str], trailing: bool) -> str:
    return "\n".join(lines) + ("\n" if trailing and lines else "")


def tail_lines(text: str, count: int) -> str:
    lines, trailing = _lines(text)
    return text if len(lines) <= count else _join(lines[-count:], trailing)


def head_lines(text: str, count: int) -> str:
    lines, trailing = _lines(text)
    return text if len(lines) <= count else _join(lines[:count], trailing)


def dedupe_lines(text: str) -> str:
    """Drop lines that repeat an earlier line (blank lines are kept)."""
    lines, trailing = _lines(text)
    seen: set[str] = set()
    kept = []
    for line in lines:
        if line.strip() and line in seen:
            continue
        seen.add(line)
        kept.append(line)
    return _join(kept, trailing)


def summary(section: Section, text: str) -> str:
    """The section's ``summary``, or a one-line marker counting what was removed."""
    if section.summary is not None:
        return section.summary
    count = len(_lines(text)[0]) if text else 0
    if section.kind == "context":
        return f"[Context trimmed: {count} items]"
    return f"[{section.id} trimmed: {count} lines]"


def apply(spec: str, section: Section, text: str, tiers: list[behaviors.Tier] | None) -> LensResult:
    """Apply lens ``spec`` once. The caller decides whether the result counts as a step."""
    name, arg = parse_lens(spec)
    if name == "tail_lines":
        return LensResult(tail_lines(text, arg or 0))
    if name == "head_lines":
        return LensResult(head_lines(text, arg or 0))
    if name == "dedupe_lines":
        return LensResult(dedupe_lines(text))
    if name == "summary":
        return LensResult(summary(section, text))
    if name == "drop":
        return LensResult("")
    if name == "demote":
        if tiers is None:
            return LensResult(text)
        new_tiers = list(tiers)
        moved = behaviors.demote_once(section.items, new_tiers)
        if moved is None:
            return LensResult(text, tiers)
        item = section.items[moved]
        return LensResult(
            behaviors.render(section.items, new_tiers),
            new_tiers,
            f"{item.name}: {tiers[moved].label} → {new_tiers[moved].label}",
        )
    raise ValueError(f"unknown lens {spec!r}")  # parse_lens already refused it
