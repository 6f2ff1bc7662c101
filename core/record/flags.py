"""The flags of ``tokenbox record`` and ``tokenbox-tui --record``: their defaults and value types.

Apart from ``run`` (which imports asyncio, the proxy's machinery) so that building either command's
parser stays cheap: ``tokenbox-tui FILE`` parses its flags before its first plan.
"""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from tokenbox.core.model.textsafe import printable

DEFAULT_LISTEN = "127.0.0.1:8787"
DEFAULT_UPSTREAM = "https://api.anthropic.com"


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as a flag type."""
    value = text.strip()
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{printable(text, 80)!r} is not HOST:PORT (e.g. 127.0.0.1:8787)")
    return host, int(port)


def upstream_url(text: str) -> str:
    """An ``http(s)://host[:port][/path]`` URL as a flag type (no query, no trailing slash)."""
    value = text.strip()
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError("the upstream must be an http(s) URL without a query, e.g. https://api.openai.com")
    return value.rstrip("/")
