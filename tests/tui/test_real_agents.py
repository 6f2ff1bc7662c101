"""The inspector on what real agents write: Claude Code transcripts (followed live, found with
``--claude``) and an Anthropic Messages request.

Covers the timeline of recorded and estimated context per turn, the breakdown by category and
per tool (numbers add up, approximations marked ``≈``), trimming at a what-if budget, the
"waiting for the first reply" state, a transcript growing line by line, transcript discovery under
a fake ``~/.claude`` and the switch to a new session. Fixtures: ``tests/fixtures/real_sessions``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from textual.notifications import Notify
from tokenbox.core import Engine, load_turns
from tokenbox.core.analysis.breakdown import category_totals, load_turn_usages, tool_totals
from tokenbox.tui import app as app_module
from tokenbox.tui.breakdown import BreakdownView, breakdown
from tokenbox.tui.claude import (
    Discovery,
    DiscoveryError,
    SessionWatch,
    config_dir,
    discover,
    project_folder_name,
)
from tokenbox.tui.claude_app import ClaudeApp
from tokenbox.tui.messages import FileChanged
from tokenbox.tui.trace import TraceView
from tokenbox.tui.usage import UsageTimeline

from tests.tui.helpers import SIZE, detail_text, make_app, screen_lines, status_text, wait_for, wait_idle, wait_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real_sessions"
SHORT = "claude-code_ccviewer_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"  # 29 lines, 7 turns
LONG = "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"  # 53 lines, 20 turns, sidechains
REQUEST = "anthropic_messages_request_claude-code-1.0.6.json"


def copy_fixture(name: str, directory: Path, as_name: str | None = None) -> Path:
    target = directory / (as_name or name)
    shutil.copyfile(FIXTURES / name, target)
    return target


def fixture_lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines(keepends=True)


def breakdown_text(app) -> str:
    return "\n".join(app.query_one(BreakdownView).plain_lines())


def usage_text(app) -> str:
    return app.query_one(UsageTimeline).last_text.plain


def assert_adds_up(app) -> None:
    """Categories + joins == total, at the shown step and (at the last step) per core's totals."""
    view = app.current_view()
    numbers = breakdown(view)
    assert sum(g.tokens for g in numbers.groups) + numbers.joins == numbers.total == view.total
    if view.step == view.last_step:
        assert numbers.total == app.plan.tokens_after
        core = {t.key: t.tokens_after for t in category_totals(app.plan)}
        assert {g.key: g.tokens for g in numbers.groups} == core


async def reload(pilot) -> None:
    """Reload the file now (what a file event leads to, without the event throttle) and wait until shown."""
    app = pilot.app
    app.request_plan("file modified", reload=True)
    for _ in range(3000):  # short pauses: this runs once per line of a growing transcript
        if not app.busy:
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError("the reload was never shown")


def request_turns(lines: list[str]) -> int:
    """Assistant requests (distinct message ids) among complete transcript lines."""
    ids = []
    for line in lines:
        if not line.endswith("\n"):
            continue
        record = json.loads(line)
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, dict) and message.get("model") != "<synthetic>":
            if message["id"] not in ids:
                ids.append(message["id"])
    return len(ids)


# ---------------------------------------------------------------- transcripts


def hidden_part(session) -> int:
    """The part of a turn its transcript does not hold, as core sizes it (the ``inferred`` section)."""
    plan = Engine().plan(session)
    return sum(r.tokens_after for r in plan.sections if r.kind == "inferred")


async def categories_and_timeline_are_core_s(pilot, name: str) -> None:
    """The timeline holds core's recorded context of every request and the part the file shows; the
    categories panel (the sidebar of an agent's session) adds up to the recorded context, marks its
    calibrated counts ``≈`` and completes the window with the free space and Claude Code's buffer."""
    app = pilot.app
    usages = load_turn_usages(FIXTURES / name)
    turns = load_turns(FIXTURES / name)
    plan = app.plan
    assert plan.session.turn == len(usages) == app.turn_count
    assert [p.recorded for p in app.timeline] == [u.recorded.context_tokens for u in usages]
    assert [p.tokens_before for p in app.timeline] == [u.estimated for u in usages]
    assert [p.sidechain for p in app.timeline] == [u.sidechain for u in usages]
    assert app.query_one(UsageTimeline).display and not app.query_one("#timeline").display
    timeline = usage_text(app)
    last = usages[-1]
    recorded = last.recorded.context_tokens
    visible = last.estimated - hidden_part(turns[-1])
    assert f"Requests {last.turn}/{last.turn}" in timeline
    rec_row = next(line for line in timeline.splitlines() if line.startswith("rec "))
    file_row = next(line for line in timeline.splitlines() if line.startswith("file "))
    assert rec_row.endswith(spaced(recorded))
    assert file_row.endswith("≈" + spaced(visible))
    assert f"in the file ≈{spaced(visible)} ({round(100 * visible / recorded)}%)" in timeline
    assert f"not in it   ≈{spaced(recorded - visible)}" in timeline
    assert "○" not in timeline  # the main thread: no sub-agent's request among its turns
    assert app.query_one(BreakdownView).display and not app.query_one(TraceView).display
    assert_adds_up(app)
    text = breakdown_text(app)
    for label in ("messages", "tool calls", "tool results", "in use", "free space", "auto-compact buffer", "window"):
        assert label in text, label
    rows = [line for line in text.splitlines() if line.startswith("■ ")]
    assert rows and all("≈" in row for row in rows[:-2])  # calibrated counts (free space and buffer aside)
    threshold = 200_000 - 20_000 - 13_000  # Claude Code's rule for a 200k window (CONTRACT §9)
    assert f"in use {spaced(recorded)}" in " ".join(text.split())
    assert f"free space {spaced(threshold - recorded)}" in " ".join(text.split())
    assert f"auto-compact buffer {spaced(200_000 - threshold)}" in " ".join(text.split())


def spaced(number: int) -> str:
    return f"{number:,}".replace(",", " ")


async def v_explains_the_trace_is_for_a_what_if(pilot) -> None:
    """An agent's request is shown as sent: ``v`` (the trim trace) says it applies under a what-if budget."""
    app = pilot.app
    assert app.query_one(BreakdownView).display
    await pilot.press("v")
    await pilot.pause()
    assert app.query_one(BreakdownView).display and not app.query_one(TraceView).display
    assert "a what-if budget packs it" in " ".join(" ".join(screen_lines(app)).split())  # the toast says why


async def sidebar_never_cuts_a_number(pilot) -> None:
    """At every sidebar width (narrow from 100 columns, normal, wide) the gauge, usage timeline and
    breakdown of a real transcript keep every count whole: names take the ellipsis, numbers never.
    From the first frame at each size: wide to narrow at once too (the gauge and the breakdown kept
    the wide sidebar's rows, cut, until the next plan)."""
    import re

    app = pilot.app
    for width in (100, 110, 119, 120, 140, 180, 100):
        await pilot.resize_terminal(width, 44)
        await pilot.pause()
        sidebar = app.query_one("#sidebar").region
        lines = [line[sidebar.x : sidebar.right] for line in screen_lines(app)[sidebar.y : sidebar.bottom]]
        text = "\n".join(lines)
        assert "200 000" in text and "17 437" in text, (width, text)
        cut = [line for line in lines if re.search(r"[0-9][0-9 ]*…", line)]  # a count cut short
        assert not cut, (width, text)
    await pilot.resize_terminal(*SIZE)
    await pilot.pause()


async def turn_keys_move_timeline_and_categories(pilot) -> None:
    app = pilot.app
    await pilot.press("left_square_bracket", "left_square_bracket")
    await wait_for(pilot, lambda: app.plan.session.turn == 5, what="turn 5")
    await wait_idle(pilot)
    assert "Requests 5/7 pinned" in usage_text(app)
    assert "Context by category · request 5" in app.query_one("#breakdown-title").last_text.plain
    assert "16 962" in breakdown_text(app)  # request 5's recorded context
    assert_adds_up(app)


async def test_short_transcript(tmp_path):
    """On one app of the short transcript, in turn: the timeline and categories, ``v``, every sidebar width,
    the turn keys."""
    app = make_app(copy_fixture(SHORT, tmp_path, "transcript.jsonl"), watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_plan(pilot)
        await categories_and_timeline_are_core_s(pilot, SHORT)
        await v_explains_the_trace_is_for_a_what_if(pilot)
        await sidebar_never_cuts_a_number(pilot)
        await turn_keys_move_timeline_and_categories(pilot)


async def test_long_transcript_with_sub_agents(tmp_path):
    app = make_app(copy_fixture(LONG, tmp_path, "transcript.jsonl"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await categories_and_timeline_are_core_s(pilot, LONG)


async def test_narrow_top_bar_keeps_the_request_shown(tmp_path):
    """At 80×24 (no sidebar, so the top bar is the one place naming the request) the top bar still says
    which request is shown after ``[``: the window, then the model, give way to it."""
    app = make_app(copy_fixture(LONG, tmp_path, "transcript.jsonl"), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        top = lambda: screen_lines(app)[0]  # noqa: E731
        assert "request 10/10 (following)" in top() and "Claude Code" in top()
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: "request 9/10 (pinned)" in top(), what="request 9/10 on the top bar")
        assert top().startswith(" tokenbox · context ") and len(top().rstrip()) <= 80
        await pilot.resize_terminal(200, 24)  # room for every field: nothing gives way
        await wait_for(pilot, lambda: "window" in top(), what="a wide top bar")
        assert "claude-sonnet-4-20250514 · window 200 000 · thread main · request 9/10 (pinned)" in top()


async def test_what_if_on_a_transcript(tmp_path):
    app = make_app(copy_fixture(SHORT, tmp_path, "transcript.jsonl"), watch=False, budget=17000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.ok and app.plan.steps  # the recorded 17437 tokens do not fit 17000
        first = next(s for s in app.plan.sections if s.id == app.plan.steps[0].section)
        assert first.section.meta["category"] == "history" and first.section.meta["message"] == 0  # oldest first
        assert_adds_up(app)
        assert "untrimmed ✂" in breakdown_text(app) and "messages ✂" in breakdown_text(app)
        title = lambda: str(app.query_one("#detail-title").render())  # noqa: E731
        assert title() == f"Detail — hidden part after step {len(app.plan.steps)}"  # as the table names it
        await pilot.press("home")
        assert_adds_up(app)  # at step 0 too
        await pilot.press("end", "minus")
        await wait_for(pilot, lambda: app.plan.budget.max_ctx == 16150, what="what-if -5%")
        await wait_idle(pilot)
        assert_adds_up(app)


async def test_native_session_breakdown_by_kind(tmp_path):
    from tests.tui.helpers import copy_sample

    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.query_one(TraceView).display and not app.query_one(BreakdownView).display
        assert not app.query_one(UsageTimeline).display
        await pilot.press("v")
        assert app.query_one(BreakdownView).display
        assert "by section kind" in breakdown_text(app)
        view = app.current_view()
        assert {g.key for g in breakdown(view).groups} == {s.kind for s in app.plan.sections}
        numbers = breakdown(view)
        assert sum(g.tokens for g in numbers.groups) + numbers.joins == numbers.total == app.plan.tokens_after


def test_usage_text_units():
    from tokenbox.tui.planner import TurnPoint
    from tokenbox.tui.usage import usage_text as render

    points = (
        TurnPoint(1, 1, 100, 100, "none", True, 1000, hidden=40),
        TurnPoint(2, 1, 50, 50, "none", True, 400, sidechain=True, hidden=10),
        TurnPoint(3, 1, 200, 200, "none", True, None),  # no usage recorded (e.g. an API error)
        TurnPoint(4, 1, 1300, 1300, "none", True, 1300, hidden=1000),
    )
    rows = render(points, 4, True, 37, "≈").plain.splitlines()
    assert rows[0] == "Requests 4/4 following newest"
    assert rows[1].startswith("rec  ") and rows[1].endswith(" 1 300") and len(rows[1]) <= 37
    assert rows[2].startswith("file ") and rows[2].endswith("≈300")  # 1 300 recorded, 1 000 of it not in the file
    assert rows[3].rstrip().endswith("▲") and "○" in rows[3]  # the sub-agent's request
    assert rows[4] == "in the file ≈300 (23%)"
    assert rows[5] == "not in it   ≈1 000"
    assert rows[6] == "▲ shown  ○ sub-agent  [ ] requests"
    assert render(points, 3, False, 37, "").plain.splitlines()[4] == "no usage recorded for this request"
    assert "pinned" in render(points, 3, False, 37, "").plain
    assert render((*points[:3], TurnPoint(4, 1, 1500, 1500, "none", True, None)), 4, True, 37, "≈",
                  pending=True).plain.splitlines()[4] == "not sent yet: predicted ≈1 500"
    assert rows[1][5:17] == "▆▆▆▁▁▁   ███"  # 3 cells a request, scaled 400..1300; request 3 recorded nothing
    assert rows[2][5:17] == "▁▁▁▁▁▁▅▅▅███"  # 60, 40, 200, 300 in the file, scaled 40..300
    assert render((), 1, True, 37, "").plain == ""


def test_share_and_cells():
    from rich.text import Text
    from tokenbox.tui.breakdown import cells, share

    assert share(1, 3) == "33.3%" and share(0, 0) == "-"
    t = Text()
    cells(t, "a-very-long-tool-name", 8)
    cells(t, "≈12", 6, right=True)
    assert t.plain == "a-very-…   ≈12"
    assert all(not span_text.startswith(" ") or not span_text.strip() for span_text in
               (t.plain[s.start:s.end] for s in t.spans))


# ---------------------------------------------------------------- the Anthropic request


async def test_request_shows_per_tool_costs(tmp_path):
    """A request body holds its tool definitions: the categories panel lists each tool's cost, costliest
    first (names whole, over two rows when long), and where its cache prefix ends."""
    app = make_app(copy_fixture(REQUEST, tmp_path, "request.json"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert not app.query_one(UsageTimeline).display  # one request: no turns, no recorded usage
        assert_adds_up(app)
        text = breakdown_text(app)
        for label in ("tool definitions", "system prompt", "messages", "tool results", "in use", "window"):
            assert label in text, label
        assert "Tool definitions by cost (17)" in text
        tools = tool_totals(app.plan)
        assert len(tools) == 17
        rows = text.splitlines()
        start = rows.index("Tool definitions by cost (17)")
        listed = [row[2:].split()[0] for row in rows[start + 1 :] if row.startswith("■ ")]
        expected = [t.key for t in sorted(tools, key=lambda t: -t.tokens_after)]
        assert len(listed) == len(expected)
        for shown, name in zip(listed, expected, strict=True):  # costliest first (a long name goes on below)
            assert name.startswith(shown)
        bash = next(t for t in tools if t.key == "Bash")
        assert any(row[2:].split()[:1] == ["Bash"] and "≈" + spaced(bash.tokens_after) in row for row in rows)
        numbers = breakdown(app.current_view())
        assert sum(t.tokens for t in numbers.tools) == next(g.tokens for g in numbers.groups if g.key == "tool")
        # the whole request is the cached prefix: its text, the API's tool prompt and the calls' framing (≈)
        assert "cache prefix (4 marks)" in " ".join(text.split()).replace("(4 ≈15 873 7.9% marks)", "(4 marks)")


async def test_request_at_budget_20000_compresses_tool_results_first(tmp_path):
    app = make_app(copy_fixture(REQUEST, tmp_path, "request.json"), watch=False, budget=19500, reserve_out=4000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        plan = app.plan
        assert plan.ok and plan.budget.available == 15500 and plan.tokens_after <= 15500
        first = plan.steps[0]
        section = next(s.section for s in plan.sections if s.id == first.section)
        assert first.op == "lens" and section.meta["category"] == "tool_result"
        assert_adds_up(app)
        assert "✂" in next(row for row in breakdown_text(app).splitlines() if "tool results" in row)
        await pilot.press("v")
        trace = "\n".join(app.query_one(TraceView).plain_lines())
        assert "1 m04.result.LS head_lines:10" in trace
        await pilot.press("home", "right")
        assert app.step == 1
        assert_adds_up(app)


async def test_request_budget_below_its_reply_reserve_is_explained(tmp_path):
    app = make_app(copy_fixture(REQUEST, tmp_path, "request.json"), watch=False, budget=20000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.settings_error is not None, what="the budget error")
        await wait_idle(pilot)
        assert "reserve_out" in status_text(app) and "✗" in status_text(app)
        assert "Traceback" not in detail_text(app)


# ---------------------------------------------------------------- following a transcript


async def test_an_empty_transcript_waits_then_the_pending_request_shows_then_the_recorded_one(tmp_path):
    """An empty transcript waits for a line; with two user lines and no reply the request about to be
    sent shows (CONTRACT §7; its hidden part Claude Code's typical one, ≈); the reply's lines make it the recorded one."""
    lines = fixture_lines(SHORT)
    path = tmp_path / "transcript.jsonl"
    path.write_text("", encoding="utf-8")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.outcome is not None, what="the first outcome")
        await wait_idle(pilot)
        assert "waiting for the first complete line" in detail_text(app)
        assert "✗" not in status_text(app)
        path.write_text("".join(lines[:2]), encoding="utf-8")  # two user lines, no reply yet
        app.post_message(FileChanged("modified"))  # as the watcher reports it
        await wait_for(pilot, lambda: app.plan is not None, what="the pending request")
        assert app.plan.pending and app.file_error is None and app.plan.ok  # a new session: never an overflow
        assert any("typical hidden part" in w for w in app.plan.warnings)  # Claude Code's typical one (≈), said so
        assert "✗" not in status_text(app)
        with path.open("a", encoding="utf-8") as handle:
            handle.writelines(lines[2:4])  # the reply's two lines: the request is recorded
        app.post_message(FileChanged("modified"))
        await wait_for(pilot, lambda: app.plan is not None and not app.plan.pending, what="the first recorded request")
        assert app.plan.session.turn == 1 and app.plan.tokens_after == 15553  # its recorded context


async def test_new_claude_session_waits_for_the_first_message(tmp_path):
    """A new Claude Code session starts with file-history snapshots (real: the spotter fixture's first two
    lines): a transcript still without a message, which is a state to wait in, not an error."""
    corpus = Path(__file__).parents[1] / "fixtures" / "real_sessions" / "corpus" / "spotter-4d5611e5.jsonl"
    first = corpus.read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    assert all('"type":"file-history-snapshot"' in line for line in first)
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(first), encoding="utf-8")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.outcome is not None, what="the first outcome")
        await wait_idle(pilot)
        assert app.waiting and app.plan is None
        assert "waiting for the agent's first message" in detail_text(app)
        assert "waiting for the agent's first message" in status_text(app)
        assert "✗" not in status_text(app)


async def test_transcript_growing_line_by_line(tmp_path):
    lines = fixture_lines(SHORT)
    path = tmp_path / "transcript.jsonl"
    path.write_text("", encoding="utf-8")
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.outcome is not None, what="the first outcome")
        written: list[str] = []
        for number, line in enumerate(lines):
            half = len(line) // 2 if number % 3 == 0 else 0  # every third line arrives in two writes
            for piece in filter(None, (line[:half], line[half:])):  # a half-written line waits until complete
                written.append(piece)
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(piece)
                await reload(pilot)
                complete = "".join(written)
                shown = "\n".join([detail_text(app), status_text(app), breakdown_text(app), usage_text(app)])
                assert "Traceback" not in shown and "internal error" not in shown
                if not complete.endswith("\n") or not complete.strip():
                    continue
                turns = len(load_turns(path))  # requests, and the pending one (CONTRACT §7)
                assert app.file_error is None, app.file_error
                assert app.turn_count == turns and app.plan.session.turn == turns
                assert app.plan.pending == load_turns(path)[-1].pending
                assert len(app.timeline) == turns
                if turns > 1:
                    assert f"Requests {turns}/{turns} following" in usage_text(app)
                assert_adds_up(app)
        assert app.turn_count == 7
        assert [p.recorded for p in app.timeline] == [u.recorded.context_tokens for u in load_turn_usages(path)]


async def test_transcript_followed_by_the_real_watcher(tmp_path):
    lines = fixture_lines(LONG)
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(lines[:3]), encoding="utf-8")
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        done = 3
        for end in (20, 40, len(lines)):
            with path.open("a", encoding="utf-8") as handle:
                handle.writelines(lines[done:end])
            done = end
            expected = len(load_turns(path))
            await wait_for(pilot, lambda n=expected: app.turn_count == n and app.plan.session.turn == n,
                           what=f"{expected} turns")
        assert app.turn_count == 10 and app.file_error is None  # the main thread's requests
        assert "Requests 10/10" in usage_text(app)


# ---------------------------------------------------------------- --claude discovery


def make_transcript(folder: Path, name: str, mtime: int, source: str = SHORT) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(FIXTURES / source, path)
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def claude_home(tmp_path, monkeypatch):
    """A fake home with ~/.claude/projects holding two projects; the cwd is the first project."""
    home = tmp_path / "home"
    project = tmp_path / "work" / "my.project"
    project.mkdir(parents=True)
    other = tmp_path / "elsewhere"
    projects = home / ".claude" / "projects"
    own = projects / project_folder_name(str(project))
    make_transcript(own, "old-session.jsonl", 1_000_000)
    make_transcript(own, "new-session.jsonl", 2_000_000)
    make_transcript(own, "agent-1234.jsonl", 3_000_000)  # a sub-agent transcript: never followed
    make_transcript(own / "new-session" / "subagents", "agent-5678.jsonl", 3_000_000)
    make_transcript(projects / project_folder_name(str(other)), "other-session.jsonl", 2_500_000, LONG)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.chdir(project)
    return {"home": home, "projects": projects, "own": own, "project": project, "other": other}


def test_project_folder_name():
    assert project_folder_name("/work/main") == "-work-main"
    assert project_folder_name("/home/me/my.project_v2") == "-home-me-my-project-v2"
    assert project_folder_name("/tmp/日本") == "-tmp---"


def test_config_dir_honours_claude_config_dir(tmp_path):
    assert config_dir({"HOME": "/h"}) == os.path.join("/h", ".claude")
    assert config_dir({"HOME": "/h", "CLAUDE_CONFIG_DIR": str(tmp_path)}) == str(tmp_path)
    assert config_dir({"HOME": "/h", "CLAUDE_CONFIG_DIR": ""}) == os.path.join("/h", ".claude")


def test_discover_the_newest_transcript_of_the_project(claude_home):
    found = discover()
    assert found.path == str(claude_home["own"] / "new-session.jsonl")
    assert not found.fallback and found.note == ""
    explicit = discover(str(claude_home["other"]), fallback=False)
    assert explicit.path.endswith("other-session.jsonl")
    by_folder = discover(str(claude_home["own"]), fallback=False)  # a transcript folder itself
    assert by_folder.path == found.path


def test_a_project_without_a_session_says_so_and_falls_back_only_when_asked(claude_home, monkeypatch, tmp_path):
    elsewhere = tmp_path / "no-sessions-here"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(DiscoveryError, match=r"no Claude Code transcripts for .*\(.*\)$") as info:
        discover()  # --claude: never another project's session by itself
    other = claude_home["projects"] / project_folder_name(str(claude_home["other"])) / "other-session.jsonl"
    assert str(elsewhere) in str(info.value) and f"another project is {other}" in str(info.value)
    found = discover(fallback=True)
    assert found.fallback and found.path.endswith("other-session.jsonl")  # the newest of any project
    assert found.note == "fallback: newest session of any project (" + project_folder_name(str(claude_home["other"])) + ")"
    assert str(elsewhere) in found.explanation and found.path in found.explanation


def test_claude_project_takes_a_folder_of_transcripts_anywhere(claude_home, tmp_path):
    copied = tmp_path / "copied-transcripts"
    make_transcript(copied, "a.jsonl", 1_000_000)
    newest = make_transcript(copied, "b.jsonl", 2_000_000, LONG)
    found = discover(str(copied))
    assert found.path == str(newest) and found.folder == str(copied)
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "data.jsonl").write_text('{"x": 1}\n')  # a folder of other JSON lines is a project
    with pytest.raises(DiscoveryError, match="no Claude Code transcripts for"):
        discover(str(tmp_path / "repo"))


def test_discover_with_claude_config_dir(claude_home, monkeypatch, tmp_path):
    config = tmp_path / "config"
    make_transcript(config / "projects" / project_folder_name(str(claude_home["project"])), "cfg.jsonl", 5)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert discover().path == str(config / "projects" / project_folder_name(str(claude_home["project"])) / "cfg.jsonl")


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        ("nothing", "no Claude Code folder at"),
        ("no-projects", "no Claude Code projects in"),
        ("empty-projects", "no Claude Code transcripts for"),
    ],
)
def test_discover_errors(tmp_path, monkeypatch, setup, needle):
    home = tmp_path / "home"
    home.mkdir()
    if setup != "nothing":
        (home / ".claude").mkdir()
    if setup == "empty-projects":
        (home / ".claude" / "projects" / "-x").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    with pytest.raises(DiscoveryError) as info:
        discover()
    message = str(info.value)
    assert needle in message and "\n" not in message and message.endswith(")")


def test_session_watch_switches_only_to_new_sessions(claude_home):
    watch = SessionWatch(discover())
    assert watch.check() is None
    old = claude_home["own"] / "old-session.jsonl"
    os.utime(old, (4_000_000, 4_000_000))  # an older session written to again: not a new session
    assert watch.check() is None
    make_transcript(claude_home["own"], "agent-9.jsonl", 6_000_000)  # sub-agents never count
    assert watch.check() is None
    newer = make_transcript(claude_home["own"], "brand-new.jsonl", 5_000_000)
    found = watch.check()
    assert found is not None and found.path == str(newer)
    assert watch.check() is None


def test_session_watch_leaves_the_fallback_for_the_project(claude_home, monkeypatch, tmp_path):
    elsewhere = tmp_path / "later-project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    watch = SessionWatch(discover(fallback=True), fallback=True)
    assert watch.current.fallback
    own = make_transcript(claude_home["projects"] / project_folder_name(str(elsewhere)), "first.jsonl", 10)
    found = watch.check()  # older than the fallback, but it is the project's own session
    assert found is not None and found.path == str(own) and not found.fallback


# ---------------------------------------------------------------- the command line


def test_cli_claude_opens_the_discovered_transcript(claude_home, monkeypatch):
    seen = {}

    def fake_run(self):
        seen.update(cls=type(self).__name__, path=self.path, reserve=self.state.reserve_out, note=self._note())

    monkeypatch.setattr(app_module.TokenboxApp, "run", fake_run)
    assert app_module.main(["--claude", "--reserve-out", "100"]) == 0
    assert seen == {"cls": "ClaudeApp", "path": str(claude_home["own"] / "new-session.jsonl"), "reserve": 100, "note": ""}
    assert app_module.main(["--claude-project", str(claude_home["other"])]) == 0
    assert seen["path"].endswith("other-session.jsonl")


def test_cli_claude_in_a_project_without_sessions_says_so(claude_home, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(app_module.TokenboxApp, "run", lambda self: pytest.fail("no app should start"))
    monkeypatch.chdir(tmp_path)
    assert app_module.main(["--claude"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenbox: error: no Claude Code transcripts for ") and err.count("\n") == 1
    assert "other-session.jsonl" in err  # where a session is, named: not followed


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--claude"], "no Claude Code folder at"),
        (["--claude-project", "/nowhere"], "no Claude Code folder at"),
        (["x.jsonl", "--claude"], "exclude each other"),
        (["--reserve-out", "-1"], "--reserve-out"),
    ],
)
def test_cli_claude_errors_are_one_line(tmp_path, monkeypatch, capsys, args, needle):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert app_module.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenbox: error: ") and err.count("\n") == 1 and needle in err
    assert err.rstrip().endswith(")") and "Traceback" not in err


# ---------------------------------------------------------------- ClaudeApp


async def test_claude_app_switches_to_a_new_session(claude_home):
    found = discover()
    app = ClaudeApp(found, frozen=True, toast_seconds=3600, poll_seconds=0.05)
    told: list[str] = []
    hook = lambda message: told.append(message.notification.message) if isinstance(message, Notify) else None  # noqa: E731
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await wait_plan(pilot)
        assert app.turn_count == 7 and app.display_name == "new-session.jsonl"
        lines = fixture_lines(LONG)
        newer = claude_home["own"] / "next-session.jsonl"
        newer.write_text("".join(lines[:1]), encoding="utf-8")  # the new session's first prompt
        await wait_for(pilot, lambda: app.path == str(newer), what="the switch")
        await wait_for(pilot, lambda: app.outcome is not None and app.outcome.request.path == str(newer),
                       what="the new session's first outcome")
        await wait_plan(pilot)
        assert app.plan.pending  # the new session's first request, about to be sent
        assert any("next-session.jsonl" in text for text in told)  # toasted (a later alert may replace it)
        with newer.open("a", encoding="utf-8") as handle:
            handle.writelines(lines[1:])
        await wait_for(pilot, lambda: app.turn_count == 10, what="the new session's main-thread turns")
        assert app.plan.session.path == str(newer) and app.file_error is None


async def test_claude_app_says_when_it_falls_back(claude_home, monkeypatch, tmp_path):
    elsewhere = tmp_path / "fresh-project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    found = discover(fallback=True)
    app = ClaudeApp(found, fallback=True, frozen=True, toast_seconds=3600, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert "fallback: newest session of any project" in status_text(app)
        assert any(str(elsewhere) in n.message for n in app._notifications)
        assert app.turn_count == 10  # the main thread's requests


def test_discovery_note_names_the_other_project(tmp_path):
    d = Discovery(str(tmp_path / "projects" / "-other" / "s.jsonl"), "/mine", str(tmp_path / "projects" / "-mine"), True)
    assert d.note == "fallback: newest session of any project (-other)" and "/mine" in d.explanation
    assert Discovery("/p/-mine/s.jsonl", "/mine", "/p/-mine").note == ""


# ---------------------------------------------------------------- snapshots (look at the PNGs before accepting)


def test_snapshot_transcript_newest_turn(snap_compare, tmp_path):
    app = make_app(copy_fixture(SHORT, tmp_path, "transcript.jsonl"), watch=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_plan)


def test_snapshot_anthropic_request(snap_compare, tmp_path):
    app = make_app(copy_fixture(REQUEST, tmp_path, "request.json"), watch=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_plan)


def test_snapshot_anthropic_request_trimmed(snap_compare, tmp_path):
    app = make_app(copy_fixture(REQUEST, tmp_path, "request.json"), watch=False, budget=19000, reserve_out=4000)

    async def run_before(pilot):
        await wait_plan(pilot)
        await pilot.press("v")  # the trim trace in the sidebar
        await pilot.press(*["down"] * 20)  # m00.user (after the tools and the API's tool prompt), truncated
        await wait_idle(pilot)
        assert pilot.app.plan.sections[pilot.app.selected].id == "m00.user"

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_picking_a_thread_announces_no_threshold(tmp_path):
    """Picking a sub-agent thread at 86 % (``a``, ↓, Enter) moves the view, not the usage: no "crossed
    75%" toast; neither does coming back to the main thread say "back to"."""
    from textual.notifications import Notify

    from tests.tui.helpers import Recorder

    corpus = FIXTURES / "corpus"
    shutil.copyfile(corpus / "spotter-4d5611e5.jsonl", tmp_path / "spotter-4d5611e5.jsonl")
    shutil.copytree(corpus / "spotter-4d5611e5", tmp_path / "spotter-4d5611e5")
    record = Recorder()
    app = make_app(tmp_path / "spotter-4d5611e5.jsonl", watch=False)
    async with app.run_test(size=SIZE, message_hook=record) as pilot:
        await wait_plan(pilot)
        await pilot.press("a", "down", "enter")
        await wait_for(pilot, lambda: "agent-acompact" in screen_lines(app)[0], what="the sub-agent shown")
        await wait_idle(pilot)
        assert app.plan.window_percent >= 75  # the thread's recorded 173 514 of 200 000
        await pilot.press("a", "up", "enter")
        await wait_for(pilot, lambda: "agent-acompact" not in screen_lines(app)[0], what="the main thread shown")
        await wait_idle(pilot)
        toasts = [m.notification.message for m in record.of(Notify)]
        assert not [t for t in toasts if "crossed" in t or "back to" in t], toasts
