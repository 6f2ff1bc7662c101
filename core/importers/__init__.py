"""Importers for formats real agents write (registered with ``tokenbox.core.session`` by ``ensure_registered``).

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

import threading
from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CATEGORY_LABELS": "breakdown",
    "Total": "breakdown",
    "TurnUsage": "breakdown",
    "cache_breakpoints": "breakdown",
    "cached_prefix_tokens": "breakdown",
    "category": "breakdown",
    "category_totals": "breakdown",
    "group_of": "breakdown",
    "load_turn_usages": "breakdown",
    "mcp_server_totals": "breakdown",
    "tool_result_totals": "breakdown",
    "tool_totals": "breakdown",
    "turn_usages": "breakdown",
    "CATEGORIES": "common",
    "session_yaml": "export",
}
_REGISTERED = threading.Event()
_LOCK = threading.Lock()


def ensure_registered() -> None:
    """Register every importer with ``tokenbox.core.session`` (once; the loaders call this).

    Explicit rather than a side effect of importing the package, so that one importer module (the
    status line's transcript reader) can be imported alone.
    """
    if _REGISTERED.is_set():
        return
    with _LOCK:
        if _REGISTERED.is_set():
            return
        from tokenbox.core import session
        from tokenbox.core.importers import anthropic, capture, codex, gemini, openai_chat, openai_responses

        # Order matters: a Gemini log also has `messages` (a request's sign).
        session.register_line_importer(codex.detect, codex.convert)
        session.register_line_importer(gemini.detect_lines, gemini.convert_lines)
        session.register_importer(gemini.detect_document, gemini.convert_document)
        session.register_importer(openai_responses.detect, openai_responses.convert)
        session.register_line_importer(capture.detect, capture.convert)
        session.register_torn_line_stand_in(capture.torn_line)
        from tokenbox.core.importers.capture_follow import CaptureFollower

        session.register_line_follower(capture.convert, CaptureFollower)
        session.register_importer(anthropic.detect, anthropic.convert)
        session.register_importer(openai_chat.detect, openai_chat.convert)
        _REGISTERED.set()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenbox.core.importers' has no attribute {name!r}")
    value = getattr(import_module(f"tokenbox.core.importers.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
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
    "ensure_registered",
    "group_of",
    "load_turn_usages",
    "mcp_server_totals",
    "session_yaml",
    "tool_result_totals",
    "tool_totals",
    "turn_usages",
]

