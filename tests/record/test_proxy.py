"""``tokenbox record`` against a fake provider on 127.0.0.1, driven by the real anthropic and openai SDKs.

One proxy (in its background thread, as ``tokenbox-tui --record`` runs it) serves the whole module;
the last tests check that no credential reached any output or file and plan the capture through the CLI.
"""

from __future__ import annotations

import io
import json
import os
import stat
import threading
from typing import TYPE_CHECKING

import pytest
from tokenbox.core.commands.cli import main
from tokenbox.core.record.run import Recording, start

from tests.record.fake_provider import CACHE_READ, CACHE_WRITE, OUTPUT, FakeProvider, input_tokens

if TYPE_CHECKING:  # the SDKs are imported where used: every parallel worker collects this module, one runs it
    import anthropic
    import openai

ANTHROPIC_KEY = "sk-test-SECRET-anthropic-0123456789"
OPENAI_KEY = "sk-test-SECRET-openai-0123456789"
COOKIE = "session=COOKIE-SECRET-42"
MCP_TOKEN = "MCP-TOKEN-SECRET-77"
SECRETS = ("SECRET", "COOKIE-FROM-UPSTREAM")
# one proxy serves the module and its last test reads what all the others recorded: keep them on one worker
pytestmark = pytest.mark.xdist_group("record_proxy")
WAIT = 30.0  # an upper bound for things that happen in another thread (never a timing assertion)


class Env:
    def __init__(self, fake: FakeProvider, recording: Recording, log: io.StringIO, state: str) -> None:
        self.fake = fake
        self.recording = recording
        self.log = log
        self.state = state
        self.errors: list[str] = []  # every error message a client saw
        self.url = f"http://{recording.address}"

    def anthropic(self, **extra) -> anthropic.Anthropic:
        import anthropic

        return anthropic.Anthropic(base_url=self.url, api_key=ANTHROPIC_KEY, max_retries=0,
                                   default_headers={"Cookie": COOKIE, "anthropic-beta": "test-beta-1"}, **extra)

    def openai(self) -> openai.OpenAI:
        import openai

        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=OPENAI_KEY, max_retries=0, default_headers={"Cookie": COOKIE})

    def records(self) -> list[dict]:
        """Every complete record of the capture. A line read while the proxy writes a big record can, under
        load, come back undecodable for a moment (seen once in a few dozen runs, on the code before issue 27
        too); read again, a record the proxy tore for good still fails here."""
        for attempt in range(20):
            try:
                with open(self.recording.path, encoding="utf-8") as handle:
                    return [json.loads(line) for line in handle if line.endswith("\n")]  # not a line still being written
            except json.JSONDecodeError:
                if attempt == 19:
                    raise
                threading.Event().wait(0.05)
        raise AssertionError("unreachable")

    def response_of(self, request_id: int) -> dict:
        """The response record of ``request_id`` (it is written when the response ends: wait for it)."""
        done = threading.Event()
        for _ in range(int(WAIT / 0.05)):
            found = [r for r in self.records() if r["kind"] == "response" and r["id"] == request_id]
            if found:
                return found[0]
            done.wait(0.05)
        raise AssertionError(f"no response record for request {request_id}")

    def logged(self, text: str) -> bool:
        """Whether the proxy's log says ``text``: it writes a line after the response has gone out, so wait for it."""
        done = threading.Event()
        for _ in range(int(WAIT / 0.05)):
            if text in self.log.getvalue():
                return True
            done.wait(0.05)
        return False

    def last_request_id(self) -> int:
        """The newest request record's id, once every captured request the upstream received has its record
        (the capture thread writes a request's record when its body has come, beside the response)."""
        done = threading.Event()
        captured = ("/v1/messages", "/v1/chat/completions", "/v1/responses")
        for _ in range(int(WAIT / 0.05)):
            expected = sum(1 for r in self.fake.received if r["method"] == "POST" and r["path"].split("?")[0] in captured)
            ids = [r["id"] for r in self.records() if r["kind"] == "request"]
            if len(ids) >= expected:
                return max(ids, default=0)
            done.wait(0.05)
        raise AssertionError("a request record never came")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    state = str(tmp_path_factory.mktemp("state"))
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = state
    fake = FakeProvider()
    log = io.StringIO()
    try:
        recording = start(("127.0.0.1", 0), fake.url, None, read_timeout=1.0, log=log)
    finally:
        if old is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old
    yield Env(fake, recording, log, state)
    recording.stop()
    fake.stop()


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_capture_file_and_folder_modes(env: Env) -> None:
    folder = os.path.join(env.state, "tokenbox", "captures")
    assert os.path.dirname(env.recording.path) == folder
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(env.recording.path).st_mode) == 0o600
    first = env.records()[0]
    assert first["tokenbox_capture"] == 1 and first["kind"] == "start" and first["upstream"] == env.fake.url


def test_anthropic_non_streamed_forwarded_unchanged_and_recorded(env: Env) -> None:
    before = len(env.fake.received)
    reply = env.anthropic().messages.create(model="claude-sonnet-4", max_tokens=50, messages=_user("hi"),
                                            extra_body={"mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x",
                                                                         "authorization_token": MCP_TOKEN}]})
    assert reply.content[0].text == "hello" and reply.usage.output_tokens == OUTPUT
    seen = env.fake.received[before]
    sent = {k.lower(): v for k, v in env.anthropic().auth_headers.items()}  # what this SDK version sends
    assert sent and all(ANTHROPIC_KEY in value for value in sent.values())
    for header, value in sent.items():
        assert seen["headers"][header] == value  # the credential reaches the upstream, unchanged
    assert seen["headers"]["cookie"] == COOKIE
    assert seen["headers"]["host"] == env.fake.url.removeprefix("http://")
    assert json.loads(seen["body"])["mcp_servers"][0]["authorization_token"] == MCP_TOKEN
    request_id = env.last_request_id()
    record = env.response_of(request_id)
    assert record["status"] == 200 and record["stream"] is False
    assert record["usage"]["input_tokens"] == input_tokens({"messages": _user("hi")})
    request = next(r for r in env.records() if r["kind"] == "request" and r["id"] == request_id)
    assert request["headers"] == {"anthropic-version": request["headers"]["anthropic-version"],
                                  "anthropic-beta": "test-beta-1", "user-agent": request["headers"]["user-agent"]}
    assert "SECRET" not in json.dumps(request)


def test_anthropic_streamed(env: Env) -> None:
    messages = [*_user("one"), {"role": "assistant", "content": "two"}, *_user("three")]
    with env.anthropic().messages.stream(model="claude-sonnet-4", max_tokens=50, messages=messages) as stream:
        text = stream.get_final_text()
        final = stream.get_final_message()
    assert text == "hello" and final.usage.output_tokens == OUTPUT
    record = env.response_of(env.last_request_id())
    assert record["stream"] is True and record["stop_reason"] == "end_turn"
    assert record["usage"] == {"input_tokens": 1030, "cache_creation_input_tokens": CACHE_WRITE,
                               "cache_read_input_tokens": CACHE_READ, "output_tokens": OUTPUT}
    assert env.logged("POST /v1/messages 200 claude-sonnet-4 context 1,087 tokens")


def test_openai_chat_streamed_and_not(env: Env) -> None:
    client = env.openai()
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": "be brief"}, *_user("x")])
    assert reply.choices[0].message.content == "hello"
    assert env.response_of(env.last_request_id())["usage"]["prompt_tokens"] == 1020
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=_user("x"), stream=True,
                                                 stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hello"
    assert chunks[-1].usage.prompt_tokens == 1010
    record = env.response_of(env.last_request_id())
    assert record["stream"] is True and record["usage"]["prompt_tokens_details"] == {"cached_tokens": CACHE_READ}


def test_openai_responses_streamed_and_not(env: Env) -> None:
    client = env.openai()
    reply = client.responses.create(model="gpt-4o", input="hello", instructions="be brief")
    assert reply.output_text == "hello"
    assert env.response_of(env.last_request_id())["usage"]["input_tokens"] == 1010
    events = list(client.responses.create(model="gpt-4o", input=[{"role": "user", "content": "a"}] * 3, stream=True))
    assert events[-1].type == "response.completed"
    record = env.response_of(env.last_request_id())
    assert record["stream"] is True and record["usage"]["input_tokens"] == 1030 and record["stop_reason"] == "completed"


def test_error_status_passes_through(env: Env) -> None:
    import anthropic

    with pytest.raises(anthropic.BadRequestError) as caught:
        env.anthropic().messages.create(model="error-model", max_tokens=5, messages=_user("x"))
    env.errors.append(str(caught.value))
    assert caught.value.status_code == 400 and "bad model" in str(caught.value)
    record = env.response_of(env.last_request_id())
    assert record["status"] == 400 and record["usage"] is None


def test_upstream_timeout_is_a_504_and_the_proxy_goes_on(env: Env) -> None:
    import anthropic

    with pytest.raises(anthropic.APIStatusError) as caught:
        env.anthropic().messages.create(model="slow-model", max_tokens=5, messages=_user("x"))
    env.errors.append(str(caught.value))
    assert caught.value.status_code == 504 and "did not answer" in str(caught.value)
    record = env.response_of(env.last_request_id())
    assert record["status"] == 504 and record["error"] == "upstream timeout"
    assert env.logged("(upstream timeout)")
    assert env.anthropic().messages.create(model="claude-sonnet-4", max_tokens=5, messages=_user("x")).content[0].text == "hello"


def test_client_disconnect_mid_stream(env: Env) -> None:
    env.fake.endless_stopped.clear()
    stream = env.anthropic().messages.create(model="endless-model", max_tokens=5, messages=_user("x"), stream=True)
    first = next(iter(stream))
    assert first.type == "message_start"
    request_id = env.last_request_id()
    stream.close()  # the client goes away while the upstream is still streaming
    record = env.response_of(request_id)
    assert record["error"] == "client disconnected"
    assert record["usage"]["input_tokens"] == 1010  # what the stream reported before the client left
    assert env.fake.endless_stopped.wait(WAIT)  # the upstream stream was closed too
    assert env.anthropic().messages.create(model="claude-sonnet-4", max_tokens=5, messages=_user("y")).content[0].text == "hello"


def test_uncaptured_path_passes_through(env: Env) -> None:
    count = len([r for r in env.records() if r["kind"] == "request"])
    env.openai().models.list()
    assert env.fake.received[-1]["path"] == "/v1/models"
    assert env.logged("GET /v1/models 200 (not captured)")
    assert len([r for r in env.records() if r["kind"] == "request"]) == count


def test_ten_megabyte_body(env: Env) -> None:
    big = "x" * (10 * 1024 * 1024)
    reply = env.anthropic().messages.create(model="claude-sonnet-4", max_tokens=5, messages=_user(big))
    assert reply.content[0].text == "hello"
    assert json.loads(env.fake.received[-1]["body"])["messages"][0]["content"] == big
    request_id = env.last_request_id()
    assert env.response_of(request_id)["status"] == 200
    request = next(r for r in env.records() if r["kind"] == "request" and r["id"] == request_id)
    stored = request["body"]["messages"] if "body" in request else request["delta"]["append"]
    assert stored[-1]["content"] == big


SYSTEM = "You are a careful coding agent. " * 600  # ~19 KB
TOOLS = [{"name": f"mcp__files__tool{i}", "description": "Does a thing. " * 40,
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}} for i in range(8)]


def _grow(env: Env, turns: int) -> tuple[int, int]:
    """``turns`` requests of one growing conversation (system prompt, eight tools): the first request's
    id and the bytes of every body sent."""
    client = env.anthropic()
    messages: list[dict] = []
    bodies = 0
    first_id = env.last_request_id() + 1
    for turn in range(turns):
        messages = [*messages, {"role": "user", "content": f"step {turn}: " + "please look at this file. " * 20}]
        client.messages.create(model="claude-sonnet-4", max_tokens=100, system=SYSTEM, tools=TOOLS, messages=messages)
        bodies += len(env.fake.received[-1]["body"])
        messages = [*messages, {"role": "assistant", "content": f"done {turn}: " + "I looked. " * 20}]
    env.response_of(env.last_request_id())
    return first_id, bodies


def test_thirty_requests_grow_the_capture_linearly(env: Env) -> None:
    """A growing conversation costs about one body plus the new messages of each request."""
    before = os.path.getsize(env.recording.path)
    _, bodies = _grow(env, 30)
    growth = os.path.getsize(env.recording.path) - before
    last_body = len(env.fake.received[-1]["body"])
    print(f"capture growth {growth} bytes for 30 requests; last body {last_body} bytes; all bodies {bodies} bytes")
    assert growth < last_body + 30 * 1200, (growth, last_body)  # one body, then ~the new messages per request
    assert bodies > 10 * growth  # storing every body whole would have cost over ten times as much


def _expected_context(api: str, usage: dict | None) -> int | None:
    if not usage:
        return None
    if api == "anthropic-messages":
        return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    return usage["prompt_tokens" if api == "openai-chat" else "input_tokens"]


def test_plan_capture_through_the_cli(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    """Every turn of the capture is the request with the context its response recorded (none for errors),
    and that recorded context is the plan's headline (CONTRACT §7)."""
    from tokenbox.core.planning.engine import Engine
    from tokenbox.core.sources.loader import load_turns
    from tokenbox.core.sources.readers import capture

    env.anthropic().messages.create(model="claude-sonnet-4", max_tokens=5, messages=_user("planned"))
    env.response_of(env.last_request_id())
    first_id, _ = _grow(env, 3)  # this test's own growing conversation: turns of 1, 3 and 5 messages
    growth = {first_id + offset: 2 * offset + 1 for offset in range(3)}
    records = env.records()
    responses = {r["id"]: r for r in records if r["kind"] == "response"}
    requests = [r for r in records if r["kind"] == "request"
                and (r["api"] != "openai-responses" or capture.responses_importer() is not None)]
    turns = load_turns(env.recording.path)
    assert [t.meta["capture"]["request"] for t in turns] == [r["id"] for r in requests]
    engine = Engine()
    for turn, request in zip(turns, requests, strict=True):
        expected = _expected_context(request["api"], responses[request["id"]]["usage"])
        assert (turn.recorded.context_tokens if turn.recorded else None) == expected, request["id"]
        if expected is not None and len(turn.sections) < 100:
            plan = engine.plan(turn)
            assert plan.tokens_after == expected and sum(s.tokens_after for s in plan.sections) + plan.joins == expected
    checked = set()
    # through the CLI: the first turn that recorded usage (in a shuffled order the module's first request
    # may have been an error) and the growing conversation's three turns
    first = next(r["id"] for r in requests if responses[r["id"]]["usage"])
    for number, request in enumerate(requests, start=1):
        if request["id"] != first and request["id"] not in growth:
            continue
        assert main(["plan", env.recording.path, "--turn", str(number), "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        expected = _expected_context(request["api"], responses[request["id"]]["usage"])
        assert plan["recorded"]["context_tokens"] == plan["tokens"]["after"] == expected
        if request["id"] in growth:
            count = growth[request["id"]]
            checked.add(request["id"])
            assert expected == 1000 + 10 * count + CACHE_WRITE + CACHE_READ
            ids = [s["id"] for s in plan["sections"]]
            assert sum(i.startswith("tool.mcp__files__") for i in ids) == 8 and "system" in ids
            assert sum(i.startswith("m") for i in ids) == count
    assert checked == set(growth)  # the three turns of the growing conversation were planned
    assert main(["check", env.recording.path]) in (0, 1)
    capsys.readouterr()


def test_zz_no_credential_anywhere(env: Env) -> None:
    """No key, cookie or MCP token in the capture, the output or an error: after this test's own traffic
    (every kind of request that carries one) and whatever the module's other tests sent before it."""
    import anthropic

    lines_before = env.log.getvalue().count("\n")
    client = env.anthropic()
    client.messages.create(model="claude-sonnet-4", max_tokens=5, messages=_user("with an MCP server"),
                           extra_body={"mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x",
                                                        "authorization_token": MCP_TOKEN}]})
    with client.messages.stream(model="claude-sonnet-4", max_tokens=5, messages=_user("streamed")) as stream:
        stream.get_final_message()
    env.openai().chat.completions.create(model="gpt-4o", messages=_user("openai"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="error-model", max_tokens=5, messages=_user("x"))
    env.errors.append(str(caught.value))
    env.response_of(env.last_request_id())
    assert env.logged("POST /v1/messages 400")
    with open(env.recording.path, "rb") as handle:
        data = handle.read()
    texts = [data.decode("utf-8"), env.log.getvalue(), *env.errors]
    for text in texts:
        for secret in (*SECRETS, ANTHROPIC_KEY, OPENAI_KEY, COOKIE, MCP_TOKEN):
            assert secret not in text
    assert b"[redacted]" in data  # the MCP server's authorization_token was there and was redacted
    assert env.log.getvalue().count("\n") >= lines_before + 4  # a line for each request above
