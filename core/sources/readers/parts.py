"""What each part of an agent's request is (README, "Real agents"): its reader's category, and the kind
Claude Code's ``/context`` lists it under — what the engine sums a growing session's parts by
(``planning.running``) and ``analysis.breakdown`` shows.
"""

from __future__ import annotations

from tokenbox.core.model.session import Section
from tokenbox.core.sources.readers.common import CALL, CATEGORIES, MEDIA, OTHER, RESULT, THINKING


def category(section: Section) -> str | None:
    """The importer's category of ``section`` (``None`` for a section that was not imported)."""
    value = section.meta.get("category")
    return value if value in CATEGORIES else None


# What each part of an agent's request is, in the order Claude Code's ``/context`` lists them.
CONTEXT_LABELS = {
    "hidden": "not in the file",  # replaced by the hidden part's own label (what the reader says it holds)
    "system": "system prompt",
    "memory": "memory files",
    "tools": "tool definitions",
    "mcp": "MCP tools",  # one row per server: "MCP tools · <server>"
    "messages": "messages",
    "tool_calls": "tool calls",
    "tool_results": "tool results",
    "thinking": "thinking",
    "images": "images",
    "other": "other blocks",
    "framing": "framing",  # what joining the parts adds (0 for a calibrated transcript)
}
# Memory files as agents put them into a request: Claude Code's claudeMd reminder ("Contents of
# /…/CLAUDE.md"), Codex's "# AGENTS.md instructions for …" message, Gemini CLI's GEMINI.md context.
_MEMORY_SIGNS = ("# claudeMd", "Contents of ", "# AGENTS.md instructions", "GEMINI.md")
_MEMORY_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md")
_MEMORY_HEAD = 4000  # characters of a block looked at for the signs


def is_memory(text: str | None) -> bool:
    """Whether a text block holds memory files (CLAUDE.md, AGENTS.md, GEMINI.md) as the agent sends them."""
    if not text:
        return False
    head = text[:_MEMORY_HEAD]
    return any(sign in head for sign in _MEMORY_SIGNS) and any(name in head for name in _MEMORY_FILES)


def part_kind(section: Section) -> str | None:
    """What ``section`` of an agent's request is: a key of ``CONTEXT_LABELS`` (``mcp`` for an MCP tool's
    definition), ``reply`` for the request's own output, ``None`` for a section that was not imported."""
    group = category(section)
    if group is None:
        return None
    if group == "inferred":
        return "hidden"
    if group == "reply":
        return "reply"
    if group == "tool":
        return "mcp" if str(section.meta.get("tool", "")).startswith("mcp__") else "tools"
    if group == "system":
        return "memory" if is_memory(section.text) else "system"
    part = section.meta.get("part")
    if part == RESULT or (part is None and group == "tool_result"):
        return "tool_results"
    if part == CALL:
        return "tool_calls"
    if part == THINKING:
        return "thinking"
    if part == MEDIA:
        return "images"
    if part == OTHER or group == "other":
        return "other"
    return "memory" if is_memory(section.text) else "messages"


def mcp_server(section: Section) -> str:
    """The server of an MCP tool (``mcp__<server>__<tool>``)."""
    pieces = str(section.meta.get("tool", "")).split("__")
    return pieces[1] if len(pieces) >= 3 and pieces[1] else "?"


def context_key(section: Section, kind: str | None = "") -> tuple[str, str] | None:
    """The row of ``/context`` the section is counted in: its key (``mcp:<server>`` for an MCP server's
    tools) and its label (the hidden part's own); ``None`` for a section that was not imported and for
    the request's own reply (output, not context). ``kind``: the section's ``part_kind`` when the caller
    has it already."""
    if kind == "":
        kind = part_kind(section)
    if kind is None or kind == "reply":
        return None
    if kind == "hidden":
        return kind, str(section.meta.get("label") or CONTEXT_LABELS["hidden"])
    if kind == "mcp":
        server = mcp_server(section)
        return f"mcp:{server}", f"{CONTEXT_LABELS['mcp']} · {server}"
    return kind, CONTEXT_LABELS[kind]
