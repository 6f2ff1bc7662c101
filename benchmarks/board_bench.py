"""Figure 11: the board of every agent session (``tokenbox-tui --all``), against the inspector on one file.

A home folder holds ``count`` Claude Code transcripts built from the real one (``benchmarks.transcripts``),
all within the board's ``--since`` window (the worst case: every one is a row): ``active`` of them of
``ACTIVE_MB`` each changed seconds ago, the others idle for 5 to 100 minutes, with sizes spread
geometrically from ``SMALLEST_KB`` up to ``largest_mb``.

* write → screen: one request appended to one active transcript (the lines Claude Code writes for it),
  until the board has read it and drawn its row (``Row.reads`` of that session moved on, then a screen
  update: ``pilot.pause(0)``); baseline: the inspector following a copy of the same transcript (its own
  folder), until its new plan is on screen. Appends are spaced as in figure 8 (``follower.pauses``); the
  inspector's runs come before and after the board's.
* idle CPU: the board's process CPU time (every thread: the watcher, the worker, the UI and its one-second
  tick) over ``idle_seconds`` of wall time with nothing changing, as a percentage, before the appends; the
  inspector's idle beside it, before its appends too (what is being written is watched at a shorter step for
  a while: the board's CPU in the ``idle_seconds`` after its appends is in the row's note).
* start-up: a fresh process until every row shows its context (recorded usage first), and until the
  background work (plans, followers) is done; baseline: a fresh inspector process until the first plan
  of the largest transcript is on screen (``worker tui-start``). Interleaved.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import time

from benchmarks.transcripts import Transcript, turns_of

ACTIVE_MB = 1.0
SMALLEST_KB = 30
SIZE = (120, 40)
TIMEOUT = 60.0


def build_home(directory: str, count: int, active: int, largest_mb: float) -> dict:
    """The home folder: its environment, the active transcripts with their ``Transcript`` (for appends),
    and the largest transcript's path."""
    home = os.path.join(directory, "home")
    projects = os.path.join(home, ".claude", "projects")
    shutil.rmtree(home, ignore_errors=True)
    now = time.time()
    big = Transcript(seed=99)
    ends: list[int] = []  # the bytes after each request of the big transcript (a cut there is a whole transcript)
    while big.size < largest_mb * 1_000_000:
        big.turn()
        ends.append(len(big.lines))
    idle = count - active
    sizes = [SMALLEST_KB * 1000 * (largest_mb * 1_000_000 / (SMALLEST_KB * 1000)) ** (i / max(1, idle - 1)) for i in range(idle)]
    cumulative = []
    total = 0
    for line in big.lines:
        total += len(line.encode("utf-8")) + 1
        cumulative.append(total)
    largest = ""
    for index, size in enumerate(sizes):
        lines = next((end for end in ends if cumulative[end - 1] >= size), ends[-1])
        folder = os.path.join(projects, f"-home-dev-project-{index % 40:02d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"idle-{index:03d}.jsonl")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in big.lines[:lines]))
        stamp = now - 300 - 30 * index
        os.utime(path, (stamp, stamp))
        if index == idle - 1:
            largest = path
    actives = []
    for index in range(active):
        transcript = Transcript(seed=200 + index).grow_to(int(ACTIVE_MB * 1_000_000))
        folder = os.path.join(projects, f"-home-dev-active-{index:02d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"active-{index:02d}.jsonl")
        transcript.write(path)
        stamp = now - index
        os.utime(path, (stamp, stamp))
        actives.append((path, transcript))
    env = {"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"), "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
           "XDG_STATE_HOME": os.path.join(home, ".local", "state")}
    return {"env": env, "active": actives, "largest": largest, "home": home}


def _environ(env: dict[str, str]) -> dict[str, str]:
    out = dict(os.environ)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLINE_DIR", "AIDER_CHAT_HISTORY_FILE"):
        out.pop(name, None)
    out.update(env)
    return out


async def _wait(predicate, timeout: float = TIMEOUT) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there")
        await asyncio.sleep(0.001)


async def inspector_appends(path: str, transcript: Transcript, waits: list[float], idle_seconds: float) -> tuple[list[float], float]:
    """Append → new plan on screen of the inspector following ``path``; and its idle CPU (%)."""
    from tokenbox.tui.app import TokenboxApp

    app = TokenboxApp(path, frozen=True, toast_seconds=3600)
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await _wait(lambda: app.plan is not None and not app.busy)
        await pilot.pause()
        # idle before the appends: after them the file is being written, and the inspector watches it at
        # its short step until it has been quiet for a while (``tui/watcher.py``)
        idle = await _idle_cpu(idle_seconds)
        for wait, text in zip(waits, turns_of(transcript, len(waits)), strict=True):
            await asyncio.sleep(wait)
            await _wait(lambda: not app.busy)
            before = app.plans_shown
            started = time.perf_counter()
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)
            await _wait(lambda before=before: app.plans_shown != before)
            await pilot.pause(0)
            times.append(time.perf_counter() - started)
    return times, idle


async def board_appends(env: dict[str, str], actives: list, waits: list[float], idle_seconds: float,
                        settle: float) -> tuple[list[float], float, float, int]:
    """Append → that row read and drawn on the board; its idle CPU (%) before the appends and in the
    ``idle_seconds`` after them (%: watched at the short step); how many rows it showed."""
    from tokenbox.tui.board.app import BoardApp

    app = BoardApp(environ=_environ(env), frozen=True, toast_seconds=3600)
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await _wait(lambda: app.board.listed and not app.board.busy)
        await pilot.pause(settle)  # the watch is set up, the rows settled (a tick, the rows' "now")
        # idle before the appends, as the inspector's: after them the storage is being written, and the board
        # watches it at the short step until nothing has changed for a while (``tui/board/watch.py``)
        idle = await _idle_cpu(idle_seconds)
        streams = [turns_of(transcript, len(waits)) for _, transcript in actives]
        for index, wait in enumerate(waits):
            await asyncio.sleep(wait)
            path = actives[index % len(actives)][0]
            before = _reads(app, path)
            started = time.perf_counter()
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(next(streams[index % len(actives)]))
            await _wait(lambda path=path, before=before: _reads(app, path) > before)
            await pilot.pause(0)
            times.append(time.perf_counter() - started)
        await pilot.pause(settle)  # the last change settled
        written = await _idle_cpu(idle_seconds)  # within ACTIVE_SECONDS of the last write: the short step
        rows = len(app.board.shown)
    return times, idle, written, rows


def _reads(app, path: str) -> int:
    return next((row.reads for row in app.board.rows if row.key == path), 0)


async def _idle_cpu(seconds: float) -> float:
    """The process's CPU time over ``seconds`` of wall time, in percent of one core."""
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    return 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)


def board_start(env_json: str) -> dict:
    """``worker board-start``: a fresh board process on the home of ``env_json``, started as the
    ``tokenbox-tui --all`` entry starts it (``tokenbox.tui.launch.start`` before Textual is imported); prints
    ``frame``, ``rows`` (every row shows its context) and ``done`` (no background work left) as they happen."""
    import sys

    os.environ.update(_environ(json.loads(env_json)))
    started = time.perf_counter()
    try:  # what the ``tokenbox-tui --all`` entry does before it imports Textual (the first looks start here)
        from tokenbox.tui.launch import start

        first = start(["--all"])
    except ImportError:  # pragma: no cover - an older TUI without it
        first = None
    from tokenbox.tui.board.app import BoardApp

    app = BoardApp(frozen=True, toast_seconds=3600, **({"first_looks": first} if first is not None else {}))
    times: dict = {}

    async def go() -> None:
        async with app.run_test(size=SIZE) as pilot:
            times["frame"] = time.perf_counter() - started
            sys.stdout.write("frame\n")
            sys.stdout.flush()
            await _wait(lambda: app.board.listed and app.board.shown and all(r.figures is not None for r in app.board.shown))
            await pilot.pause(0)
            times["rows"] = time.perf_counter() - started
            times["count"] = len(app.board.shown)
            sys.stdout.write("rows\n")
            sys.stdout.flush()
            await _wait(lambda: not app.board.busy)
            await pilot.pause(0)
            times["done"] = time.perf_counter() - started
            sys.stdout.write("done\n")
            sys.stdout.flush()

    asyncio.run(go())
    return times


def run(bench, start, tui_start) -> None:
    """Add figure 11's rows to ``bench.report`` (``start``/``tui_start``: the fresh-process runners)."""
    from benchmarks.follower import pauses
    from benchmarks.run import Row, Stat
    from benchmarks.tui_bench import app_class, watch_settings

    s = bench.sizes
    count, active, largest_mb = (12, 2, 0.1) if s.smoke else (200, 10, 2.0)
    repeats = 2 if s.smoke else max(6, s.tui_repeats * 2)
    idle_seconds = 0.1 if s.smoke else 10.0 if s.repeats >= 15 else 5.0
    home = build_home(os.path.join(bench.dir, "board"), count, active, largest_mb)
    _, reload_interval = app_class()
    step_ms, _ = watch_settings()
    waits = pauses(max(0.1 if s.smoke else 0.3, reload_interval * 1.5), repeats, step_ms)
    # the inspector follows a copy of an active transcript in its own folder (the board's watcher is not running)
    alone = os.path.join(bench.dir, "board-inspector", "active.jsonl")
    os.makedirs(os.path.dirname(alone), exist_ok=True)
    shutil.copyfile(home["active"][0][0], alone)
    mirror = Transcript(seed=200).grow_to(int(ACTIVE_MB * 1_000_000))  # the same requests as that transcript next
    half = repeats // 2
    first, idle_inspector = asyncio.run(inspector_appends(alone, mirror, waits[:half], idle_seconds))
    board, idle_board, written_board, rows = asyncio.run(board_appends(home["env"], home["active"], waits, idle_seconds,
                                                        0.1 if s.smoke else 1.5))
    # the inspector again after the board (a smoke run checks the path once: its numbers mean nothing)
    second = [] if s.smoke else asyncio.run(inspector_appends(alone, mirror, waits[half:], 0.0))[0]
    inspector = first[1:] + second[1:]  # each app's first append warms its widgets
    note = f"{rows} rows, {active} active; {len(board) - 1} appends"
    bench.report.add(Row("11", f"board: append -> its row on screen ({count} transcripts)", Stat(board[1:] or board),
                         "inspector: append -> plan on screen (one transcript)", Stat(inspector or first),
                         target=2.0, note=note))
    bench.report.add(Row("11", "  board idle CPU (watcher, worker, 1 s tick)", idle_board, "inspector idle CPU",
                         idle_inspector, unit="%", limit=1.0, target_text="< 1 %",
                         note=f"over {idle_seconds:g} s, load {os.getloadavg()[0]:.1f}; "
                              f"{written_board:.2f} % in the {idle_seconds:g} s after its appends (the short step)"))
    env_json = json.dumps(home["env"])
    boards, plans, done = [], [], []
    runs = 1 if s.smoke else max(3, s.sub_repeats)
    for index in range(runs):
        if index % 2:
            result = start(env_json)
            boards.append(result["rows"])
            done.append(result["done"])
            plans.append(tui_start(home["largest"])[1])
        else:
            plans.append(tui_start(home["largest"])[1])
            result = start(env_json)
            boards.append(result["rows"])
            done.append(result["done"])
    size = os.path.getsize(home["largest"]) / 1e6
    bench.report.add(Row("11", f"board start-up to every row's context ({count} transcripts)", Stat(boards),
                         f"inspector start-up to the first plan (the largest, {size:.1f} MB)", Stat(plans), target=2.0,
                         note=f"recorded usage first; all background work done after {statistics.median(done):.2f} s"))
