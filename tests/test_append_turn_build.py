"""Building the newest turn of a followed transcript goes through the messages one more request added,
not the whole chain (issue 27): what the messages before gave is kept, and the turn is the one a fresh
read builds.

Counted with a spy set by the test (reads of a message's blocks), never timed.
"""

from __future__ import annotations

from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers import common

from benchmarks.transcripts import Transcript, main_requests_of, write_chain


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
        path = tmp_path / f"chain-{size}.jsonl"
        appended = write_chain(path, size, seed=6, appended=3)
        loader = Loader()
        assert loader.load_turns(path)[-1].sections  # the newest turn built, as the app shows it first
        reads = _block_reads(monkeypatch)
        spent = []
        for text in appended:
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


def _threads_facts(threads) -> list:
    """Each thread's name, its turns' count and what each turn is known by (never built)."""
    from tokenbox.core.sources.turns import turn_facts

    return [(name, len(turns), [turn_facts(turns, i) for i in range(len(turns))]) for name, turns in threads.items()]


def test_threads_followed_line_by_line_are_the_ones_a_fresh_read_gives(tmp_path):
    transcript = Transcript(compact=False, seed=8).grow_to(60_000)
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    loader = Loader()
    loader.load_threads(path)
    for text in main_requests_of(transcript, 6):  # sub-agents start and finish on the way
        for line in text.splitlines(keepends=True):
            with path.open("a", encoding="utf-8") as handle:
                handle.write(line)
            followed = loader.load_threads(path)
            assert _threads_facts(followed) == _threads_facts(Loader().load_threads(path))


def test_one_more_request_makes_the_turns_of_the_threads_it_ran_only(tmp_path, monkeypatch):
    from tokenbox.core.sources.readers import claude_code

    made: list[str] = []
    original = claude_code.thread_turns

    def spying(reader, name, **kwargs):
        made.append(name)
        return original(reader, name, **kwargs)

    costs = {}
    for size in (150_000, 1_500_000):  # ten times the sub-agents
        transcript = Transcript(compact=False, seed=6).grow_to(size)
        list(main_requests_of(transcript, 1))
        path = tmp_path / f"chain-{size}.jsonl"
        transcript.write(str(path))
        loader = Loader()
        threads = len(loader.load_threads(path))
        monkeypatch.setattr(claude_code, "thread_turns", spying)
        spent = []
        for text in main_requests_of(transcript, 4):
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
            del made[:]
            loader.load_threads(path)
            spent.append(len(made))
        monkeypatch.undo()
        costs[size] = (threads, sorted(spent)[len(spent) // 2])  # the median: a sub-agent's first request adds one
    (few, small), (many, big) = costs.values()
    assert many > 5 * few, costs
    assert big <= small + 1 and big <= 4, costs  # the threads the request ran, not all of them
