"""Figure 8: the TUI, headless through Textual's Pilot (``App.run_test``).

Written against the app's public behaviour only: it is constructed with a file path, follows the
file, and shows plans (``plans_shown`` counts them, ``plan`` is the one on screen); ``right``
steps the trim trace (``step``). Anything missing makes the figure "not measured", never a crash.

* write → screen: the file is rewritten with one section edited; the time until the new plan has
  been shown and the screen refreshed (the watcher, reload, load, plan and drawing). "Refreshed" is
  ``pilot.pause(0)``: every message pending on the screen and its widgets handled, then a screen
  update (``pause()`` without a delay also waits for the process to look idle, which the watcher
  thread and a busy machine stretch). Writes are spaced by more than the app's reload coalescing
  interval, so each is a single edit, plus a seeded part of a watch step (``follower.pauses``).
* stepping: a ``right`` key event on the trace (``App.simulate_key``), until the screen has been
  refreshed.
* start-up: a fresh process until the first frame, and until the first plan is on screen
  (tokenizer load included), see ``worker.tui_start``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

SIZE = (120, 40)
TIMEOUT = 30.0


class Unavailable(Exception):
    """The TUI cannot be measured (not installed, not importable, or not behaving as expected)."""


def app_class():
    try:
        from tokenbox.tui import app as module
    except Exception as exc:  # pragma: no cover - depends on the TUI's state
        raise Unavailable(f"tokenbox.tui.app does not import: {exc!r}"[:200]) from None
    cls = getattr(module, "TokenboxApp", None)
    if cls is None:
        from textual.app import App

        found = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, App) and v is not App]
        if not found:
            raise Unavailable("no App class in tokenbox.tui.app")
        cls = found[0]
    return cls, getattr(module, "RELOAD_INTERVAL", 0.0)


def make_app(cls, path: str, **extra):
    for options in ({"frozen": True, "toast_seconds": 3600}, {"frozen": True}, {}):
        try:
            return cls(path, **options, **extra)
        except TypeError:
            continue
    raise Unavailable("the app cannot be built from a file path")


def shown(app) -> int:
    """How many plans the app has shown (falls back to noticing a new ``plan`` object)."""
    count = getattr(app, "plans_shown", None)
    if isinstance(count, int):
        return count
    plan = getattr(app, "plan", None)
    return id(plan) if plan is not None else 0


async def wait_until(pilot, predicate, timeout: float = TIMEOUT) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise Unavailable("timed out waiting for the app")
        await asyncio.sleep(0.001)


async def write_to_screen(bench, sections: int, repeats: int) -> tuple[float, float, int]:
    """Median write → new plan on screen, and the median load + plan of the same edits (warm engine)."""
    from benchmarks import synth

    cls, reload_interval = app_class()
    tokens = sections * 300
    session = synth.calibrated_session(tokens, sections, bench.tokenizer.count, seed=8)
    session["budget"]["max_ctx"] = int(tokens * 0.8)  # some pressure: a trace to draw
    directory = os.path.join(bench.dir, f"tui{sections}")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "session.json")
    synth.write(session, path)
    edits = []
    current = session
    for k in range(repeats + 2):
        current = synth.edit_section(current, 7 * k + 3, f"tui{k}")
        edits.append(synth.to_json(current).encode("utf-8"))
    from benchmarks.follower import bare_latencies, pauses

    step_ms, debounce_ms = watch_settings()
    # spaced by more than the reload coalescing (a single edit, not a burst), plus a part of a watch
    # step: writes not timed to either follower's wake-ups (``follower.pauses``); the same for both
    waits = pauses(max(0.05, reload_interval * 1.5), len(edits), step_ms)
    app = make_app(cls, path)
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: shown(app) != 0 and getattr(app, "plan", True) is not None)
        await pilot.pause()
        for k, data in enumerate(edits):
            await asyncio.sleep(waits[k])
            before = shown(app)
            started = time.perf_counter()
            with open(path, "wb") as handle:  # written in place, as many agents do
                handle.write(data)
            await wait_until(pilot, lambda before=before: shown(app) != before)
            await pilot.pause(0)  # pending messages handled, then the screen updated
            elapsed = time.perf_counter() - started
            if k >= 2:  # the first edits warm the engine and the widgets
                latencies.append(elapsed)
    # the engine's share: load + plan of the same edits in a warm engine
    engine = bench.Engine()
    engine.plan(bench.load(path))
    plan_times = []
    for k, data in enumerate(edits):
        other = os.path.join(directory, f"edit{k}.json")
        with open(other, "wb") as handle:
            handle.write(data)
        started = time.perf_counter()
        engine.plan(bench.load(other))
        plan_times.append(time.perf_counter() - started)
    # the bare watchfiles follower on the same edits, same waits, same watch settings
    bare = bare_latencies(path, edits, waits, step_ms, debounce_ms)
    bench.bare = statistics.median(bare[2:] or bare)
    return statistics.median(latencies), statistics.median(plan_times[2:]), len(latencies)


def watch_settings() -> tuple[int, int]:
    """The app's watchfiles ``step`` and ``debounce`` (ms) while a file is being written (the edits these
    figures time come one after the other), for the bare follower to use the same."""
    try:
        from tokenbox.tui import watcher

        return int(watcher.ACTIVE_STEP_MS), int(watcher.DEBOUNCE_MS)
    except Exception:  # pragma: no cover - depends on the TUI's state
        return 2, 300


async def stepping(bench, repeats: int) -> tuple[float, float]:
    """Median time of one ``right`` on the trim trace until the screen is refreshed, and a bare refresh."""
    from benchmarks import synth

    cls, _ = app_class()
    session = synth.calibrated_session(60_000, 200, bench.tokenizer.count, seed=9)
    session["budget"]["max_ctx"] = 36_000
    path = os.path.join(bench.dir, "tui-steps.json")
    synth.write(session, path)
    app = make_app(cls, path)
    steps: list[float] = []
    idle: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: shown(app) != 0 and getattr(app, "plan", None) is not None)
        await pilot.pause()
        total = len(app.plan.steps)
        if not total or not hasattr(app, "step"):
            raise Unavailable("no trace to step through")
        await pilot.press("home")
        await pilot.pause()
        for _ in range(min(repeats + 2, total)):
            before = app.step
            started = time.perf_counter()
            if hasattr(app, "simulate_key"):
                app.simulate_key("right")  # the key event alone (Pilot.press also waits for the CPU to idle)
            else:
                await pilot.press("right")
            await wait_until(pilot, lambda before=before: app.step != before)
            await pilot.pause(0)
            steps.append(time.perf_counter() - started)
            started = time.perf_counter()
            await pilot.pause(0)
            idle.append(time.perf_counter() - started)
    return statistics.median(steps[2:] or steps), statistics.median(idle)


async def run(bench) -> list:
    from benchmarks.run import Row

    sizes = bench.sizes
    rows = []
    app_class()  # Unavailable early if the TUI is missing
    for sections in sizes.tui_sections:
        limit = 0.100 if sections <= 20 else 0.150
        value, engine_time, runs = await write_to_screen(bench, sections, sizes.tui_repeats)
        rows.append(Row("8", f"TUI file write -> new plan on screen, {sections} sections", value,
                        "load + plan of the same edits (warm engine)", engine_time,
                        limit=limit, target_text=f"<= {limit * 1000:.0f} ms", note=f"{runs} edits"))
        rows.append(Row("8", f"  the same, against a bare watchfiles follower ({sections} sections)", value,
                        "bare follower: watchfiles + read + json.loads", bench.bare, target=1.3))
    value, idle = await stepping(bench, sizes.tui_repeats)
    rows.append(Row("8", "TUI step one trace step (200 sections)", value, "a screen refresh with nothing to do", idle))
    return rows
