"""The capture proxy is a pipe that tells the truth (issue 24): failures pass as they came, bodies pass byte
for byte, the origin is fixed, a client that leaves cancels its request upstream, secrets never leave.

One fake provider and one proxy serve the module; each failure is also run against the fake directly, so
"as going direct" is what the SDK itself does, not a guess.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import socket
import threading
import zlib

import pytest
from tokenbox.core.record.run import start
from tokenbox.core.sources.loader import load_turns

from tests.record.fake_provider import FakeProvider

KEY = "sk-test-SECRET-pipe-0123456789"
pytestmark = pytest.mark.xdist_group("record_pipe")
WAIT = 30.0  # an upper bound for what happens in another thread (never a timing assertion)


class Env:
    def __init__(self, fake: FakeProvider, recording, log: io.StringIO) -> None:
        self.fake = fake
        self.recording = recording
        self.log = log
        self.host, port = recording.address.rsplit(":", 1)
        self.port = int(port)
        self.url = f"http://{recording.address}"

    def anthropic(self, url: str | None = None, **extra):
        import anthropic

        return anthropic.Anthropic(base_url=url or self.url, api_key=KEY, max_retries=0, **extra)

    def records(self) -> list[dict]:
        try:
            with open(self.recording.path, encoding="utf-8") as handle:
                return [json.loads(line) for line in handle if line.endswith("\n")]
        except FileNotFoundError:  # moved away by a test, not yet started again
            return []

    def wait_for(self, predicate, what: str):
        done = threading.Event()
        for _ in range(int(WAIT / 0.02)):
            found = predicate()
            if found:
                return found
            done.wait(0.02)
        raise AssertionError(f"never happened: {what}")

    def response_of(self, model: str) -> tuple[dict, dict]:
        """The request and response records of the newest request for ``model``."""
        def find():
            records = self.records()
            ids = [r["id"] for r in records if r["kind"] == "request" and model in json.dumps(r)]
            responses = {r["id"]: r for r in records if r["kind"] == "response"}
            if ids and ids[-1] in responses:
                return next(r for r in records if r["kind"] == "request" and r["id"] == ids[-1]), responses[ids[-1]]
            return None
        return self.wait_for(find, f"the records of a {model} request")

    def raw(self, data: bytes) -> bytes:
        """Send raw bytes to the proxy; what it answered (the connection is closed after)."""
        with socket.create_connection((self.host, self.port), timeout=WAIT) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    fake = FakeProvider()
    log = io.StringIO()
    out = str(tmp_path_factory.mktemp("pipe") / "capture.jsonl")
    recording = start(("127.0.0.1", 0), fake.url, out, read_timeout=WAIT, log=log)
    yield Env(fake, recording, log)
    recording.stop()
    fake.stop()


def _user(text: str = "hi") -> list[dict]:
    return [{"role": "user", "content": text}]


def _direct_and_proxied(env: Env, call) -> tuple[BaseException, BaseException]:
    """The exception ``call(client)`` raises against the fake directly, then through the proxy."""
    caught = []
    for url in (env.fake.url, env.url):
        with pytest.raises(Exception) as info:  # which one is the point of the test
            call(env.anthropic(url))
        caught.append(info.value)
    return caught[0], caught[1]


def test_an_upstream_that_drops_mid_stream_makes_the_sdk_raise_as_it_does_direct(env: Env) -> None:
    def call(client):
        with client.messages.stream(model="drop-stream-model", max_tokens=5, messages=_user()) as stream:
            for _ in stream:
                pass

    direct, proxied = _direct_and_proxied(env, call)
    assert type(proxied) is type(direct), (direct, proxied)  # not a truncated message with stop_reason None
    _, response = env.response_of("drop-stream-model")
    assert response["error"].startswith("upstream failed mid-response")
    assert response["usage"]["input_tokens"] == 1010  # what came before the drop is still recorded


def test_a_plain_reply_dropped_halfway_fails_at_once(env: Env) -> None:
    # A client timeout far longer than the test: without the abort, the client would wait for it.
    direct, proxied = _direct_and_proxied(env, lambda client: client.with_options(timeout=20).messages.create(
        model="drop-json-model", max_tokens=5, messages=_user()))
    assert type(proxied) is type(direct), (direct, proxied)
    assert "timeout" not in type(proxied).__name__.lower()
    _, response = env.response_of("drop-json-model")
    assert response["error"].startswith("upstream failed mid-response")


def _post(env: Env, body: bytes, headers: dict[str, str], path: str = "/v1/messages") -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{head}\r\n"
    return env.raw(request.encode() + body)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_an_encoded_request_reaches_the_upstream_byte_for_byte_and_is_captured_decoded(env: Env, coding: str) -> None:
    plain = json.dumps({"model": f"{coding}-model", "max_tokens": 5, "messages": _user("encoded " * 50)}).encode()
    sent = gzip.compress(plain) if coding == "gzip" else zlib.compress(plain)
    answer = _post(env, sent, {"Content-Encoding": coding, "Content-Type": "application/json", "x-api-key": KEY})
    assert answer.startswith(b"HTTP/1.1 200")
    received = next(r for r in reversed(env.fake.received) if r["body"] == sent)
    assert received["headers"]["content-encoding"] == coding  # the label and the bytes still agree
    request, _ = env.response_of(f"{coding}-model")
    turn = next(t for t in load_turns(env.recording.path) if t.meta["capture"]["request"] == request["id"])
    assert any(s.text == "encoded " * 50 for s in turn.sections)


def test_an_encoding_tokenbox_cannot_read_is_forwarded_and_captured_opaque(env: Env) -> None:
    sent = os.urandom(3000)  # what a brotli body looks like to a proxy without brotli
    answer = _post(env, sent, {"Content-Encoding": "br", "Content-Type": "application/json"})
    assert answer.startswith(b"HTTP/1.1 200")  # never a 400 from the proxy itself
    assert any(r["body"] == sent and r["headers"]["content-encoding"] == "br" for r in env.fake.received)
    records = env.wait_for(lambda: [r for r in env.records() if "br-encoded" in r.get("body_error", "")], "the opaque record")
    assert records[-1]["body_bytes"] == 3000 and "body" not in records[-1]
    assert env.wait_for(lambda: "warning: request" in env.log.getvalue() and "br-encoded" in env.log.getvalue(), "the warning")


@pytest.mark.parametrize("target", ["munity://a/v1/messages", "http://127.0.0.1:9/v1/messages", "//evil.example/v1/messages",
                                    "/v1/../../v1/messages", "/v1/%2e%2e/messages", "/v1\\messages", "*"])
def test_a_target_that_is_not_a_path_is_refused_and_never_sent(env: Env, target: str) -> None:
    before = len(env.fake.received)
    body = b'{"model":"m","messages":[]}'
    request = f"POST {target} HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    answer = env.raw(request.encode() + body)
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.0 400")), answer[:80]
    assert len(env.fake.received) == before
    assert KEY not in env.log.getvalue()


def test_a_malformed_request_never_prints_its_bytes(env: Env, capfd: pytest.CaptureFixture[str]) -> None:
    before = env.log.getvalue()
    # an invalid header name: aiohttp refuses it, and its default log prints the raw request
    answer = env.raw(f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY}\r\nbad header\x01: y\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.") and b" 400 " in answer[:20]
    env.wait_for(lambda: env.log.getvalue() != before, "the refusal line")
    err = capfd.readouterr()
    for text in (env.log.getvalue(), err.out, err.err):
        assert KEY not in text and "SECRET" not in text
    assert "its bytes are not shown" in env.log.getvalue()


def test_a_client_that_gives_up_cancels_its_request_upstream(env: Env) -> None:
    import anthropic

    env.fake.abandoned.clear()
    with pytest.raises(anthropic.APITimeoutError):
        env.anthropic().with_options(timeout=0.3).messages.create(model="slow-model", max_tokens=5, messages=_user())
    # the proxy's own read timeout is WAIT: only the client's leaving can close the upstream connection in time
    assert env.fake.abandoned.wait(WAIT)
    _, response = env.response_of("slow-model")
    assert response["error"] == "client disconnected"


def test_a_request_body_streams_upstream_before_the_client_has_sent_it_all(env: Env) -> None:
    half = b"x" * (1 << 20)
    env.fake.upload_started.clear()
    with socket.create_connection((env.host, env.port), timeout=WAIT) as sock:
        sock.sendall(f"POST /probe/stream HTTP/1.1\r\nHost: x\r\nContent-Length: {2 * len(half)}\r\nConnection: close\r\n\r\n".encode())
        sock.sendall(half)
        assert env.fake.upload_started.wait(WAIT)  # the upstream has bytes while half the body is still to come
        sock.sendall(half)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {"bytes": 2 * len(half)}


def test_credentials_under_other_names_are_redacted_in_the_capture(env: Env) -> None:
    servers = [{"type": "url", "name": "a", "url": "https://user:SECRET-PASS@mcp.example/sse"},
               {"type": "url", "name": "b", "url": "https://mcp.example/sse?token=SECRET-TOKEN&mode=full"}]
    tools = [{"name": "deploy", "description": "d", "private_key": "SECRET-PEM", "bearer_token": "SECRET-BEARER",
              "input_schema": {"type": "object", "properties": {"password": {"type": "string"}}}}]
    env.anthropic().messages.create(model="redact-model", max_tokens=5, messages=_user(), tools=tools,
                                    extra_body={"mcp_servers": servers})
    request, _ = env.response_of("redact-model")
    text = json.dumps(request)
    assert "SECRET" not in text
    body = request.get("body") or request["delta"]["set"]
    assert body["mcp_servers"][0]["url"] == "https://[redacted]@mcp.example/sse"
    assert body["mcp_servers"][1]["url"].endswith("?token=%5Bredacted%5D&mode=full")
    assert body["tools"][0]["input_schema"]["properties"] == {"password": {"type": "string"}}  # a parameter's name, kept


def test_nan_in_a_body_is_stored_so_the_capture_stays_readable(env: Env) -> None:
    body = b'{"model": "nan-model", "max_tokens": 5, "temperature": NaN, "top_p": Infinity, "messages": [{"role": "user", "content": "x"}]}'
    assert _post(env, body, {"Content-Type": "application/json"}).startswith(b"HTTP/1.1 200")
    request, _ = env.response_of("nan-model")
    stored = request.get("body") or request["delta"]["set"]
    assert stored["temperature"] == "NaN" and stored["top_p"] == "Infinity"
    assert any(t.meta["capture"]["request"] == request["id"] for t in load_turns(env.recording.path))


def test_zz_a_capture_moved_away_while_running_is_started_again(env: Env) -> None:
    path = env.recording.path
    os.rename(path, path + ".rotated")
    env.anthropic().messages.create(model="after-rotation-model", max_tokens=5, messages=_user())
    request, _ = env.response_of("after-rotation-model")
    records = env.records()
    assert records[0]["kind"] == "start" and records[0]["upstream"] == env.fake.url
    assert "body" in request  # the new file holds no earlier body to build on
    assert env.wait_for(lambda: "the capture file was moved away" in env.log.getvalue(), "the notice")
    assert load_turns(path)[-1].recorded.context_tokens == 1010 + 57
    os.unlink(path)  # deleted: the same again
    env.anthropic().messages.create(model="after-deletion-model", max_tokens=5, messages=_user())
    env.response_of("after-deletion-model")
    assert env.wait_for(lambda: "the capture file was deleted" in env.log.getvalue(), "the notice")
