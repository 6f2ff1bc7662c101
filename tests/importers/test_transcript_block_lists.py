"""What a followed Claude Code transcript keeps of each message's blocks (issue 27, "memory stays flat").

A followed reader keeps every line's blocks for as long as it follows the file; the context built after a
line and the message a turn is built from hold the same blocks. Each of them holding a list of its own cost
three lists per one-line message (one per node, one per context, one per message), kept for every message of
an uncompacted chain. Counted here: the lists that hold each block once a turn is built, and the turns being
the same as a reader read again from the file.
"""

from __future__ import annotations

import gc

from tokenbox.core.sources.readers.claude_code import TranscriptFollower

from benchmarks.transcripts import write_chain

APPENDS = 6  # main-thread requests appended while followed


def _lists_holding(block: object) -> int:
    """How many lists refer to ``block`` (the reader's, the contexts', the messages')."""
    return sum(1 for referrer in gc.get_referrers(block) if type(referrer) is list)


def _followed(tmp_path):
    path = tmp_path / "chain.jsonl"
    texts = write_chain(path, 60_000, seed=15, appended=APPENDS)
    follower = TranscriptFollower(str(path), None)
    reader = follower.read()
    reader.main_turns()[-1]  # the newest turn built: its contexts and messages made
    for text in texts:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        reader = follower.read()
        reader.main_turns()[-1]
    return path, follower, reader


def test_one_line_messages_blocks_are_held_in_one_list(tmp_path) -> None:
    _, _, reader = _followed(tmp_path)
    gc.collect()
    one_line_requests = {request.node for request in reader.threads["main"].requests if len(request.lines) == 1}
    nodes = [node for node in reader.nodes if node.thread == "main"  # one line: never grown
             and (node.kind == "line" or node.index in one_line_requests)
             and node.blocks and node.state is not None][-40:]
    assert len(nodes) >= 10
    held = [_lists_holding(node.blocks[0]) for node in nodes]
    # one each (the node's, also its context's and its message's); two where a run of lines makes one message
    # (its message puts the run's lists together). Three each before: the node's, its context's, its message's.
    assert sum(held) / len(held) <= 1.5, held


def test_shared_lists_give_the_same_turns_as_a_fresh_read(tmp_path) -> None:
    path, _, followed = _followed(tmp_path)
    fresh = TranscriptFollower(str(path), None).read()
    turns, again = followed.main_turns(), fresh.main_turns()
    assert len(turns) == len(again)
    for number in (0, len(turns) // 2, len(turns) - 2, len(turns) - 1):
        a, b = turns[number], again[number]
        assert [(s.id, s.text, s.tokens) for s in a.sections] == [(s.id, s.text, s.tokens) for s in b.sections]
