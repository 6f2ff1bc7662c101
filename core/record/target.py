"""The request target a proxied request may name: an origin-form path (RFC 9112 §3.2.1), nothing else.

The upstream URL is the configured origin (and base path) followed by this target, so a target that is
not a plain path could move the request, and its credentials, elsewhere: an absolute-form target
(``POST munity://a/v1/messages``: joined to ``https://api.anthropic.com`` it names the host
``api.anthropic.community``), a network-path reference (``//host/…``), the asterisk form, dot segments
that climb out of the base path (``/../``, ``/%2e%2e/``), backslashes that some servers read as slashes.
Each is refused with 400 before anything is sent.
"""

from __future__ import annotations

from urllib.parse import unquote

_DOT_SEGMENTS = frozenset({".", ".."})


def origin_form(target: str) -> str | None:
    """``target`` when it is a safe origin-form request target (``/path[?query]``), else ``None``."""
    if not target.startswith("/") or target.startswith("//"):
        return None
    if not target.isascii() or any(c <= " " or c in "\\#\x7f" for c in target):
        return None
    path = target.split("?", 1)[0]
    for segment in path.split("/"):
        decoded = unquote(segment)
        if decoded in _DOT_SEGMENTS or "\\" in decoded:
            return None
    return target
