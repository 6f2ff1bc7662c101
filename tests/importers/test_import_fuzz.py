"""Any value anywhere in a real file replaced by any JSON value: the import either works (and plans) or
fails with a ``SessionError`` carrying the file name, never with another exception; what loads plans with
the headline and parts of CONTRACT §7 (see ``_check``)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine, SessionError, load_turns

from tests.importers.support import ANTHROPIC, OPENAI, TRANSCRIPT_A, raw_lines

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["type", "text", "role", "content", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _check(path):
    """Loads and plans with CONTRACT §7's invariants, or fails with one typed line that names the file
    (and a position inside it, when it gives one)."""
    try:
        turns = load_turns(path)
    except SessionError as exc:
        assert exc.path == str(path)
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        if exc.line is not None:
            assert 1 <= exc.line <= path.read_text(encoding="utf-8", errors="replace").count("\n") + 1
        return
    engine = Engine()
    for turn in turns:
        plan = engine.plan(turn)
        if not plan.ok:
            continue
        # the parts add up to the headline, and a recorded request's headline is what it recorded
        assert sum(s.tokens_after for s in plan.sections) + plan.joins == plan.tokens_after
        if turn.recorded is not None and not turn.pending:
            # (a turn whose visible parts alone count more than the request recorded keeps the larger
            # figure and says so in a warning: reported to the lead as a question for CONTRACT §7)
            assert plan.tokens_after == turn.recorded.context_tokens or (
                plan.tokens_after > turn.recorded.context_tokens and plan.warnings), plan.warnings
        assert engine.plan(turn).to_dict() == plan.to_dict()  # the same plan again


REQUESTS = {p: json.loads(p.read_text(encoding="utf-8")) for p in (ANTHROPIC, OPENAI)}
REQUEST_PATHS = {p: [q for q in _paths(v) if len(q) <= 5] for p, v in REQUESTS.items()}
TRANSCRIPT = raw_lines(TRANSCRIPT_A)[:12]
TRANSCRIPT_PATHS = [q for q in _paths(TRANSCRIPT) if q and len(q) <= 5]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), new=JSON_VALUES)
def test_mutated_requests_import_or_fail_cleanly(tmp_path, data, new):
    source = data.draw(st.sampled_from(sorted(REQUESTS, key=str)))
    where = data.draw(st.sampled_from(REQUEST_PATHS[source]))
    path = tmp_path / "request.json"
    path.write_text(json.dumps(_replace(REQUESTS[source], where, new)), encoding="utf-8")
    _check(path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), new=JSON_VALUES)
def test_mutated_transcripts_import_or_fail_cleanly(tmp_path, data, new):
    where = data.draw(st.sampled_from(TRANSCRIPT_PATHS))
    lines = _replace(TRANSCRIPT, where, new)
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _check(path)


def test_a_reply_block_without_a_type_imports(tmp_path):
    """Found by the test above: a reply block whose ``type`` is empty made a section id with no suffix, and
    building the turn raised IndexError."""
    where = (8, "message", "content", 0, "type")
    assert where in TRANSCRIPT_PATHS
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in _replace(TRANSCRIPT, where, "")), encoding="utf-8")
    _check(path)
