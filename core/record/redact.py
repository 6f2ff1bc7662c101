"""Which parts of a captured request body are credentials, and how they are stored (``"[redacted]"``).

A request body carries credentials outside its conversation: an MCP server's ``authorization_token``,
an MCP tool's ``headers``, a ``private_key`` or ``bearer_token`` a tool definition was given, a server
``url`` with ``user:password@`` or ``?token=…`` in it. The capture keeps the shape of the body and
replaces each of those values:

* a value under a key named like a secret (``SECRET_NAMES``, or ending in one of ``SECRET_SUFFIXES``,
  compared lower-case with ``-`` read as ``_``) is replaced whole, whatever it holds;
* a string that is a URL (``scheme://…``) loses its user info and the values of query parameters
  named like secrets (``SECRET_QUERY_NAMES``).

The keys of a JSON Schema's ``properties`` are names of parameters, not values (a tool may well take
a ``password`` argument): they are never matched, their schemas are still walked. The message list
is content (what the model reads) and is not redacted by the capture.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
SECRET_NAMES = frozenset(
    {
        "authorization",
        "authorization_token",
        "headers",
        "api_key",
        "apikey",
        "x_api_key",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "bearer_token",
        "session_token",
        "client_secret",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secret_key",
        "access_key",
        "private_key",
        "token",
        "cookie",
        "set_cookie",
        "credential",
        "credentials",
    }
)
SECRET_SUFFIXES = ("_token", "_secret", "_password", "_api_key", "_apikey", "_private_key", "_access_key", "_secret_key", "_credentials")
SECRET_QUERY_NAMES = frozenset(
    {"token", "access_token", "auth", "auth_token", "api_key", "apikey", "key", "secret", "client_secret", "password",
     "sig", "signature", "code", "session", "sessionid", "x_api_key", "bearer", "jwt"}
)
# Keys whose mapping's keys are names chosen by the schema's author, not secrets.
_SCHEMA_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*\Z")  # a whole value that is a URL (a prompt that starts with one is text)


def secret_name(key: str) -> bool:
    """Whether a body key names a credential (``private_key``, ``X-Api-Key``, ``github_token``, …)."""
    name = key.lower().replace("-", "_")
    return name in SECRET_NAMES or name.endswith(SECRET_SUFFIXES)


def redact_url(text: str) -> str:
    """``text`` with the user info and secret-named query values of a URL redacted (other text as is)."""
    if not _URL.match(text):
        return text
    try:
        parts = urlsplit(text)
        host = parts.netloc
    except ValueError:
        return REDACTED  # a URL too broken to split may still hold a credential
    changed = False
    if "@" in host:
        host = f"{REDACTED}@{host.rsplit('@', 1)[1]}"
        changed = True
    query = parts.query
    if query:
        pairs = []
        for pair in query.split("&"):
            name, sep, value = pair.partition("=")
            if sep and value and unquote(name).lower().replace("-", "_") in SECRET_QUERY_NAMES:
                pair = f"{name}={quote(REDACTED)}"
                changed = True
            pairs.append(pair)
        query = "&".join(pairs)
    if not changed:
        return text
    return urlunsplit((parts.scheme, host, parts.path, query, parts.fragment))


def redact(value: Any, *, names: bool = False) -> Any:
    """``value`` with every credential in it replaced by ``REDACTED`` (a new object where anything changed).

    ``names`` is true for a mapping of schema property names (their keys are never matched).
    """
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if not names and isinstance(key, str) and secret_name(key):
                kept[key] = REDACTED
            else:
                kept[key] = redact(item, names=not names and key in _SCHEMA_NAME_MAPS)
        return kept
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_url(value)
    return value
