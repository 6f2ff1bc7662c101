"""The first plan of ``tokenbox-tui FILE``, worked out by a forked process while the app starts
(``tokenbox.tui.firstplan``): the app shows it and it is the plan the app would have made itself;
a child that fails or answers something else changes nothing but who plans; bad files are reported
as the app's own planner reports them; the child never outlives the app; no fork beside a thread."""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import replace

import pytest
from tokenbox.tui import firstplan, launch, prewarm
from tokenbox.tui.firstplan import FirstPlan
from tokenbox.tui.planner import Planner

from tests.tui.helpers import SIZE, copy_sample, make_app, screen_lines, wait_for, wait_idle, wait_plan

REAL = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "real_sessions")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork: the app plans itself")


@pytest.fixture
def forkable(monkeypatch):
    """A test worker runs a thread of its own (xdist's channel) that the child never needs: let it fork."""
    monkeypatch.setattr(firstplan, "single_threaded", lambda: True)


def reaped(pid: int) -> bool:
    """Whether child ``pid`` is gone and waited for (neither running nor a zombie left to us)."""
    try:
        os.waitpid(pid, os.WNOHANG)  # (0, 0) while it runs; reaps (and so reports) a zombie
    except ChildProcessError:
        return True
    return False


def plan_json(plan) -> str:
    return json.dumps(plan.to_dict(), ensure_ascii=False, sort_keys=True)


async def shown(path, first: FirstPlan | None) -> tuple[str, list[str]]:
    """The first plan an app on ``path`` shows (as JSON) and its screen once idle."""
    app = make_app(path, first_plan=first)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        plan = app.plan
        await wait_idle(pilot)
        # the plan worker's own engine and the timeline's estimates come after the plan: wait for them
        planning = [worker for worker in app.workers if worker.group == "plan"]
        if planning:  # (none: wait_for_complete would wait for every worker, the watchers too)
            await app.workers.wait_for_complete(planning)
        await pilot.pause()
        assert plan is not None
        return plan_json(plan), screen_lines(app)


@pytest.mark.parametrize("name", ["passepartout_turn.yaml", "facet_layout.yaml", "agent_log.jsonl",
                                  "claude-code_fixture_compact-after-rewind.jsonl"])
async def test_the_app_shows_the_forked_plan_and_it_is_the_plan_it_would_make(tmp_path, forkable, name):
    if name.startswith("claude-code"):  # a real transcript: estimated turns, a timeline filled in afterwards
        path = tmp_path / name
        shutil.copyfile(os.path.join(REAL, name), path)
    else:
        path = copy_sample(name, tmp_path)
    first = FirstPlan.start(lambda: launch.first_request([str(path)]))
    assert first is not None
    forked, forked_screen = await shown(path, first)
    assert first.handed  # the child's outcome was the one drawn
    assert reaped(first.pid)
    expected = Planner().run(launch.first_request([str(path)]))
    assert forked == plan_json(expected.plan)  # byte for byte, the plan JSON
    alone, alone_screen = await shown(path, None)
    assert alone == forked
    assert alone_screen == forked_screen


def failing(how: str):
    def make_request():
        request = launch.first_request(make_request.args)
        if how == "raises":
            raise RuntimeError("boom")
        if how == "exits":
            os._exit(3)
        return replace(request, budget=1234)  # "other": not what the app will ask for
    return make_request


@pytest.mark.parametrize("how", ["raises", "exits", "other"])
async def test_a_child_that_fails_or_answers_something_else_leaves_the_app_to_plan(tmp_path, forkable, how):
    path = copy_sample("passepartout_turn.yaml", tmp_path)
    make_request = failing(how)
    make_request.args = [str(path)]
    first = FirstPlan.start(make_request)
    assert first is not None
    forked, _ = await shown(path, first)
    assert not first.handed
    assert reaped(first.pid)
    assert forked == plan_json(Planner().run(launch.first_request([str(path)])).plan)


async def test_quitting_before_the_child_is_done_ends_it(tmp_path, forkable):
    path = copy_sample("passepartout_turn.yaml", tmp_path)
    first = FirstPlan.start(lambda: threading.Event().wait())  # never done (until its own time limit)
    assert first is not None
    app = make_app(path, first_plan=first)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.exit()
    assert reaped(first.pid)  # killed and waited for by the app as it ended
    assert app.plan is None and not first.handed  # and nothing planned after the end


def fifo(tmp_path) -> str:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)  # nobody writes it
    return str(path)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp_path: str(tmp_path / "missing.yaml"),
        lambda tmp_path: write(tmp_path, "broken.json", '{"tokenbox": 1, "sections": [\n'),
        lambda tmp_path: write(tmp_path, "log.jsonl", '{"tokenbox": 1, "budget": {"max_ctx": 1000}, "sections": '
                               '[{"id": "a", "kind": "user", "text": "hi"}]}\nnot json\n'
                               '{"tokenbox": 1, "budget": {"max_ctx": 1000}, "sections": '
                               '[{"id": "b", "kind": "user", "text": "ho"}]}\n'),
        fifo,
    ],
    ids=["missing", "broken-json", "jsonl-bad-line", "fifo"],
)
def test_bad_files_are_reported_as_the_app_reports_them(tmp_path, forkable, make):
    path = make(tmp_path)
    request = launch.first_request([path])
    first = FirstPlan.start(lambda: launch.first_request([path]))
    assert first is not None and request is not None
    forked = first.take(request)
    assert first.handed and reaped(first.pid)
    expected = Planner().run(request)
    assert forked.failure == expected.failure
    assert forked.warnings == expected.warnings
    assert (forked.plan is None) == (expected.plan is None)
    if expected.plan is not None:
        assert plan_json(forked.plan) == plan_json(expected.plan)


def test_a_directory_is_left_to_the_app(tmp_path, forkable, capsys):
    first = FirstPlan.start(lambda: launch.first_request([str(tmp_path)]))
    assert first is not None
    assert first.take(launch.first_request([str(tmp_path / "x.yaml")])) is None  # the child planned nothing
    assert reaped(first.pid)
    assert launch.main([str(tmp_path)]) == 2  # the app's one-line error, as before
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tokenbox: error: ") and "directory" in err


def test_close_without_take_ends_the_child(forkable):
    first = FirstPlan.start(lambda: threading.Event().wait())
    assert first is not None
    first.close()
    first.close()  # idempotent
    assert reaped(first.pid)
    assert first.take(launch.first_request(["x.yaml"])) is None


@pytest.mark.parametrize("where", ["one CPU", "no fork"])
def test_without_a_second_cpu_or_fork_the_entry_prewarms(tmp_path, forkable, monkeypatch, where):
    path = copy_sample("passepartout_turn.yaml", tmp_path)
    loaded: list[str] = []
    monkeypatch.setattr(prewarm, "load", lambda p, tokenizer=None, environ=None: loaded.append(p))
    if where == "one CPU":
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
        assert firstplan.usable_cpus() == 1
    else:
        monkeypatch.delattr(os, "fork")
    assert FirstPlan.start(lambda: launch.first_request([str(path)])) is None
    assert launch.start([str(path)]) is None  # the entry prewarms instead
    assert loaded == [str(path)]


def test_no_fork_beside_another_thread(tmp_path, monkeypatch):
    path = copy_sample("passepartout_turn.yaml", tmp_path)
    loaded: list[str] = []
    monkeypatch.setattr(prewarm, "load", lambda p, tokenizer=None, environ=None: loaded.append(p))
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not firstplan.single_threaded()
        assert FirstPlan.start(lambda: launch.first_request([str(path)])) is None
        assert launch.start([str(path)]) is None  # the entry prewarms instead
        assert loaded == [str(path)]
    finally:
        release.set()
        thread.join()


async def test_a_write_while_the_app_loads_the_file_for_itself_is_shown(tmp_path, forkable, monkeypatch):
    """The forked plan is drawn, then the app loads the file for its own planner (whose outcome is not
    drawn); a request written just as that load starts is shown without waiting for another write."""
    from benchmarks.transcripts import Transcript, main_requests_of

    transcript = Transcript(compact=False, seed=4).grow_to(60_000)
    list(main_requests_of(transcript, 1))
    path = tmp_path / "chain.jsonl"
    transcript.write(str(path))
    (text,) = main_requests_of(transcript, 1)
    requests = Planner().run(launch.first_request([str(path)])).turn_count  # before the write
    first = FirstPlan.start(lambda: launch.first_request([str(path)]))
    assert first is not None
    original, written = Planner.run, []

    def run(self, request):  # the app's first run of its own: its load of the file after the forked plan
        if first.handed and not written:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)
            written.append(request)
        return original(self, request)

    monkeypatch.setattr(Planner, "run", run)
    app = make_app(path, first_plan=first, watch=False)  # no watcher: the app's own check must see it
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert first.handed  # the forked plan was drawn
        await wait_for(pilot, lambda: app.turn_count == requests + 1, timeout=10, what="the request written during the load")
        assert written
