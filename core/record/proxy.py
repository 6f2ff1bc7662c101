"""The capture proxy itself (aiohttp server and streaming client): a pipe that passes bytes and failures as they came.

Every request is forwarded to the configured upstream origin plus the request's origin-form target
(``target.origin_form``; any other target is refused with 400), method, query and headers as sent
but the hop-by-hop ones, ``Host`` set to the upstream's. Bodies pass byte for byte both ways, whatever
their ``Content-Encoding``, streamed as they arrive: a request body goes upstream while the client is
still sending it, and only the copy that is captured is decoded. The capture (``capture.CaptureWriter``)
is written by one worker thread, so neither parsing a 100 MB body nor a slow disk holds up other streams.

Failures reach the client as they would going direct: an upstream that drops a response part-way
gets the client's connection aborted (a streamed reply ends without its last chunk, a plain one short of
its Content-Length: the SDKs raise); an upstream that does not answer in time is a 504, an unreachable
one a 502. A client that goes away cancels its request upstream (aiohttp's handler cancellation).
``Proxy.finish`` ends what is still open when the proxy stops: a short grace, then each open request is
cut and recorded as such.

No log line ever holds request bytes: aiohttp's server logger (which prints the raw request line and
headers of a malformed request, API key included) is replaced by ``_QuietLog``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from tokenbox.core.model.textsafe import printable
from tokenbox.core.record.capture import SAFE_HEADERS, CaptureWriter, parse_body
from tokenbox.core.record.target import origin_form
from tokenbox.core.record.usage import UsageReader, context_tokens
from tokenbox.core.sources.readers.capture_format import APIS
from yarl import URL

# RFC 9110 §7.6.1 hop-by-hop headers, plus what aiohttp sets itself for the new connection
# (Content-Length is passed on by hand: see ``_upstream_headers``).
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
        "expect",
    }
)
# Encodings the usage reader can inflate; others are not offered upstream (the client accepts these too).
READABLE_ENCODINGS = ("gzip", "deflate", "identity")
MAX_CAPTURE_BYTES = 256 << 20  # a larger request body is forwarded whole but captured without its body
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 600.0  # seconds without a byte from the upstream (a long reasoning pause stays well below)
GRACE = 2.0  # seconds open requests get to finish when the proxy stops, before they are cut
CUT = "cut: tokenbox record stopped"


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


@dataclass
class BodyCopy:
    """The captured copy of a request body, gathered while the body streams upstream."""

    encoding: str
    limit: int = MAX_CAPTURE_BYTES
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    over: bool = False
    done: bool = False

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.over:
            return
        if self.size > self.limit:
            self.over = True
            self.chunks.clear()
        else:
            self.chunks.append(chunk)

    def take(self) -> bytes:
        """The whole copy (its chunks are let go)."""
        data = b"".join(self.chunks)
        self.chunks.clear()
        return data


def decode_copy(data: bytes, encoding: str, limit: int = MAX_CAPTURE_BYTES) -> tuple[bytes | None, str | None]:
    """The captured body decoded from its ``Content-Encoding``: ``(bytes, None)`` or ``(None, why not)``."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            return None, f"the body is {printable(coding, 40)}-encoded, which tokenbox cannot decode: forwarded as sent, not captured"
        try:
            inflate = zlib.decompressobj(47)
            try:
                out = inflate.decompress(data, limit + 1)
            except zlib.error:
                if coding != "deflate":
                    raise
                inflate = zlib.decompressobj(-15)  # raw deflate, as some clients send it
                out = inflate.decompress(data, limit + 1)
        except zlib.error:
            return None, f"the body is not valid {coding}: forwarded as sent, not captured"
        if len(out) > limit or inflate.unconsumed_tail:
            return None, f"the body inflates to over {limit >> 20} MB: forwarded as sent, not captured"
        data = out
    return data, None


class _QuietLog(logging.Logger):
    """aiohttp's server logger for the proxy: one line naming what happened, never the request's bytes."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__("tokenbox.record.server", logging.DEBUG)
        self.propagate = False
        self._say_line = say

    def handle(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.WARNING:
            return
        kind = type(record.exc_info[1]).__name__ if record.exc_info and record.exc_info[1] is not None else "error"
        self._say_line(f"tokenbox record: a request could not be handled ({kind}); it was refused, its bytes are not shown")


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
        self.stopping = False
        self._open: set[asyncio.Task[Any]] = set()
        # One thread writes the capture, in the order records are handed to it (a request before its response).
        self._capture = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenbox-capture")
        writer.notice = self._say
        self.log = _QuietLog(self._say)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    def runner(self) -> web.AppRunner:
        """The app's runner: request bodies left encoded, handlers cancelled when their client goes, a quiet log."""
        return web.AppRunner(
            self.app(), access_log=None, handle_signals=False, handler_cancellation=True, shutdown_timeout=GRACE,
            auto_decompress=False, max_field_size=65536, logger=self.log,
        )

    async def _start(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, connect=self.config.connect_timeout, sock_read=self.config.read_timeout)
        connector = aiohttp.TCPConnector(limit=0)  # as many upstream connections as clients: no queue the client cannot see
        # auto_decompress off: the client gets the upstream's bytes as they were sent.
        self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False, trust_env=False, connector=connector)

    async def _stop(self, _app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    def close(self) -> None:
        """Wait for the capture thread to write everything handed to it."""
        self._capture.shutdown(wait=True)

    def hand(self, write: Callable[..., None], *args: Any) -> None:
        """Give ``write`` to the capture thread (in order); once it has stopped, write here and now."""
        try:
            self._capture.submit(write, *args)
        except RuntimeError:  # a request that outlived the proxy's shutdown: its record is still written
            write(*args)

    def _say(self, line: str) -> None:
        if self.out is not None:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (OSError, ValueError):
                pass
        if self.on_record is not None:
            self.on_record(line)

    async def finish(self, force: asyncio.Event | None = None, grace: float = GRACE) -> int:
        """Stop: give open requests ``grace`` seconds (or until ``force`` is set), then cut the rest.

        Returns how many were cut; each is recorded with ``error`` ``CUT`` and its client's connection closed.
        """
        self.stopping = True
        loop = asyncio.get_running_loop()
        end = loop.time() + grace
        pending = {task for task in self._open if not task.done()}
        forced = asyncio.ensure_future(force.wait()) if force is not None else None
        try:
            while pending and loop.time() < end and not (force is not None and force.is_set()):
                waiting: set[asyncio.Future[Any]] = set(pending)
                if forced is not None:
                    waiting.add(forced)
                await asyncio.wait(waiting, timeout=end - loop.time(), return_when=asyncio.FIRST_COMPLETED)
                pending = {task for task in pending if not task.done()}
        finally:
            if forced is not None:
                forced.cancel()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=GRACE)
        return len(pending)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Forward one request; capture it when its path is a captured endpoint."""
        task = asyncio.current_task()
        if task is not None:
            self._open.add(task)
        try:
            return await self._handle(request)
        finally:
            if task is not None:
                self._open.discard(task)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        target = origin_form(request.raw_path)
        if target is None:
            self._say(f"{printable(request.method, 20)} - 400 (refused: the request target is not a path)")
            return self._json_error(400, "invalid_request_error", "the request target must be a path (origin-form, e.g. /v1/messages)")
        path = target.split("?", 1)[0]
        api = APIS.get(path.rstrip("/")) if request.method == "POST" else None
        outcome: dict[str, Any] = {"status": None, "model": None, "stream": False, "usage": None, "error": None}
        capture = _Capture(self, request, path, api) if api is not None else None
        try:
            return await self._forward(request, target, capture, outcome)
        except asyncio.CancelledError:
            outcome["error"] = CUT if self.stopping else "client disconnected"
            raise
        finally:
            if capture is not None:
                outcome["duration_ms"] = round((time.monotonic() - started) * 1000)
                capture.finish(outcome)
            else:
                self._say(f"{request.method} {printable(path)} {outcome['status'] or '-'} (not captured)")

    @staticmethod
    def line(method: str, path: str, outcome: dict[str, Any], context: int | None) -> str:
        """The line printed for a captured request."""
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
        if "Transfer-Encoding" not in request.headers and request.content_length is not None:
            headers["Content-Length"] = str(request.content_length)  # the body goes up as sent, not re-chunked
        headers["Host"] = self.upstream_host
        return headers

    async def _body(self, request: web.Request, capture: _Capture | None) -> AsyncIterator[bytes]:
        """The request body, chunk by chunk as the client sends it; the captured copy is kept on the side."""
        while True:
            chunk = await request.content.readany()
            if not chunk:
                break
            if capture is not None:
                capture.copy.add(chunk)
            yield chunk
        if capture is not None:
            capture.body_complete()

    async def _forward(self, request: web.Request, target: str, capture: _Capture | None, outcome: dict[str, Any]) -> web.StreamResponse:
        assert self._session is not None
        url = URL(self.upstream + target, encoded=True)  # the configured origin + the validated path and query
        data = self._body(request, capture) if request.body_exists else None
        if data is None and capture is not None:
            capture.body_complete()
        try:
            upstream = await self._session.request(
                request.method, url, headers=self._upstream_headers(request), data=data, allow_redirects=False
            )
        except TimeoutError:
            return self._error(504, "upstream timeout", f"the upstream did not answer within {self.config.read_timeout:g} s", outcome)
        except aiohttp.ClientError as exc:
            if capture is not None and not capture.submitted and data is not None:
                async for _ in data:  # the body was never sent: capture it all the same
                    pass
            return self._error(502, "upstream unreachable", f"cannot reach the upstream {safe_url(self.upstream)}: {type(exc).__name__}", outcome)
        async with upstream:
            outcome["status"] = upstream.status
            api = capture.api if capture is not None else ""
            reader = UsageReader(api, upstream.headers.get("Content-Type", ""), upstream.headers.get("Content-Encoding", ""))
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
                await self._relay(request, upstream, response, reader if capture is not None else None, outcome)
            finally:
                reader.finish()
                outcome["usage"] = reader.usage
                outcome["model"] = reader.model
                if reader.stop_reason:
                    outcome["stop_reason"] = reader.stop_reason
            return response

    async def _relay(self, request: web.Request, upstream: aiohttp.ClientResponse, response: web.StreamResponse,
                     reader: UsageReader | None, outcome: dict[str, Any]) -> None:
        """Stream the upstream's body to the client; an upstream failure aborts the client's connection."""
        while True:
            try:
                chunk = await upstream.content.readany()
            except TimeoutError:
                outcome["error"] = "upstream timeout mid-response"
                _abort(request)
                return
            except (aiohttp.ClientError, ConnectionError) as exc:
                outcome["error"] = f"upstream failed mid-response: {type(exc).__name__}"
                _abort(request)
                return
            if not chunk:
                break
            if reader is not None:
                reader.feed(chunk)
            try:
                await response.write(chunk)
            except (ConnectionError, aiohttp.ClientConnectionResetError):
                outcome["error"] = "client disconnected"
                return
        try:
            await response.write_eof()
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            outcome["error"] = "client disconnected"

    def _error(self, status: int, kind: str, message: str, outcome: dict[str, Any]) -> web.Response:
        """A JSON error the client's SDK understands (Anthropic's and OpenAI's shapes at once)."""
        outcome["status"] = status
        outcome["error"] = kind
        return self._json_error(status, "api_error", message, kind.replace(" ", "_"))

    @staticmethod
    def _json_error(status: int, kind: str, message: str, code: str | None = None) -> web.Response:
        payload = {"type": "error", "error": {"type": kind, "message": f"tokenbox record: {message}", "code": code or kind}}
        return web.json_response(payload, status=status)


def _abort(request: web.Request) -> None:
    """Close the client's connection at once, as the upstream closed ours: the client sees a failure."""
    transport = request.transport
    if transport is not None:
        transport.abort()


class _Capture:
    """One captured request: its id (taken on arrival), its body copy, and the records handed to the capture thread."""

    def __init__(self, proxy: Proxy, request: web.Request, path: str, api: str) -> None:
        self.proxy = proxy
        self.method = request.method
        self.path = path
        self.api = api
        self.headers = {k: request.headers[k] for k in SAFE_HEADERS if k in request.headers}
        self.copy = BodyCopy(request.headers.get("Content-Encoding", ""))
        self.id = proxy.writer.next_id()
        self.submitted = False

    def body_complete(self) -> None:
        """The whole body has come: hand its record to the capture thread."""
        self.copy.done = True
        self._submit()

    def _submit(self) -> None:
        if not self.submitted:
            self.submitted = True
            self.proxy.hand(self._write_request)

    def finish(self, outcome: dict[str, Any]) -> None:
        """The response ended (or failed): its record follows the request's."""
        self._submit()  # a body that never ended is recorded as such
        context = context_tokens(self.api, outcome["usage"])
        line = Proxy.line(self.method, self.path, outcome, context)
        self.proxy.hand(self._write_response, dict(outcome), line)

    def _write_request(self) -> None:
        copy = self.copy
        body: Any = None
        error = None
        if copy.over:
            error = f"the body is over {copy.limit >> 20} MB: forwarded as sent, not captured"
        elif not copy.done:
            error = "the body did not arrive whole (the client or the upstream stopped it)"
        else:
            data, error = decode_copy(copy.take(), copy.encoding)
            if error is not None and "cannot decode" in error:
                self.proxy._say(f"tokenbox record: warning: request {self.id}: {error}")
            if data is not None:
                try:
                    body = parse_body(data)
                except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                    body = None
                del data
        copy.chunks.clear()
        try:
            self.proxy.writer.request(self.method, self.path, self.api, self.headers, body, copy.size,
                                      record_id=self.id, body_error=error)
        except OSError as exc:  # a full disk loses this record, never the request or the proxy
            self.proxy._say(f"tokenbox record: cannot write the capture: {exc.strerror or type(exc).__name__}")

    def _write_response(self, outcome: dict[str, Any], line: str) -> None:
        try:
            self.proxy.writer.response(self.id, **outcome)
        except OSError as exc:
            self.proxy._say(f"tokenbox record: cannot write the capture: {exc.strerror or type(exc).__name__}")
        self.proxy._say(line)


async def serve(config: ProxyConfig, writer: CaptureWriter, out: TextIO | None, ready: Callable[[str], None] | None = None,
                stop: asyncio.Event | None = None, force: asyncio.Event | None = None) -> int:
    """Run the proxy until ``stop`` is set (or forever); ``ready(address)`` once it listens.

    On ``stop`` it stops listening, lets open requests finish for ``GRACE`` seconds (less if ``force``
    is set meanwhile), cuts the rest, and waits for the capture to be written. Returns how many were cut.
    """
    proxy = Proxy(config, writer, out)
    runner = proxy.runner()
    cut = 0
    try:
        await runner.setup()
        try:
            site = web.TCPSite(runner, config.host, config.port)
            await site.start()
            address = _address(runner, config)
            writer.start(safe_url(config.upstream), address)
            if ready is not None:
                ready(address)
            await (stop.wait() if stop is not None else asyncio.Event().wait())
            await site.stop()
            cut = await proxy.finish(force)
        finally:
            await runner.cleanup()
    finally:
        await asyncio.get_running_loop().run_in_executor(None, proxy.close)
    return cut


def _address(runner: web.AppRunner, config: ProxyConfig) -> str:
    """``HOST:PORT`` actually bound (port 0 asks the system for a free one)."""
    for server in runner.addresses:
        if isinstance(server, tuple) and len(server) >= 2:
            host = config.host if ":" not in config.host else f"[{config.host}]"
            return f"{host}:{server[1]}"
    return f"{config.host}:{config.port}"
