"""What the app keeps for each request appended to a followed session (issue 27, "memory stays flat").

The app's planner follows an uncompacted Claude Code chain and, for each appended request, plans it, fills
the timeline and the screen works out its view from the view before, as ``tui/app.py`` does. Python's own
allocations are traced (``tracemalloc``) before and after a run of appends; what is still held afterwards,
per byte appended, is bounded by a factor stated here. The chain is figure 9's (a real session repeated): as
written, each appended request says again what the session said before (the same tool outputs, files read,
reminders); made unique, every text of it is new. Each figure is measured in a process of its own: in a test
worker, what other tests left in the tables the whole process shares (interned strings, caches) decides when
those tables grow, and a growth inside the window was counted as this session's (seen once in a full run).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc

from tokenbox.tui.planner import Planner, PlanRequest
from tokenbox.tui.view import View

from benchmarks.transcripts import write_chain

WARM = 8  # appends before the first count: the caches that fill once (the timeline's points, the engine's)
APPENDS = 40  # 12.4 KB each: about 0.5 MB appended in all, in two windows of 20


def _unique(text: str, serial: int) -> str:
    """The request's lines with every text, thinking, tool output and string tool argument made its own."""
    mark = f" [{serial}]"
    lines = []
    for line in text.splitlines():
        record = json.loads(line)
        message = record.get("message")
        for block in message.get("content") if isinstance(message, dict) and isinstance(message.get("content"), list) else ():
            for key in ("text", "thinking", "content"):
                if isinstance(block.get(key), str):
                    block[key] += mark
            arguments = block.get("input")
            if isinstance(arguments, dict):
                block["input"] = {k: v + mark if isinstance(v, str) else v for k, v in arguments.items()}
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines)


def _kept_per_byte(tmp_path, unique: bool) -> float:
    """Bytes still allocated after ``APPENDS`` appended requests were followed, per byte appended."""
    path = tmp_path / "chain.jsonl"
    texts = write_chain(path, 300_000, seed=15, appended=WARM + APPENDS)
    if unique:
        texts = [_unique(text, serial) for serial, text in enumerate(texts)]
    planner = Planner()
    view: View | None = None

    def follow(seq: int, text: str | None) -> None:
        nonlocal view
        if text is not None:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)
        outcome = planner.run(PlanRequest(path=str(path), reload=True, seq=seq, reason="file"))
        assert outcome.plan is not None, outcome.failure
        view = View.at(outcome.plan, 0, before=view)  # the screen's figures, from the view before
        planner.fill_timeline(outcome)

    # two windows of APPENDS / 2 appends each, and the smaller figure: a table the process shares (the
    # interpreter's interned strings) doubles now and then, and a doubling in a window counts there
    ratios = []
    tracemalloc.start()
    try:
        follow(0, None)
        for seq, text in enumerate(texts[:WARM], 1):
            follow(seq, text)
        half = APPENDS // 2
        for start in (WARM, WARM + half):
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            appended = 0
            for seq, text in enumerate(texts[start:start + half], start + 1):
                follow(seq, text)
                appended += len(text.encode("utf-8"))
            gc.collect()
            assert appended > 200_000
            ratios.append((tracemalloc.get_traced_memory()[0] - before) / appended)
    finally:
        tracemalloc.stop()
    assert len(texts) == WARM + APPENDS
    return min(ratios)


def _kept_in_own_process(tmp_path, unique: bool) -> float:
    """``_kept_per_byte`` worked out by a fresh Python process (the figure does not depend on the tests before)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import pathlib, sys; sys.path.insert(0, sys.argv[1]); "
            "from tests.tui.test_retained_memory import _kept_per_byte; "
            "print(_kept_per_byte(pathlib.Path(sys.argv[2]), sys.argv[3] == 'unique'))")
    done = subprocess.run([sys.executable, "-c", code, root, str(tmp_path), "unique" if unique else "as-written"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


def test_a_request_that_says_again_what_the_session_said_is_kept_without_its_texts_again(tmp_path):
    # a text said again is kept once (``TranscriptReader``'s shared texts): one more such request costs its
    # parts' structure. Before: 2.26 × what was appended; 1.59 ×, then 1.07 × (stop 39's memory3); now 0.93 ×
    # (the smaller of two windows: a block's meta compact, the timeline's points sharing their settings, the
    # calibration's fits in arrays). Bound: 1.0 ×.
    kept = _kept_in_own_process(tmp_path, unique=False)
    assert kept < 1.0, f"{kept:.2f} × what was appended is kept"


def test_a_request_of_new_texts_keeps_its_texts_and_little_more_of_its_words(tmp_path):
    # every text new: the texts are kept (what the app shows), with the parts' structure; the words said in
    # every block (types, roles, tool and model names) are kept once, a node keeps its context itself, the
    # fits share their request numbers. Before: 2.23 × what was appended; 2.07 ×, then 1.60 × (memory3); now
    # 1.47 × (the smaller of two windows). Bound: 1.52 ×.
    kept = _kept_in_own_process(tmp_path, unique=True)
    assert kept < 1.52, f"{kept:.2f} × what was appended is kept"
