"""A thread's calibration fits (``claude_truth.ScaleFits``): what each request's fit keeps, and fits made as
requests arrive (the newest one's usage changing while its lines are written) equal to fits made at once.

A followed session that never compacts keeps a fit for every request of each thread: its scale and the numbers
of the requests it was fitted on (up to twice ``WINDOW``), read when a turn is built (issue 27).
"""

from __future__ import annotations

import gc
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenbox.core.sources.readers.claude_truth import WINDOW, Observation, ScaleFits

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
