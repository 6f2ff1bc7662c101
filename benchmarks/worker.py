"""Measurements that need a fresh process: peak memory of one plan, and start-up to the first plan.

Run by ``benchmarks.run`` as ``python -m benchmarks.worker MODE ...``; prints one JSON object.

* ``memory FILE [BUDGET]`` — RSS after imports and the tokenizer load (the baseline), then what
  ``tokenbox plan FILE --json`` does (load, plan, plan JSON with its fingerprint), and the peak RSS
  reached meanwhile. The peak mark is reset after the
  tokenizer load (``/proc/self/clear_refs``) so that the transient of building the BPE tables does
  not count against the plan; when that is not permitted the peak since start is reported instead.
* ``startup FILE`` — wall times from process start: imports done, tokenizer loaded, first plan done.
* ``follow FILE MORE`` — RSS growth while the requests in MORE are appended to a transcript and followed.
* ``plan-peak FILE`` — peak RSS (``VmHWM``) of ``tokenbox plan FILE --json`` in a fresh process.
* ``tui-start FILE`` — the TUI, headless, started as the ``tokenbox-tui`` entry starts it
  (``tokenbox.tui.launch.start`` before Textual is imported): prints ``frame`` at its first frame and
  ``plan`` once the first plan is on screen (its messages handled and the screen updated), so that
  the parent can time them from the moment it started the process.
"""

from __future__ import annotations

import gc
import io
import json
import os
import sys
import time

_T0 = time.perf_counter()
FOLLOW_WARM_UP = 80  # requests followed before RSS is read (caches fill up, then stay bounded)


def _status(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` value from ``/proc/self/status`` in bytes (0 when unavailable)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def memory(path: str, budget: int | None) -> dict:
    rss_start = _status("VmRSS")
    from tokenbox.core import Engine, load_session
    from tokenbox.core.tokens.tokenizers import default_registry

    rss_imports = _status("VmRSS")
    default_registry().get("o200k_base")
    gc.collect()
    rss_base = _status("VmRSS")
    reset = _reset_peak()
    hwm_before = _status("VmHWM")
    started = time.perf_counter()
    session = load_session(path, max_bytes=1 << 40)
    plan = Engine().plan(session, budget=budget)
    data = json.dumps(plan.to_dict(), ensure_ascii=False, indent=2)  # what `tokenbox plan --json` prints
    seconds = time.perf_counter() - started
    peak = _status("VmHWM")
    text_bytes = sum(len(s.text_before.encode("utf-8")) for s in plan.sections)
    return {
        "seconds": seconds,
        "rss_start": rss_start,
        "tables": rss_base - rss_imports,
        "rss_base": rss_base,
        "peak": peak,
        "extra": max(0, peak - (rss_base if reset else hwm_before)),
        "peak_reset": reset,
        "text_bytes": text_bytes,
        "file_bytes": os.path.getsize(path),
        "tokens": plan.tokens_before,
        "steps": len(plan.steps),
        "json_bytes": len(data),
    }


def startup(path: str) -> dict:
    from tokenbox.core import Engine, load_session

    imported = time.perf_counter()
    engine = Engine()
    session = load_session(path)
    counter = engine.counter(engine.resolve(session).tokenizer)
    loaded = time.perf_counter()
    plan = engine.plan(session)
    json.dumps(plan.to_dict())
    done = time.perf_counter()
    return {
        "imports": imported - _T0,
        "tokenizer": loaded - imported,
        "plan": done - loaded,
        "total": done - _T0,
        "tokenizer_name": counter.tokenizer.name,
    }


def tui_start(path: str) -> dict:
    """Start the TUI headless on ``path``; print a line at the first frame and at the first plan shown."""
    import asyncio

    try:  # what the ``tokenbox-tui`` entry does before it imports Textual (the first plan starts here)
        from tokenbox.tui.launch import start

        first = start([path])
    except ImportError:  # pragma: no cover - an older TUI without it
        first = None
    from benchmarks.tui_bench import SIZE, app_class, make_app, shown

    cls, _ = app_class()
    app = make_app(cls, path, first_plan=first) if first is not None else make_app(cls, path)
    times: dict = {}

    async def go() -> None:
        async with app.run_test(size=SIZE) as pilot:
            times["frame"] = time.perf_counter() - _T0
            sys.stdout.write("frame\n")
            sys.stdout.flush()
            while not shown(app) or getattr(app, "plan", None) is None:
                await asyncio.sleep(0.001)
            await pilot.pause(0)  # pending messages handled, then the screen updated (as tui_bench's rows)
            times["plan"] = time.perf_counter() - _T0
            sys.stdout.write("plan\n")
            sys.stdout.flush()

    asyncio.run(go())
    return times


def follow(path: str, more_path: str) -> dict:
    """RSS growth while following a transcript: the requests listed in ``more_path`` (a JSON list of
    texts; the first ``FOLLOW_WARM_UP`` fill the bounded caches) appended one at a time, each followed by what a follower does
    (``load_turns`` of the file, then a plan of the newest turn)."""
    from tokenbox.core import Engine, load_turns

    with open(more_path, encoding="utf-8") as handle:
        more = json.load(handle)
    engine = Engine()
    engine.plan(load_turns(path, max_bytes=1 << 40)[-1])
    rss = 0
    started = 0.0
    for index, text in enumerate(more):
        if index == FOLLOW_WARM_UP:  # the engine's bounded caches (64 layouts) are full: steady state
            gc.collect()
            rss = _status("VmRSS")
            started = time.perf_counter()
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        engine.plan(load_turns(path, max_bytes=1 << 40)[-1])
    seconds = time.perf_counter() - started
    gc.collect()
    after = _status("VmRSS")
    return {"rss_before": rss, "rss_after": after, "growth": after - rss, "turns": len(more) - FOLLOW_WARM_UP,
            "seconds": seconds}


class CountedOutput(io.TextIOBase):
    """A stdout that keeps only the number of characters written to it (as ``> file`` would take them)."""

    written = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


def plan_peak(path: str) -> dict:
    """Peak RSS of ``tokenbox plan FILE --json`` run in this process (the CLI's own code path), its output
    counted and dropped as ``> file`` would take it (kept in memory it would add its own size to the peak)."""
    import contextlib

    from tokenbox.core.commands.cli import main as cli_main

    started = time.perf_counter()
    out = CountedOutput()
    with contextlib.redirect_stdout(out):
        code = cli_main(["plan", path, "--json", "--max-file-size", str(1 << 40)])
    return {"seconds": time.perf_counter() - started, "peak": _status("VmHWM"), "code": code, "json_bytes": out.written}


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "tui-start":
        result = tui_start(argv[1])
    elif mode == "memory":
        result = memory(argv[1], int(argv[2]) if len(argv) > 2 and argv[2] != "-" else None)
    elif mode == "startup":
        result = startup(argv[1])
    elif mode == "follow":
        result = follow(argv[1], argv[2])
    elif mode == "plan-peak":
        result = plan_peak(argv[1])
    elif mode == "board-start":
        from benchmarks.board_bench import board_start

        result = board_start(argv[1])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
