"""The suite's own scheduling hints (tests/conftest.py) still name tests that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LONGEST_FIRST

TESTS = Path(__file__).resolve().parent


def test_every_longest_first_entry_names_a_collected_test(request: pytest.FixtureRequest):
    collected = {Path(request.config.rootpath, arg.split("::")[0]).resolve() for arg in request.config.args}
    option = request.config.option
    if not collected & {TESTS, TESTS.parent} or option.keyword or option.markexpr or option.deselect:
        pytest.skip("only a part of the suite was collected")
    ids = [item.nodeid for item in request.session.items]
    stale = [prefix for prefix in LONGEST_FIRST if not any(nodeid.startswith(prefix) for nodeid in ids)]
    assert not stale, f"LONGEST_FIRST names no collected test: {stale}"
