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
    # each request's fit was a tuple of its scale and of its requests' numbers (17 of them here): 396 bytes a
    # request with its pair before; now its scale and where its pairs end, in two arrays: 151
    assert kept < 250, kept


_OBSERVATION = st.builds(
    Observation,
    st.one_of(st.none(), st.integers(1_000, 200_000)),
    st.floats(100.0, 60_000.0, allow_nan=False),
    st.integers(0, 2),
    st.sampled_from(["m", "n"]),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_OBSERVATION, min_size=1, max_size=3 * WINDOW), st.lists(_OBSERVATION, max_size=4))
def test_fits_made_as_requests_arrive_are_the_fits_made_at_once(observations: list[Observation],
                                                                 rewritten: list[Observation]) -> None:
    # the newest request is written again (its usage grows while its lines come) before the next arrives
    fits = ScaleFits()
    for number in range(1, len(observations) + 1):
        for other in rewritten[: number % (len(rewritten) + 1)]:
            fits.update([*observations[:number - 1], other])
        followed = fits.update(observations[:number])
    whole = ScaleFits().update(observations)
    assert len(followed) == len(whole) == len(observations)
    assert [followed[i] for i in range(len(observations))] == [whole[i] for i in range(len(observations))]
    assert list(followed) == list(whole)  # (read in order, as a sequence)
