"""The suite's own scheduling hints (tests/conftest.py) still name tests that exist."""

from __future__ import annotations

import os
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


def test_each_test_has_a_fresh_config_folder_and_the_runs_shared_rank_cache(tmp_path_factory: pytest.TempPathFactory):
    """``_isolated_environment``: an empty config folder of its own, not one more entry of the worker's base
    folder (numbering those listed the whole folder per test), and ``TOKENBOX_CACHE`` in the run's folder."""
    base = tmp_path_factory.getbasetemp()
    config = Path(os.environ["XDG_CONFIG_HOME"])
    assert config.is_dir() and not any(config.iterdir())
    assert config.parent != base and config.parent.parent == base
    assert os.environ["TOKENBOX_CACHE"] == "1"
    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert cache.parent in (base, base.parent)  # the worker's own folder's parent under xdist: one for the run


@pytest.mark.parametrize(("cores", "workers"), [(1, 2), (2, 3), (4, 5), (16, 8)])
def test_auto_workers_are_one_more_than_the_cores_at_most_eight(monkeypatch, request, cores, workers):
    """``-n auto`` on this project's 2 cores starts 3 workers (4 spent ~15 % more CPU on the same tests)."""
    from tests.conftest import pytest_xdist_auto_num_workers

    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert pytest_xdist_auto_num_workers(request.config) == workers


def test_auto_workers_leave_an_explicit_count_to_xdist(monkeypatch, request):
    from tests.conftest import pytest_xdist_auto_num_workers

    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert pytest_xdist_auto_num_workers(request.config) is None
