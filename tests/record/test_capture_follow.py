"""Following a growing capture (``tokenbox-tui --record``): each line read once, turns as a cold read gives them,
memory per followed request that does not grow with the capture (issue 24: 0.3-0.9 MB per request)."""

from __future__ import annotations

import gc
import json
import tracemalloc

from tokenbox.core.planning.engine import Engine
from tokenbox.core.record.capture import CaptureWriter
from tokenbox.core.sources.loader import Loader, load_turns


def _conversation(number: int, turns: int) -> list[dict]:
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"agent {number}, step {turn}: " + "look at this file and fix it. " * 12})
        messages.append({"role": "assistant", "content": f"done {turn}: " + "fixed. " * 12})
    return messages[:-1]


def _anthropic(number: int, turns: int) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 500, "system": f"You are agent {number}. " * 40,
            "tools": [{"name": f"mcp__files__read{number}", "description": "read", "input_schema": {"type": "object"}}],
            "messages": _conversation(number, turns)}


def _plans(turns) -> list[dict]:
    engine = Engine()
    return [engine.plan(turn).to_dict() for turn in turns]


def test_a_followed_capture_gives_the_turns_a_cold_read_gives(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    loader = Loader()
    steps = []
    for step in range(1, 9):
        steps.append(("anthropic-messages", "/v1/messages", _anthropic(step % 3, step), {"input_tokens": 900 + 40 * step,
                      "cache_read_input_tokens": 100, "cache_creation_input_tokens": 3, "output_tokens": 5} if step % 4 else None))
        if step == 3:
            steps.append(("openai-chat", "/v1/chat/completions", {"model": "gpt-4o", "messages": [
                {"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]},
                {"prompt_tokens": 700, "completion_tokens": 4}))
        if step == 5:
            steps.append(("anthropic-messages", "/v1/messages", {"model": "claude-haiku-4", "max_tokens": 5,
                          "system": "Name the topic.", "messages": _conversation(1, 1)}, {"input_tokens": 50, "output_tokens": 2}))
    for number, (api, route, body, usage) in enumerate(steps, start=1):
        record = writer.request("POST", route, api, {}, body, 0)
        if number == 4:
            with open(path, "ab") as handle:  # a torn record (a crash mid-write), then a request that cannot be read
                handle.write(b'{"tokenbox_capture":1,"kind":"requ\n')
                handle.write(json.dumps({"tokenbox_capture": 1, "kind": "request", "id": 99, "api": "anthropic-messages",
                                         "path": "/v1/messages", "delta": {"base": 77, "keep": 0, "append": []}}).encode() + b"\n")
        followed = loader.load_turns(path)
        assert _plans(followed) == _plans(load_turns(path)), number  # pending: no usage yet
        if usage is not None:
            writer.response(record, status=200, usage=usage)
            followed = loader.load_turns(path)
            cold = load_turns(path)
            assert _plans(followed) == _plans(cold), number
            assert [t.thread for t in followed] == [t.thread for t in cold]
            facts = followed.info(len(followed) - 1)
            assert facts["recorded"] == cold[-1].recorded and facts["request"] == record
    writer.close()
    assert len(load_turns(path)) == len(followed) == len(steps)


def _follow(path: str, requests: int) -> tuple[int, int]:
    """Append ``requests`` requests of 8 interleaved growing conversations, following after each; the
    memory held after the first half and after all of them."""
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    loader = Loader()
    engine = Engine()
    held = []
    tracemalloc.start()
    try:
        for number in range(requests):
            conversation = number % 8
            record = writer.request("POST", "/v1/messages", "anthropic-messages", {}, _anthropic(conversation, number // 8 + 1), 0)
            writer.response(record, status=200, usage={"input_tokens": 1000 + number, "output_tokens": 5})
            turns = loader.load_turns(path)
            engine.plan(turns[-1])
            if number + 1 in (requests // 2, requests):
                gc.collect()
                held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        writer.close()
    return held[0], held[1]


def test_memory_per_followed_request_does_not_grow_with_the_capture(tmp_path) -> None:
    half, whole = _follow(str(tmp_path / "c.jsonl"), 160)
    per_request = (whole - half) / 80
    print(f"held after 80 requests {half / 1e6:.1f} MB, after 160 {whole / 1e6:.1f} MB: {per_request / 1e3:.1f} KB per request")
    # each request adds two messages of ~400 bytes and a reference per message of its conversation;
    # building every turn again (as before) held every turn's sections: a growing cost per request
    assert per_request < 60_000, per_request
