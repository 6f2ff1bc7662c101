"""Kind presets: the layout attributes each section kind starts from (README, "Session files")."""

from __future__ import annotations

from typing import Any

COMMON_KEYS = ("id", "kind", "priority", "min", "grow", "shrink", "strategy", "keep", "summary", "meta")

# Per kind: the keys that carry its content, and the attribute defaults it presets.
KIND_CONTENT_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("text", "tokens"),
    "prefix": ("assistant_name", "identity", "feedback", "tools"),
    "user": ("text",),
    "logs": ("text",),
    "mandates": ("text",),
    "context": ("foveal_focus", "scope", "memory", "text"),
    "behaviors": ("budget", "items"),
    "inferred": ("tokens",),
}

KIND_PRESETS: dict[str, dict[str, Any]] = {
    "text": {"priority": 0, "shrink": 1, "strategy": (), "keep": "head"},
    "prefix": {"priority": 0, "shrink": 0, "strategy": (), "keep": "head"},
    "user": {"priority": 0, "shrink": 0, "strategy": (), "keep": "head"},
    "logs": {"priority": 1, "shrink": 1, "strategy": ("tail_lines:5",), "keep": "tail"},
    "mandates": {"priority": 2, "shrink": 1, "strategy": ("drop",), "keep": "head"},
    "context": {"priority": 3, "shrink": 1, "strategy": ("summary",), "keep": "head"},
    "behaviors": {"priority": 4, "shrink": 1, "strategy": ("demote",), "keep": "head"},
    # What a real request held but its file does not (a transcript's system prompt and tools): a
    # fixed number of tokens, no text, never trimmed (README, "Real agents").
    "inferred": {"priority": 0, "shrink": 0, "strategy": (), "keep": "head"},
}

KINDS = tuple(KIND_PRESETS)


def allowed_keys(kind: str) -> tuple[str, ...]:
    """Every key a section of ``kind`` may carry."""
    return COMMON_KEYS + KIND_CONTENT_KEYS[kind]
