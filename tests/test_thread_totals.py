"""A thread's summary as its requests come, cut back and rewritten (issue 27: a followed thread's totals
cost what was appended): the same summary as the thread's facts give when summed from scratch, worked
out here from each request's recorded usage and price.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.analysis.threads import SessionTotals, ThreadSummary
from tokenbox.core.model.prices import price_for, usage_cost
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.turns import LazyTurns

MODELS = ("claude-opus-4-6", "claude-sonnet-4-5", "mystery-model", None)

_requests = st.tuples(st.one_of(st.none(), st.integers(0, 300_000)), st.sampled_from(MODELS), st.integers(0, 2_000))


def _usage(context: int | None, reads: int) -> RecordedUsage | None:
    if context is None:
        return None
    reads = min(reads, context)
    return RecordedUsage(context, context - reads, 0, reads, 10)


def _turns(requests: list[tuple], pending: bool) -> LazyTurns:
    def infos(index: int) -> dict:
        if index == len(requests):
            return {"thread": "main", "request": None, "line": 9_999, "recorded": None, "model": requests[-1][1] if requests else None}
        context, model, reads, key = requests[index]
        return {"thread": "main", "request": key, "line": index, "recorded": _usage(context, reads), "model": model}

    return LazyTurns(len(requests) + pending, lambda index: None, infos)  # type: ignore[arg-type, return-value]


def _expected(requests: list[tuple], pending: bool) -> ThreadSummary:
    contexts, usd, unpriced, models, dates = [], [], {}, {}, set()
    for context, model, reads, _ in requests:
        usage = _usage(context, reads)
        found = price_for(model) if usage is not None else None
        key = found[0] if found is not None else model
        if context is not None:
            contexts.append(context)
        if found is not None:
            usd.append(usage_cost(usage, found[1].price))  # type: ignore[arg-type]
            dates.add(found[1].as_of)
        elif context is not None:
            unpriced[key or "unknown model"] = None
        if key:
            models[key] = None
    if pending and requests and requests[-1][1]:
        models[price_for(requests[-1][1])[0] if price_for(requests[-1][1]) else requests[-1][1]] = None
    return ThreadSummary("main", len(requests), pending, contexts[-1] if contexts else None, max(contexts) if contexts else None,
                         sum(usd) if usd else None, tuple(unpriced), tuple(models), min(dates) if dates else None)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["add", "rewrite", "rewind"]), st.lists(_requests, max_size=6),
                                st.booleans()), min_size=1, max_size=12))
def test_a_followed_threads_summary_is_the_one_summed_from_scratch(steps):
    totals = SessionTotals()
    requests: list[tuple] = []
    written = 0
    for how, new, pending in steps:
        more = [(*request, f"request {written + k}") for k, request in enumerate(new)]  # each request's own key
        written += len(new)
        if how == "rewrite" and requests:
            # the newest request, still being written: its usage changes (its model and key do not)
            requests[-1] = (more[0][0], requests[-1][1], more[0][2], requests[-1][3]) if more else requests[-1]
        elif how == "rewind":
            requests = requests[: len(requests) // 2] + more  # a rewind: new requests after the point it went back to
        else:
            requests = requests + more
        (summary,) = totals.update({"main": _turns(requests, pending)})
        assert summary == _expected(requests, pending), (how, requests)
        assert totals.contexts("main")[: len(requests)] == [request[0] for request in requests]


def test_one_more_request_reads_the_facts_of_the_requests_appended(monkeypatch):
    from tokenbox.core.analysis.threads import RequestFacts

    slot = RequestFacts.__dict__["context"]
    reads = [0]

    def read(self):
        reads[0] += 1
        return slot.__get__(self, RequestFacts)

    spent = {}
    for count in (100, 1_000):  # a thread 10 x longer
        requests = [(1_000 + i, "claude-opus-4-6", 0, f"request {i}") for i in range(count)]
        totals = SessionTotals()
        totals.update({"main": _turns(requests, False)})
        with monkeypatch.context() as patch:
            patch.setattr(RequestFacts, "context", property(read, slot.__set__))
            reads[0] = 0
            requests.append((5_000, "claude-opus-4-6", 0, "one more"))
            (summary,) = totals.update({"main": _turns(requests, False)})
            spent[count] = reads[0]
        assert summary.requests == count + 1 and summary.current == 5_000
    assert spent[1_000] <= spent[100] <= 10, spent  # the requests appended (and the last one, re-read)
