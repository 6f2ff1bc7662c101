"""What core says of an agent's session beside its plan: the cost of a request (the dated price table,
the config file's prices, the plan JSON's ``cost``), the request by ``/context`` category, its
compactions and the forecast, its threads and the session's cost.

Expected figures are the providers' published prices and what the files record, worked out here.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from tokenbox.core import Engine, load_session
from tokenbox.core.analysis.breakdown import context_use, tool_totals
from tokenbox.core.analysis.compactions import auto_compact_at, forecast, ledger, recorded_contexts
from tokenbox.core.analysis.threads import SessionTotals, session_cost
from tokenbox.core.commands.cli import main as cli_main
from tokenbox.core.model.errors import ConfigError
from tokenbox.core.model.prices import PRICES_AS_OF, model_key, parse_overrides, price_for, request_cost, usd
from tokenbox.core.model.session import RecordedUsage
from tokenbox.core.sources.loader import Loader, load_threads, load_turns

from tests.agent_files import context, requests_of, unpack

HERE = Path(__file__).resolve().parent
REQUEST = HERE / "fixtures" / "real_sessions" / "anthropic_messages_request_claude-code-1.0.6.json"
CODEX = HERE / "importers" / "fixtures" / "codex_rollout_v0.135_exec.jsonl"
SAMPLE = HERE.parent / "sample_sessions" / "facet_layout.yaml"
# USD per million tokens as the pricing pages list them: input, 5-minute cache write, cache read, output,
# 1-hour cache write
OPUS_46, HAIKU_45, GPT_55 = (5, 6.25, 0.5, 25, 10), (1, 1.25, 0.1, 5, 2), (5, 5, 0.5, 30, 5)


def usage(context: int, written: int, read: int, output: int) -> RecordedUsage:
    return RecordedUsage(context, context - written - read, written, read, output)


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    return unpack(tmp_path_factory.mktemp("session"))


def priced(model: str, raw: dict) -> float:
    rates = OPUS_46 if "opus-4-6" in model else HAIKU_45
    hour = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)  # Claude Code 2.x writes for an hour
    return (raw["input_tokens"] * rates[0] + (raw["cache_creation_input_tokens"] - hour) * rates[1] + hour * rates[4]
            + raw["cache_read_input_tokens"] * rates[2] + raw["output_tokens"] * rates[3]) / 1e6


# ---------------------------------------------------------------- prices


def test_a_request_is_priced_by_its_model_at_the_published_prices():
    opus = request_cost("claude-opus-4-6", usage(44_993, 2_392, 42_600, 19))
    assert opus.usd == pytest.approx((1 * 5 + 2_392 * 6.25 + 42_600 * 0.5 + 19 * 25) / 1e6)
    assert (opus.model, opus.prices_as_of) == ("claude-opus-4-6", PRICES_AS_OF)
    # OpenAI counts the cached part inside the input; writing its cache costs nothing extra
    codex = request_cost("gpt-5.5", RecordedUsage(22_539, 22_539, 0, 20_864, 10))
    assert codex.usd == pytest.approx((1_675 * 5 + 20_864 * 0.5 + 10 * 30) / 1e6)
    # a long-context tier prices the whole request: Sonnet 4.5 above 200k
    long = request_cost("claude-sonnet-4-5-20250929", usage(250_000, 0, 0, 1_000))
    assert long.usd == pytest.approx((250_000 * 6 + 1_000 * 22.5) / 1e6)
    assert request_cost("claude-sonnet-4-5", usage(150_000, 0, 0, 0)).usd == pytest.approx(150_000 * 3 / 1e6)
    assert request_cost("llama-3.3-70b", usage(1_000, 0, 0, 10)) is None  # unknown: no figure
    assert request_cost("claude-opus-4-6", None) is None  # nothing recorded: nothing to price
    # a 1-hour cache write costs 2x input, a 5-minute one 1.25x (Claude Code 2.x writes for an hour)
    hour = RecordedUsage(44_993, 1, 2_392, 42_600, 19, cache_creation_1h_input_tokens=2_000)
    assert request_cost("claude-opus-4-6", hour).usd == pytest.approx(
        (1 * 5 + 392 * 6.25 + 2_000 * 10 + 42_600 * 0.5 + 19 * 25) / 1e6)
    assert request_cost("gpt-5.5", RecordedUsage(1_000, 1_000, 0, 0, 0, 500)).usd == pytest.approx(1_000 * 5 / 1e6)


def test_the_one_hour_cache_writes_a_transcript_records_reach_the_plan(session):
    """Claude Code 2.1 records ``cache_creation.ephemeral_1h_input_tokens``: the plan's ``recorded`` says
    how many of the writes were for an hour, and the cost prices them at 2x input."""
    import json as _json
    turns = load_turns(session)
    raw = [u for _, u in requests_of(session)]
    hours = [(u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0) for u in raw]
    assert sum(hours) > 0  # the fixture writes for an hour
    recorded = [t.recorded for t in turns if t.recorded is not None]
    assert [r.cache_creation_1h_input_tokens for r in recorded] == hours
    assert [("cache_creation_1h_input_tokens" in _json.dumps(r.to_dict())) for r in recorded] == [h > 0 for h in hours]


@pytest.mark.parametrize(("name", "key"), [
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5"), ("anthropic/claude-opus-4-6[1m]", "claude-opus-4-6"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"), ("gpt-5.5-2026-04-23", "gpt-5.5"), ("claude-3-5-haiku@20241022", "claude-3-5-haiku"),
])
def test_a_model_is_priced_under_its_name_without_provider_window_or_date(name, key):
    assert model_key(name) == key and price_for(name) is not None


def test_dollars_keep_the_digits_that_matter():
    assert (usd(6.2913), usd(0.03673), usd(0.00047), usd(1234.5)) == ("$6.29", "$0.037", "$0.0005", "$1,234.50")


def test_the_config_file_overrides_and_extends_the_table():
    prices = parse_overrides({"claude-opus-4-6": {"output": 20, "as_of": "2026-12-01"}, "my-model": {"input": 2, "output": 8}},
                             "prices", "2026-11-30")
    assert request_cost("claude-opus-4-6", usage(1_000, 0, 0, 1_000), prices).usd == pytest.approx((1_000 * 5 + 1_000 * 20) / 1e6)
    mine = request_cost("my-model", usage(1_000, 0, 500, 100), prices)
    assert mine.usd == pytest.approx((500 * 2 + 500 * 2 + 100 * 8) / 1e6) and mine.prices_as_of == "2026-11-30"
    for bad in ({"x": {"input": 1}}, {"claude-opus-4-6": {"input": -1}}, {"claude-opus-4-6": {"inptu": 1}},
                {"claude-opus-4-6": {"as_of": "soon"}}, ["claude-opus-4-6"]):
        with pytest.raises(ConfigError):
            parse_overrides(bad, "prices", "2026-11-30")


def plan_json(*args: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["plan", *args, "--json"]) in (0, 1)
    return json.loads(out.getvalue())


def test_the_plan_json_of_an_agent_session_has_its_cost(tmp_path, monkeypatch):
    data = plan_json(str(CODEX))
    assert data["cost"]["model"] == "gpt-5.5" and data["cost"]["prices_as_of"] == PRICES_AS_OF
    assert data["cost"]["usd"] == pytest.approx((1_675 * 5 + 20_864 * 0.5 + 10 * 30) / 1e6)
    assert plan_json(str(REQUEST))["cost"] is None  # a request body: no usage recorded in it
    assert "cost" not in plan_json(str(SAMPLE))  # a tokenbox session has no cost
    config = tmp_path / "xdg" / "tokenbox" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("prices:\n  gpt-5.5: {input: 10, cache_read: 1, output: 60, as_of: 2027-01-01}\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    overridden = plan_json(str(CODEX))["cost"]
    assert overridden["usd"] == pytest.approx((1_675 * 10 + 20_864 * 1 + 10 * 60) / 1e6)
    assert overridden["prices_as_of"] == "2027-01-01"
    config.write_text("prices:\n  gpt-5.5: {input: free}\n")
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["plan", str(CODEX), "--json"]) == 2  # a bad price is the config file's error


# ---------------------------------------------------------------- categories


def test_a_request_by_category_adds_up_and_splits_mcp_tools_by_server():
    plan = Engine().plan(load_session(REQUEST))
    use = context_use(plan, 200_000, 167_000)
    keys = [c.key for c in use.categories]
    assert sum(c.tokens for c in use.categories) == use.used == plan.tokens_after
    assert keys[:4] == ["system", "memory", "tools", "mcp:ide"]  # /context's order
    mcp = sum(t.tokens_after for t in tool_totals(plan) if t.key.startswith("mcp__ide__"))
    assert next(c.tokens for c in use.categories if c.key == "mcp:ide") == mcp
    memory = [r for r in plan.sections if r.section.meta.get("category") in ("system", "history", "latest")
              and "CLAUDE.md" in (r.section.text or "") and "Contents of" in (r.section.text or "")]
    assert memory and next(c.tokens for c in use.categories if c.key == "memory") == sum(r.tokens_after for r in memory)
    assert (use.free, use.buffer) == (167_000 - plan.tokens_after, 33_000)


# ---------------------------------------------------------------- compactions and the forecast


def test_the_forecast_is_the_room_over_the_recent_growth():
    outlook = forecast([100, 200, 400], 1_000)
    assert (outlook.room, outlook.growth, outlook.requests) == (600, 150, 4)
    assert forecast([500, 400], 1_000).requests is None  # shrinking: no figure
    assert forecast([1_200], 1_000).requests == 0 and forecast([300], 1_000).requests is None  # due / too few


def test_the_ledger_of_a_real_auto_compaction(session):
    turns = load_turns(session)
    entries = ledger(turns)
    assert len(entries) == 1
    entry = entries[0]
    # the file: compact_boundary at line 714 (auto, preTokens 167 731) after 71 requests; the next recorded 42 603
    assert (entry.line, entry.trigger, entry.after_request, entry.before, entry.after) == (714, "auto", 71, 167_731, 42_603)
    assert entry.summarised == 71 and entry.freed == 167_731 - 42_603
    contexts = recorded_contexts(turns)
    assert contexts == [context(u) for _, u in requests_of(session)]
    assert auto_compact_at(turns[-1], 200_000, {}) == 167_000
    assert auto_compact_at(load_turns(CODEX)[-1], 258_400, {}) is None  # Codex's rule is not claimed


# ---------------------------------------------------------------- threads and the session's cost


def test_threads_and_the_session_cost(session):
    summaries = SessionTotals().update(load_threads(session))
    names = [s.name for s in summaries]
    assert names == ["main", "agent-a7be2f0", "agent-acompact-f46190"]
    files = [session, session.parent / "8463c716" / "subagents" / "agent-a7be2f0.jsonl",
             session.parent / "8463c716" / "subagents" / "agent-acompact-f46190.jsonl"]
    for summary, path in zip(summaries, files, strict=True):
        requests = requests_of(path)
        contexts = [context(u) for _, u in requests]
        assert summary.requests == len(requests) and summary.current == contexts[-1] and summary.peak == max(contexts)
        assert summary.usd == pytest.approx(sum(priced(*r) for r in requests), abs=1e-9)
    assert summaries[0].peak == 167_094 and summaries[0].models == ("claude-opus-4-6",)
    total = session_cost(summaries)
    assert total.usd == pytest.approx(sum(s.usd for s in summaries)) and total.unpriced == ()


def test_a_workflow_runs_agents_are_threads_of_the_session(session, tmp_path):
    """Claude Code's ``Workflow`` tool writes the agents of a run under ``<session>/subagents/workflows/<run>/``,
    beside the run's ``journal.jsonl`` (not a transcript): each agent is a thread, its requests and cost in
    the session's, as an Agent-tool sub-agent's are."""
    path = tmp_path / session.name
    shutil.copyfile(session, path)
    subagents = tmp_path / "8463c716" / "subagents"
    shutil.copytree(session.parent / "8463c716", tmp_path / "8463c716")
    run = subagents / "workflows" / "wf_becbc5fa-02e"
    run.mkdir(parents=True)
    moved = run / "agent-a7be2f0.jsonl"
    (subagents / "agent-a7be2f0.jsonl").rename(moved)
    (run / "journal.jsonl").write_text('{"type":"started","agentId":"a7be2f0"}\n{"type":"result","agentId":"a7be2f0"}\n',
                                       encoding="utf-8")
    summaries = SessionTotals().update(load_threads(path))
    assert [s.name for s in summaries] == ["main", "agent-acompact-f46190", "agent-a7be2f0"]
    requests = requests_of(moved)
    assert summaries[2].requests == len(requests) and summaries[2].current == context(requests[-1][1])
    assert summaries[2].usd == pytest.approx(sum(priced(*r) for r in requests), abs=1e-9)


def test_a_followed_session_sums_what_was_appended_as_a_fresh_read_does(session, tmp_path):
    lines = session.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / session.name
    shutil.copytree(session.parent / "8463c716", tmp_path / "8463c716")
    loader, totals = Loader(), SessionTotals()
    for end in (120, 400, len(lines)):
        path.write_text("".join(lines[:end]), encoding="utf-8")
        followed = totals.update(loader.load_threads(path))
        assert followed == SessionTotals().update(Loader().load_threads(path)), end


def test_a_captured_anthropic_response_says_how_many_writes_were_for_an_hour():
    """``tokenbox record`` logs the API's own usage: its ``cache_creation`` split reaches the recorded usage,
    bounded by the writes; a malformed split counts as none."""
    from tokenbox.core.sources.readers.capture import recorded_usage

    def usage_with(split):
        return recorded_usage("anthropic-messages", {"usage": {
            "input_tokens": 5, "cache_creation_input_tokens": 400, "cache_read_input_tokens": 1_000,
            "output_tokens": 7, "cache_creation": split}})

    assert usage_with({"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 300}).cache_creation_1h_input_tokens == 300
    assert usage_with({"ephemeral_1h_input_tokens": 9_999}).cache_creation_1h_input_tokens == 400  # never more than written
    for bad in (None, {"ephemeral_1h_input_tokens": True}, {"ephemeral_1h_input_tokens": -3}, {"ephemeral_1h_input_tokens": "300"}):
        assert usage_with(bad).cache_creation_1h_input_tokens == 0
