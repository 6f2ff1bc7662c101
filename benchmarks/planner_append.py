"""The planner's work per appended request on an uncompacted chain (issue 27), two code trees interleaved.

Each chain is built as figure 9 builds it (``Transcript(compact=False, seed=15)`` grown to the size, then
one main-thread request), followed by a ``tui.planner.Planner`` (the app's own, in a worker process of its
own); then, ``--appends`` times, one main-thread request is appended and ``Planner.run`` is timed (what
the app's worker does before the plan can be drawn). With ``--other DIR`` a second worker runs the code
of another checkout (``DIR`` laid out as this one) on a copy of the same chain, its appends alternating
with this tree's: the medians of both are printed. ``--profile`` prints the cProfile of this tree's
appends instead.

    python -m benchmarks.planner_append --sizes 1 20 50 --appends 12 --other /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

MB = 1_000_000


def _worker(size_mb: float, folder: str, profile: bool) -> None:
    """Follow a chain of ``size_mb``; on each line of stdin append one request and print the ms of ``run``."""
    # start-up: the worker's tree (on its path) decides which tokenbox these are
    from tokenbox.tui.planner import Planner, PlanRequest

    from benchmarks.transcripts import Transcript, main_requests_of

    transcript = Transcript(compact=False, seed=15).grow_to(int(size_mb * MB))
    list(main_requests_of(transcript, 1))
    path = os.path.join(folder, f"chain-{size_mb:g}.jsonl")
    transcript.write(path)
    planner = Planner()
    first = planner.run(PlanRequest(path=path, reload=True, seq=0))
    assert first.plan is not None, first.failure
    profiler = None
    if profile:
        import cProfile  # start-up: only when profiling

        profiler = cProfile.Profile()
    print("ready", flush=True)
    seq = 0
    for _ in sys.stdin:
        seq += 1
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(next(main_requests_of(transcript, 1)))
        if profiler is not None:
            profiler.enable()
        started, cpu = time.perf_counter(), time.process_time()
        outcome = planner.run(PlanRequest(path=path, reload=True, seq=seq, reason="file"))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        if profiler is not None:
            profiler.disable()
        assert outcome.plan is not None, outcome.failure
        print(f"{elapsed * 1000:.3f} {cpu * 1000:.3f} {outcome.turn_count} {outcome.plan.tokens_after}", flush=True)
    if profiler is not None:
        import pstats  # start-up: only when profiling

        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(45)


def _start(tree: str, package: str, size_mb: float, folder: str, profile: bool) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package, tree])}
    # this file run as a script (the other tree may not have it), with that tree's code on the path
    command = [sys.executable, os.path.abspath(__file__), "--worker", str(size_mb), "--folder", folder]
    if profile:
        command.append("--profile")
    process = subprocess.Popen(command, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"worker of {tree} did not start: {line!r}")
    return process


def _step(process: subprocess.Popen) -> tuple[float, float, str]:
    """One append: (wall ms, CPU ms of the worker's process, what the plan says)."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("\n")
    process.stdin.flush()
    ms, cpu, *rest = process.stdout.readline().split()
    return float(ms), float(cpu), " ".join(rest)


def _package(tree: str) -> str:
    """A temporary folder whose ``tokenbox`` points at the tree's ``core`` and ``tui`` (put first on the path,
    it wins over the installed checkout)."""
    folder = tempfile.mkdtemp(prefix="planner-append-pkg-")
    os.makedirs(os.path.join(folder, "tokenbox"))
    for name in ("core", "tui"):
        os.symlink(os.path.join(tree, name), os.path.join(folder, "tokenbox", name))
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 20, 50])
    parser.add_argument("--appends", type=int, default=12)
    parser.add_argument("--other", help="another checkout to compare with (interleaved)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worker", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.worker, args.folder, args.profile)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"this": here, **({"other": os.path.abspath(args.other)} if args.other else {})}
    packages = {name: _package(tree) for name, tree in trees.items()}
    print(f"load {os.getloadavg()[0]:.2f}")
    for size_mb in args.sizes:
        workers = {}
        for name, tree in trees.items():
            folder = tempfile.mkdtemp(prefix=f"planner-append-{name}-")
            workers[name] = _start(tree, packages[name], size_mb, folder, args.profile)
        timings: dict[str, list[float]] = {name: [] for name in trees}
        cpus: dict[str, list[float]] = {name: [] for name in trees}
        for k in range(args.appends):
            order = list(trees) if k % 2 == 0 else list(reversed(trees))
            seen = {}
            for name in order:
                ms, cpu, facts = _step(workers[name])
                timings[name].append(ms)
                cpus[name].append(cpu)
                seen[name] = facts
            if len(set(seen.values())) > 1:
                print(f"  outcomes differ at append {k + 1}: {seen}")
        for process in workers.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait()
        row = "  ".join(f"{name} median {statistics.median(v):7.2f} ms (min {min(v):.2f}, max {max(v):.2f}; "
                        f"CPU median {statistics.median(cpus[name]):.2f})" for name, v in timings.items())
        print(f"{size_mb:g} MB: {row}", flush=True)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
