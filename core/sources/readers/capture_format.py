"""The capture log format of ``tokenbox record``.

JSON lines, UTF-8, one complete line per record, appended and flushed as it happens; every line
carries the format marker ``"tokenbox_capture": 1``:

* ``{"tokenbox_capture": 1, "kind": "start", "upstream": URL, "listen": "HOST:PORT", "started": ISO-8601}``:
  the first line;
* ``{"tokenbox_capture": 1, "kind": "request", "id": N, "time": …, "method": …, "path": …, "api": API,
  "headers": {…}, "body": {…}}``: a captured request, written when it arrives. ``api`` is
  ``anthropic-messages``, ``openai-chat`` or ``openai-responses``; ``headers`` keeps only
  ``anthropic-version``, ``anthropic-beta``, ``openai-beta`` and ``user-agent``. Instead of ``body`` a
  request may carry ``"delta": {"base": M, "keep": K, "append": [...], "set": {...}, "unset": [...]}``:
  the body of request ``M`` (an earlier line) with its message list (``messages``, or ``input`` for
  the Responses API) cut to its first ``K`` items, then ``append`` added; top-level keys in ``set``
  replaced and those in ``unset`` removed. A growing conversation thus costs one body plus the new
  messages of each request, not the square of its length. A body that is not a JSON object is stored
  as ``"body_error": "…"`` with its ``"body_bytes"`` (so is a body in an encoding tokenbox cannot decode,
  or one over 256 MB). Credentials in the body outside the messages (``redact``: secret-named keys,
  URLs' user info and token-like query values) are replaced by ``"[redacted]"``; NaN and ±Infinity
  are stored as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. The body is stored against the
  earlier request of its conversation (``capture.Deltas``);
* ``{"tokenbox_capture": 1, "kind": "response", "id": N, "status": S, "model": …, "stream": bool,
  "usage": {…} | null, "error": str | null, "duration_ms": …}``: how request ``N`` ended, written when
  the response is complete (or failed: ``error`` says how — an upstream timeout, an upstream that
  failed mid-response, a client that disconnected, an unreachable upstream, a request cut when the
  proxy stopped). ``usage`` is the usage object the provider
  reported, as it reported it (Anthropic's ``message_start`` merged with ``message_delta``, OpenAI
  Chat's final usage chunk, the Responses API's ``response.completed``; or the ``usage`` of a
  non-streamed reply).

Each record is one whole line or nothing (a failed write is cut back); a reader skips a torn line with a
warning. A capture deleted or moved away while the proxy runs starts again with a new ``start`` line
(``"restarted"``). Requests to any other path are forwarded too but not captured. No header other than the four above,
no query string and no credential is ever written to the capture, stdout or an error message.

The writer is ``tokenbox.core.record.capture``; the reader ``tokenbox.core.sources.readers.capture``.
"""

from __future__ import annotations

from typing import Any

FORMAT_KEY = "tokenbox_capture"
FORMAT_VERSION = 1

# Captured endpoints: path -> the API (and so the importer) of their request bodies.
APIS = {
    "/v1/messages": "anthropic-messages",
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
}


def message_key(api: str, body: dict[str, Any]) -> str:
    """The key of the body's message list: ``messages``, or ``input`` for the Responses API."""
    return "input" if api == "openai-responses" else "messages"


def rebuild(base: dict[str, Any], delta: dict[str, Any], key: str) -> dict[str, Any]:
    """A body from its base body and a ``delta`` record (see the format); shares the base's items.

    With ``append`` in the delta the message list ``key`` is the base's first ``keep`` items plus
    ``append``; without it the key is an ordinary field (kept, ``set`` or ``unset``).
    """
    unset = delta.get("unset") or ()
    changed = delta.get("set") or {}
    body = {k: changed.get(k, v) for k, v in base.items() if k not in unset}
    for k, v in changed.items():
        body[k] = v
    append = delta.get("append")
    if isinstance(append, list):
        items = base.get(key)
        keep = delta.get("keep", 0)
        body[key] = (items[:keep] if isinstance(items, list) and isinstance(keep, int) else []) + append
    return body
