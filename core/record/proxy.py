"""The capture proxy itself (aiohttp server and streaming client).

Every request is forwarded to the upstream as it came (method, path, query, body, headers but the
hop-by-hop ones, ``Host`` set to the upstream's) and its response streamed back chunk by chunk as it
arrives, status and headers included. Requests to the captured endpoints (``capture.APIS``) are
written to the capture log when they arrive and their outcome (usage, status, error) when they end.
A client that goes away mid-stream, an upstream that does not answer in time (a 504 for the client)
or cannot be reached (a 502) each end one request, never the proxy.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from tokenbox.core.model.textsafe import printable
from tokenbox.core.record.capture import SAFE_HEADERS, CaptureWriter
from tokenbox.core.record.usage import UsageReader, context_tokens
from tokenbox.core.sources.readers.capture_format import APIS
from yarl import URL

# RFC 9110 §7.6.1 hop-by-hop headers, plus what aiohttp sets itself for the new connection.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# Encodings the usage reader can inflate; others are not offered upstream (the client accepts these too).
READABLE_ENCODINGS = ("gzip", "deflate", "identity")
MAX_BODY_BYTES = 256 << 20
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 600.0  # seconds without a byte from the upstream (a long reasoning pause stays well below)


@dataclass(frozen=True)
class ProxyConfig:
    """Where to listen, where to forward, where to capture, and how long to wait for the upstream."""

    host: str
    port: int
    upstream: str  # scheme://host[:port][/base path], no trailing slash
    out: str
    read_timeout: float = READ_TIMEOUT
    connect_timeout: float = CONNECT_TIMEOUT


def safe_url(url: str) -> str:
    """``url`` without user info or query (which may hold credentials), for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _accept_encoding(value: str) -> str | None:
    """The client's Accept-Encoding restricted to what the usage reader can read (``None``: drop it)."""
    kept = [item.strip() for item in value.split(",") if item.split(";")[0].strip().lower() in READABLE_ENCODINGS]
    return ", ".join(kept) if kept else None


class Proxy:
    """One running proxy: an aiohttp application, its upstream client session and the capture writer."""

    def __init__(self, config: ProxyConfig, writer: CaptureWriter, out: TextIO | None = sys.stdout) -> None:
        self.config = config
        self.writer = writer
        self.out = out
        self.upstream = config.upstream.rstrip("/")
        self.upstream_host = urlsplit(self.upstream).netloc.rsplit("@", 1)[-1]
        self._session: aiohttp.ClientSession | None = None
        self.on_record: Callable[[str], None] | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, handler_args={"max_field_size": 65536})
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, connect=self.config.connect_timeout, sock_read=self.config.read_timeout)
        # auto_decompress off: the client gets the upstream's bytes as they were sent.
        self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False, trust_env=False)

    async def _stop(self, _app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    def _say(self, line: str) -> None:
        if self.out is not None:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (OSError, ValueError):
                pass
        if self.on_record is not None:
            self.on_record(line)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Forward one request; capture it when its path is a captured endpoint."""
        started = time.monotonic()
        body = await request.read()
        path = request.path
        api = APIS.get(path.rstrip("/")) if request.method == "POST" else None
        record_id = None
        if api is not None:
            try:
                parsed: Any = json.loads(body)
            except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                parsed = None
            headers = {k: request.headers[k] for k in SAFE_HEADERS if k in request.headers}
            try:
                record_id = self.writer.request(request.method, path, api, headers, parsed, len(body))
            except OSError as exc:  # a full disk loses this record, never the request or the proxy
                self._say(f"tokenbox record: cannot write the capture: {exc.strerror or type(exc).__name__}")
        outcome: dict[str, Any] = {"status": None, "model": None, "stream": False, "usage": None, "error": None}
        try:
            return await self._forward(request, body, api, outcome)
        finally:
            if record_id is not None and api is not None:
                outcome["duration_ms"] = round((time.monotonic() - started) * 1000)
                try:
                    self.writer.response(record_id, **outcome)
                except OSError as exc:
                    self._say(f"tokenbox record: cannot write the capture: {exc.strerror or type(exc).__name__}")
                context = context_tokens(api, outcome["usage"])
                self._say(self._line(request.method, path, outcome, context))
            elif api is None or record_id is None:
                self._say(f"{request.method} {printable(path)} {outcome['status'] or '-'} (not captured)")

    @staticmethod
    def _line(method: str, path: str, outcome: dict[str, Any], context: int | None) -> str:
        parts = [method, printable(path), str(outcome["status"] or "-"), printable(outcome["model"] or "-", 80)]
        parts.append(f"context {context:,} tokens" if context is not None else "context not reported")
        if outcome["error"]:
            parts.append(f"({outcome['error']})")
        return " ".join(parts)

    def _upstream_headers(self, request: web.Request) -> dict[str, str]:
        headers: dict[str, str] = {}
        for key, value in request.headers.items():
            lower = key.lower()
            if lower in HOP_BY_HOP:
                continue
            if lower == "accept-encoding":
                kept = _accept_encoding(value)
                if kept is not None:
                    headers[key] = kept
                continue
            headers[key] = value
        headers["Host"] = self.upstream_host
        return headers

    async def _forward(self, request: web.Request, body: bytes, api: str | None, outcome: dict[str, Any]) -> web.StreamResponse:
        assert self._session is not None
        url = URL(self.upstream + request.raw_path, encoded=True)  # path and query exactly as sent
        try:
            upstream = await self._session.request(
                request.method, url, headers=self._upstream_headers(request), data=body or None, allow_redirects=False
            )
        except TimeoutError:
            return self._error(504, "upstream timeout", f"the upstream did not answer within {self.config.read_timeout:g} s", outcome)
        except aiohttp.ClientError as exc:
            return self._error(502, "upstream unreachable", f"cannot reach the upstream {safe_url(self.upstream)}: {type(exc).__name__}", outcome)
        async with upstream:
            outcome["status"] = upstream.status
            reader = UsageReader(api or "", upstream.headers.get("Content-Type", ""), upstream.headers.get("Content-Encoding", ""))
            outcome["stream"] = reader.stream
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in HOP_BY_HOP:
                    response.headers.add(key, value)
            if upstream.content_length is not None and not reader.stream:
                response.content_length = upstream.content_length
            try:
                await response.prepare(request)
            except (ConnectionError, aiohttp.ClientConnectionResetError):
                outcome["error"] = "client disconnected"
                return response
            try:
                async for chunk in upstream.content.iter_any():
                    if api is not None:
                        reader.feed(chunk)
                    await response.write(chunk)
                await response.write_eof()
            except TimeoutError:
                outcome["error"] = "upstream timeout mid-response"
            except (ConnectionError, aiohttp.ClientConnectionResetError):
                outcome["error"] = "client disconnected"
            except aiohttp.ClientError as exc:
                outcome["error"] = f"upstream failed mid-response: {type(exc).__name__}"
            finally:
                reader.finish()
                outcome["usage"] = reader.usage
                outcome["model"] = reader.model
                if reader.stop_reason:
                    outcome["stop_reason"] = reader.stop_reason
            return response

    def _error(self, status: int, kind: str, message: str, outcome: dict[str, Any]) -> web.Response:
        """A JSON error the client's SDK understands (Anthropic's and OpenAI's shapes at once)."""
        outcome["status"] = status
        outcome["error"] = kind
        text = f"tokenbox record: {message}"
        payload = {"type": "error", "error": {"type": "api_error", "message": text, "code": kind.replace(" ", "_")}}
        return web.json_response(payload, status=status)


async def serve(config: ProxyConfig, writer: CaptureWriter, out: TextIO | None, ready: Callable[[str], None] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Run the proxy until ``stop`` is set (or forever); ``ready(address)`` once it listens."""
    proxy = Proxy(config, writer, out)
    runner = web.AppRunner(proxy.app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        address = _address(runner, config)
        writer.start(safe_url(config.upstream), address)
        if ready is not None:
            ready(address)
        await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        await runner.cleanup()


def _address(runner: web.AppRunner, config: ProxyConfig) -> str:
    """``HOST:PORT`` actually bound (port 0 asks the system for a free one)."""
    for server in runner.addresses:
        if isinstance(server, tuple) and len(server) >= 2:
            host = config.host if ":" not in config.host else f"[{config.host}]"
            return f"{host}:{server[1]}"
    return f"{config.host}:{config.port}"
