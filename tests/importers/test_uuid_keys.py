"""The Claude Code reader's lookup key of a line's uuid: a uuid as Claude Code writes it (lowercase hex digits in
groups of 8-4-4-4-12) is keyed by its number, any other string by itself. The key is worked out by string methods
for speed; here it is checked against the definition written as a regular expression."""

from __future__ import annotations

import json
import re
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers.claude_code import TranscriptReader, _uuid_key

WRITTEN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # as Claude Code writes one


def _expected(text: str) -> int | str:
    return int(text.replace("-", ""), 16) if WRITTEN.fullmatch(text) else text


# near misses of a written uuid: one character changed to one a uuid's digits or an ``int(…, 16)`` would take
# (a capital, an underscore, a sign, a space, a hyphen elsewhere, a digit where a hyphen was)
_SWAPS = st.sampled_from(["A", "F", "_", "+", "-", " ", "0", "f", "g", "x", "é", "\n"])


@st.composite
def _uuid_like(draw: st.DrawFn) -> str:
    text = str(uuid.UUID(int=draw(st.integers(0, (1 << 128) - 1))))
    for _ in range(draw(st.integers(0, 2))):
        place = draw(st.integers(0, len(text) - 1))
        text = text[:place] + draw(_SWAPS) + text[place + 1:]
    if draw(st.booleans()):
        text = text.upper() if draw(st.booleans()) else text.replace("-", "", 1) + draw(_SWAPS)
    return text


@settings(max_examples=400, deadline=None)
@given(st.one_of(_uuid_like(), st.text(max_size=40), st.text("0123456789abcdef-", min_size=30, max_size=40)))
def test_a_uuid_key_is_its_number_exactly_when_it_is_written_as_claude_code_writes_one(text):
    assert _uuid_key(text) == _expected(text)
    assert type(_uuid_key(text)) is type(_expected(text))


def _line(uuid: str, parent: str | None, role: str, text: str) -> str:
    message: dict = {"role": role, "content": text}
    if role == "assistant":
        message = {"id": f"m-{uuid}", "role": role, "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "message": message})


def test_a_parent_is_found_by_its_uuid_when_an_earlier_line_is_fed_after_a_later_one() -> None:
    # lines 5 and 2 start two chains, fed in that order (a line numbered below every line named before): the
    # replies of lines 6 and 7 continue each from its own parent's line
    reader = TranscriptReader("o.jsonl")
    reader.feed_text(5, _line("u5", None, "user", "line five"))
    reader.feed_text(2, _line("u2", None, "user", "line two"))
    reader.feed_text(6, _line("a6", "u2", "assistant", "line six"))
    reader.feed_text(7, _line("a7", "u5", "assistant", "line seven"))
    contexts = {request.key: request.context for request in reader.threads["main"].requests}
    assert {key: [[b.text for b in m.blocks] for m in context.messages()] for key, context in contexts.items()
            if context is not None} == {"m-a6": [["line two"]], "m-a7": [["line five"]]}
    assert reader.warnings == []
