"""The agent-session view, tried as a person would on real sessions: a Claude Code transcript with a
sub-agent and an auto-compaction, a Codex rollout, a transcript whose reader warns.

One app per session drives every state (the view as sent, the threads, a sub-agent, a what-if, the
warnings, keys that do not apply) and takes the snapshots of those states at 80×24, 140×42 and 200×60
(``snapshot``: one SVG per state and size, looked at as PNGs before they were accepted). Expected
figures come from the files themselves and the providers' published prices, computed here, never by
the code under test.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from tokenbox.tui.breakdown import BreakdownView
from tokenbox.tui.gauge import Gauge
from tokenbox.tui.parts import PartColumns
from tokenbox.tui.sections import SectionBars, SectionHeader
from tokenbox.tui.threads import ThreadsScreen
from tokenbox.tui.topbar import TopBar
from tokenbox.tui.warnings import WarningsScreen

from tests.agent_files import context, requests_of, unpack
from tests.tui.helpers import make_app, screen_lines, status_text, wait_for, wait_idle, wait_plan

HERE = Path(__file__).parent
IMPORTERS = HERE.parent / "importers" / "fixtures"
REAL = HERE.parent / "fixtures" / "real_sessions"
SIZES = ((80, 24), (140, 42), (200, 60))
# Anthropic's and OpenAI's published prices (USD per million tokens: input, 5-minute cache write,
# cache read, output, 1-hour cache write), as the pricing pages list them
PAGE_PRICES = {"claude-opus-4-6": (5, 6.25, 0.5, 25, 10), "claude-haiku-4-5": (1, 1.25, 0.1, 5, 2),
               "gpt-5.5": (5, 5, 0.5, 30, 5)}


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory) -> Path:
    """The real session (transcript and sub-agents' files) unpacked into a folder of its own."""
    return unpack(tmp_path_factory.mktemp("session")).parent


def dollars(model: str, usage: dict) -> float:
    """A request's cost at the published prices (a dated model id is priced as its model)."""
    name = model if model in PAGE_PRICES else model.rsplit("-", 1)[0]
    price_in, price_write, price_read, price_out, price_hour = PAGE_PRICES[name]
    hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)  # Claude Code 2.x writes for an hour
    return (usage["input_tokens"] * price_in + (usage.get("cache_creation_input_tokens", 0) - hour) * price_write
            + hour * price_hour + usage.get("cache_read_input_tokens", 0) * price_read
            + usage["output_tokens"] * price_out) / 1e6


def spaced(number: int) -> str:
    return f"{number:,}".replace(",", " ")


def flat(text: str) -> str:
    return " ".join(text.split())


async def settle(pilot) -> None:
    """No plan in flight and the timeline filled: the past requests' estimates come after the plan is drawn
    (newest first, in the plan worker), so a screen taken before the fill ends depends on the machine's load."""
    await wait_idle(pilot)
    app = pilot.app
    await wait_for(pilot, lambda: app.state.outcome is None or app.state.outcome.timeline_complete,
                   what="the timeline filled")
    await pilot.pause()
    await pilot.pause()


async def shots(pilot, snapshot, state: str, sizes=SIZES) -> None:
    """The screen of ``state`` at every size, compared with its accepted SVG; back to 140×42 after."""
    for width, height in sizes:
        await pilot.resize_terminal(width, height)
        await settle(pilot)
        assert snapshot(name=f"{state}-{width}x{height}") == pilot.app.export_screenshot(title=pilot.app.title,
                                                                                         simplify=True)
    await pilot.resize_terminal(140, 42)
    await settle(pilot)


async def test_a_transcript_with_a_sub_agent_and_a_compaction(session_dir, snapshot):
    """What fills the context, how long until it compacts, what the sub-agent and the request cost: on one
    screen or one key away."""
    snapshot = snapshot.use_extension(SVGImageExtension)
    transcript = session_dir / "8463c716.jsonl"
    main = requests_of(transcript)
    sub = requests_of(session_dir / "8463c716" / "subagents" / "agent-a7be2f0.jsonl")
    compaction = requests_of(session_dir / "8463c716" / "subagents" / "agent-acompact-f46190.jsonl")
    app = make_app(transcript, watch=False)
    async with app.run_test(size=(140, 42), notifications=True) as pilot:
        await wait_plan(pilot)
        await settle(pilot)
        state = app.state
        assert state.agent and not state.trimming_shown and state.shown_step == 0
        # the header: agent, model, window, thread, request, cost
        top = app.query_one(TopBar).last_text.plain
        newest = main[-1][1]
        for field in ("Claude Code", "claude-opus-4-6", "window 200 000", "thread main", "request 73/73",
                      f"cost ${dollars(*main[-1]):.3f}"):
            assert field in top, field
        assert app.plan.cost.usd == pytest.approx(dollars(*main[-1]), abs=1e-9)
        assert app.plan.tokens_after == context(newest) == 44_993
        # the gauge: Claude Code's threshold (window - 20 000 reply reserve - 13 000 margin), the room
        # before it, and the forecast at the growth since the compaction (two requests: 42 603 → 44 993)
        gauge = flat(app.query_one(Gauge).last_text.plain)
        threshold = 200_000 - 20_000 - 13_000
        growth = context(main[-1][1]) - context(main[-2][1])
        assert f"compacts at ┃ {spaced(threshold)} (83%)" in gauge
        assert f"room {spaced(threshold - 44_993)} before it" in gauge
        assert f"forecast ≈{(threshold - 44_993) // growth} requests to go" in gauge
        session = sum(dollars(*r) for r in main + sub + compaction)
        assert f"session ${session:,.2f} (3 threads)" in gauge
        # the categories add up to the recorded context; the window's rest is free space and the buffer
        def panel() -> str:
            return flat("\n".join(app.query_one(BreakdownView).plain_lines()))

        # the label goes on below at the panel's width (its rows are made again once the layout gives the
        # width, which under load can come a frame after the plan is drawn)
        await wait_for(pilot, lambda: f"auto-compact {spaced(200_000 - threshold)} 16.5% buffer" in panel(),
                       what="the breakdown at the panel's width")
        panel = panel()
        assert f"in use {spaced(44_993)} 22.5%" in panel and f"free space {spaced(threshold - 44_993)} 61.0%" in panel
        # the ledger: the compaction's line, its trigger and figures (the file's preTokens, the first
        # recorded request after it)
        before = next(json.loads(line) for line in transcript.read_text().splitlines()
                      if '"compact_boundary"' in line)["compactMetadata"]["preTokens"]
        after = context(main[71][1])
        assert "#1 auto · line 714, after request 71" in panel
        assert f"{spaced(before)} → {spaced(after)} −{spaced(before - after)}" in panel
        # the parts: what each is, in words a person uses, with its share
        rows = app.query_one(SectionBars).plain_lines()
        words = [row.lstrip(" ◀▌").split() for row in rows]
        # the compaction's summary is a part of its own (it was sent: issue 26), not in the hidden part
        assert words[0][:2] == ["hidden", "part"] and "90.4%" in rows[0]
        assert any("compaction summary" in row for row in rows)
        assert any(w[:3] == ["tool", "call", "assistant"] and "→ Bash(" in row for w, row in zip(words, rows, strict=True))
        assert "part" in app.query_one(SectionHeader).last_text.plain
        await shots(pilot, snapshot, "transcript")

        # key a: every thread with its requests, context and cost; the sub-agent chosen is shown
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        listed = flat("\n".join(screen_lines(app)))
        peak = max(context(u) for _, u in main)
        assert f"▶ main 73 req {spaced(44_993)} {spaced(peak)}" in listed
        assert f"agent-a7be2f0 13 req {spaced(context(sub[-1][1]))}" in listed
        assert f"${sum(dollars(*r) for r in sub):.3f}" in listed
        assert "agent-acompact-f46190 (compaction) 1 req" in listed
        assert snapshot(name="threads-140x42") == app.export_screenshot(title=app.title, simplify=True)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.plan.thread == "agent-a7be2f0", what="the sub-agent's thread")
        await settle(pilot)
        assert app.state.thread == "agent-a7be2f0" and app.turn_count == 13
        assert app.plan.tokens_after == context(sub[-1][1])
        assert "thread agent-a7be2f0" in app.query_one(TopBar).last_text.plain
        assert app.plan.cost.usd == pytest.approx(dollars(*sub[-1]), abs=1e-9)
        await shots(pilot, snapshot, "sub-agent")
        await pilot.press("a", "home", "enter")  # the main thread again
        await wait_for(pilot, lambda: app.plan.thread == "main", what="the main thread")
        assert app.state.thread is None and app.turn_count == 73

        # a what-if packs the request: the trim columns, steps and policy come with it, then go
        await pilot.press("minus")
        await wait_for(pilot, lambda: app.plan.what_if == -1, what="what-if -5%")
        await settle(pilot)
        assert app.state.trimming_shown and "what-if step" in app.query_one(TopBar).last_text.plain
        assert "after" in app.query_one(SectionHeader).last_text.plain
        await pilot.press("p")
        await wait_for(pilot, lambda: app.plan.trimming == "tokenbox", what="the policy switched")
        await pilot.press("0")
        await wait_for(pilot, lambda: app.plan.what_if == 0, what="back to the window")
        await settle(pilot)
        assert not app.state.trimming_shown and "after" not in app.query_one(SectionHeader).last_text.plain


async def test_a_codex_rollout(tmp_path, snapshot, monkeypatch):
    """Another agent: its window recorded in the rollout, its cost at OpenAI's prices, no compaction rule
    claimed for it; the palette's Screenshot without a Downloads folder."""
    snapshot = snapshot.use_extension(SVGImageExtension)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/Downloads there
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    path = tmp_path / "rollout.jsonl"
    shutil.copyfile(IMPORTERS / "codex_rollout_v0.135_exec.jsonl", path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_plan(pilot)
        await settle(pilot)
        top = app.query_one(TopBar).last_text.plain
        assert "Codex CLI · gpt-5.5 · window 258 400" in top
        usage = {"input_tokens": 22539 - 20864, "cache_read_input_tokens": 20864, "output_tokens": 10}  # input counts the cached
        assert app.plan.cost.usd == pytest.approx(dollars("gpt-5.5", usage), abs=1e-9)
        assert f"cost ${dollars('gpt-5.5', usage):.3f}" in top
        gauge = flat(app.query_one(Gauge).last_text.plain)
        assert "compaction rule not known" in gauge and "compacts at" not in gauge
        panel = flat("\n".join(app.query_one(BreakdownView).plain_lines()))
        assert "tool definitions ≈22 452 8.7% and message framing (not in the rollout)" in panel  # the reader's words
        assert "auto-compact buffer" not in panel and f"in use {spaced(22_539)}" in panel
        await shots(pilot, snapshot, "codex")
        app.deliver_screenshot("shot.svg")  # what the palette's Screenshot does
        saved = tmp_path / "state" / "tokenbox" / "screenshots" / "shot.svg"
        # Textual writes the file from a thread: wait for it whole, not merely created
        await wait_for(pilot, lambda: saved.exists() and saved.read_text(encoding="utf-8").rstrip().endswith("</svg>"),
                       what="the screenshot saved whole")
        assert saved.read_text(encoding="utf-8").startswith("<svg")


async def test_warnings_a_compaction_and_keys_that_do_not_apply(tmp_path, snapshot):
    """A transcript whose reader warns: the status line points at ``w``, which shows every warning whole;
    its compaction is in the ledger with the summary's size; keys that do not apply say why."""
    snapshot = snapshot.use_extension(SVGImageExtension)
    path = tmp_path / "compacted.jsonl"
    shutil.copyfile(REAL / "claude-code_fixture_compact-after-rewind.jsonl", path)
    app = make_app(path, watch=False)
    async with app.run_test(size=(140, 42), notifications=True) as pilot:
        await wait_plan(pilot)
        await settle(pilot)
        warning = app.plan.warnings[0]
        # and the residual of request 5 against its prediction (placeholder usage), warned too (issue 26)
        assert "⚠ 2 warnings (w): the visible parts are estimated at" in status_text(app)
        assert "against what the requests before it predicted" in app.plan.warnings[1]
        status_row = screen_lines(app)[-2].rstrip()
        assert status_row.endswith("…") and flat(warning) not in flat(status_row)  # cut at the terminal's edge
        panel = flat("\n".join(app.query_one(BreakdownView).plain_lines()))
        assert "#1 auto · line 9, after request 4" in panel and "150 000 → 10" in panel
        assert "summary ≈9" in panel  # the compaction summary line is in the file
        await shots(pilot, snapshot, "compaction")
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, WarningsScreen)
        shown = app.screen.query_one("#warnings-text").content.plain
        assert f"1. {warning}" in shown  # whole (wrapped on screen)
        await shots(pilot, snapshot, "warnings")
        await pilot.press("escape")
        assert not isinstance(app.screen, WarningsScreen)
        for key, words in (("v", "a what-if budget packs it"), ("left", "a what-if budget packs it")):
            await pilot.press(key)
            await pilot.pause()
            assert words in flat(" ".join(screen_lines(app))), key


async def test_keys_that_do_not_apply_to_a_tokenbox_session_say_why(tmp_path):
    from tests.tui.helpers import copy_sample

    app = make_app(copy_sample("facet_layout.yaml", tmp_path), watch=False)
    async with app.run_test(size=(140, 42), notifications=True) as pilot:
        await wait_plan(pilot)
        assert not app.state.agent and app.state.trimming_shown  # a layout keeps today's view
        assert "step" in app.query_one(TopBar).last_text.plain and "id" in app.query_one(SectionHeader).last_text.plain
        for key, words in (("left_square_bracket", "one turn only"), ("a", "this is a tokenbox session")):
            await pilot.press(key)
            await pilot.pause()
            assert words in flat(" ".join(screen_lines(app))), key


def test_part_columns_give_the_label_the_room_and_keep_numbers_whole():
    narrow, wide = PartColumns.fit(None, 60, False), PartColumns.fit(None, 200, False)
    assert wide.label > narrow.label and wide.bar > 0
    assert PartColumns.fit(None, 200, True).label < wide.label  # the what-if columns take their room


def test_part_colours_never_read_as_a_state():
    """No section or part is painted in the theme's success, warning or error colours (a red bar would
    read as an error): every such rule in the stylesheet names another colour."""
    import re

    from tokenbox import tui

    css = (Path(tui.__file__).parent / "app.tcss").read_text(encoding="utf-8")
    rules = re.findall(r"\.((?:bar|part)--[a-z0-9-]+)\s*\{([^}]*)\}", css)
    assert len(rules) == 9 + 12  # every section colour and every category's
    assert [name for name, body in rules if re.search(r"\$(?:text-)?(?:success|warning|error)", body)] == []


async def test_the_threads_panel_fits_an_80_column_terminal():
    """At 80 columns a compaction's long thread name is cut (keeping its word), so no row of the threads
    panel wraps: each thread is one row with its numbers (a real transcript and its compaction's file)."""
    from textual.widgets import OptionList

    path = REAL / "corpus" / "spotter-4d5611e5.jsonl"
    name = next(p.stem for p in (path.parent / "spotter-4d5611e5" / "subagents").glob("agent-acompact-*.jsonl"))
    app = make_app(path, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_plan(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ThreadsScreen), what="the threads panel")
        await pilot.pause()
        listed = app.screen.query_one(OptionList)
        rows = [listed.get_option_at_index(i).prompt for i in range(listed.option_count)]
        inner = listed.scrollable_content_region.width
        assert len(rows) == 2 and all(row.cell_len <= inner for row in rows), ([r.cell_len for r in rows], inner)
        compaction = rows[1].plain
        assert "(compaction)" in compaction and "…" in compaction and name not in compaction
        assert " 1 req " in compaction
        lines = screen_lines(app)
        assert sum(bool(re.search(r"\d req +[\d–]", line)) for line in lines) == 2  # one screen row per thread


@pytest.mark.parametrize(("fixture", "key", "screen"), [
    ("claude-code_fixture_compact-after-rewind.jsonl", "w", WarningsScreen),
    ("corpus/spotter-4d5611e5.jsonl", "a", ThreadsScreen),
])
async def test_the_warnings_and_threads_panels_open_without_laying_out_the_screen_behind(fixture, key, screen):
    """Keys ``w`` and ``a`` open their panel over the screen as it is: the screen behind is not laid out again
    (Textual did, for the pushed screen's first ``Resize`` at the size everything already had: the whole
    inspector laid out and drawn again before the panel showed). Counted by the screen's public
    ``screen_layout_refresh_signal``; a real resize while the panel is open still lays the screen out."""
    app = make_app(REAL / fixture, watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_plan(pilot)
        await wait_idle(pilot)
        main = app.screen
        layouts: list[object] = []
        main.screen_layout_refresh_signal.subscribe(main, layouts.append)
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, screen), what="the panel")
        await pilot.pause()
        assert layouts == []
        await pilot.resize_terminal(90, 28)
        await pilot.pause()
        assert layouts  # the seam holds back a Resize to the same size only
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and main.size == (90, 28)
