"""The capture proxy's promises with raw HTTP (no SDK choosing headers for us), CONTRACT §8.

- every credential header reaches the upstream byte for byte — ``x-api-key`` (Anthropic's own header)
  and ``authorization`` both, each checked separately — and none reaches the capture;
- hop-by-hop headers stay on their hop, and ``Host`` names the upstream;
- an upstream that cannot be reached is a 502 in both SDKs' error shape, recorded as such;
- ``--out`` naming an existing file (or a link to one) is refused and the file is left as it was.
"""

from __future__ import annotations

import http.client
import json
import os

import pytest
from tokenbox.core.model.errors import ConfigError
from tokenbox.core.record.run import start

from tests.record.fake_provider import FakeProvider

KEY = "sk-ant-test-XAPIKEY-0123456789"
BEARER = "Bearer sk-test-BEARER-0123456789"
BODY = json.dumps({"model": "claude-sonnet-4", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()


def _post(address: str, headers: dict[str, str], path: str = "/v1/messages") -> tuple[int, dict, bytes]:
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", path, BODY, {"content-type": "application/json", **headers})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def _records(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture
def provider():
    fake = FakeProvider()
    yield fake
    fake.stop()


def _wait_response(path: str, request_id: int) -> dict:
    import threading

    done = threading.Event()
    for _ in range(600):
        found = [r for r in _records(path) if r["kind"] == "response" and r["id"] == request_id]
        if found:
            return found[0]
        done.wait(0.05)
    raise AssertionError(f"no response record for request {request_id}")


def test_credential_headers_reach_the_upstream_unchanged_and_nothing_else_does(tmp_path, provider):
    recording = start(("127.0.0.1", 0), provider.url, str(tmp_path / "c.jsonl"))
    try:
        status, _, body = _post(recording.address, {"x-api-key": KEY, "anthropic-version": "2023-06-01"})
        assert status == 200 and json.loads(body)["content"][0]["text"] == "hello"
        only_key = provider.received[-1]["headers"]
        assert only_key["x-api-key"] == KEY and "authorization" not in only_key
        assert only_key["host"] == provider.url.removeprefix("http://")

        status, _, _ = _post(recording.address, {"authorization": BEARER, "connection": "keep-alive",
                                                 "keep-alive": "timeout=5", "proxy-authorization": "Basic cHJveHk6c2VjcmV0",
                                                 "te": "trailers", "x-custom": "kept as sent"})
        assert status == 200
        bearer = provider.received[-1]["headers"]
        assert bearer["authorization"] == BEARER and "x-api-key" not in bearer
        assert bearer["x-custom"] == "kept as sent"
        for hop in ("keep-alive", "proxy-authorization", "te"):
            assert hop not in bearer, hop  # hop-by-hop: meant for the proxy, not forwarded
        _wait_response(recording.path, 2)
    finally:
        recording.stop()
    with open(recording.path, encoding="utf-8") as handle:
        capture = handle.read()
    for secret in (KEY, BEARER, "XAPIKEY", "BEARER", "cHJveHk6c2VjcmV0"):
        assert secret not in capture
    requests = [r for r in _records(recording.path) if r["kind"] == "request"]
    assert len(requests) == 2 and all("x-api-key" not in r["headers"] and "authorization" not in r["headers"] for r in requests)


def test_an_unreachable_upstream_is_a_502_in_the_sdks_error_shape(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nobody listens on: bound, never listening, released after
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
        recording = start(("127.0.0.1", 0), closed, str(tmp_path / "c.jsonl"))
        try:
            status, headers, body = _post(recording.address, {"x-api-key": KEY})
            record = _wait_response(recording.path, 1)
        finally:
            recording.stop()
    assert status == 502 and headers["content-type"].startswith("application/json")
    error = json.loads(body)
    assert error["type"] == "error" and error["error"]["code"] == "upstream_unreachable"
    assert error["error"]["message"].startswith("tokenbox record: cannot reach the upstream http://127.0.0.1:")
    assert KEY not in body.decode()
    assert (record["status"], record["error"], record["usage"]) == (502, "upstream unreachable", None)


def test_out_naming_an_existing_file_is_refused_and_the_file_kept(tmp_path, provider):
    precious = tmp_path / "notes.jsonl"
    precious.write_bytes(b'{"mine": true}\n')
    before = precious.stat()
    with pytest.raises(ConfigError) as caught:
        start(("127.0.0.1", 0), provider.url, str(precious))
    assert caught.value.problem == "the capture file already exists" and caught.value.remedy == "name a new file with --out"
    link = tmp_path / "link.jsonl"
    link.symlink_to(precious)
    with pytest.raises(ConfigError):
        start(("127.0.0.1", 0), provider.url, str(link))
    assert precious.read_bytes() == b'{"mine": true}\n'
    after = precious.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_mode) == (before.st_size, before.st_mtime_ns, before.st_mode)
    assert set(os.listdir(tmp_path)) == {"notes.jsonl", "link.jsonl"}  # nothing else was made beside them


class HeaderUpstream(FakeProvider):
    """An upstream that answers with headers to check: a redirect, a plain JSON body, a chunked stream."""

    async def handle(self, request):
        from aiohttp import web

        await request.read()
        self.received.append({"raw_path": request.raw_path, "headers": {k.lower(): v for k, v in request.headers.items()}})
        if request.path == "/redirect":
            return web.Response(status=307, headers={"Location": "/v1/messages"})
        if request.path == "/stream":
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Upstream-Id": "s-1"})
            await response.prepare(request)
            for part in (b"data: one\n\n", b"data: two\n\n"):
                await response.write(part)
            await response.write_eof()
            return response
        return web.Response(body=b'{"ok": true}', content_type="application/json",
                            headers={"X-Upstream-Id": "abc", "Proxy-Authenticate": "Basic realm=upstream"})


@pytest.fixture
def header_upstream(tmp_path):
    upstream = HeaderUpstream()
    recording = start(("127.0.0.1", 0), upstream.url, str(tmp_path / "c.jsonl"))
    yield upstream, recording
    recording.stop()
    upstream.stop()


def test_path_query_and_response_headers_pass_as_they_came(header_upstream):
    upstream, recording = header_upstream
    target = "/v1/other?beta=true&q=%2Fa%20b%3D&q=2"
    status, headers, body = _post(recording.address, {"x-api-key": KEY}, target)
    assert (status, body) == (200, b'{"ok": true}')
    assert upstream.received[-1]["raw_path"] == target  # not decoded, not re-encoded
    assert headers["x-upstream-id"] == "abc" and "proxy-authenticate" not in headers  # hop-by-hop stays on its hop
    assert headers["content-length"] == str(len(body)) and "transfer-encoding" not in headers


def test_a_streamed_response_stays_chunked(header_upstream):
    _, recording = header_upstream
    status, headers, body = _post(recording.address, {}, "/stream")
    assert (status, body) == (200, b"data: one\n\ndata: two\n\n")
    assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
    assert headers["x-upstream-id"] == "s-1"


def test_a_redirect_goes_back_to_the_client_unfollowed(header_upstream):
    upstream, recording = header_upstream
    before = len(upstream.received)
    status, headers, _ = _post(recording.address, {}, "/redirect")
    assert (status, headers["location"]) == (307, "/v1/messages")
    assert len(upstream.received) == before + 1  # the proxy did not follow it


@pytest.mark.parametrize(("sent", "forwarded"), [("gzip, br, zstd;q=0.5, identity", "gzip, identity"), ("br", None),
                                                 ("deflate;q=0.5", "deflate;q=0.5")])
def test_accept_encoding_keeps_only_what_the_capture_can_read(header_upstream, sent, forwarded):
    upstream, recording = header_upstream
    _post(recording.address, {"accept-encoding": sent})
    received = upstream.received[-1]["headers"].get("accept-encoding")
    if forwarded is None:  # dropped: the proxy's HTTP client asks for what it can decode itself
        assert received in (None, "gzip, deflate")
    else:
        assert received == forwarded
