"""``tokenbox import`` writes an editable tokenbox YAML session that round-trips: loading it gives the
same sections (ids, layout attributes, texts, meta) and the same plan fingerprint as the original."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, Section, Session, load_session, load_turns
from tokenbox.core.sources.export import session_yaml

from tests.importers.support import ALL_FIXTURES, ANTHROPIC, OPENAI, REPO, TRANSCRIPT_A, TRANSCRIPT_B, run_cli


def _layout(session):
    return [dataclasses.replace(s, line=0, col=0) for s in session.sections]


def _turns():
    for path in (*ALL_FIXTURES, *sorted((REPO / "sample_sessions").glob("*.yaml")), REPO / "sample_sessions" / "agent_log.jsonl"):
        for session in load_turns(path):
            yield pytest.param(session, id=f"{path.name[:24]}-turn{session.turn}")


@pytest.mark.parametrize("session", _turns())
def test_export_round_trips(tmp_path, session):
    path = tmp_path / "exported.yaml"
    path.write_text(session_yaml(session), encoding="utf-8")
    back = load_session(path)
    assert back.source_format == "tokenbox"
    assert _layout(back) == _layout(session)
    assert [s.meta for s in back.sections] == [s.meta for s in session.sections]
    for key in ("name", "model", "tokenizer", "budget", "sensor", "trimming"):
        assert getattr(back, key) == getattr(session, key), key
    original, reloaded = Engine().plan(session), Engine().plan(back)
    assert reloaded.fingerprint == original.fingerprint
    assert reloaded.tokens_before == original.tokens_before
    assert reloaded.to_dict()["sections"] == original.to_dict()["sections"]
    if session.recorded is not None:
        assert back.meta["recorded"] == session.recorded.to_dict()


@pytest.mark.parametrize(("path", "turn"), [(ANTHROPIC, None), (OPENAI, None), (TRANSCRIPT_A, 3), (TRANSCRIPT_B, -1)])
def test_cli_import_output_plans_like_the_original(tmp_path, path, turn):
    turn_args = [] if turn is None else ["--turn", str(turn)]
    result = run_cli("import", str(path), *turn_args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    text = result.stdout.decode("utf-8")
    assert text.startswith(f"# tokenbox session written from {path}")
    exported = tmp_path / "session.yaml"
    exported.write_bytes(result.stdout)
    original = json.loads(run_cli("plan", str(path), "--json", *turn_args).stdout)
    reloaded = json.loads(run_cli("plan", str(exported), "--json").stdout)
    assert reloaded["fingerprint"] == original["fingerprint"]
    assert reloaded["tokens"] == original["tokens"]
    assert reloaded["sections"] == original["sections"]
    assert reloaded["tokenizer"] == original["tokenizer"]
    assert run_cli("render", str(exported)).stdout == run_cli("render", str(path), *turn_args).stdout
    assert run_cli("import", str(path), *turn_args).stdout == result.stdout  # deterministic


def test_import_header_says_where_the_session_came_from():
    text = run_cli("import", str(TRANSCRIPT_B), "--thread", "sidechain-1", "--turn", "1").stdout.decode("utf-8")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[1] == "# turn 1 of 3: assistant request msg_012hC6NGVaHocF7Tsc4z4cA2, line 17 (thread sidechain-1)"
    assert header[2] == "# recorded usage: context 12806 tokens = input 4 + cache write 12802 + cache read 0; output 107"
    assert any("claude-estimate" in line for line in header)
    assert "Claude Code transcript" in header[0]


def test_multi_line_texts_are_block_scalars():
    text = session_yaml(load_session(OPENAI))
    section = text.split("- id: m04.result.run_tests", 1)[1].split("- id:", 1)[0]
    assert "  text: |-\n    ============================= test session starts" in section
    assert 'text: "' not in section
    assert "strategy: ['tail_lines:40', 'tail_lines:10']" in section
    # Lines with trailing spaces cannot live in a block scalar safely: PyYAML quotes those texts instead.
    assert '  text: "   1  \\"\\"\\"Parse' in text


def test_edits_to_the_exported_layout_take_effect(tmp_path):
    text = session_yaml(load_session(OPENAI))
    edited = text.replace(
        "id: m05.assistant\n  kind: text\n  priority: 6\n  shrink: 1",
        "id: m05.assistant\n  kind: text\n  priority: 6\n  shrink: 0",
    )
    assert edited != text
    path = tmp_path / "edited.yaml"
    path.write_text(edited, encoding="utf-8")
    assert load_session(path).sections[10].critical  # [0] is the framing part


TEXTS = st.text(
    alphabet=st.sampled_from([*"ab :#-|>'\"\\\n\r\t ", "\x85", "\u2028", "\ufeff", "é", "日", "\x00", "\x1b", "😀"]),
    max_size=40,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=4), note=TEXTS)
def test_any_text_round_trips(tmp_path, texts, note):
    sections = tuple(
        Section(id=f"s{i}", kind="text", text=text, meta={"note": note, "n": i, "cache_control": {"type": "ephemeral"}})
        for i, text in enumerate(texts)
    )
    session = Session(sections=sections, name=note, tokenizer="o200k_base", meta={"source": note})
    path = tmp_path / "any.yaml"
    path.write_text(session_yaml(session), encoding="utf-8")
    back = load_session(path)
    assert [s.text for s in back.sections] == list(texts)
    assert [s.meta for s in back.sections] == [s.meta for s in sections]
    assert back.name == note and back.meta == {"source": note}
