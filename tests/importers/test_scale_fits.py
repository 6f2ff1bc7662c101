"""A thread's calibration fits (``claude_truth.ScaleFits``): what each request's fit keeps, and fits made as
requests arrive (the newest one's usage changing while its lines are written) equal to fits made at once.

A followed session that never compacts keeps a fit for every request of each thread: its scale and the numbers
of the requests it was fitted on (up to twice ``WINDOW``), read when a turn is built (issue 27).
"""

from __future__ import annotations

import gc
import tracemalloc

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers.claude_truth import (
    PAIR_RATIO,
    PRIOR_SCALE,
    PRIOR_WEIGHT,
    SCALE_BOUNDS,
    WINDOW,
    Observation,
    ScaleFits,
)

REQUESTS = 400


def _growing(count: int) -> list[Observation]:
    """A thread whose every request grew from the one before (every pair is fitted on)."""
    return [Observation(20_000 + 240 * n + (n * 37) % 11, 6_000.0 + 200.0 * n + (n * 13) % 7, 0, "m") for n in range(count)]


def test_a_fit_keeps_little_beside_its_pairs() -> None:
    observations = _growing(REQUESTS)
    fits = ScaleFits()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        scales = fits.update(observations)
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - before) / REQUESTS
    finally:
        tracemalloc.stop()
    assert len(scales) == REQUESTS
    scale, used = scales[REQUESTS - 1]
    assert used == tuple(range(REQUESTS - WINDOW, REQUESTS + 1)) and 0 < scale
    # each request's fit was a tuple of its scale and of its requests' numbers (17 of them here), its pair a tuple
    # of four: 396 bytes a request; then its scale and where its pairs end in two arrays: 151; now its pair's
    # number and growths in three more: 48
    assert kept < 100, kept


# a request's step from the one before: what its context grew by, recorded and in its visible parts (a
# ratio between them in the range a pair is fitted on, or outside it), whether it recorded its usage, a
# compaction before it, its model
_STEP = st.tuples(st.integers(0, 6_000), st.floats(1.0, 4_000.0, allow_nan=False), st.booleans(),
                  st.sampled_from([0, 0, 0, 1]), st.sampled_from(["m", "m", "m", "n"]))


def _thread(steps: list[tuple[int, float, bool, int, str]]) -> list[Observation]:
    out: list[Observation] = []
    recorded, visible, epoch = 20_000, 6_000.0, 0
    for grown_r, grown_v, records, compacted, model in steps:
        recorded, visible, epoch = recorded + grown_r, visible + grown_v, epoch + compacted
        out.append(Observation(recorded if records or not out else None, visible, epoch, model))
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=3 * WINDOW), st.lists(_STEP, min_size=1, max_size=4))
def test_fits_made_as_requests_arrive_are_the_fits_made_at_once(steps: list, rewrites: list) -> None:
    # the newest request is written again (its usage grows while its lines come) before the next arrives
    observations = _thread(steps)
    fits = ScaleFits()
    for number in range(1, len(observations) + 1):
        for rewrite in rewrites[: number % (len(rewrites) + 1)]:
            fits.update(_thread([*steps[:number - 1], rewrite]))
        followed = fits.update(observations[:number])
    whole = ScaleFits().update(observations)
    assert len(followed) == len(whole) == len(observations)
    assert [followed[i] for i in range(len(observations))] == [whole[i] for i in range(len(observations))]
    assert list(followed) == list(whole)  # (read in order, as a sequence)


def _definition(observations: list[Observation]) -> list[tuple[float, tuple[int, ...]]]:
    """Each request's fit worked out from its definition, request by request (no arrays, nothing kept between
    requests): the pairs up to it (a request and the one before it, numbered from 1, recorded both, of one epoch
    and model, grown in both, recorded growth over visible growth within ``PAIR_RATIO`` bounds included), its
    newest ``WINDOW``; its scale their summed growths with the prior's, bounded, to four places."""
    fits = []
    for i in range(len(observations)):
        pairs = []
        for j in range(1, i + 1):
            new, old = observations[j], observations[j - 1]
            if (new.recorded is None or old.recorded is None or new.epoch != old.epoch or new.model != old.model
                    or not (new.visible > old.visible and new.recorded > old.recorded)):
                continue
            grown_r, grown_v = new.recorded - old.recorded, new.visible - old.visible
            if PAIR_RATIO[0] <= grown_r / grown_v <= PAIR_RATIO[1]:
                pairs.append((j, j + 1, grown_r, grown_v))  # the numbers of the two requests (from 1)
        recent = pairs[len(pairs) - WINDOW:] if len(pairs) > WINDOW else pairs
        scale = ((sum(p[2] for p in recent) + PRIOR_SCALE * PRIOR_WEIGHT)
                 / (sum(p[3] for p in recent) + PRIOR_WEIGHT))
        scale = round(min(max(scale, SCALE_BOUNDS[0]), SCALE_BOUNDS[1]), 4)
        fits.append((scale, tuple(sorted({n for p in recent for n in p[:2]}))))
    return fits


# a step that may shrink the context (a file edited down, a result cleared: no compaction in between), or grow it
# at exactly a bound of the pairs' ratio (recorded growth 50 or 300 over visible growth 100)
_ANY_STEP = st.one_of(
    _STEP,
    st.tuples(st.integers(-3_000, 6_000), st.floats(-2_000.0, 4_000.0, allow_nan=False), st.booleans(),
              st.sampled_from([0, 0, 1]), st.just("m")),
    st.tuples(st.sampled_from([round(100 * PAIR_RATIO[0]), round(100 * PAIR_RATIO[1])]), st.just(100.0),
              st.just(True), st.just(0), st.just("m")),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_ANY_STEP, min_size=1, max_size=3 * WINDOW))
@example([(1_000, 1_000.0, True, 0, "m"), (-1_500, -1_500.0, True, 0, "m")])  # the first request above the last
def test_a_threads_fits_are_the_fits_its_definition_gives(steps: list) -> None:
    observations = _thread(steps)
    fits = ScaleFits().update(observations)
    assert [fits[i] for i in range(len(fits))] == _definition(observations)


class _Counted(list):
    """A thread's observations that count how many of them are read."""

    reads = 0

    def __getitem__(self, index):  # type: ignore[override]
        _Counted.reads += 1
        return super().__getitem__(index)


def test_a_request_arriving_reads_only_the_newest_observations() -> None:
    """``update`` with one more request than before reads a few observations (the newest, the one it had seen
    last and the one before), not the whole thread back (which gives the same fits at O(n) a request)."""
    observations = _growing(REQUESTS)
    fits = ScaleFits().update(observations[:-1])
    _Counted.reads = 0
    fits.update(_Counted(observations))
    assert _Counted.reads <= 8, _Counted.reads
    assert [fits[i] for i in range(len(fits))] == _definition(observations)
