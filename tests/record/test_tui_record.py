"""``tokenbox-tui --record`` end to end: the proxy in its thread, the TUI following its capture, a real SDK client."""

from __future__ import annotations

import asyncio

import pytest
from tokenbox.core.record.run import record_for_tui
from tokenbox.tui.app import TokenboxApp

from tests.record.fake_provider import CACHE_READ, CACHE_WRITE, FakeProvider


@pytest.fixture
def fake():
    provider = FakeProvider()
    yield provider
    provider.stop()


async def test_each_request_appears_live_with_its_recorded_total(fake: FakeProvider, tmp_path, monkeypatch) -> None:
    import anthropic  # here, not at the top: every parallel worker collects this module, one runs it

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    with record_for_tui(("127.0.0.1", 0), fake.url) as path:
        with open(path, encoding="utf-8") as handle:
            address = handle.readline().split('"listen":"', 1)[1].split('"', 1)[0]
        client = anthropic.Anthropic(base_url=f"http://{address}", api_key="sk-test-SECRET-tui", max_retries=0)
        app = TokenboxApp(path)
        async with app.run_test() as pilot:
            messages = [{"role": "user", "content": "first"}]
            for turn in (1, 2):
                await asyncio.to_thread(client.messages.create, model="claude-sonnet-4", max_tokens=10,
                                        system="You are a test agent.", messages=messages,
                                        tools=[{"name": "mcp__gh__issue", "description": "d", "input_schema": {"type": "object"}}])
                expected = 1000 + 10 * len(messages) + CACHE_WRITE + CACHE_READ
                for _ in range(600):  # wait for the file watcher and the planner (bounded, never timed)
                    plan = app.plan
                    if plan is not None and plan.recorded is not None and plan.recorded.context_tokens == expected:
                        break
                    await pilot.pause(0.05)
                else:
                    raise AssertionError(f"turn {turn} never appeared with its recorded total")
                ids = [r.section.id for r in plan.sections]
                assert "system" in ids and "tool.mcp__gh__issue" in ids
                messages = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
