"""Building the newest turn of a followed transcript goes through the messages one more request added,
not the whole chain (issue 27): what the messages before gave is kept, and the turn is the one a fresh
read builds.

Counted with a spy set by the test (reads of a message's blocks), never timed.
"""

from __future__ import annotations

from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers import common

from benchmarks.transcripts import Transcript, main_requests_of


def _block_reads(monkeypatch) -> list[int]:
    """[reads of ``Message.blocks``] from now on."""
    reads = [0]
    slot = common.Message.__dict__["blocks"]

    def read(self):
        reads[0] += 1
        return slot.__get__(self, common.Message)

    monkeypatch.setattr(common.Message, "blocks", property(read, slot.__set__))
    return reads


def test_the_next_turn_is_built_from_the_messages_it_added(tmp_path, monkeypatch):
    costs = {}
    for size in (100_000, 1_500_000):  # the same requests appended to a chain 10 x longer
        transcript = Transcript(compact=False, seed=6).grow_to(size)
        list(main_requests_of(transcript, 1))
        path = tmp_path / f"chain-{size}.jsonl"
        transcript.write(str(path))
        loader = Loader()
        assert loader.load_turns(path)[-1].sections  # the newest turn built, as the app shows it first
        reads = _block_reads(monkeypatch)
        spent = []
        for text in main_requests_of(transcript, 3):
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
            turns = loader.load_turns(path)
            before = reads[0]
            turn = turns[-1]
            spent.append(reads[0] - before)
            monkeypatch.undo()
            fresh = Loader().load_turns(path)[-1]  # the same file read from scratch
            assert turn.sections == fresh.sections and turn.warnings == fresh.warnings and turn.meta == fresh.meta
            assert [s.meta for s in turn.sections] == [s.meta for s in fresh.sections]
            reads = _block_reads(monkeypatch)
        monkeypatch.undo()
        costs[size] = (len(turn.sections), max(spent))
    (small_parts, small), (big_parts, big) = costs.values()
    assert big_parts > 6 * small_parts, costs
    assert big <= small + 10, costs  # the request's messages (and the latest input's), not the chain's
