"""``benchmarks.print_follower``, figure 9's terminal floor: it counts a transcript's main-thread requests and
prints the count again after each append (run as the benchmark runs it, its output read from a pipe)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _line(kind: str, message_id: str, sidechain: bool = False) -> str:
    record = {"type": kind, "isSidechain": sidechain, "uuid": f"u-{kind}-{message_id}-{sidechain}",
              "message": {"id": message_id, "role": kind, "content": [{"type": "text", "text": "hi"}]}}
    return json.dumps(record) + "\n"


def _read_until(process: subprocess.Popen, wanted: str, seconds: float = 10.0) -> str:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"never printed {wanted!r}; printed {seen!r}"
        if not select.select([process.stdout], [], [], left)[0]:
            continue
        chunk = os.read(process.stdout.fileno(), 4096)
        assert chunk, f"exited before printing {wanted!r}; printed {seen!r}"
        seen += chunk
    return seen.decode()


def test_counts_main_thread_requests_and_reprints_after_an_append(tmp_path):
    path = tmp_path / "session.jsonl"
    # one request written as two lines of the same message id, a user line, a sub-agent's request
    path.write_text(_line("user", "m0") + _line("assistant", "a1") + _line("assistant", "a1")
                    + _line("assistant", "s1", sidechain=True))
    env = {**os.environ, "PYTHONPATH": ROOT}
    with subprocess.Popen([sys.executable, "-m", "benchmarks.print_follower", str(path)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE) as process:
        try:
            first = _read_until(process, "request 1/1")
            assert "\x1b[2K" in first  # the line is erased before each count: an old longer count never shows
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(_line("user", "m1") + _line("assistant", "a2"))
                handle.write(json.dumps({"type": "assistant", "message": {"id": "a3"}})[:20])  # not complete yet
            _read_until(process, "request 2/2")
        finally:
            process.terminate()
            process.wait(timeout=10)
