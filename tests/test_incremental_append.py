"""What one appended request costs must not grow with the session (issue 27): a thread's calibrated
sums are kept and extended by the parts that differ, and the threads an append did not touch are
handed out as they were.

Counted through public behaviour (``PartSums.summed``, the identity of the sequences a followed
``Loader`` hands out), never by time. Expected figures are worked out here from the per-part rule
(each part ``max(1, round(base × scale))``, fixed sizes as they are), not by the code under test.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.model.session import Section
from tokenbox.core.sources.loader import Loader
from tokenbox.core.sources.readers.claude_truth import PartSums
from tokenbox.core.tokens.charclass import BaseEstimates, base_estimate

from benchmarks.transcripts import Transcript, main_requests_of


def _section(i: int, text: str | None = None, tokens: int | None = None) -> Section:
    return Section(id=f"s{i}", kind="text", text=text if text is not None else f"part {i} " + "word " * (i % 37), tokens=tokens)


def _expected(sections: list[Section], scale: float) -> int:
    fixed = sum(s.tokens for s in sections if s.tokens is not None)
    texts = [s.text for s in sections if s.tokens is None and s.text and not s.text.isspace()]
    return fixed + sum(max(1, round(base_estimate(t) * scale)) for t in texts)


def test_a_growing_thread_sums_only_what_each_turn_changed():
    for length in (200, 3_000):  # the cost of one more turn is the same on a thread 15 x longer
        chain = [_section(i, tokens=7 if i % 50 == 3 else None) for i in range(length)]
        sums = PartSums(BaseEstimates())
        assert sums.visible(chain, 1.25) == _expected(chain, 1.25)
        costs = []
        for turn in range(4):
            # the newest message's parts are built again (no longer the latest) and a request's are added
            chain = chain[:-2] + [_section(length + 10 * turn + k) for k in range(6)]
            before = sums.summed
            assert sums.visible(chain, 1.25) == _expected(chain, 1.25)
            costs.append(sums.summed - before)
        assert max(costs) <= 2 + 6, (length, costs)  # the two parts dropped and the six added, not the chain
    # a scale not met before is summed over every part, once; after that it costs what changed
    before = sums.summed
    assert sums.visible(chain, 0.75) == _expected(chain, 0.75)
    assert sums.summed - before == sum(1 for s in chain if s.tokens is None)  # the parts with an estimate


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=40), cut=st.integers(0, 40), target=st.integers(0, 3_000),
       scale=st.sampled_from([0.4, 1.0, 1.3, 2.2]))
def test_the_fit_is_the_largest_step_that_fits_whatever_came_before(sizes, cut, target, scale):
    sections = [_section(i, "x" * n) for i, n in enumerate(sizes)]
    sums = PartSums(BaseEstimates())
    sums.visible(sections[: cut % (len(sections) + 1)], scale)  # other turns aligned and summed before
    sums.fit(sections[::-1], target, 1.0)
    found = sums.fit(sections, target, scale)
    # the largest fitting step, by bisection on the per-part rule (the count grows with the scale)
    bases = [base_estimate(s.text) for s in sections]

    def fits(step: int) -> bool:
        return sum(max(1, round(b * (step / 10_000))) for b in bases) <= target

    low, high = -1, round(scale * 10_000) + 1  # fits(low) (-1: none does), not fits(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    assert found == (max(low, 0) / 10_000)


def test_an_append_hands_out_the_untouched_threads_as_they_were(tmp_path):
    transcript = Transcript(compact=False, seed=7).grow_to(700_000)  # a main thread and a dozen sub-agents
    list(main_requests_of(transcript, 1))
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    loader = Loader()
    before = loader.load_threads(path)
    assert len(before) > 10
    (text,) = main_requests_of(transcript, 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    after = loader.load_threads(path)
    rebuilt = [name for name in after if name not in before or after[name] is not before[name]]
    # the main thread (one more request) and the sub-agents the appended lines ran, not every thread
    touched = {name for name in after if name not in before or len(after[name]) != len(before[name])}
    assert "main" in rebuilt and set(rebuilt) <= touched | {"main"}, (rebuilt, touched)
    assert len(rebuilt) <= 3
    assert [len(t) for t in after.values()] == [len(t) for t in Loader().load_threads(path).values()]
