"""Where one appended request's time goes, from the write to the screen's update: a profiling aid, not a figure.

    python -m benchmarks.append_breakdown [--mb 1] [--appends 30] [--spacing 0.3]

The app runs headless (Textual's Pilot, 140 × 42) on an uncompacted chain (figure 9's, ``transcripts.write_chain``);
requests are appended one at a time, ``spacing`` seconds apart, each waited for until its plan is shown and the
screen updated (``pilot.pause(0)``). Each stage is timed by wrapping the method that does it (private names of the
app and of Textual: this aid breaks, loudly, when they move; the figures use only public behaviour):

* watch: the write → the app asks for a plan (watchfiles reports a change once a whole step has passed
  with no newer one: 1.5 steps on average, then the event's way to the UI thread);
* plan: ``Planner.run`` in the worker thread (the appended lines read, the newest turn built and planned);
* state: the UI thread's handling of the plan (``on_plan_computed``: the new view state and every part's draw);
* frame wait: from there to Textual's screen update (its idle pass, its update timer);
* compositor: the screen update (the changed rows rendered and written);
* total: the write → the screen updated, as ``tui_bench`` times it.

Medians over the appends after the first three (they warm the engine and the widgets). The stages are
sequential, so they add up to about the total; the rest is the waits between them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

STAGES = ("watch", "plan", "state", "frame wait", "compositor", "total")
WARM_UP = 3  # appends not counted


def _wrap(owner: type, name: str, tag: str, marks: list[tuple[str, float, float]]) -> Callable[[], None]:
    """Record ``(tag, start, end)`` in ``marks`` around each call of ``owner.name``; the undo."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            marks.append((tag, started, time.perf_counter()))

    setattr(owner, name, timed)
    return lambda: setattr(owner, name, original)


def stages_of(marks: list[tuple[str, float, float]], written: float, shown: float) -> dict[str, float]:
    """One append's stages (seconds) from the marks taken between its write and its screen update."""

    def first(tag: str, field: int, default: float) -> float:
        return min((m[field] for m in marks if m[0] == tag), default=default)

    def last(tag: str, field: int, default: float) -> float:
        return max((m[field] for m in marks if m[0] == tag), default=default)

    asked = first("ask", 1, written)
    state_end = last("state", 2, asked)
    frame = min((m[1] for m in marks if m[0] == "compositor" and m[1] >= state_end), default=state_end)
    return {
        "watch": asked - written,
        "plan": sum(m[2] - m[1] for m in marks if m[0] == "plan"),
        "state": sum(m[2] - m[1] for m in marks if m[0] == "state"),
        "frame wait": frame - state_end,
        "compositor": sum(m[2] - m[1] for m in marks if m[0] == "compositor" and m[1] >= state_end),
        "total": shown - written,
    }


async def _run(path: str, requests: list[str], spacing: float) -> list[dict[str, float]]:
    from textual.screen import Screen
    from tokenbox.tui import planner
    from tokenbox.tui.app import TokenboxApp

    marks: list[tuple[str, float, float]] = []
    undo = [
        _wrap(planner.Planner, "run", "plan", marks),
        _wrap(TokenboxApp, "request_plan", "ask", marks),
        _wrap(TokenboxApp, "on_plan_computed", "state", marks),
        _wrap(Screen, "_compositor_refresh", "compositor", marks),
    ]
    rows = []
    try:
        app = TokenboxApp(path, frozen=True, toast_seconds=3600)
        async with app.run_test(size=(140, 42)) as pilot:
            deadline = time.perf_counter() + 60
            while app.plans_shown == 0 or app.plan is None:
                if time.perf_counter() > deadline:
                    raise TimeoutError("the first plan never came")
                await asyncio.sleep(0.01)
            await asyncio.sleep(1.0)  # the timeline's fill, the first frames
            await pilot.pause()
            for text in requests:
                await asyncio.sleep(spacing)
                before = app.plans_shown
                marks.clear()
                written = time.perf_counter()
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(text)
                deadline = written + 30
                while app.plans_shown == before:
                    if time.perf_counter() > deadline:
                        raise TimeoutError("an appended request was never shown")
                    await asyncio.sleep(0.0005)
                await pilot.pause(0)  # pending messages handled, then the screen updated
                rows.append(stages_of(marks, written, time.perf_counter()))
    finally:
        for restore in undo:
            restore()
    return rows[WARM_UP:] or rows


def main(argv: list[str] | None = None) -> int:
    """Build the chain, follow it headless, print each stage's median in ms."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.append_breakdown", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0, help="the chain's size in MB (default 1)")
    parser.add_argument("--appends", type=int, default=30, help="requests appended (default 30; the first 3 not counted)")
    parser.add_argument("--spacing", type=float, default=0.3, help="seconds between appends (default 0.3)")
    args = parser.parse_args(argv)
    if args.appends < 1 or args.mb <= 0 or args.spacing < 0:
        parser.error("--appends must be at least 1, --mb above 0 and --spacing not negative")

    from benchmarks.transcripts import write_chain

    with tempfile.TemporaryDirectory(prefix="tokenbox-breakdown-") as work:
        path = os.path.join(work, "chain.jsonl")
        requests = write_chain(path, int(args.mb * 1_000_000), 15, appended=args.appends)
        rows = asyncio.run(_run(path, requests, args.spacing))
    medians = {stage: statistics.median(row[stage] for row in rows) * 1000 for stage in STAGES}
    print(f"{args.mb:g} MB chain, {len(rows)} appends, medians (ms):")
    print("  " + "  ".join(f"{stage} {medians[stage]:.1f}" for stage in STAGES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
