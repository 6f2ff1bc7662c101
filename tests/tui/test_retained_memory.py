"""What the app keeps for each request appended to a followed session (issue 27, "memory stays flat").

The app's planner follows an uncompacted Claude Code chain and, for each appended request, plans it, fills
the timeline and the screen works out its view from the view before and reads the newest parts' results (the
parts table's rows), as ``tui/app.py`` does. Python's own
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
CHAIN = 300_000  # the chain's size (bytes) before the appends
ROWS = 30  # the parts the screen reads each request's result of (the parts table's rows, following the newest)


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


def _kept_per_byte(tmp_path, unique: bool, size: int = CHAIN) -> float:
    """Bytes still allocated after ``APPENDS`` appended requests were followed, per byte appended, on a chain
    of ``size`` bytes. Traced from the chain's load: traced from the appends only, a table the load made that
    first grows inside a window counted whole (its old block was not traced), more the longer the chain."""
    path = tmp_path / f"chain-{size}.jsonl"
    texts = write_chain(path, size, seed=15, appended=WARM + APPENDS)
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
        results = outcome.plan.sections
        for index in range(max(0, len(results) - ROWS), len(results)):  # the parts table's rows, the newest last
            assert results[index].section is not None
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


def _kept_in_own_process(tmp_path, unique: bool, size: int = CHAIN) -> float:
    """``_kept_per_byte`` worked out by a fresh Python process (the figure does not depend on the tests before)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import pathlib, sys; sys.path.insert(0, sys.argv[1]); "
            "from tests.tui.test_retained_memory import _kept_per_byte; "
            "print(_kept_per_byte(pathlib.Path(sys.argv[2]), sys.argv[3] == 'unique', int(sys.argv[4])))")
    done = subprocess.run([sys.executable, "-c", code, root, str(tmp_path), "unique" if unique else "as-written", str(size)],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


def test_a_request_that_says_again_what_the_session_said_is_kept_without_its_texts_again(tmp_path):
    # a text said again is kept once (``TranscriptReader``'s shared texts): one more such request costs its
    # parts' structure. Before: 2.26 × what was appended; 1.59 ×, then 1.07 × (stop 39's memory3); now 0.93 ×
    # (the smaller of two windows: a block's meta compact, the timeline's points sharing their settings, the
    # calibration's fits in arrays). With the parts table's reads of the newest parts' results (stop 41): 1.08 ×,
    # an earlier reply's parts made again equal once the next prompt stripped its thinking (their results kept
    # the old ones for good); now 0.97 ×, each message's sections the same objects stripped or not. Bound: 1.0 ×.
    kept = _kept_in_own_process(tmp_path, unique=False)
    assert kept < 1.0, f"{kept:.2f} × what was appended is kept"


def test_a_request_of_new_texts_keeps_its_texts_and_little_more_of_its_words(tmp_path):
    # every text new: the texts are kept (what the app shows), with the parts' structure; the words said in
    # every block (types, roles, tool and model names) are kept once, a node keeps its context itself, the
    # fits share their request numbers. Before: 2.23 × what was appended; 2.07 ×, then 1.60 × (memory3); now
    # 1.47 × (the smaller of two windows). With the parts table's reads of the newest parts' results (stop 41):
    # 1.62 ×, an earlier reply's parts made again equal (their results kept the old ones); now 1.50 ×. Bound:
    # 1.55 × (1.52 × before the reads: what the screen reads of the newest parts is kept, 0.03 ×).
    kept = _kept_in_own_process(tmp_path, unique=True)
    assert kept < 1.55, f"{kept:.2f} × what was appended is kept"


def test_what_a_request_keeps_does_not_grow_with_the_session_it_is_appended_to(tmp_path):
    # issue 27: memory bounded by the session, not by its history. One more request keeps what it adds (its
    # parts' structure: this chain's texts were said before) whatever the length of the chain it is appended to;
    # a request that kept something of the whole session (a plan per timeline point, a list of the chain's
    # sections per turn) would keep ten times more of it on a chain ten times as long. Measured (stop 41): 0.97 ×
    # what was appended on 60 KB, 1.01 × on 600 KB; each timeline point keeping its plan: 2.05 ×, 2.30 × (seen
    # failing so; 2.06 ×, 2.70 × on 100 KB and 1 MB, 0.5 s more). Slack 0.15 ×: tables first grown inside both
    # windows, the longer chain's bigger (0.04 × here, 0.06 × on 1 MB).
    small = _kept_in_own_process(tmp_path, unique=False, size=60_000)
    big = _kept_in_own_process(tmp_path, unique=False, size=600_000)
    assert big < small + 0.15, f"{small:.2f} × what was appended is kept on a 60 KB chain, {big:.2f} × on 600 KB"
