"""A big session's newest request on screen at once, from the file's tail, while the whole file is read.

The expected figures are worked out here from the file's own lines (the newest main-thread assistant
line's usage: input + cache creation + cache read, CONTRACT §7), never by the code under test; the
app's planner is held back (``GatedPlanner``) so the state before the first plan can be looked at.
"""

from __future__ import annotations

import io
import json
import threading
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from textual.worker import get_current_worker
from tokenbox.core.commands.cli import main as tokenbox_main
from tokenbox.core.commands.statusline import run as statusline
from tokenbox.tui.glance import GLANCE_FROM_BYTES, glance
from tokenbox.tui.messages import GlanceComputed
from tokenbox.tui.planner import Planner

from benchmarks.transcripts import Transcript, main_requests_of
from tests.tui.helpers import Recorder, gauge_text, make_app, status_text, wait_for, wait_plan

SIZE = (120, 40)


def newest_main_context(path: Path) -> int:
    """The context the newest main-thread request recorded, read from the lines themselves."""
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message")
        if record.get("isSidechain") or not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if usage:
            found = usage["input_tokens"] + usage.get("cache_creation_input_tokens", 0) + usage.get(
                "cache_read_input_tokens", 0)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> tuple[Path, list[str]]:
    """An uncompacted Claude Code chain just above the glance's size, and requests to append to it."""
    path = tmp_path_factory.mktemp("glance") / "session.jsonl"
    transcript = Transcript(compact=False, seed=21).grow_to(GLANCE_FROM_BYTES + 200_000)
    list(main_requests_of(transcript, 1))
    transcript.write(str(path))
    return path, list(main_requests_of(transcript, 3))


def copy_of(chain: tuple[Path, list[str]], tmp_path: Path) -> Path:
    target = tmp_path / "session.jsonl"
    target.write_bytes(chain[0].read_bytes())
    return target


def test_the_glance_is_the_newest_main_requests_recorded_context(chain, tmp_path):
    path = copy_of(chain, tmp_path)
    found = glance(str(path), {})
    assert found is not None and found.source_format == "claude-code"
    expected = newest_main_context(path)
    assert found.figures.tokens == expected
    out = io.StringIO()
    with redirect_stdout(out):
        assert tokenbox_main(["plan", str(path), "--json"]) == 0
    assert json.loads(out.getvalue())["tokens"]["after"] == expected  # the plan that follows says the same
    assert found.size == path.stat().st_size


def test_a_tail_of_sub_agent_lines_still_shows_the_main_thread(chain, tmp_path):
    # older Claude Code wrote a sub-agent's lines into the main file: its last 300 KB can all be a sub-agent's
    path = copy_of(chain, tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    sidechain = [line for line in lines if json.loads(line).get("isSidechain")]
    assert sidechain
    tail = []
    while sum(map(len, tail)) < 300_000:
        tail.extend(sidechain)
    expected = newest_main_context(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(tail)
    assert newest_main_context(path) == expected
    found = glance(str(path), {})
    assert found is not None and found.figures.tokens == expected
    # the status line reads the same tail (its own 256 KB first)
    status = io.StringIO(json.dumps({"transcript_path": str(path), "model": {"id": "claude-sonnet-4-20250514"}}))
    out = io.StringIO()
    assert statusline(["--format", "{thread} {pct}", "--no-color"], status, out, {}) == 0
    assert out.getvalue().split() == ["main", str(100 * expected // 200_000)]  # the model's window: 200 000


def test_small_and_unknown_files_are_not_glanced(chain, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(chain[0].read_text(encoding="utf-8").splitlines(keepends=True)[:400]), encoding="utf-8")
    assert small.stat().st_size < GLANCE_FROM_BYTES
    assert glance(str(small), {}) is None  # its first plan is as quick as a glance
    other = tmp_path / "other.jsonl"
    other.write_text('{"x": 1}\n' * (GLANCE_FROM_BYTES // 9 + 1), encoding="utf-8")
    assert glance(str(other), {}) is None
    assert glance(str(tmp_path / "missing.jsonl"), {}) is None


class GatedPlanner(Planner):
    """A planner whose runs wait until the test opens the gate: the state before the first plan stays."""

    gate = threading.Event()

    def run(self, request):
        worker = get_current_worker()  # the app's plan worker: an app that ends cancels it (no plan then)
        while not self.gate.wait(0.05) and not worker.is_cancelled:
            pass
        return super().run(request)


async def test_the_newest_request_shows_before_the_plan_and_follows_writes(chain, tmp_path):
    path = copy_of(chain, tmp_path)
    expected = newest_main_context(path)
    gate = GatedPlanner.gate
    gate.clear()
    recorder = Recorder()
    app = make_app(path, planner_factory=GatedPlanner)
    try:
        async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
            await wait_for(pilot, lambda: app.state.glance is not None, what="the glance")
            await pilot.pause()
            assert app.plan is None
            assert app.state.glance.figures.tokens == expected
            shown = gauge_text(app)
            assert "recorded" in shown and f"{expected:,}".replace(",", " ") in shown
            assert "newest request" in app.query_one("TopBar").last_text.plain
            assert "reading the whole session" in status_text(app)
            # an agent's next request, written while the file is still read: its figure replaces the first
            with path.open("a", encoding="utf-8") as handle:
                handle.write(chain[1][0])
            newer = newest_main_context(path)
            assert newer != expected
            await wait_for(pilot, lambda: app.state.glance is not None and app.state.glance.figures.tokens == newer,
                           what="the appended request's glance")
            gate.set()
            await wait_plan(pilot)
            assert app.state.glance is None and app.plan.tokens_after >= 0
            assert app.plan.recorded.context_tokens == newer
            assert "newest request" not in app.query_one("TopBar").last_text.plain
            assert recorder.count(GlanceComputed) >= 1  # the first is in the first frame; the write's came as a message
    finally:
        gate.set()


def test_snapshot_a_big_session_before_its_plan(snap_compare, chain, tmp_path):
    path = copy_of(chain, tmp_path)
    gate = GatedPlanner.gate
    gate.clear()

    async def run_before(pilot):
        await wait_for(pilot, lambda: pilot.app.state.glance is not None, what="the glance")
        await pilot.pause()

    try:
        assert snap_compare(make_app(path, planner_factory=GatedPlanner, watch=False), terminal_size=SIZE,
                            run_before=run_before)
    finally:
        gate.set()


def test_a_big_codex_rollout_is_glanced_at_its_newest_token_count(tmp_path):
    # a real rollout (tests/importers/fixtures, Codex 0.135) with 4.5 MB of developer text put before its request
    source = Path(__file__).parents[1] / "importers" / "fixtures" / "codex_rollout_v0.135_exec.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    padding = json.loads(lines[2])
    padding["payload"]["content"][0]["text"] = "context " * 12_500
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(lines[:3] + [json.dumps(padding) + "\n"] * 45 + lines[3:]), encoding="utf-8")
    assert path.stat().st_size >= GLANCE_FROM_BYTES
    counts = [json.loads(line)["payload"] for line in lines if '"token_count"' in line]
    expected = counts[-1]["info"]["last_token_usage"]["input_tokens"]  # the request's whole input (cached part included)
    found = glance(str(path), {})
    assert found is not None and found.source_format == "codex-rollout"
    assert found.figures.tokens == expected and not found.figures.pending  # what it recorded, labelled so
