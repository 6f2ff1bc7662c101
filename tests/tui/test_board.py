"""``tokenbox-tui --all``: the board of every recent agent session (``tui/board/``).

Sessions of three agents in a fake home (``board_home``), a fixed clock. Expected figures come from what
the files recorded (the last reply's usage: input + cache creation + cache read), never from the board's
code; the cost of an append is counted through the rows' public ``reads``.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from tokenbox.core.commands.cliargs import UsageError
from tokenbox.core.model.compaction import compact_threshold
from tokenbox.tui import watcher
from tokenbox.tui.board.app import BoardApp
from tokenbox.tui.board.feed import Feed, Published
from tokenbox.tui.board.sessions import Sessions
from tokenbox.tui.board.state import BoardState, Order
from tokenbox.tui.board.table import BoardTable
from tokenbox.tui.board.watch import watch_places
from tokenbox.tui.cli import duration, parse_args
from tokenbox.tui.serve import app_arguments
from tokenbox.tui.watchbackend import PublicBackend, open_backend
from watchfiles import Change

from tests.tui.board_home import NEAR, NOW, append_request, clock, environ, make_home, touch
from tests.tui.helpers import wait_for

SMALL = (80, 24)
LARGE = (200, 60)


def recorded_context(path: Path) -> int:
    """The last main-thread reply's recorded context, read straight from the transcript."""
    for line in reversed(path.read_text(encoding="utf-8").splitlines()):
        value = json.loads(line)
        message = value.get("message")
        if not value.get("isSidechain") and isinstance(message, dict) and message.get("usage"):
            usage = message["usage"]
            return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    raise AssertionError("no recorded usage")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("board") / "home"
    paths = make_home(home)
    return home, paths


def fresh(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    home = tmp_path / "home"
    return home, make_home(home)


def board_app(home: Path, **options) -> BoardApp:
    options.setdefault("watch", False)
    options.setdefault("tick", None)
    app = BoardApp(environ=environ(home), clock=clock, frozen=True, toast_seconds=3600, **options)
    app.animation_level = "none"
    return app


async def wait_rows(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.board.listed and not app.board.busy, what="every row read")
    await pilot.pause()


# ------------------------------------------------------------------------------ the sessions, without a screen


def test_rows_carry_the_recorded_context_window_and_compaction_point(home):
    home, paths = home
    sessions = Sessions(environ(home), 3600, clock)
    sessions.discover()
    while sessions.step():
        pass
    rows = {Path(row.key).name: row for row in sessions.rows()}
    assert set(rows) == {paths[n].name for n in ("claude", "near", "codex", "gemini")}
    near = rows[paths["near"].name].figures
    assert near.tokens == NEAR == recorded_context(paths["near"])
    assert near.window == 200_000 and near.compact_at == compact_threshold(200_000, {}) == 167_000
    assert near.room == 167_000 - NEAR and near.subagents == 0 and not near.approx
    claude = rows[paths["claude"].name]
    assert claude.figures.tokens == recorded_context(paths["claude"]) and claude.project == "/home/dev/src/shop"
    codex = rows[paths["codex"].name].figures
    assert codex.tokens == 22539 and codex.compact_at is None and codex.limit == codex.window  # its token_count


def test_a_codex_glance_is_the_recorded_request_the_plan_shows():
    from tokenbox.core import Engine, load_session
    from tokenbox.core.sources.readers.codex import tail_glance

    fixtures = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
    for path in sorted(fixtures.glob("codex_rollout_*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        counts = [json.loads(line)["payload"] for line in lines if '"token_count"' in line]
        recorded = [c["info"]["last_token_usage"]["input_tokens"] for c in counts if c.get("info")]
        glance = tail_glance(lines[-40:])
        plan = Engine().plan(load_session(path))
        if not recorded:
            assert glance is None, path.name
            continue
        assert glance.context == recorded[-1] and glance.pending == plan.pending, path.name
        if not plan.pending:
            assert plan.tokens_after == glance.context and plan.window_tokens == glance.window, path.name
    # an all-zero token_count (a failed call, Codex's bookkeeping) is not a request; a token_usage_record is
    zero = {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {
        "input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}, "model_context_window": 1000}}}
    record = {"type": "token_usage_record", "payload": {"usage": {"input_tokens": 700, "output_tokens": 3}}}
    assert tail_glance([json.dumps(record), json.dumps(zero)]).context == 700
    assert tail_glance([json.dumps(zero)]) is None


def test_a_row_names_its_project_and_problem_without_the_path(tmp_path):
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / "-home-dev-late"
    folder.mkdir(parents=True)
    late = folder / "late.jsonl"  # a new transcript whose first lines name no project yet
    late.write_text('{"type": "summary", "summary": "x", "leafUuid": "u"}\n')
    broken = folder / "broken.jsonl"
    broken.write_text('{"type": "user", "cwd": "/home/dev/late", "message": {\n')  # no request: one bad line
    touch(late, 5)
    touch(broken, 5)
    sessions = Sessions(environ(home), 3600, clock)
    sessions.discover()
    while sessions.step():
        pass
    rows = {Path(row.key).name: row for row in sessions.rows()}
    assert rows["late.jsonl"].project is None
    error = rows["broken.jsonl"].figures.error
    assert error and str(broken) not in error and str(tmp_path) not in error
    with open(late, "a", encoding="utf-8") as handle:  # Claude Code's lines name it once the session runs
        handle.write(json.dumps({"type": "summary", "summary": "y", "cwd": "/home/dev/late", "uuid": "u1"}) + "\n")
    append_request(late, 12_000, 1)
    sessions.changed({str(late)})
    row = next(r for r in sessions.rows() if r.key == str(late))
    assert row.figures.tokens == 12_000 and row.project == "/home/dev/late"


def test_idle_sessions_fade_after_since(home):
    home, paths = home
    state = BoardState(now=NOW, since=3600)
    sessions = Sessions(environ(home), 3600, clock)
    sessions.discover()
    while sessions.step():
        pass
    state = state.with_rows(sessions.rows(), busy=False, places=3, skipped=0)
    assert {Path(r.key).name for r in state.shown} == {paths[n].name for n in ("near", "claude", "codex", "gemini")}
    later = state.at(NOW + 700)  # gemini (50 min idle) is gone; the rest stay
    assert paths["gemini"].name not in {Path(r.key).name for r in later.shown}
    assert [Path(r.key).name for r in later.shown] == [paths[n].name for n in ("claude", "near", "codex")]
    assert [Path(r.key).name for r in later.reordered().shown] == [paths[n].name for n in ("near", "claude", "codex")]


def test_the_selection_follows_its_session_and_falls_to_its_neighbour_when_it_leaves(home):
    home, paths = home
    sessions = Sessions(environ(home), 7200, clock)
    sessions.discover()
    rows = sessions.rows()  # by activity: claude, near, codex, gemini
    state = BoardState(now=NOW).with_rows(rows, busy=False, places=3, skipped=0).moved(2)
    assert state.selected == str(paths["codex"])
    state = state.with_rows(tuple(r for r in rows if r.key != str(paths["claude"])), busy=False, places=3, skipped=0)
    assert state.selected == str(paths["codex"]) and state.cursor == 1  # the same session, a row up
    state = state.with_rows(tuple(r for r in rows if r.key not in (str(paths["claude"]), state.selected)), busy=False,
                            places=3, skipped=0)
    assert state.selected == str(paths["gemini"])  # gone: the row now where it was


def test_an_append_rereads_that_session_only_and_a_new_session_appears(tmp_path):
    home, paths = fresh(tmp_path)
    for index in range(12):  # idle transcripts beside the three agents'
        idle = paths["claude"].parent / f"idle-{index:02d}.jsonl"
        shutil.copyfile(paths["claude"], idle)
        touch(idle, 600 + index)
    sessions = Sessions(environ(home), 7200, clock)
    sessions.discover()
    while sessions.step():
        pass
    before = {row.key: row.reads for row in sessions.rows()}
    append_request(paths["claude"], 31_000, 1)
    read = sessions.changed({str(paths["claude"])})
    assert read == {str(paths["claude"])}
    after = {row.key: row for row in sessions.rows()}
    assert after[str(paths["claude"])].figures.tokens == 31_000 == recorded_context(paths["claude"])
    assert after[str(paths["claude"])].reads == before[str(paths["claude"])] + 1
    assert {k: r.reads for k, r in after.items() if k != str(paths["claude"])} == {
        k: n for k, n in before.items() if k != str(paths["claude"])}
    # a sub-agent's file of that session counts as the session's change; a new session is listed
    side = paths["claude"].with_suffix("") / "subagents" / "agent-a1.jsonl"
    side.parent.mkdir(parents=True)
    side.write_text("")
    assert sessions.owner(str(side)) == str(paths["claude"])
    new = paths["near"].parent / "new-one.jsonl"
    shutil.copyfile(paths["claude"], new)
    assert str(new) in sessions.changed({str(new)})
    assert str(new) in {row.key for row in sessions.rows()}


# ------------------------------------------------------------------------------ the app


async def test_enter_opens_the_session_and_esc_returns_with_the_selection_kept(tmp_path):
    home, paths = fresh(tmp_path)
    app = board_app(home)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_rows(pilot)
        assert app.on_board
        await pilot.press("down")
        chosen = app.board.selected
        assert chosen == str(paths["near"])  # rows by activity: claude (3 s), near (20 s), …
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.plan is not None, what="the inspector's plan")
        assert not app.on_board and app.path == chosen and app.plan.tokens_after == NEAR
        # meanwhile the Gemini chat changes: it comes first, the chosen session moves down a row
        touch(paths["gemini"], 0)
        published = app.published
        app.feed.changes({str(paths["gemini"])})
        await wait_for(pilot, lambda: app.published > published, what="the rows published again")
        await pilot.press("escape")
        await pilot.pause()
        assert app.on_board and app.board.selected == chosen
        assert [Path(r.key).name for r in app.board.shown][:3] == [paths[n].name for n in ("gemini", "claude", "near")]
        assert app.board_screen.query_one(BoardTable).cursor == 2
        await pilot.press("s")  # by pressure: the session near compaction comes first, still selected
        assert app.board.order is Order.PRESSURE and app.board.shown[0].key == chosen == app.board.selected


async def test_an_append_reaches_its_row_through_the_watcher(tmp_path):
    home, paths = fresh(tmp_path)
    for index in range(20):
        idle = paths["near"].parent / f"idle-{index:02d}.jsonl"
        shutil.copyfile(paths["claude"], idle)
        touch(idle, 900 + index)

    app = board_app(home, watch=True)
    async with app.run_test(size=SMALL) as pilot:
        await wait_rows(pilot)
        await wait_for(pilot, lambda: app.feed.places(), what="the places to watch")
        await pilot.pause(0.3)  # the watch is set up
        reads = {row.key: row.reads for row in app.board.rows}
        append_request(paths["claude"], 42_000, 7)
        key = str(paths["claude"])
        await wait_for(pilot, lambda: next(r for r in app.board.rows if r.key == key).figures.tokens == 42_000,
                       what="the appended request on its row")
        now = {row.key: row.reads for row in app.board.rows}
        assert now[key] == reads[key] + 1
        assert {k: v for k, v in now.items() if k != key} == {k: v for k, v in reads.items() if k != key}


def test_the_board_watches_at_the_short_step_while_written_without_starting_its_watch_again():
    """The watch step is most of a write's way to its row: the quiet step until a change is reported, the
    short one while changes came within ``ACTIVE_SECONDS``, the quiet one again after. The step changes
    between two waits of the same backend (one opened): a watch started again at each change of step would
    leave a gap. watchfiles' backend is replaced by a script of what it returns; the clock is the test's."""
    now = [1000.0]
    steps: list[int] = []
    opened: list[list[str]] = []
    reported: list[set[str]] = []
    stop = threading.Event()
    change = {(int(Change.modified), "/s/a.jsonl")}

    def quiet_for(seconds: float):
        now[0] += seconds
        return "timeout"

    script = iter([
        lambda: "timeout",  # quiet: the quiet step
        lambda: change,  # a write, handed over at the quiet step
        lambda: quiet_for(watcher.ACTIVE_SECONDS / 2),  # being written: the short step stays
        lambda: change,
        lambda: quiet_for(watcher.ACTIVE_SECONDS + 1),  # quiet long enough: the quiet step again
        lambda: (stop.set(), "stop")[1],
    ])

    class Scripted:
        def watch(self, debounce_ms, step_ms, timeout_ms, stop_event):
            steps.append(step_ms)
            return next(script)()

        def close(self):
            pass

    def backend(places, force_polling, recursive):
        opened.append(places)
        return Scripted()

    watch_places(lambda: ["/s"], stop, reported.append, clock=lambda: now[0], backend=backend)
    assert steps == [watcher.STEP_MS, watcher.STEP_MS, watcher.ACTIVE_STEP_MS, watcher.ACTIVE_STEP_MS,
                     watcher.ACTIVE_STEP_MS, watcher.STEP_MS]
    assert watcher.ACTIVE_STEP_MS < watcher.STEP_MS
    assert opened == [["/s"]]  # one watch throughout
    assert reported == [{"/s/a.jsonl"}, {"/s/a.jsonl"}]


def test_a_write_as_the_watch_step_shortens_reaches_its_row(tmp_path):
    """No write is lost when the step changes. The clock the watch reads is the test's: the first time it is
    read after the watch reported a change (the step goes from the quiet to the short one there), it appends
    a request to another session. A watch started again at the new step drops that write (it lands in the
    backend being closed, or between two); here the session's row must show it. Threads as the board runs
    them: the feed (``Sessions``) and the watch, on real files."""
    home, paths = fresh(tmp_path)
    sessions = Sessions(environ(home), 7200, clock)
    published: list[Published] = []
    feed = Feed(sessions, published.append)
    stop = threading.Event()
    reported: list[set[str]] = []
    steps: list[int] = []
    switched = threading.Event()
    key = str(paths["claude"])

    def watch_clock() -> float:
        if reported and not switched.is_set():
            switched.set()
            append_request(paths["claude"], 42_000, 7)
        return time.monotonic()

    class Recorded:
        def __init__(self, places, force_polling, recursive):
            self.real = open_backend(places, force_polling, recursive)

        def watch(self, debounce_ms, step_ms, timeout_ms, stop_event):
            steps.append(step_ms)
            return self.real.watch(debounce_ms, step_ms, timeout_ms, stop_event)

        def close(self):
            self.real.close()

    def on_changes(paths: set[str]) -> None:
        reported.append(paths)
        feed.changes(paths)

    def wait(predicate, what: str) -> None:
        deadline = time.monotonic() + 20
        while not predicate():
            assert time.monotonic() < deadline, what
            time.sleep(0.02)

    def row(published: Published):
        return next(r for r in published.rows if r.key == key)

    worker = threading.Thread(target=feed.run, args=(stop,), daemon=True)
    worker.start()
    watch = None
    try:
        wait(lambda: published and not published[-1].busy, "every row read")
        assert row(published[-1]).figures.tokens != 42_000
        watch = threading.Thread(target=watch_places, args=(feed.places, stop, on_changes),
                                 kwargs={"clock": watch_clock, "backend": Recorded}, daemon=True)
        watch.start()
        number = 100

        def written_and_seen() -> bool:
            # the watch starts in its own time: write to another session until it reports one (a state, not a delay)
            nonlocal number
            number += 1
            append_request(paths["near"], 150_000, number)
            time.sleep(0.05)
            return bool(reported)

        wait(written_and_seen, "a write reported")
        wait(lambda: switched.is_set(), "the step changed")
        wait(lambda: row(published[-1]).figures.tokens == 42_000, "the request written as the step changed, on its row")
        assert steps[0] == watcher.STEP_MS and watcher.ACTIVE_STEP_MS in steps
    finally:
        stop.set()
        feed.wake()
        worker.join(5)
        if watch is not None:
            watch.join(5)
    assert not worker.is_alive() and (watch is None or not watch.is_alive())


def test_the_public_watch_the_board_falls_back_on_still_reports_writes(tmp_path):
    """The board's backend is watchfiles' internal one; a watchfiles that moved it leaves the board on the
    public ``watch`` (``PublicBackend``, quiet step only). A write under a place is still reported, and the
    watch still ends when told to."""
    place = tmp_path / "projects"
    place.mkdir()
    stop = threading.Event()
    reported: list[set[str]] = []
    watch = threading.Thread(target=watch_places, args=(lambda: [str(place)], stop, reported.append),
                             kwargs={"backend": PublicBackend}, daemon=True)
    watch.start()
    target = place / "s.jsonl"
    deadline = time.monotonic() + 20
    try:
        while not any(str(target) in paths for paths in reported):  # the watch starts in its own time
            assert time.monotonic() < deadline, "the write was never reported"
            with target.open("a", encoding="utf-8") as out:
                out.write("{}\n")
            time.sleep(0.1)
    finally:
        stop.set()
        watch.join(5)
    assert not watch.is_alive()


# ------------------------------------------------------------------------------ snapshots


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x60"])
def test_board_snapshot(snap_compare, home, size):
    home, _ = home
    assert snap_compare(board_app(home), terminal_size=size, run_before=wait_rows)


def test_untrusted_names_and_errors_are_inert_text():
    from tokenbox.tui.board.figures import Figures, failed
    from tokenbox.tui.board.sessions import Row
    from tokenbox.tui.board.table import Columns, row_text

    hostile = "\x1b[31mred\x07 [bold]x[/] \u202eevil"
    figures = Figures(1000, 200_000, 167_000, hostile, 0)
    rows = [Row("k", "claude", "Claude Code", f"/p/{hostile}", None, NOW, figures, 1),
            Row("k2", "codex", "Codex CLI", None, hostile, NOW, failed(hostile), 1)]
    for width in (80, 200):
        for row in rows:
            text = row_text(row, Columns.fit(width), NOW, (75, 90, 100)).plain
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
            assert "\\x1b" in text or "…" in text  # shown escaped (or cut), never sent


# ------------------------------------------------------------------------------ flags


def test_all_and_since_flags():
    assert parse_args(["--all"]).all and parse_args(["--all"]).since is None
    assert parse_args(["--all", "--since", "90m"]).since == 5400
    assert [duration(t) for t in ("45s", "30m", "2h", "1d", "1h30m", "120")] == [45, 1800, 7200, 86400, 5400, 120]
    for bad in (["--since", "2h"], ["--all", "f.jsonl"], ["--all", "--codex"], ["--all", "--agent", "codex"],
                ["--all", "--since", "soon"], ["--all", "--since", "0m"]):
        with pytest.raises((UsageError, SystemExit)):
            parse_args(bad)


def test_each_served_tab_runs_the_board():
    argv = ["--all", "--since", "30m", "--serve", "127.0.0.1:0"]
    assert app_arguments(argv) == ["--all", "--since", "30m"]
    assert parse_args(app_arguments(argv)).all and parse_args(app_arguments(argv)).since == 1800
