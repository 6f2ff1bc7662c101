"""An agent's session where its figures are unusual, tried as a person would: a window neither the file nor
the model table gives, a million-token window, a compaction before the first request the file records, a
pending request on the board, the turn keys of a session that is not a ``.jsonl`` log; and the words that
explain a screen: the what-if note of the status line, the timelines' marks in the help.

Expected figures are read from the files here (SQLite, JSON), never from the code under test.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

from tokenbox.tui.board.app import BoardApp
from tokenbox.tui.breakdown import BreakdownView
from tokenbox.tui.help import HelpScreen, help_plain
from tokenbox.tui.topbar import TopBar

from tests.tui.board_home import CLAUDE, claude_folder, clock, environ, touch
from tests.tui.helpers import (
    copy_sample,
    gauge_text,
    make_app,
    screen_lines,
    status_text,
    wait_for,
    wait_idle,
    wait_plan,
)

HERE = Path(__file__).parent
IMPORTERS = HERE.parent / "importers" / "fixtures"
SIZE = (140, 42)


def spaced(number: int) -> str:
    return f"{number:,}".replace(",", " ")


def panel(app) -> str:
    """The sidebar's context by category and compactions, its rows joined by single spaces."""
    return " ".join(" ".join(app.query_one(BreakdownView).plain_lines()).split())


async def test_a_window_nobody_records_is_said_unknown_not_taken_from_the_context():
    """An OpenCode session of a model the table does not know: its window is unknown (CONTRACT §11), and the
    plan's budget is only the recorded context raised to. The top bar said ``window 18 427``, the categories
    ``in use … 100.0%``, ``free space 0`` and ``window 18 427``, the gauge ``free 0 of the window``."""
    path = IMPORTERS / "opencode_issuepit-901.db"
    with sqlite3.connect(path) as db:
        tokens = [json.loads(data).get("tokens") for (data,) in db.execute("select data from message")]
    last = [t for t in tokens if t][-1]
    context = last["input"] + last["cache"]["read"] + last["cache"]["write"]
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        top = app.query_one(TopBar).last_text.plain
        assert "window unknown" in top and f"window {spaced(context)}" not in top, top
        gauge = gauge_text(app)
        assert f"{spaced(context)} / window unknown" in gauge and "free" not in gauge, gauge
        text = panel(app)
        assert f"in use {spaced(context)} window unknown" in text, text
        assert "free space" not in text and "%" not in text, text


async def test_a_million_token_window_keeps_its_shares_whole():
    """A Gemini CLI chat (window 1 048 576): its seven-digit counts were wider than the count column, so the
    share beside them was cut (``1 044 193  99.…``, ``1 048 576 100.…``) at every width."""
    path = IMPORTERS / "gemini_chat_session.json"
    chat = json.loads(path.read_text(encoding="utf-8"))
    used = [m for m in chat["messages"] if m.get("tokens")][-1]["tokens"]["input"]
    window = 1_048_576  # Gemini 2.5's published context window
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        free = window - used
        screen = " ".join(" ".join(screen_lines(app)).split())  # as drawn: a row wider than its panel is cut
        assert f"free space {spaced(free)} {100 * free / window:.1f}%" in screen, screen
        assert f"window {spaced(window)} 100.0%" in screen, screen


async def test_a_narrow_sidebar_keeps_every_share_whole():
    """A Copilot CLI session (window 1 050 000) whose newest request is pending: ``≈1 032 456`` free. At 80
    columns, with the sidebar shown (``s``) at its narrowest and scrolling, every category row keeps its share
    whole (a count wider than the column takes its room from its own label, not from every row's share)."""
    path = IMPORTERS / "copilot_home" / "session-state" / "381474ec-066a-4e9b-8a13-14b602e419dd" / "events.jsonl"
    app = make_app(path, watch=False)
    async with app.run_test(size=(80, 42)) as pilot:
        await wait_plan(pilot)
        await pilot.press("s")
        await wait_idle(pilot)
        panel_view = app.query_one(BreakdownView)
        rows: list[str] = []
        for scroll in (panel_view.scroll_home, panel_view.scroll_end):  # the panel scrolls: both its ends
            scroll(animate=False)
            await pilot.pause()
            sidebar = [line.split("▕")[0].rstrip("▁▂▃▄▅▆▇█ ") for line in screen_lines(app)]
            rows += [line for line in sidebar if re.match(r" (■|  (in use|window)) ", line)]
        assert all(re.search(r" ≈?\d[\d ]* +\d+\.\d%$", row) for row in rows), rows
        assert any("≈1 0" in row for row in rows) and any("in use" in row for row in rows), rows


async def test_a_compaction_before_the_first_recorded_request_is_not_after_request_0():
    """A Codex rollout whose history was compacted before any request recorded its usage: the ledger said
    ``after request 0``, ``? → 2 000`` and ``replaced 0 requests' history`` of a history the file shows."""
    path = IMPORTERS / "codex_rollout_v0.77_compacted.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    line = next(n for n, value in enumerate(lines, start=1) if value["type"] == "compacted")
    counts = [v["payload"]["info"] for v in lines if v["type"] == "event_msg" and v["payload"].get("type") == "token_count"]
    after = counts[0]["last_token_usage"]["input_tokens"]  # the first request recorded after it
    assert line < next(n for n, v in enumerate(lines, start=1) if v["type"] == "event_msg")  # before any request
    app = make_app(path, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        text = panel(app)
        assert f"#1 compaction · line {line}, before request 1" in text, text
        assert f"not recorded → {spaced(after)}" in text and "replaced the history before it;" in text, text
        assert "request 0" not in text and "0 requests" not in text and "? →" not in text, text


async def test_the_board_marks_the_room_left_by_a_prediction(tmp_path):
    """A Claude Code session whose newest request is pending (a prompt after the last reply): its context is a
    prediction (``≈``), and so is the room before compaction worked out from it; the board wrote that room
    as if it had been recorded (the inspector's gauge says ``room ≈… before it``)."""
    home = tmp_path / "home"
    path = claude_folder(home, "/home/dev/src/pending") / "0b4f1a77.jsonl"
    text = CLAUDE.read_text(encoding="utf-8").replace("/path/to/Demo", "/home/dev/src/pending")
    last = json.loads(text.splitlines()[-1])
    prompt = {"parentUuid": last["uuid"], "isSidechain": False, "userType": "external", "cwd": "/home/dev/src/pending",
              "sessionId": last.get("sessionId"), "version": last.get("version"), "type": "user",
              "uuid": "00000000-0000-0000-0000-00000000beef", "timestamp": "2026-01-02T09:59:00.000Z",
              "message": {"role": "user", "content": "and now the tests, please"}}
    path.write_text(text + json.dumps(prompt) + "\n", encoding="utf-8")
    touch(path, 5)
    app = BoardApp(environ=environ(home), clock=clock, frozen=True, toast_seconds=3600, watch=False, tick=None)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.board.listed and not app.board.busy, what="every row read")
        await pilot.pause()
        row = next(line for line in screen_lines(app) if " pending " in line)
        # the context, then the room (after the gauge, whose last cell is the auto-compact mark)
        assert re.search(r" ≈\d[\d.]*k +\d+% .*┊ +≈\d[\d.]*k ", row), row


async def test_the_turn_keys_move_through_a_session_that_is_not_a_jsonl_log(tmp_path):
    """A Cline task (``api_conversation_history.json``): ``[`` shows its previous request, and the help says
    the keys move through a log's turns, an agent's requests, not only those of a ``.jsonl`` log."""
    folder = tmp_path / "1769053680585"
    shutil.copytree(IMPORTERS / "cline_task_1769053680585_first-6-requests", folder)
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    requests = sum(m.get("say") == "api_req_started" for m in ui)
    app = make_app(folder / "api_conversation_history.json", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        assert app.plan.session.turn == requests
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: app.plan.session.turn == requests - 1, what="the previous request")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        await pilot.pause()
        rows = {m[1]: m[2] for line in screen_lines(app) if (m := re.search(r"│ +(\S+) +(.*?) *│", line))}
        for key in ("[", "]", "f"):
            assert ".jsonl" not in rows[key] and "request" in rows[key], rows


async def test_the_what_if_note_says_what_0_does(tmp_path):
    """After ``-`` the status line said ``what-if -5% (0 resets)``, read as a count of resets: it names the key's
    effect, as the help does."""
    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_plan(pilot)
        await pilot.press("minus")
        await wait_for(pilot, lambda: "what-if" in status_text(app), what="the what-if note")
        status = status_text(app)
        assert "what-if -5% (0: the file's budget)" in status and "resets" not in status, status


def test_the_help_explains_every_mark_of_the_timelines():
    """The timelines mark the turn shown (▲), a cache break (×), a turn that cannot be planned (!) and a
    sub-agent's request (○); the help explained none of them."""
    text = " ".join(help_plain(width=200).split())
    timeline = text[text.index("Timeline "):]
    for mark, meaning in (("▲", "shown"), ("×", "cache break"), ("!", "cannot be planned"), ("○", "sub-agent")):
        assert f"{mark} " in timeline and meaning in timeline[timeline.index(f"{mark} "):][:80], mark
