"""Usage read from response bytes however they are cut: SSE split anywhere, CRLF, gzip, plain JSON."""

from __future__ import annotations

import gzip
import json

from hypothesis import given
from hypothesis import strategies as st
from tokenbox.core.record.usage import UsageReader, context_tokens

EVENTS = (
    b'event: message_start\r\ndata: {"type":"message_start","message":{"model":"claude-x","usage":'
    b'{"input_tokens":3,"cache_creation_input_tokens":4,"cache_read_input_tokens":500,"output_tokens":1}}}\r\n\r\n'
    b'event: content_block_delta\r\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\r\n\r\n'
    b'event: message_delta\r\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":77}}\r\n\r\n'
    b'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n'
)


def _read(data: bytes, cuts: list[int], content_type: str = "text/event-stream", encoding: str = "") -> UsageReader:
    reader = UsageReader("anthropic-messages", content_type, encoding)
    points = sorted({min(c, len(data)) for c in cuts})
    start = 0
    for point in [*points, len(data)]:
        reader.feed(data[start:point])
        start = point
    reader.finish()
    return reader


@given(st.lists(st.integers(min_value=0, max_value=len(EVENTS)), max_size=12), st.booleans())
def test_anthropic_stream_cut_anywhere(cuts: list[int], gzipped: bool) -> None:
    data = gzip.compress(EVENTS) if gzipped else EVENTS
    reader = _read(data, cuts, encoding="gzip" if gzipped else "")
    assert reader.model == "claude-x" and reader.stop_reason == "tool_use"
    assert reader.usage == {"input_tokens": 3, "cache_creation_input_tokens": 4, "cache_read_input_tokens": 500, "output_tokens": 77}
    assert context_tokens("anthropic-messages", reader.usage) == 507


def test_plain_json_reply_and_unreadable_encodings() -> None:
    body = json.dumps({"model": "gpt-4o", "usage": {"prompt_tokens": 9, "completion_tokens": 2, "service_tier": "x"}}).encode()
    reader = _read(body, [3, 7], content_type="application/json")
    assert reader.usage == {"prompt_tokens": 9, "completion_tokens": 2} and reader.model == "gpt-4o"
    assert context_tokens("openai-chat", reader.usage) == 9
    assert _read(b"\x00garbage", [], content_type="application/json", encoding="br").usage is None
    assert _read(b"not json", [], content_type="application/json").usage is None
    assert _read(b"data: [DONE]\n\n", []).usage is None
