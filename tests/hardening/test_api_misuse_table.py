"""The Python API misused: every wrong type or value raises a ``BadInput`` subclass, never a raw
``TypeError`` or a silent default; ``Engine.plan`` from many threads gives one thread's results."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tokenbox.core import BadInput, Engine, load_session, load_threads, load_turns
from tokenbox.core.model.errors import ConfigError, SessionError, TokenizerError
from tokenbox.core.planning.config import Settings

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
YAML = str(SAMPLES / "facet_layout.yaml")
LOG = str(SAMPLES / "agent_log.jsonl")


@pytest.fixture(scope="module")
def session():
    return load_session(YAML)


def engine() -> Engine:
    return Engine(settings=Settings())


# (id, call, expected class); each call gets the loaded session.
CASES = [
    ("engine-registry-str", lambda s: Engine(registry="o200k_base"), ConfigError),
    ("engine-registry-int", lambda s: Engine(registry=1), ConfigError),
    ("engine-settings-dict", lambda s: Engine(settings={"max_ctx": 1}), ConfigError),
    ("engine-settings-str", lambda s: Engine(settings="x"), ConfigError),
    ("engine-environ-list", lambda s: Engine(environ=["A=1"]), ConfigError),
    ("engine-environ-int-values", lambda s: Engine(environ={"TOKENBOX_MAX_CTX": 5}), ConfigError),
    ("engine-environ-bad-ctx", lambda s: Engine(environ={"TOKENBOX_MAX_CTX": "lots"}), ConfigError),
    ("budget-zero", lambda s: engine().plan(s, 0), ConfigError),
    ("budget-negative", lambda s: engine().plan(s, -5), ConfigError),
    ("budget-float", lambda s: engine().plan(s, 1000.0), ConfigError),
    ("budget-str", lambda s: engine().plan(s, "1000"), ConfigError),
    ("budget-bool", lambda s: engine().plan(s, True), ConfigError),
    ("budget-list", lambda s: engine().plan(s, [1000]), ConfigError),
    ("budget-too-small", lambda s: engine().plan(s, 1), BadInput),
    ("reserve-negative", lambda s: engine().plan(s, reserve_out=-1), ConfigError),
    ("reserve-float", lambda s: engine().plan(s, reserve_out=1.5), ConfigError),
    ("reserve-str", lambda s: engine().plan(s, reserve_out="10"), ConfigError),
    ("reserve-bool", lambda s: engine().plan(s, reserve_out=False), ConfigError),
    ("reserve-over-window", lambda s: engine().plan(s, 1000, reserve_out=5000), BadInput),
    ("tokenizer-int", lambda s: engine().plan(s, tokenizer=1), ConfigError),
    ("tokenizer-bytes", lambda s: engine().plan(s, tokenizer=b"o200k_base"), ConfigError),
    ("tokenizer-empty", lambda s: engine().plan(s, tokenizer=""), ConfigError),
    ("tokenizer-blank", lambda s: engine().plan(s, tokenizer="  "), BadInput),
    ("tokenizer-unknown", lambda s: engine().plan(s, tokenizer="nope"), TokenizerError),
    ("tokenizer-list", lambda s: engine().plan(s, tokenizer=["o200k_base"]), ConfigError),
    ("trimming-unknown", lambda s: engine().plan(s, trimming="fast"), ConfigError),
    ("trimming-int", lambda s: engine().plan(s, trimming=1), ConfigError),
    ("trimming-empty", lambda s: engine().plan(s, trimming=""), ConfigError),
    ("trimming-case", lambda s: engine().plan(s, trimming="Tokenbox"), ConfigError),
    ("plan-none", lambda s: engine().plan(None), SessionError),
    ("plan-dict", lambda s: engine().plan({"tokenbox": 1, "sections": []}), SessionError),
    ("plan-path", lambda s: engine().plan(YAML), SessionError),
    ("plan-list", lambda s: engine().plan([s]), SessionError),
    ("counter-int", lambda s: engine().counter(5), ConfigError),
    ("counter-unknown", lambda s: engine().counter("nope"), TokenizerError),
    ("load-none", lambda s: load_session(None), SessionError),
    ("load-int", lambda s: load_session(3), SessionError),
    ("load-bytes-list", lambda s: load_session([YAML]), SessionError),
    ("load-bool", lambda s: load_session(True), SessionError),
    ("load-turn-zero", lambda s: load_session(LOG, 0), SessionError),
    ("load-turn-str", lambda s: load_session(LOG, "1"), SessionError),
    ("load-turn-float", lambda s: load_session(LOG, 1.0), SessionError),
    ("load-turn-out-of-range", lambda s: load_session(LOG, 99), SessionError),
    ("load-max-bytes-zero", lambda s: load_session(YAML, max_bytes=0), ConfigError),
    ("load-max-bytes-str", lambda s: load_session(YAML, max_bytes="1M"), ConfigError),
    ("load-max-bytes-bool", lambda s: load_session(YAML, max_bytes=True), ConfigError),  # (None: the defaults)
    ("load-thread-int", lambda s: load_session(LOG, thread=1), SessionError),
    ("load-thread-unknown", lambda s: load_session(LOG, thread="nobody"), SessionError),
    ("turns-none", lambda s: load_turns(None), SessionError),
    ("turns-max-bytes-negative", lambda s: load_turns(LOG, max_bytes=-1), ConfigError),
    ("turns-missing", lambda s: load_turns("/nonexistent/x.jsonl"), SessionError),
    ("threads-int", lambda s: load_threads(7), SessionError),
    ("threads-max-bytes-float", lambda s: load_threads(LOG, max_bytes=1.5), ConfigError),
    ("state-at-str", lambda s: engine().plan(s).state_at("1"), ConfigError),
    ("state-at-none", lambda s: engine().plan(s).state_at(None), ConfigError),
    ("state-at-float", lambda s: engine().plan(s).state_at(1.0), ConfigError),
]


@pytest.mark.parametrize(("call", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_misuse_raises_a_typed_error_with_a_message(call, expected, session):
    with pytest.raises(BadInput) as info:
        call(session)
    assert isinstance(info.value, expected), type(info.value)
    message = str(info.value)
    assert message and "\n" not in message
    assert info.value.remedy or info.value.path, message  # says how to fix it, or where


def test_the_table_is_big_enough():
    assert len(CASES) >= 50


def test_valid_overrides_still_work(session):
    plan = engine().plan(session, 100000, "cl100k_base", trimming="progressive", reserve_out=0)
    assert plan.ok and plan.budget.max_ctx == 100000 and plan.tokenizer.name == "cl100k_base"
    assert plan.state_at(0) is not None and plan.state_at(10**9) is not None


def test_plans_from_eight_threads_equal_one_thread():
    """Shared caches under eviction pressure: byte-identical plan JSON, no exceptions."""
    sessions = [load_session(str(SAMPLES / n)) for n in ("facet_layout.yaml", "passepartout_turn.yaml", "floop_behaviors.yaml", "overflow.yaml")]
    sessions += load_turns(LOG)
    jobs = [(s, b, t) for s in sessions for b in (None, 3000, 5000, 9000, 20000) for t in (None, "cl100k_base", "heuristic")]

    def one(job, eng):
        s, b, t = job
        try:
            return json.dumps(eng.plan(s, b, t).to_dict(), sort_keys=True)
        except BadInput as exc:
            return f"error: {exc}"

    expected = [one(job, engine()) for job in jobs]
    shared = engine()
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda job: one(job, shared), jobs * 2)) == expected * 2
