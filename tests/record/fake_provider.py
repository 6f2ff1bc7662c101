"""A fake LLM provider for the proxy tests: Anthropic Messages, OpenAI Chat and Responses on 127.0.0.1.

Runs in a background thread with its own event loop. Usage numbers are derived from the request so
tests can check what the capture recorded: ``input_tokens = 1000 + 10 × len(messages)``.
Special models: ``error-model`` answers 400; ``slow-model`` never answers (the proxy times out);
``endless-model`` streams chunks until the reader goes away; ``drop-stream-model`` streams two events
then drops the connection without ending the stream; ``drop-json-model`` sends half of a non-streamed
reply (its Content-Length promises all of it) and drops the connection. ``slow-model`` sets
``abandoned`` when the proxy closes the connection it waits on.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web

CACHE_READ = 50
CACHE_WRITE = 7
OUTPUT = 12


def input_tokens(body: dict[str, Any]) -> int:
    items = body.get("messages", body.get("input", []))
    return 1000 + 10 * (len(items) if isinstance(items, list) else 1)


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {text}\n\n".encode()


class FakeProvider:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []  # method, path, headers, body bytes
        self.endless_stopped = threading.Event()
        self.abandoned = threading.Event()
        self.upload_started = threading.Event()  # a slow-model request's connection was closed by the proxy
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.port = 0
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()
        self._ready.wait(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        app = web.Application(client_max_size=256 << 20)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, auto_decompress=False)  # bodies as sent
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        self._stop = asyncio.Event()
        self._release = asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._release.set)
        self.loop.call_soon_threadsafe(self._stop.set)  # type: ignore[union-attr]
        self.thread.join(10)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/probe/stream":
            first = await request.content.readany()
            self.upload_started.set()  # the proxy passed the body on before the client finished sending it
            raw = first + await request.read()
        else:
            raw = await request.read()
        self.received.append({"method": request.method, "path": request.path_qs, "headers": {k.lower(): v for k, v in request.headers.items()}, "body": raw})
        if request.path == "/v1/models":
            return web.json_response({"object": "list", "data": []})
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:  # an encoded body (the proxy forwards it as sent)
            body = {}
        if request.path == "/probe/stream":  # how much of a streamed upload came before the client sent the rest
            return web.json_response({"bytes": len(raw)})
        model = body.get("model", "")
        if model == "error-model":
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}, status=400)
        if model == "slow-model":  # never answers while the test runs; notices when the proxy gives up
            while not self._release.is_set():
                if request.transport is None or request.transport.is_closing():
                    self.abandoned.set()
                    break
                await asyncio.sleep(0.01)
        if model == "drop-json-model":
            whole = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                                "content": [{"type": "text", "text": "hello " * 200}], "stop_reason": "end_turn",
                                "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.content_length = len(whole)
            await response.prepare(request)
            await response.write(whole[: len(whole) // 2])
            request.transport.abort()
            return response
        if request.path == "/v1/messages":
            return await self.anthropic(request, body)
        if request.path == "/v1/chat/completions":
            return await self.chat(request, body)
        if request.path == "/v1/responses":
            return await self.responses(request, body)
        return web.json_response({"error": "not found"}, status=404)

    async def _stream(self, request: web.Request, chunks: list[bytes], endless: bool = False) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Set-Cookie": "upstream=COOKIE-FROM-UPSTREAM"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        if endless:
            try:
                for _ in range(2000):
                    await asyncio.sleep(0.01)
                    await response.write(_sse("ping", {"type": "ping"}))
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                self.endless_stopped.set()
            return response
        await response.write_eof()
        return response

    async def anthropic(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        usage = {"input_tokens": input_tokens(body), "cache_creation_input_tokens": CACHE_WRITE,
                 "cache_read_input_tokens": CACHE_READ, "output_tokens": 1}
        message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": body.get("model"),
                   "stop_reason": None, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            message.update(content=[{"type": "text", "text": "hello"}], stop_reason="end_turn", usage={**usage, "output_tokens": OUTPUT})
            return web.json_response(message)
        chunks = [
            _sse("message_start", {"type": "message_start", "message": message}),
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hel"}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
        ]
        endless = body.get("model") == "endless-model"
        if body.get("model") == "drop-stream-model":
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for chunk in chunks[:2]:
                await response.write(chunk)
            await asyncio.sleep(0.05)
            request.transport.abort()  # the upstream fails mid-stream
            return response
        if not endless:
            chunks += [
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                       "usage": {"output_tokens": OUTPUT}}),
                _sse("message_stop", {"type": "message_stop"}),
            ]
        return await self._stream(request, chunks, endless)

    async def chat(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        prompt = input_tokens(body)
        usage = {"prompt_tokens": prompt, "completion_tokens": OUTPUT, "total_tokens": prompt + OUTPUT,
                 "prompt_tokens_details": {"cached_tokens": CACHE_READ}}
        base = {"id": "chatcmpl-1", "created": 1, "model": body.get("model")}
        if not body.get("stream"):
            return web.json_response({**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}]})
        chunk = {**base, "object": "chat.completion.chunk"}
        chunks = [
            _sse(None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hel"}, "finish_reason": None}]}),
            _sse(None, {**chunk, "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]}),
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(_sse(None, {**chunk, "choices": [], "usage": usage}))
        chunks.append(_sse(None, "[DONE]"))
        return await self._stream(request, chunks)

    async def responses(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        prompt = input_tokens(body)
        usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": CACHE_READ}, "output_tokens": OUTPUT,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + OUTPUT}
        output = [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": "hello", "annotations": []}]}]
        response = {"id": "resp_1", "object": "response", "created_at": 1, "model": body.get("model"), "status": "completed",
                    "output": output, "usage": usage, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
        if not body.get("stream"):
            return web.json_response(response)
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        chunks = [
            _sse("response.created", {"type": "response.created", "sequence_number": 0, "response": started}),
            _sse("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1",
                                                "output_index": 0, "content_index": 0, "delta": "hello"}),
            _sse("response.completed", {"type": "response.completed", "sequence_number": 2, "response": response}),
        ]
        return await self._stream(request, chunks)
