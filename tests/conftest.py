"""Shared test helpers: an isolated environment (no user config, no env overrides) for every test."""

from __future__ import annotations

import gc
import itertools
import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Machines differ: never fail a property test on how long generating or running an example takes.
settings.register_profile(
    "tokenbox",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("tokenbox")

# Some sandboxes set PYTHONDONTWRITEBYTECODE=1: then every test worker, and every Python process a
# test starts (the CLI sample, the benchmark smoke runs), compiles Textual and tokenbox from source
# again. The tests let Python cache bytecode as it does by default (set before xdist starts workers).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Every Textual app a test starts leaves its widgets, styles and strips to the cycle collector. With
# Python's default thresholds (a young collection every 700 allocations, a full one as the heap grows)
# the collector ran ~11 full passes per 20 app starts over every object the worker had imported: ~12 %
# of an app start's CPU. A worker collects young objects every 50 000 allocations instead, and what
# exists once the tests are collected (modules, Hypothesis strategies) is frozen out of the passes
# (``pytest_collection_finish``). The tests' memory stays bounded: cycles are still collected.
GC_THRESHOLDS = (50_000, 20, 20)
gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze the objects made by imports and collection: the collector's passes skip them."""
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Collect once more, then freeze what is left: pytest's own clean-up that follows collects five
    times in a row (to report exceptions raised in finalizers), each a pass over everything the
    worker's tests left alive (0.1-0.5 s a pass, at the end of every worker). The first pass still
    runs every finalizer that collection can reach; the next four then have nothing to walk."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _release_finished_apps() -> Iterator[None]:
    """After a test, forget the per-widget line caches a finished Textual app left in a class-wide cache.

    Textual 8.2.8 memoises ``StylesCache.get_inner_outer`` with ``functools.lru_cache(1024)`` on the
    instance, so the cache keeps the last 1024 widgets' ``StylesCache`` alive, each with its rendered
    strips: a worker ended with ~180 000 such objects, every full collection walked them (~0.6 s each,
    five of them as pytest shut each worker down). An app keeps its own widgets: clearing the memo
    costs it nothing but a recomputation.
    """
    yield
    styles_cache = sys.modules.get("textual._styles_cache")  # only where a test imported Textual
    memo = getattr(getattr(styles_cache, "StylesCache", None), "get_inner_outer", None)
    if memo is not None and hasattr(memo, "cache_clear"):
        memo.cache_clear()


_ENV_VARS = (
    "TOKENBOX_MAX_CTX",
    "TOKENBOX_TOKENIZER",
    "CONTEXT_MAX_TOKENS",
    "TOKENBOX_MAX_FILE_SIZE",
    "TOKENBOX_CACHE",
)
RANK_CACHE_ENV = "TOKENBOX_CACHE"  # set again by ``_isolated_environment``, to the run's own cache folder


@pytest.fixture(scope="session")
def _shared_rank_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An ``XDG_CACHE_HOME`` in this run's temporary folder, the same for every xdist worker.

    Every process a test starts (``tokenbox plan``, ``tokenbox-tui``, ``python -c``) otherwise parses the
    BPE rank file from scratch; with ``TOKENBOX_CACHE=1`` pointing here, the first one keeps the parsed
    ranks (``core/tokens/bpe.py``: written to a temporary name, then renamed, so workers writing at the
    same time each leave a whole file) and the others read them. A worker's base folder is
    ``<run folder>/popen-gwN``: its parent is the run's, shared; nothing is written outside it.
    """
    base = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):
        base = base.parent
    return str(base / "xdg-cache")


@pytest.fixture(scope="session")
def _config_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Fresh, empty folders for ``XDG_CONFIG_HOME``, one per test, all in one folder of this worker's.

    ``tmp_path_factory.mktemp`` per test listed the whole base folder to number the new one (every
    earlier test's folder: quadratic in the tests a worker runs, ~800 000 names parsed in a serial run).
    """
    parent = tmp_path_factory.mktemp("xdg-config")

    def folders() -> Iterator[str]:
        for number in itertools.count():
            folder = parent / str(number)
            folder.mkdir()
            yield str(folder)

    return folders()


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, _config_folders: Iterator[str], _shared_rank_cache: str
) -> None:
    """Tests never see the developer's config file, cache or tokenbox environment variables.

    The one tokenbox variable set is ``TOKENBOX_CACHE``, with ``XDG_CACHE_HOME`` in the run's temporary
    folder (``_shared_rank_cache``). Tests of the cache itself, of a cold start or of what a command
    writes give their processes an environment of their own without it (``tests/hardening/support.py``,
    the benchmarks, ``tests/test_perf_invariants.py``).
    """
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", next(_config_folders))
    monkeypatch.setenv("XDG_CACHE_HOME", _shared_rank_cache)
    monkeypatch.setenv(RANK_CACHE_ENV, "1")


# ------------------------------------------------------------------------- running in parallel (xdist)

# The project's own modules compiled once, before the workers start: on a fresh clone each worker (and the
# first processes the tests start) otherwise compiled every module it imported, all at once (a fresh clone's
# run: 182-192 s of CPU, 155-177 s with this; what is up to date is only looked at).
COMPILED_FIRST = ("core", "tui", "benchmarks", "sample_sessions")


def pytest_configure(config: pytest.Config) -> None:
    """In the controlling process (not in an xdist worker): compile ``COMPILED_FIRST`` to bytecode."""
    if hasattr(config, "workerinput"):
        return
    import compileall  # only the controlling process needs it

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in COMPILED_FIRST:
        folder = os.path.join(root, name)
        if os.path.isdir(folder):
            compileall.compile_dir(folder, quiet=2)


EXTRA_WORKERS = 1  # workers beyond the usable cores (see ``pytest_xdist_auto_num_workers``)
MAX_WORKERS = 8  # past this, starting and collecting in each worker costs more than the tests it would take


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (the default in pyproject.toml): one worker more than the usable cores, at most ``MAX_WORKERS``.

    Many TUI tests spend their time waiting for a file event or a worker thread, and the benchmark
    smoke runs mostly wait for processes they started, so one extra worker keeps the cores busy
    meanwhile. Not two: each worker collects the whole suite again (~2 s of CPU), and a TUI test polls
    its app while it waits, so the longer every test takes on cores shared by more workers, the more
    CPU it spends. On 2 cores shared with other runs (stop 38, runs interleaved, seeds 1 and 2, CPU
    user+sys incl. children): 4 workers 210 / 222 s CPU, 230 / 309 s wall; 3 workers 207 / 199 s CPU,
    231 / 251 s wall (2 workers: 210 s CPU, 326 s wall). On the idle box at the end of stop 38: 3 workers
    122.7 s wall, 200 s CPU; 4 workers 123.9 s, 216 s (stop 36: 95 s with 3, 90 s with 4).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when it is set.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores + EXTRA_WORKERS, MAX_WORKERS))


# The longest tests start first, so that no worker is left running one of them at the end of the run
# while the others are idle (longest first; a test that starts late and runs for 8 s sets the run's tail).
# Ranked by their time in three full runs of stop 36 (``--durations=0``, and the CPU seconds of each test
# and of the processes it started): the benchmark groups 10-40 s, the next ones 4-14 s. Each is
# self-contained (no test depends on another's order). Tests that share an ``xdist_group`` start before
# all of these anyway (``--dist loadgroup`` hands out the biggest groups first).
LONGEST_FIRST = (
    "tests/test_benchmarks_smoke.py::",
    "tests/tui/test_interaction.py::test_every_key_on_one_app_then_quit",
    "tests/tui/test_reload.py::test_following_does_not_accumulate_widgets",
    "tests/tui/test_hostile.py::test_hostile_session_on_every_view",
    "tests/tui/test_agent_view.py::test_a_transcript_with_a_sub_agent_and_a_compaction",
    "tests/importers/test_import_real_sessions.py::test_conformance_script_passes_on_the_fixtures",
    "tests/tui/test_faults.py::test_burst_of_500_writes_is_coalesced",
    "tests/tui/test_key_sequences.py::",
    "tests/hardening/test_untrusted_text.py::test_render_writes_hostile_text_byte_exact",
    "tests/tui/test_real_agents.py::test_transcript_growing_line_by_line",
    "tests/engine/test_properties.py::test_plan_json_is_identical_under_other_hash_seeds",
    "tests/tui/test_agent_view.py::test_warnings_a_compaction_and_keys_that_do_not_apply",
    "tests/tui/test_serve.py::test_served_app_in_a_real_browser",
    "tests/tui/test_hostile.py::test_megabyte_line_and_name_stay_responsive",
    "tests/test_statusline.py::test_chained_user_lines_without_a_request_cost_memory_linear_in_their_number",
    "tests/tui/test_real_agents.py::test_short_transcript",
    "tests/tui/test_real_agents.py::test_snapshot_anthropic_request_trimmed",
    "tests/tui/test_interaction.py::test_keys_with_nothing_to_show_say_why",
    "tests/record/test_capture_follow.py::test_memory_per_followed_request_does_not_grow_with_the_capture",
    "tests/engine/test_cli.py::test_the_console_script_runs_end_to_end",
    "tests/tui/test_glance.py::test_snapshot_a_big_session_before_its_plan",
    "tests/engine/test_edit_replan.py::test_a_warm_replan_after_edits_equals_a_cold_plan",
    "tests/record/test_tui_record.py::test_each_request_appears_live_with_its_recorded_total",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the tests in ``LONGEST_FIRST`` to the front, in that order (the others keep theirs)."""
    rank = {prefix: index for index, prefix in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> int:
        for prefix, index in rank.items():
            if item.nodeid.startswith(prefix):
                return index
        return len(rank)

    items.sort(key=key)  # stable: the order within each rank is unchanged
