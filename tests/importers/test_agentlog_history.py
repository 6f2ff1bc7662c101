"""An agent log's requests share their thread's history: memory grows with the messages, not with
requests × messages (each request used to hold its own copy of the history before it)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenbox.core import load_turns
from tokenbox.core.sources.readers.agentlog import HistoryPrefix

SESSION_ID = "0b7c6a52-7a0e-4a8e-9d7b-3f7f2a6c1d11"


def _journal(requests: int) -> str:
    """A Copilot CLI journal (the shape of tests/importers/fixtures/copilot_home) of ``requests`` exchanges."""
    events = [{"type": "session.start", "data": {"sessionId": SESSION_ID, "version": 1, "producer": "copilot-agent",
                                                 "copilotVersion": "1.0.63", "startTime": "2026-06-18T19:13:41.562Z"}},
              {"type": "session.model_change", "data": {"newModel": "gpt-5.4"}},
              {"type": "system.message", "data": {"role": "system", "content": "You are the GitHub Copilot CLI."}}]
    for n in range(requests):
        events.append({"type": "user.message", "data": {"content": f"question {n}: what does line {n} do?",
                                                        "interactionId": f"int-{n}"}})
        events.append({"type": "assistant.message", "data": {"messageId": f"m-{n}", "content": f"line {n} adds one.",
                                                             "toolRequests": [], "interactionId": f"int-{n}",
                                                             "outputTokens": 7, "apiCallId": f"api-{n}"}})
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _retained(tmp_path, requests: int) -> int:
    """Bytes the loaded turns keep alive (traced: the load's leftovers collected first)."""
    path = tmp_path / f"{requests}" / "session-state" / SESSION_ID / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(_journal(requests))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        turns = load_turns(str(path))
        assert len(turns) == requests
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_memory_follows_the_messages_not_requests_times_messages(tmp_path):
    small, large = _retained(tmp_path, 250), _retained(tmp_path, 1000)
    # 4 × the messages: about 4 × the memory. Copies of the history cost 1000² / 2 references (4 MB) at 1000
    # requests against 250² / 2 (0.25 MB) at 250: the ratio was over 6
    assert large / small < 5.5, (small, large)


@given(st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=8), st.integers(-25, 25),
       st.integers(-25, 25), st.sampled_from([None, 1, 2, -1]))
def test_a_prefix_reads_as_the_copy_it_stands_for(growth: list[int], start: int, stop: int, step: int | None):
    history: list[int] = []
    prefixes: list[tuple[HistoryPrefix, list[int]]] = []
    for added in growth:  # the reader appends, and a request takes the history as it is then
        history.extend(range(len(history), len(history) + added))
        prefixes.append((HistoryPrefix(history), list(history)))  # type: ignore[arg-type]
    for prefix, copy in prefixes:
        assert len(prefix) == len(copy)
        assert list(prefix) == copy
        assert prefix == copy and prefix[:] == copy
        assert prefix[start:stop:step] == copy[start:stop:step]
        for index in (start, stop):
            if -len(copy) <= index < len(copy):
                assert prefix[index] == copy[index]
            else:
                with pytest.raises(IndexError):
                    prefix[index]
    for (a, copy_a), (b, copy_b) in pairwise(prefixes):
        assert b.extends(a) and not (len(b) > len(a) and a.extends(b))
        assert copy_b[: len(copy_a)] == copy_a
