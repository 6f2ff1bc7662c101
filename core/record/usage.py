"""The usage a response reported, read from its bytes as they pass through (streamed or not).

``UsageReader.feed(chunk)`` sees every chunk the proxy forwards and ``finish()`` returns what was
found: the model and the usage object as the provider reported it. Server-sent events are parsed one
event at a time (only events that mention ``usage`` or a model are decoded); a plain JSON reply is
kept until it ends, up to ``MAX_JSON_BYTES``. gzip/deflate bodies are inflated on the side; the
bytes the client receives are never touched. Pure logic, no aiohttp.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

MAX_JSON_BYTES = 64 << 20  # a non-streamed reply larger than this is forwarded but not read for usage
MAX_EVENT_BYTES = 16 << 20  # one server-sent event larger than this is skipped
_USAGE_MARK = b'"usage"'


def _numbers(value: Any) -> Any:
    """The numeric leaves of a usage object (nested objects kept), nothing else."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if isinstance(item, bool):
                continue
            if isinstance(item, (int, float)):
                kept[key] = item
            elif isinstance(item, dict):
                inner = _numbers(item)
                if inner:
                    kept[key] = inner
        return kept
    return None


class UsageReader:
    """Follows one response's bytes; ``api`` is the captured API, ``stream`` whether it is SSE."""

    def __init__(self, api: str, content_type: str, content_encoding: str) -> None:
        self.api = api
        self.stream = "text/event-stream" in content_type.lower()
        self.json = "json" in content_type.lower()
        encoding = content_encoding.lower().strip()
        self._inflate = zlib.decompressobj(47) if encoding in ("gzip", "x-gzip", "deflate") else None
        self.readable = encoding in ("", "identity") or self._inflate is not None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self._buffer = bytearray()
        self._overflow = False

    def feed(self, chunk: bytes) -> None:
        """One chunk of the response body, as forwarded."""
        if not self.readable or self._overflow or not (self.stream or self.json):
            return
        if self._inflate is not None:
            try:
                chunk = self._inflate.decompress(chunk)
            except zlib.error:
                self.readable = False
                return
        self._buffer += chunk
        if self.stream:
            self._events()
            if len(self._buffer) > MAX_EVENT_BYTES:
                self._buffer.clear()  # an oversized event: skip to the next one
        elif len(self._buffer) > MAX_JSON_BYTES:
            self._overflow = True
            self._buffer.clear()

    def finish(self) -> None:
        """The body ended: read what is left."""
        if self.stream:
            self._buffer += b"\n\n"
            self._events()
        elif self.json and self.readable and not self._overflow and self._buffer:
            try:
                value = json.loads(bytes(self._buffer))
            except ValueError:
                return
            finally:
                self._buffer.clear()
            self._reply(value)

    def _events(self) -> None:
        data = self._buffer.replace(b"\r\n", b"\n") if b"\r" in self._buffer else self._buffer
        end = data.rfind(b"\n\n")
        if end < 0:
            return
        complete = bytes(data[:end])
        rest = data[end + 2 :]
        self._buffer = bytearray(rest)
        for event in complete.split(b"\n\n"):
            if _USAGE_MARK in event or (self.model is None and b'"model"' in event):
                self._event(event)

    def _event(self, event: bytes) -> None:
        lines = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if not lines:
            return
        try:
            value = json.loads(b"\n".join(lines))
        except ValueError:
            return  # "[DONE]" and anything that is not JSON
        if not isinstance(value, dict):
            return
        kind = value.get("type")
        if kind == "message_start" and isinstance(value.get("message"), dict):
            message = value["message"]
            self._model(message.get("model"))
            self._merge(message.get("usage"))
        elif kind == "message_delta":
            self._merge(value.get("usage"))
            delta = value.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
        elif isinstance(kind, str) and kind.startswith("response.") and isinstance(value.get("response"), dict):
            response = value["response"]
            self._model(response.get("model"))
            if response.get("usage") is not None:
                self._merge(response.get("usage"), replace=True)
            if isinstance(response.get("status"), str):
                self.stop_reason = response["status"]
        else:  # OpenAI Chat chunks: the usage chunk comes last (stream_options.include_usage)
            self._model(value.get("model"))
            if value.get("usage") is not None:
                self._merge(value.get("usage"), replace=True)

    def _reply(self, value: Any) -> None:
        """A non-streamed reply: its ``usage`` and ``model``."""
        if not isinstance(value, dict):
            return
        self._model(value.get("model"))
        self._merge(value.get("usage"), replace=True)
        for key in ("stop_reason", "status"):
            if isinstance(value.get(key), str):
                self.stop_reason = value[key]

    def _model(self, model: Any) -> None:
        if self.model is None and isinstance(model, str):
            self.model = model

    def _merge(self, usage: Any, *, replace: bool = False) -> None:
        numbers = _numbers(usage)
        if not numbers:
            return
        if replace or self.usage is None:
            self.usage = numbers
        else:
            self.usage.update(numbers)  # message_delta's cumulative counts refine message_start's


def context_tokens(api: str, usage: dict[str, Any] | None) -> int | None:
    """The context a request cost by its usage: Anthropic input + cache write + cache read, OpenAI input."""
    if not usage:
        return None
    if api == "anthropic-messages":
        parts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        if not isinstance(parts[0], int):
            return None
        return sum(p for p in parts if isinstance(p, int))
    value = usage.get("input_tokens", usage.get("prompt_tokens"))
    return value if isinstance(value, int) else None
