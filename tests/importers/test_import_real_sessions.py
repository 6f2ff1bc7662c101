"""The three real third-party files (and the OpenAI fixture) import, plan and render, via API and CLI.

Recorded usage is checked against numbers read by hand from the raw JSON; turns are checked against
the distinct assistant message ids; the Anthropic request's heuristic estimate against the 15677
prompt tokens the provider reported for it.

Measured (claude-estimate at scale 1, plus the published 313-token tool-use system prompt): ≈15669
against the recorded 15677 (ratio 0.9995). The test allows ±15%: the estimate is a
character count, and how the provider serialises tool schemas and tool calls is not public.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys

import pytest
from tokenbox.core import Engine, RecordedUsage, load_session, load_threads, load_turns

from tests.importers.support import (
    ALL_FIXTURES,
    ANTHROPIC,
    CONFORMANCE,
    OPENAI,
    REAL,
    TRANSCRIPT_A,
    TRANSCRIPT_B,
    TRANSCRIPTS,
    raw_lines,
    run_cli,
)

ANTHROPIC_RECORDED_PROMPT = 6 + 119 + 15552  # input + cache write + cache read, from the captured response
ANTHROPIC_TOLERANCE = 0.15


def _distinct_assistant_ids(path) -> list[str]:
    ids: list[str] = []
    for line in raw_lines(path):
        if line.get("type") == "assistant":
            message_id = line["message"]["id"]
            if message_id not in ids:
                ids.append(message_id)
    return ids


def test_fixtures_are_the_unmodified_real_files():
    text = (REAL / "PROVENANCE.md").read_text(encoding="utf-8")
    for path in (ANTHROPIC, *TRANSCRIPTS):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"{digest}  {path.name}" in text


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_every_turn_imports_plans_and_renders_via_the_api(path):
    engine = Engine()
    turns = load_turns(path)
    assert turns
    for session in turns:
        assert session.source_format != "tokenbox"
        plan = engine.plan(session)
        assert plan.ok
        rendered = plan.render()
        assert rendered
        data = plan.to_dict()
        assert "recorded" in data
        assert data["fingerprint"] == "sha256:" + hashlib.sha256(rendered.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_cli_plan_and_render_agree(path):
    plan = run_cli("plan", str(path), "--json")
    assert plan.returncode == 0, plan.stderr
    data = json.loads(plan.stdout)
    render = run_cli("render", str(path))
    assert render.returncode == 0, render.stderr
    assert data["fingerprint"] == "sha256:" + hashlib.sha256(render.stdout).hexdigest()
    assert run_cli("plan", str(path)).returncode == 0
    check = run_cli("check", str(path))
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(b"ok: ")


def test_conformance_script_passes_on_the_fixtures():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    result = subprocess.run(
        [sys.executable, str(CONFORMANCE), *map(str, ALL_FIXTURES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"conformance: {len(ALL_FIXTURES)} files, 0 failures" in result.stdout


@pytest.mark.parametrize(("path", "expected"), [(TRANSCRIPT_A, 7), (TRANSCRIPT_B, 20)], ids=["1af7", "5c03"])
def test_one_turn_per_distinct_assistant_message_id(path, expected):
    ids = _distinct_assistant_ids(path)
    assert len(ids) == expected
    threads = load_threads(path)
    turns = [t for thread in threads.values() for t in thread]
    assert len(turns) == len(ids)
    assert sorted(t.meta["message_id"] for t in turns) == sorted(ids)
    # the main thread's turns in file order; each sub-agent's its own thread
    assert [t.meta["message_id"] for t in threads["main"]] == [i for i in ids if i in {t.meta["message_id"] for t in threads["main"]}]


# Read by hand from the raw lines (the last line of each request; input parts repeat on every line).
RECORDED = [
    # file, turn, message id, input, cache write, cache read, output
    (TRANSCRIPT_A, 1, "msg_01TqDZoU6FcpxB4u2AmpgWfZ", 3, 10816, 4734, 322),  # lines 3-4
    (TRANSCRIPT_A, 2, "msg_018mu4atNCkxSiLt7VVQquTL", 6, 304, 15550, 285),  # lines 6-10
    (TRANSCRIPT_A, 7, "msg_01EoAxzgxSHRavtZuynqjwKT", 5, 129, 17303, 72),  # line 29
    (TRANSCRIPT_B, 3, "msg_01XU4B1nvSytVjiR8jEYREvX", 8, 422, 19019, 625),  # lines 12-14
    (TRANSCRIPT_B, 10, "msg_018Fip6V8pouqPgh3JVuzhiH", 6, 226, 25848, 304),  # line 53, the main thread's 10th
]


@pytest.mark.parametrize(("path", "turn", "message_id", "inp", "write", "read", "out"), RECORDED)
def test_recorded_usage_is_read_exactly(path, turn, message_id, inp, write, read, out):
    session = load_session(path, turn)
    assert session.meta["message_id"] == message_id
    expected = RecordedUsage(inp + write + read, inp, write, read, out)
    assert session.recorded == expected
    result = run_cli("plan", str(path), "--turn", str(turn), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["recorded"] == {
        "context_tokens": inp + write + read,
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


def test_largest_recorded_contexts_match_the_provenance():
    assert max(t.recorded.context_tokens for t in load_turns(TRANSCRIPT_A)) == 17437
    assert max(t.recorded.context_tokens for t in load_turns(TRANSCRIPT_B)) == 26080


def test_request_bodies_record_no_usage():
    for path in (ANTHROPIC, OPENAI):
        data = Engine().plan(load_session(path)).to_dict()
        assert data["recorded"] is None


def test_anthropic_estimate_is_within_tolerance_of_the_recorded_prompt():
    session = load_session(ANTHROPIC)
    assert session.tokenizer == "claude-estimate"
    plan = Engine().plan(session)
    assert plan.tokenizer.name == "claude-estimate"
    assert plan.tokenizer.exact is False
    assert plan.to_dict()["tokenizer"]["exact"] is False
    ratio = plan.tokens_before / ANTHROPIC_RECORDED_PROMPT
    assert 1 - ANTHROPIC_TOLERANCE <= ratio <= 1 + ANTHROPIC_TOLERANCE, (plan.tokens_before, ratio)


def test_claude_counts_are_shown_as_approximate_and_can_be_overridden():
    result = run_cli("plan", str(ANTHROPIC))
    assert b"tokenizer claude-estimate (approximate)" in result.stdout
    assert "≈".encode() in result.stdout
    plan = Engine().plan(load_session(ANTHROPIC), tokenizer="o200k_base")
    assert plan.tokenizer.name == "o200k_base"
    # exact counts of the text, but the API's tool-use system prompt is a published size, not a count
    assert not plan.tokenizer.exact and plan.sections[17].tokens_after == 313


def test_claude_window_comes_from_the_model_table():
    for path in (ANTHROPIC, *TRANSCRIPTS):
        plan = Engine().plan(load_session(path))
        assert plan.session.model.startswith("claude-")
        assert plan.budget.max_ctx == 200_000
    assert Engine().plan(load_session(ANTHROPIC)).budget.reserve_out == 32000  # its max_tokens


def test_a_turn_holds_the_context_sent_for_that_request():
    # The first request of the first Task sub-agent: only the sub-agent's prompt (line 16).
    sidechain = load_threads(TRANSCRIPT_B)["sidechain-1"][0]
    assert sidechain.thread == "sidechain-1" and sidechain.recorded.context_tokens == 12806
    assert {s.meta["line"] for s in sidechain.sections if "line" in s.meta and s.meta["category"] != "reply"} == {16}
    # The main thread's 4th request (line 25) continues the main chain: lines 1-15 and the results on
    # lines 23-24, no sidechain lines.
    main = load_session(TRANSCRIPT_B, 4)
    assert main.meta["line"] == 25
    lines = sorted({s.meta["line"] for s in main.sections if "line" in s.meta and s.meta["category"] != "reply"})
    assert lines == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 23, 24]
    # The last turn of 1af7 sees every line before its own (line 29).
    last = load_session(TRANSCRIPT_A, -1)
    assert sorted({s.meta["line"] for s in last.sections if "line" in s.meta and s.meta["category"] != "reply"}) == list(range(1, 29))


def test_consecutive_turns_of_one_chain_extend_each_other():
    turns = load_turns(TRANSCRIPT_A)
    for earlier, later in itertools.pairwise(turns):
        # the context part (the hidden part's size and the request's own reply differ per turn)
        ids = [s.id for s in earlier.sections if s.meta.get("category") not in ("inferred", "reply")]
        assert [s.id for s in later.sections if s.meta.get("category") not in ("inferred", "reply")][: len(ids)] == ids
        assert [s.text for s in later.sections][1 : len(ids) + 1] == [s.text for s in earlier.sections[1 : len(ids) + 1]]


def test_transcript_extras_are_kept_in_meta():
    session = load_session(TRANSCRIPT_B, 1)
    meta_lines = [s for s in session.sections if s.meta.get("is_meta")]
    assert meta_lines and {s.meta["line"] for s in meta_lines} == {2}  # the slash-command expansion
    assert session.meta["session_id"] == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert session.meta["version"] == "1.0.108"
    assert "system prompt" in session.meta["not_recorded"]
    assert any("を最新の状態に" in (s.text or "") for s in session.sections)
