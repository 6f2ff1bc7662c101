"""Issue 27's "done when", tried as a new user would: ``tokenbox-tui`` on a big uncompacted Claude Code
session (50 MB by default) while requests are appended several times a second for minutes.

    python -m benchmarks.trial [--mb 50] [--rate 5] [--seconds 180] [--keys-every 20] [--compacted]

Prints, from the real app in tmux (140 × 42): start-up to the newest request's context on screen (read
from the file's tail) and to the first plan; one request appended
the moment it is shown → on screen; then, while ``rate`` requests a second arrive, each request's lag
(written → its number in the top bar), the app's RSS (``/proc``) every 10 s, and every ``keys-every``
seconds how long a key takes to answer (``?`` → the help screen drawn, Esc; ``[`` → a past request
shown, ``f`` → following again). Nothing here is a pass/fail: it reports what a user would see.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import follower
from benchmarks.transcripts import Transcript, main_requests_of

_REQUEST = re.compile(r"request (\d+)/(\d+)")
_HELP_TEXT = "Step backward through the trim trace"  # a line of the help screen (tui/keys.py)


def _tmux(server: str, *args: str) -> None:
    subprocess.run(["tmux", "-L", server, *args], check=True, capture_output=True)


def _percentiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"min {ordered[0] * 1000:.0f} / median {statistics.median(ordered) * 1000:.0f} / p90 {p90 * 1000:.0f} / "
            f"max {ordered[-1] * 1000:.0f} ms ({len(ordered)})")


def main(argv: list[str] | None = None) -> int:
    """Run the trial and print what was seen."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trial", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="the session's size in MB (default 50)")
    parser.add_argument("--rate", type=float, default=5.0, help="requests appended a second (default 5)")
    parser.add_argument("--seconds", type=float, default=180.0, help="how long requests arrive (default 180)")
    parser.add_argument("--keys-every", type=float, default=20.0, help="seconds between key probes (default 20)")
    parser.add_argument("--compacted", action="store_true",
                        help="a session that compacts where Claude Code would (a long session past 64 MB), not one chain")
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="tokenbox-trial-")
    path = os.path.join(work, "session.jsonl")
    transcript = Transcript(compact=args.compacted, seed=15).grow_to(int(args.mb * 1_000_000))
    list(main_requests_of(transcript, 1))
    transcript.write(path)
    count = int(args.seconds * args.rate)
    first_request, *requests = list(main_requests_of(transcript, count + 1))  # each adds one to the top bar's count
    # no size limit set: a transcript is read within the default for a read a block at a time (512 MiB)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "XDG_"))}
    print(f"session {os.path.getsize(path) / 1e6:.1f} MB, {args.rate:g} requests/s for {args.seconds:g} s", flush=True)

    server = f"tokenbox-trial-{os.getpid()}"
    pane = follower._PaneOutput(os.path.join(work, "pane.out"))
    started = time.perf_counter()
    _tmux(server, "new-session", "-d", "-x", "140", "-y", "42", follower._command(path, env))
    try:
        _tmux(server, "pipe-pane", "-o", f"cat >> {shlex.quote(pane.path)}")
        totals: list[int] = []

        glanced: list[float] = []

        def newest(screen: str) -> bool:
            if follower.GLANCE_TEXT in screen and not glanced:
                glanced.append(time.perf_counter())
            found = _REQUEST.findall(screen)
            if found:
                totals.append(max(int(total) for _, total in found))
            return bool(found)

        first = pane.wait(newest) - started
        if glanced:  # a big session's newest request from the file's tail, before its first plan (tui/glance.py)
            print(f"start-up to the newest request's context on screen (the file's tail): {glanced[0] - started:.2f} s",
                  flush=True)
        print(f"start-up to the first plan on screen: {first:.2f} s (request {totals[-1]})", flush=True)
        pane.skip()
        at = time.perf_counter()
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(first_request)
        want = totals[-1] + 1
        shown = pane.wait(lambda s: any(int(t) >= want for _, t in _REQUEST.findall(s))) - at
        print(f"one request appended at the first plan -> on screen: {shown * 1000:.0f} ms", flush=True)

        pid = follower._app_pid(server)
        start_size = os.path.getsize(path)
        base = want  # request numbers on screen: base + k for the k-th request written below
        written_at: dict[int, float] = {}
        seen_at: dict[int, float] = {}
        rss: list[tuple[float, int]] = []
        keys: list[tuple[str, float]] = []
        t0 = time.perf_counter()
        next_rss = t0
        next_keys = t0 + args.keys_every
        written = 0
        tail = ""
        offset = os.path.getsize(pane.path)

        def read_pane() -> None:
            nonlocal tail, offset
            with open(pane.path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
            if not data:
                return
            offset += len(data)
            now = time.perf_counter()
            text = tail + follower._ESCAPES.sub("", data.decode("utf-8", "replace"))
            tail = text[-200:]
            for _, total in _REQUEST.findall(text):
                number = int(total)
                for k in range(base + 1, number + 1):
                    seen_at.setdefault(k, now)

        while written < len(requests) or time.perf_counter() - written_at.get(base + written, t0) < 5:
            now = time.perf_counter()
            if written < len(requests) and now >= t0 + written / args.rate:
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(requests[written])
                written += 1
                written_at[base + written] = time.perf_counter()
            if now >= next_rss:
                rss.append((now - t0, follower._rss(pid)))
                next_rss += 10.0
            if written < len(requests) and now >= next_keys:
                next_keys += args.keys_every
                read_pane()
                pane.skip()
                pressed = time.perf_counter()
                _tmux(server, "send-keys", "?")
                keys.append(("? help", pane.wait(lambda s: _HELP_TEXT in s) - pressed))
                _tmux(server, "send-keys", "Escape")
                time.sleep(0.3)
                pane.skip()
                pressed = time.perf_counter()
                _tmux(server, "send-keys", "[")
                keys.append(("[ past request", pane.wait(lambda s: any(int(k) < int(n) for k, n in _REQUEST.findall(s)))
                             - pressed))
                _tmux(server, "send-keys", "f")
                time.sleep(0.3)
                offset = pane.offset
            read_pane()
            if written >= len(requests) and all(k in seen_at for k in written_at):
                break
            time.sleep(0.002)
        rss.append((time.perf_counter() - t0, follower._rss(pid)))
        lags = [seen_at[k] - written_at[k] for k in written_at if k in seen_at]
        # a request several arrivals later can be shown in one frame with it: each still has its own lag
        print(f"requests written {written}, shown {len(lags)}; lag write -> on screen: {_percentiles(lags)}")
        print("RSS: " + ", ".join(f"{t:.0f}s {r / 1e6:.0f} MB" for t, r in rss))
        after_minute = [(t, r) for t, r in rss if t >= 60]
        if len(after_minute) >= 2:
            (t1, r1), (t2, r2) = after_minute[0], after_minute[-1]
            per_1000 = (r2 - r1) / max(1.0, (t2 - t1) * args.rate) * 1000 / 1e6
            print(f"RSS growth after the first minute: {per_1000:.1f} MB per 1000 requests ({r1 / 1e6:.0f} -> {r2 / 1e6:.0f} MB)")
        appended = os.path.getsize(path) - start_size
        print(f"the session grew {appended / 1e6:.1f} MB ({appended / max(1, written) / 1e3:.1f} KB a request); the app's RSS "
              f"{(rss[-1][1] - rss[0][1]) / 1e6:.0f} MB: {(rss[-1][1] - rss[0][1]) / max(1, appended):.2f} x what was appended "
              f"(at the start {rss[0][1] / start_size:.2f} x the session)")
        for name in sorted({n for n, _ in keys}):
            print(f"key {name}: {_percentiles([s for n, s in keys if n == name])}")
        return 0
    finally:
        follower.end_server(server)
        shutil.rmtree(work, ignore_errors=True)  # the session (50 MB by default) and the pane's output


if __name__ == "__main__":
    sys.exit(main())
