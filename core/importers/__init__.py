"""Importers for formats real agents write (registered with ``tokenbox.core.session`` on import).

Chosen by content, not by file name: ``load_session`` hands every parsed document (and every
JSON-lines file) to the detectors registered here before reading it as a tokenbox session.

* ``capture``: capture logs of ``tokenbox record``, one turn per captured request;
* ``claude_code``: Claude Code session transcripts (``.jsonl``), one turn per assistant request;
* ``codex``: Codex CLI rollouts (``.jsonl``), one turn per model request;
* ``gemini``: Gemini CLI chat logs (``.json`` or ``.jsonl``), one turn per reply;
* ``anthropic``: Anthropic Messages request bodies;
* ``openai_chat``: OpenAI Chat Completions request bodies;
* ``openai_responses``: OpenAI Responses API request bodies.

``foreign`` recognises formats tokenbox does not read, so that they are refused by name.

``export.session_yaml`` writes any session as an editable tokenbox YAML file (``tokenbox import``);
``breakdown`` has the views the TUI needs (categories, per-tool costs, cache marks, recorded usage).
"""

from __future__ import annotations

from tokenbox.core import session as _session
from tokenbox.core.importers import anthropic, capture, codex, gemini, openai_chat, openai_responses
from tokenbox.core.importers.breakdown import (
    CATEGORY_LABELS,
    Total,
    TurnUsage,
    cache_breakpoints,
    cached_prefix_tokens,
    category,
    category_totals,
    group_of,
    load_turn_usages,
    mcp_server_totals,
    tool_result_totals,
    tool_totals,
    turn_usages,
)
from tokenbox.core.importers.common import CATEGORIES
from tokenbox.core.importers.export import session_yaml

__all__ = [
    "CATEGORIES",
    "CATEGORY_LABELS",
    "Total",
    "TurnUsage",
    "cache_breakpoints",
    "cached_prefix_tokens",
    "category",
    "category_totals",
    "group_of",
    "load_turn_usages",
    "mcp_server_totals",
    "session_yaml",
    "tool_result_totals",
    "tool_totals",
    "turn_usages",
]

# Order matters: a Gemini log also has `messages` (a request's sign).
_session.register_line_importer(codex.detect, codex.convert)
_session.register_line_importer(gemini.detect_lines, gemini.convert_lines)
_session.register_importer(gemini.detect_document, gemini.convert_document)
_session.register_importer(openai_responses.detect, openai_responses.convert)
_session.register_line_importer(capture.detect, capture.convert)
_session.register_importer(anthropic.detect, anthropic.convert)
_session.register_importer(openai_chat.detect, openai_chat.convert)
