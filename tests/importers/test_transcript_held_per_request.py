"""What a followed Claude Code transcript keeps per request beside its blocks (issue 27, "memory stays flat").

A follower of a session that never compacts keeps every context it built and the message each ends with,
every call and its result: what each of them holds beyond its text is paid again for every request of the
chain. Counted here, through the reader's contexts: the meta of a context's messages (empty for a transcript's
message: its blocks carry theirs), the id string a tool result names its call by, and the place each message
reads as in its context.
"""

from __future__ import annotations

import json
import sys
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers.claude_code import TranscriptReader, read_transcript

from tests.importers.followed_chain import bytes_beside_values as _bytes_beside_values
from tests.importers.followed_chain import followed as _followed


def _followed_reader(tmp_path):
    """The reader of a follower of the chain, as it was appended to."""
    return _followed(tmp_path)[1]



def _followed_messages(tmp_path, *, cold: list | None = None):
    """The messages of the newest main-thread request's context, the chain followed as it was appended to
    (and into ``cold``, the same read whole once appended to)."""
    path, reader = _followed(tmp_path)
    context = reader.threads["main"].requests[-1].context
    assert context is not None
    if cold is not None:
        whole = read_transcript(str(path), path.read_text(encoding="utf-8")).threads["main"].requests[-1].context
        assert whole is not None
        cold.extend(whole.messages())
    return context.messages()



def test_a_followed_blocks_meta_holds_little_beside_its_values(tmp_path) -> None:
    blocks = [block for message in _followed_messages(tmp_path) for block in message.blocks]
    assert len(blocks) >= 30
    seen: set[int] = set()
    held = sum(_bytes_beside_values(block.meta, seen) for block in blocks) / len(blocks)
    # a dict each before (184 bytes for up to five keys on CPython 3.11, 272 for six): 189 bytes a block on this
    # chain; now its values' tuple and a small object (120-136 bytes), the keys' places shared: 148 with them
    assert held < 165, held


def test_a_followed_blocks_meta_reads_as_a_cold_reads(tmp_path) -> None:
    cold: list = []
    followed = _followed_messages(tmp_path, cold=cold)
    assert [m.role for m in followed] == [m.role for m in cold]
    for message, whole in zip(followed, cold, strict=True):
        assert len(message.blocks) == len(whole.blocks)
        for block, other in zip(message.blocks, whole.blocks, strict=True):
            assert block.meta == other.meta and other.meta == block.meta
            assert list(block.meta.items()) == list(other.meta.items())  # keys in their order
            assert block.meta.get("no such key", 3) == 3 and ("estimate" in block.meta) == ("estimate" in other.meta)


def test_a_followed_contexts_messages_share_their_empty_meta(tmp_path) -> None:
    messages = _followed_messages(tmp_path)
    assert len(messages) >= 20
    assert all(len(message.meta) == 0 for message in messages)  # a transcript's message carries no meta of its own
    held = {id(message.meta): sys.getsizeof(message.meta) for message in messages}
    # an empty dict each before (64 bytes a message on CPython 3.11): now one read-only mapping for all
    assert sum(held.values()) / len(messages) < 8, held


def test_a_followed_readers_nodes_hold_little_beside_their_blocks(tmp_path) -> None:
    reader = _followed_reader(tmp_path)
    nodes = reader.nodes
    assert len(nodes) >= 40
    seen: set[int] = {id(())}  # (the empty tuple: one for every node without calls)
    held = 0
    for node in nodes:
        held += sys.getsizeof(node)
        for name in type(node).__slots__:
            part = getattr(node, name)
            if isinstance(part, tuple) and id(part) not in seen:  # its lines', its calls' tuples
                seen.add(id(part))
                held += sys.getsizeof(part)
    # a node's lines were a tuple of its own (a request's shared it): 215 bytes a node on this chain before;
    # now its first line's number, a request's lines on the request: 165
    assert held / len(nodes) < 190, held / len(nodes)


def test_a_tool_results_id_is_its_calls_string(tmp_path) -> None:
    messages = _followed_messages(tmp_path)
    calls: dict[str, list[str]] = {}  # an id -> its calls' strings (a line written twice repeats its call)
    for message in messages:
        for block in message.blocks:
            if block.type == "tool_use" and "tool_use_id" in block.meta:
                calls.setdefault(block.meta["tool_use_id"], []).append(block.meta["tool_use_id"])
    results = [block.meta["tool_use_id"] for message in messages for block in message.blocks
               if block.type == "tool_result" and block.meta.get("tool_use_id") in calls]
    assert len(results) >= 10
    # the result's line decoded an equal string of its own: kept, it was a second copy of every call's id
    assert all(any(result is call for call in calls[result]) for result in results)


def _line(role: str, number: int, parent: str | None) -> str:
    uuid = f"00000000-0000-4000-8000-{number:012x}"
    message: dict = {"role": role, "content": [{"type": "text", "text": f"{role} {number}"}]}
    if role == "assistant":
        message.update(id=f"msg_{number}", model="claude-sonnet-4-20250514",
                       usage={"input_tokens": 10 + number, "output_tokens": 5})
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "isSidechain": False, "sessionId": "s",
                       "message": message})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=12))
def test_each_message_of_a_context_is_at_its_place(roles: list[str]) -> None:
    # lines of one role in a row are one message: every line's context numbers its messages 0, 1, 2, … in
    # order, whatever runs of lines they were merged from
    reader = TranscriptReader("h.jsonl")
    parent = None
    for number, role in enumerate(roles, 1):
        reader.feed_text(number, _line(role, number, parent))
        parent = f"00000000-0000-4000-8000-{number:012x}"
        state = reader.state_of(len(reader.nodes) - 1)
        assert state is not None
        messages = state.messages()
        assert [message.index for message in messages] == list(range(len(messages)))
        assert state.index == len(messages) - 1  # the state's own place: its message's, the context's last
        assert len(messages) == 1 + sum(a != b for a, b in pairwise(roles[:number]))
        assert [m.role for m in messages][-1] == role
