"""Unit tests of the pure parts: safe text, view arithmetic, diffs, alerts, planner, watcher."""

from __future__ import annotations

import os
import threading
import time
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tokenbox.core import Engine, load_session
from tokenbox.tui import watcher
from tokenbox.tui.alerts import Watermark, alerts
from tokenbox.tui.planner import Planner, PlanRequest
from tokenbox.tui.safe import plain, safe_line, safe_lines
from tokenbox.tui.view import View, band, describe_changes, gauge_cells, level
from tokenbox.tui.watchbackend import PublicBackend, open_backend
from watchfiles import Change

from tests.tui.helpers import copy_sample, sample_text


@given(st.text())
def test_safe_text_has_no_control_characters(text):
    for line in safe_lines(text):
        assert all(ch.isprintable() for ch in line.plain)
        assert "\x1b" not in line.plain
    assert "\n" not in plain(text) and "\x1b" not in plain(text)


def test_safe_line_escapes_but_keeps_markup_literal():
    line = safe_line("[bold]x[/] \x1b[31m\tend")
    assert line.plain == "[bold]x[/] \\x1b[31m end"  # the tab pads to column 20
    assert [line.plain[s.start : s.end] for s in line.spans] == ["\\x1b"]  # only the escape is styled
    assert not any(getattr(s.style, "bold", False) for s in line.spans)


HOSTILE_CHARS = st.sampled_from(
    [*"ab [/]=@\t", "\x1b", "\x9b", "\x07", "\x08", "\r", "\x7f", "\x00", "\x85", "\u200b", "\ufeff",
     "\u202e", "\u2067", "\u2028", "\u200d", "\ufe0f", "\u0301", "漢", "字", "😀", "👍", "\U0001f3fd"]
)
HOSTILE_TEXT = st.lists(HOSTILE_CHARS, max_size=200).map("".join)


def reference_escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def reference_safe_line(line: str, tabs: bool = True) -> str:
    """The plain text ``safe_line`` (``plain`` without ``tabs``) must give: one character at a time.

    Unprintable characters are escaped, and so are the marks (accents, variation selectors) right
    after an escape, which would otherwise be drawn onto it.
    """
    out, column, after = [], 0, False
    for ch in line:
        if ch == "\t" and tabs:
            piece, after = " " * (4 - column % 4), False
        elif ch.isprintable() and not (after and unicodedata.category(ch) in ("Mn", "Mc", "Me")):
            piece, after = ch, False
        else:
            piece, after = reference_escape(ch), True
        out.append(piece)
        column += len(piece)
    return "".join(out)


@given(HOSTILE_TEXT)
def test_safe_line_matches_the_reference(text):
    line = safe_line(text)
    assert line.plain == reference_safe_line(text)
    assert plain(text) == reference_safe_line(text, tabs=False)  # one line: tabs and newlines escaped too
    for span in line.spans:  # the only spans are the escapes
        assert line.plain[span.start : span.end].startswith("\\")


def test_plain_limits_long_fields():
    assert plain("x" * 10, 4) == "xxxx…"
    assert plain("\x1b" * 10, 2) == "\\x1b\\x1b…"
    assert plain("short", 10) == "short"
    assert len(plain("N" * 1_000_000, 300)) == 301


@given(HOSTILE_TEXT, st.integers(min_value=4, max_value=30))
@example("\x07\U0001f3fd\ufe0f", 4)  # a skin tone after an escape: not glued to its last character, still measured
def test_wrap_folds_without_losing_or_splitting(text, width):
    from rich.cells import cell_len
    from tokenbox.tui.detail import wrap

    line = safe_line(text)
    rows = wrap(line, width)
    assert "".join(row.plain for row in rows) == line.plain  # nothing lost
    escapes = [(s.start, s.end) for s in line.spans]
    starts = [0]
    for row in rows[:-1]:
        starts.append(starts[-1] + len(row.plain))
    for start in starts[1:]:  # an escape is never split (unless it is wider than a whole row)
        assert not any(a < start < b and b - a <= width for a, b in escapes)
    for row in rows:
        assert cell_len(row.plain) <= width


@given(HOSTILE_TEXT, st.integers(min_value=10, max_value=30))
def test_huge_lines_wrap_a_window_at_a_time_like_whole_ones(text, width):
    from tokenbox.tui import detail

    whole = [row.plain for row in detail.wrap(safe_line(text), width)]
    original = detail.WINDOW
    detail.WINDOW = 7  # tiny windows: graphemes, escapes and tabs cross window boundaries
    try:
        windowed = [row.plain for row in detail.iter_wrap(text, width)]
    finally:
        detail.WINDOW = original
    assert windowed == whole


def test_level_and_band():
    assert [level(p) for p in (0, 74, 75, 89, 90, 120)] == ["ok", "ok", "warn", "warn", "crit", "crit"]
    assert [band(p) for p in (None, 10, 75, 90, 100)] == [0, 0, 1, 2, 3]


def _plan(tmp_path, name="facet_layout.yaml", **options):
    return Engine().plan(load_session(copy_sample(name, tmp_path)), **options)


def test_gauge_cells_cover_the_width(tmp_path):
    plan = _plan(tmp_path)
    for step in range(len(plan.steps) + 1):
        for width in (10, 33, 80):
            cells = gauge_cells(View.at(plan, step), width)
            assert len(cells) == width
    untrimmed = gauge_cells(View.at(plan, 0), 40)
    assert ("over", -1) in untrimmed  # 577 tokens > 530 max_ctx
    final = gauge_cells(View.at(plan, len(plan.steps)), 40)
    assert all(kind != "over" for kind, _ in final)
    assert any(kind == "reserve" for kind, _ in final) and any(kind == "headroom" for kind, _ in final)


def test_view_fingerprint_matches_plan(tmp_path):
    plan = _plan(tmp_path)
    last = View.at(plan, len(plan.steps))
    assert last.fingerprint() == plan.fingerprint
    assert View.at(plan, 0).fingerprint() != plan.fingerprint
    assert View.at(plan, 0).percent == 577 * 100 // 530


def test_describe_changes(tmp_path):
    old = _plan(tmp_path)
    edited = tmp_path / "edited.yaml"
    text = sample_text("facet_layout.yaml")
    text = text.replace("2.2.0 feature: Retry-After is honoured when present", "2.2.0 feature: changed")
    text = text.replace("  - id: question\n", "  - id: extra\n    text: more\n  - id: question\n")
    text = text.replace("  max_ctx: 530", "  max_ctx: 600")
    edited.write_text(text)
    new = Engine().plan(load_session(edited))
    described = describe_changes(old, new)
    assert "added extra" in described and "edited changelog" in described and "max_ctx 530 → 600" in described
    assert describe_changes(old, old) == "no change"
    assert describe_changes(None, old) == "first plan"


def test_alerts(tmp_path):
    ok = _plan(tmp_path)  # 50%
    tight = _plan(tmp_path, budget=300)
    over = _plan(tmp_path, "overflow.yaml")
    found, mark = alerts(Watermark(), ok, None)
    assert found == []
    found, mark2 = alerts(mark, over, None)
    titles = [a.title for a in found]
    assert titles == ["budget pressure"]  # the overflow itself is in the status line, not a toast too
    found, _ = alerts(mark2, over, None)
    assert found == []  # nothing new
    found, _ = alerts(mark, None, "x.yaml:1:1: broken (fix it)")
    assert [a.severity for a in found] == ["error"]
    assert tight.usage_percent is not None


def test_alerts_prefix_cache_break(tmp_path):
    plans = Engine().plan_turns(list(__import__("tokenbox.core", fromlist=["load_turns"]).load_turns(
        copy_sample("agent_log.jsonl", tmp_path))))
    turn5 = plans[4]
    assert turn5.prefix_cache == "miss"
    found, _ = alerts(Watermark(), turn5, None)
    assert any(a.title == "prefix cache break" for a in found)
    found, _ = alerts(Watermark(), plans[5], None)
    assert not any(a.title == "prefix cache break" for a in found)


def test_planner_keeps_last_good_turns(tmp_path):
    path = copy_sample("facet_layout.yaml", tmp_path)
    planner = Planner()
    good = planner.run(PlanRequest(str(path)))
    assert good.plan is not None and good.error is None and good.loaded
    path.write_text("tokenbox: [")
    broken = planner.run(PlanRequest(str(path), reload=True))
    assert broken.plan is not None and broken.stale and broken.error_kind == "load"
    what_if = planner.run(PlanRequest(str(path), reload=False, what_if=2))
    assert what_if.plan.budget.max_ctx == 583 and what_if.error is None
    assert what_if.plan.base_max_ctx == 530 and what_if.plan.what_if == 2  # core owns the what-if


@pytest.mark.parametrize("backend", [open_backend, PublicBackend])
def test_watcher_reports_changes(tmp_path, backend):
    """Writes, a delete and another file's write in the folder, on watchfiles' backend and on its public
    ``watch`` (what the follower falls back on if the backend moves)."""
    path = tmp_path / "s.yaml"
    seen: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(target=watcher.follow, args=(str(path), stop, seen.append), kwargs={"backend": backend},
                              daemon=True)
    thread.start()
    try:
        def wait(predicate):
            deadline = time.monotonic() + 20
            while not predicate():
                assert time.monotonic() < deadline, seen
                time.sleep(0.02)

        def written_and_seen() -> bool:
            # the watcher starts in its own time: write until it reports the file (a state, not a delay)
            path.write_text("a")
            return "created" in seen or "modified" in seen

        wait(written_and_seen)
        count = len(seen)
        (tmp_path / "other.yaml").write_text("not ours")
        path.unlink()
        wait(lambda: "deleted" in seen[count:])
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
    assert watcher.describe(None, (1, 2, 3, 4)) == "created"
    assert watcher.describe((1, 2, 3, 4), (1, 3, 3, 4)) == "replaced"


def test_a_followed_folder_reports_a_change_anywhere_below_it(tmp_path):
    """A folder session (an OpenCode storage folder) changes in folders below it: a part written into a message's
    existing folder changes no stat of the folder or of its own entries, and must still be seen."""
    storage = tmp_path / "storage"
    deep = storage / "part" / "msg_001a"
    deep.mkdir(parents=True)
    (storage / "migration").write_text("3")
    seen: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(target=watcher.follow, args=(str(storage), stop, seen.append), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        n = 0
        while not seen:  # the watcher starts in its own time: write until it reports (a state, not a delay)
            assert time.monotonic() < deadline, "a part written deep in the folder was never reported"
            n += 1
            (deep / f"prt_{n:03d}.json").write_text("{}")
            time.sleep(0.3)
    finally:
        stop.set()
        thread.join(5)
    assert seen[0] == "modified"


class ScriptedBackend:
    """A stand-in for watchfiles' backend (``watcher.follow(backend=...)``): each wait records its step and
    returns the next event of a script (a callable giving a set of ``(change, path)`` or ``"timeout"``);
    when the script ends it stops the follower."""

    def __init__(self, stop: threading.Event, script, opened: list[bool] | None = None) -> None:
        self.stop, self.script, self.opened = stop, iter(script), [] if opened is None else opened
        self.steps: list[int] = []

    def __call__(self, places, force_polling, recursive):
        self.opened.append(recursive)
        return self

    def watch(self, debounce_ms, step_ms, timeout_ms, stop_event):
        self.steps.append(step_ms)
        event = next(self.script, None)
        if event is None:
            self.stop.set()  # (a follower still here after the script: the test says what it did)
            return "stop"
        return event()

    def close(self) -> None:
        pass


def quiet_file(path, text: str = "one\n"):
    """``path`` written long before the watch starts (the long step first)."""
    path.write_text(text)
    quiet_since = time.time() - 2 * watcher.ACTIVE_SECONDS
    os.utime(path, (quiet_since, quiet_since))
    return path


def test_a_folder_too_big_to_watch_whole_is_watched_by_its_own_entries(tmp_path):
    """A recursive watch the system refuses (too many folders for its watches) falls back to the folder's own
    entries at once, not to retrying the whole tree (watchfiles' backend is replaced by a stand-in)."""
    asked: list[bool] = []
    stop = threading.Event()

    def backend(places, force_polling, recursive):
        asked.append(recursive)
        if len(asked) >= 3:
            stop.set()  # (a follower that retries the whole tree: the test ends and says so)
        if recursive:
            raise OSError("OS file watch limit reached")
        return ScriptedBackend(stop, [])(places, force_polling, recursive)

    (tmp_path / "storage").mkdir()
    watcher.follow(str(tmp_path / "storage"), stop, lambda what: None, backend=backend)
    assert asked == [True, False]


def test_a_file_being_written_is_watched_at_the_short_step_and_a_quiet_one_at_the_long(tmp_path):
    """The watch step is most of the time from a write to the screen: short while the file is written, long
    (cheap when idle) once it has been quiet for ``ACTIVE_SECONDS``, and the step changes between two waits
    of one watch (a new watch would leave a gap a write can land in). The clock is the test's."""
    path = quiet_file(tmp_path / "s.jsonl")
    now = [1000.0]
    seen: list[str] = []
    stop = threading.Event()
    change = {(int(Change.modified), str(path))}
    other = {(int(Change.modified), str(tmp_path / "other.jsonl"))}

    def append(line: str):
        with path.open("a") as f:
            f.write(line)
        return change

    def quiet_for(seconds: float):
        now[0] += seconds
        return "timeout"

    script = [lambda: "timeout", lambda: append("two\n"),  # quiet, then a write (seen at the long step)
              lambda: append("three\n"),  # being written: the short step
              lambda: other,  # another file of the folder: not a change of ours
              lambda: quiet_for(watcher.ACTIVE_SECONDS / 2),  # quiet for less than ACTIVE_SECONDS: still short
              lambda: quiet_for(watcher.ACTIVE_SECONDS)]  # quiet long enough: the long step again
    backend = ScriptedBackend(stop, script)
    watcher.follow(str(path), stop, seen.append, clock=lambda: now[0], backend=backend)
    short, long = watcher.ACTIVE_STEP_MS, watcher.STEP_MS
    assert backend.steps == [long, long, short, short, short, short, long]
    assert backend.opened == [False]  # one watch, of the file's folder alone
    assert seen == ["modified", "modified"]


def test_a_followed_folder_is_watched_whole_once_through_changes_of_step(tmp_path):
    """A folder session changes in folders below it (an OpenCode storage: a part written into a message's
    folder). Its watch is recursive and set up once: setting it up walks the whole tree holding the
    interpreter (0.4–0.7 s for a storage of 12 000 folders), which the follower once did at every change of
    step, and a write landing in that walk was seen only at the next one."""
    storage = tmp_path / "storage"
    (storage / "part" / "msg_001").mkdir(parents=True)
    quiet_file(storage / "migration")
    quiet_since = time.time() - 2 * watcher.ACTIVE_SECONDS
    for folder in (storage / "part", storage):  # quiet long before the watch starts: the long step first
        os.utime(folder, (quiet_since, quiet_since))
    deep = {(int(Change.added), str(storage / "part" / "msg_001" / "prt_001.json"))}
    seen: list[str] = []
    stop = threading.Event()
    backend = ScriptedBackend(stop, [lambda: deep, lambda: deep, lambda: "timeout"])
    watcher.follow(str(storage), stop, seen.append, backend=backend)
    short, long = watcher.ACTIVE_STEP_MS, watcher.STEP_MS
    assert backend.opened == [True] and backend.steps == [long, short, short, short]
    assert seen == ["modified", "modified"]


def test_a_big_followed_folder_is_watched_once_the_app_says_and_reports_a_change_then(tmp_path):
    """Setting a big folder's recursive watch up holds the interpreter (0.4–0.7 s for an OpenCode storage of
    12 000 folders): it waits for ``folder_opened_after`` (the app: its first plan drawn), then reports a change
    at once (one below the folder meanwhile does not show in its stamp). A small folder is watched at once and
    reports nothing of itself. watchfiles' backend is replaced by a stand-in."""
    def tree(root, folders: int):
        for n in range(folders):
            (root / "part" / f"msg_{n:03d}").mkdir(parents=True)
        return root

    big, small = tree(tmp_path / "big", watcher.SMALL_TREE_FOLDERS), tree(tmp_path / "small", 3)
    assert not watcher.few_folders(str(big)) and watcher.few_folders(str(small))  # "part" and its folders
    for root, expected in ((big, ["modified"]), (small, [])):
        drawn, stop, seen = threading.Event(), threading.Event(), []
        opened_when: list[bool] = []

        def backend(places, force_polling, recursive, drawn=drawn, stop=stop, opened_when=opened_when):
            opened_when.append(drawn.is_set())
            return ScriptedBackend(stop, [])(places, force_polling, recursive)

        thread = threading.Thread(target=watcher.follow, args=(str(root), stop, seen.append),
                                  kwargs={"backend": backend, "folder_opened_after": drawn}, daemon=True)
        thread.start()
        if root is big:
            time.sleep(0.3)  # the follower waits for the app (a follower that did not: opened before it was set)
            drawn.set()
        thread.join(10)
        stop.set()
        assert not thread.is_alive() and seen == expected
        assert opened_when == [root is big]


def test_a_file_written_a_moment_before_the_watch_starts_is_watched_at_the_short_step(tmp_path):
    """An agent at work when the app opens its session: the file's mtime is recent, so the first append is
    seen at the short step like every later one (at the long step it reached the screen 30-60 ms later).
    A file quiet for longer than ``ACTIVE_SECONDS``, or missing, starts at the long step. watchfiles'
    backend is replaced by a stand-in that records the first wait's step and stops the follower."""
    now = time.time()
    ages = {"live.jsonl": 0.0, "paused.jsonl": watcher.ACTIVE_SECONDS / 3, "quiet.jsonl": 2 * watcher.ACTIVE_SECONDS,
            "later.jsonl": -60.0}  # a clock set back after the write: written now
    for name, age in ages.items():
        (tmp_path / name).write_text("one\n")
        os.utime(tmp_path / name, (now - age, now - age))
    steps: dict[str, int] = {}
    for name in [*ages, "missing.jsonl"]:
        stop = threading.Event()
        backend = ScriptedBackend(stop, [])
        watcher.follow(str(tmp_path / name), stop, lambda what: None, backend=backend)
        steps[name] = backend.steps[0]
    short, long = watcher.ACTIVE_STEP_MS, watcher.STEP_MS
    assert steps == {"live.jsonl": short, "paused.jsonl": short, "quiet.jsonl": long, "later.jsonl": short,
                     "missing.jsonl": long}


def test_a_layout_that_fits_has_no_over_cell(tmp_path):
    """Found in a trial: facet under the progressive policy fits, yet small parts (one cell each at
    least) pushed the bar a cell past the available space, drawn as over budget."""
    from tokenbox.core import Engine, load_session

    for name in ("facet_layout.yaml", "overflow.yaml", "passepartout_turn.yaml", "floop_behaviors.yaml"):
        session = load_session(str(copy_sample(name, tmp_path)))
        for trimming in ("tokenbox", "progressive"):
            plan = Engine().plan(session, trimming=trimming)
            for step in range(len(plan.steps) + 1):
                view = View.at(plan, step)
                for width in range(10, 61):
                    kinds = {kind for kind, _ in gauge_cells(view, width)}
                    if view.total <= plan.budget.available:
                        assert "over" not in kinds, (name, trimming, step, width)


def test_trace_numbers_are_never_cut(tmp_path):
    """At any sidebar width a step's numbers show whole (on a row of their own when the step's id and
    lens take the first), and no row is wider than the width unless a number needs it."""
    from tokenbox.core import Engine, load_session
    from tokenbox.tui.trace import trace_lines

    for name in ("facet_layout.yaml", "floop_behaviors.yaml", "passepartout_turn.yaml"):
        plan = Engine().plan(load_session(str(copy_sample(name, tmp_path))), trimming="progressive")
        view = View.at(plan, len(plan.steps))
        for width in range(24, 61, 3):
            lines, _ = trace_lines(view, width=width)
            text = "\n".join(line.plain for line in lines)
            for step in plan.steps:
                assert f"{step.tokens_before}→{step.tokens_after}" in text.replace(" ", ""), (name, width, step.index)


@given(st.lists(st.text(alphabet="ab 0123456789", min_size=1, max_size=12), min_size=1, max_size=8),
       st.integers(min_value=0, max_value=120))
def test_fitted_keeps_whole_fields_within_the_width(fields, width):
    """The top bar's fields: leading ones whole, then "…"; within the width whenever the first field
    and the marker fit; every field when they all fit."""
    from tokenbox.tui.view import fitted

    shown = fitted(fields, width)
    whole = " · ".join(fields)
    if len(whole) <= width or len(fields) == 1:
        assert shown == whole  # a lone first field is the Text's to cut
    else:
        kept = shown.removesuffix(" · …")
        assert kept != shown and kept.split(" · ") == fields[: len(kept.split(" · "))] and len(kept.split(" · ")) < len(fields)
        if len(fields[0]) + len(" · …") <= width:
            assert len(shown) <= width


@given(st.lists(st.text(alphabet="ab 0123456789", min_size=1, max_size=30), min_size=2, max_size=8),
       st.integers(min_value=0, max_value=120), st.integers(min_value=1, max_value=7))
def test_fitted_cuts_only_the_name(fields, width, essential):
    """With a name field, only the name is ever cut (ending in "…"); the others stay whole or go."""
    from tokenbox.tui.view import fitted

    shown = fitted(fields, width, name=1, essential=essential)
    if len(fields[0]) + len(" · …") <= width:
        assert len(shown) <= width
    kept = shown.removesuffix(" · …").split(" · ")
    assert kept[0] == fields[0]
    if len(kept) > 1:
        assert kept[1] == fields[1] or (kept[1].endswith("…") and fields[1].startswith(kept[1][:-1]))
    assert kept[2:] == fields[2 : len(kept)]


def test_fitted_leaves_out_spare_fields_only_for_the_essential_ones():
    """Spare fields go, in the order given, only while a field up to ``essential`` is missing."""
    from tokenbox.tui.view import fitted

    fields = ["tokenbox", "Claude Code", "claude-sonnet-4", "window 200 000", "request 9/10", "cost $1"]
    spare = (3, 2)
    whole = " · ".join(fields)
    assert fitted(fields, len(whole), name=2, essential=4, spare=spare) == whole
    assert fitted(fields, 60, name=2, essential=4, spare=spare) == (
        "tokenbox · Claude Code · claude-sonnet-4 · request 9/10 · …")
    assert fitted(fields, 45, name=2, essential=4, spare=spare) == "tokenbox · Claude Code · request 9/10 · …"
    assert fitted(fields, 30, name=2, essential=4, spare=spare) == "tokenbox · Claude Code · …"  # nothing fits
    # a sub-agent's long thread name: once the spare fields are out, it is cut so that the request shows
    thread = "thread general-purpose: find every caller of the planner"
    fields = ["tokenbox", "Claude Code", "claude-sonnet-4", "window 200 000", thread, "request 9/10", "cost $1"]
    shown = fitted(fields, 80, name=2, essential=5, spare=(3, 2))
    assert shown.startswith("tokenbox · Claude Code · thread general-purpose") and len(shown) <= 80
    assert shown.endswith("… · request 9/10 · …") and thread not in shown
    assert fitted(fields, 100, name=2, essential=5, spare=(3, 2)) == f"tokenbox · Claude Code · {thread} · request 9/10 · …"


def test_wrap_moves_a_wide_character_and_its_zero_width_mark_together():
    """"aaa漢" + U+FE0F is five characters and five cells, but not one cell each: the wide grapheme
    goes to the next row of four (found by the fold property above)."""
    from rich.cells import cell_len
    from tokenbox.tui.detail import wrap

    rows = [row.plain for row in wrap(safe_line("aaa漢\ufe0f"), 4)]
    assert rows == ["aaa", "漢\ufe0f"] and all(cell_len(row) <= 4 for row in rows)


def test_wrap_ends_rows_at_words_with_wide_characters_and_escapes_too():
    """A line holding an emoji, CJK or an escape wraps at words like plain text (it used to fold mid-word
    once it left the plain-ASCII path); a word longer than half a row still folds."""
    from rich.cells import cell_len
    from tokenbox.tui.detail import wrap

    line = safe_line("😀 漢字 \x1b[0m " + "word " * 12)
    rows = [row.plain for row in wrap(line, 20)]
    assert "".join(rows) == line.plain
    assert all(row.endswith(" ") for row in rows[:-1]), rows
    assert all(cell_len(row) <= 20 for row in rows)
    assert [row.plain for row in wrap(safe_line("漢 " + "x" * 30), 10)] == ["漢 xxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxx"]


def test_what_changed_counts_an_agents_requests_and_a_logs_turns(tmp_path):
    """The status line's "what changed" names the position as the top bar does: ``request N/M`` for an
    agent's session (a real Claude Code transcript), ``turn N/M`` for a tokenbox log."""
    from pathlib import Path

    from tokenbox.core import load_turns

    transcript = Path(__file__).parent.parent / "fixtures" / "real_sessions" / "corpus" / "spotter-4d5611e5.jsonl"
    log = copy_sample("agent_log.jsonl", tmp_path)
    for path, word in ((transcript, "request"), (log, "turn")):
        engine = Engine()
        first, second = (engine.plan(t) for t in load_turns(path)[:2])
        assert describe_changes(first, second).startswith(f"{word} 2/"), (path.name, describe_changes(first, second))
