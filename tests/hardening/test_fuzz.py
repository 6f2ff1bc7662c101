"""Fuzzing the whole path: generated sessions, valid and subtly broken, as YAML, JSON or JSONL files.

Each example is written to a file and taken through ``load_session`` → ``Engine.plan`` → ``render``.
Nothing may escape but the typed errors (``BadInput`` subclasses), each one line with a position.
A session that plans keeps every layout invariant: ``ok`` → ``tokens.after <= available``;
``tokens.after`` is the engine tokenizer's count of the render; the parts add up
(``sum(tokens_after) + joins == after``); critical sections are untouched; the render is the kept
texts joined by blank lines; and a fresh engine makes the identical plan.

Runs are bounded (``max_examples``) and derandomized, so the suite is fast and deterministic.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import BadInput, Engine, load_session
from tokenbox.core.planning.config import Settings

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WEIRD = [
    "",
    " ",
    "\n",
    "\r\n",
    "\t",
    "[bold]x[/]",
    "\x1b[31m",
    "\x00",
    "\x7f\x85\x9b",
    "\u202e\u2066\u200f",
    "\u200b\u200d\ufeff",
    "\u2028",
    "中文字",
    "👩\u200d👩\u200d👧",
    "🇯🇵",
    "e\u0301",
    "\U000e0041",
    "ǅ",
    "'s",
    "- item",
    "#",
    "<|endoftext|>",
    "x" * 300,
    "word ",
    "line\n",
    "".join(f"log line {i}: the build step finished\n" for i in range(40)),
]
text = st.lists(
    st.one_of(st.sampled_from(WEIRD), st.text(st.characters(exclude_categories=("Cs",)), max_size=12)),
    max_size=12,
).map("".join)
# Long enough, often enough, that budgets of 40 to 1500 tokens make the layout trim.
body = st.tuples(text, st.sampled_from([6, 1, 20, 0])).map(lambda pair: pair[0] * pair[1])
LENSES = ["tail_lines:2", "head_lines:1", "summary", "drop", "dedupe_lines", "tail_lines:5"]
TOKENIZERS = ["o200k_base", "cl100k_base", "heuristic", "floop-estimate"]

# The strategies are built once: one made inside a draw is validated again on every draw. The
# helpers below draw from them inline (only ``valid_session`` and ``files`` are strategies).
BOOL = st.booleans()
ITEM_NAMES = st.lists(st.text(min_size=1, max_size=8), max_size=5, unique=True)
ITEM_KINDS = st.sampled_from(["constraint", "directive", "procedure", "preference"])
ACTIVATION = st.floats(0, 1)
TAGS = st.lists(st.sampled_from(["git", "ci", "中"]), max_size=2)
SECTION_KINDS = st.sampled_from(["text", "text", "user", "logs", "mandates", "context", "prefix", "behaviors"])
MAYBE_TEXT = st.none() | text
MEMORY = st.lists(text, max_size=3)
ITEMS_BUDGET = st.integers(0, 200)
PRIORITY = st.integers(-3, 3)
MIN = st.sampled_from([0, 1, 10])
GROW = st.sampled_from([0, 1, 2.5])
SHRINK = st.sampled_from([0, 1, 0.5, 3])
KEEP = st.sampled_from(["head", "tail"])
LENS_LISTS = st.lists(st.sampled_from(LENSES), max_size=2)
SECTION_COUNT = st.sampled_from([3, 1, 5, 0, 2])
TOKENIZER = st.sampled_from(TOKENIZERS)
MAX_CTX = st.sampled_from([40, 120, 400, 1500, 16384])
RESERVE_OUT = st.integers(0, 10)
HEADROOM = st.sampled_from([0, 0.05, 0.5])
SENSOR = st.sampled_from(["user-input", "tool-output", "heartbeat", "delegation"])
TRIMMING = st.sampled_from(["tokenbox", "progressive"])
FORMAT = st.sampled_from(["yaml", "json", "jsonl"])
TURNS = st.integers(1, 3)
HALF_WRITTEN = st.sampled_from([False] * 9 + [True])



def behaviour_items(draw) -> list[dict[str, Any]]:
    names = draw(ITEM_NAMES)
    return [
        {
            "name": name,
            "kind": draw(ITEM_KINDS),
            "activation": draw(ACTIVATION),
            "content": draw(body),
            **({"summary": draw(text)} if draw(BOOL) else {}),
            "tags": draw(TAGS),
        }
        for name in names
    ]


def section(draw, index: int) -> dict[str, Any]:
    kind = draw(SECTION_KINDS)
    sec: dict[str, Any] = {"id": f"s{index}", "kind": kind}
    if kind in ("text", "user", "logs", "mandates"):
        sec["text"] = draw(body)
    elif kind == "context":
        sec.update(foveal_focus=draw(text), scope=draw(MAYBE_TEXT), memory=draw(MEMORY))
    elif kind == "prefix":
        sec.update(assistant_name=draw(text), identity=draw(text), tools=draw(body))
    else:
        sec["items"] = behaviour_items(draw)
        if draw(BOOL):
            sec["budget"] = draw(ITEMS_BUDGET)
    if draw(BOOL):
        sec.update(
            priority=draw(PRIORITY),
            min=draw(MIN),
            grow=draw(GROW),
            shrink=draw(SHRINK),
            keep=draw(KEEP),
        )
    if draw(BOOL):
        lenses = draw(LENS_LISTS)
        sec["strategy"] = [*lenses, "demote"] if kind == "behaviors" else lenses
    if draw(BOOL):
        sec["summary"] = draw(text)
    return sec


def draw_session(draw) -> dict[str, Any]:
    count = draw(SECTION_COUNT)
    doc: dict[str, Any] = {"tokenbox": 1, "tokenizer": draw(TOKENIZER)}
    if draw(BOOL):
        doc["name"] = draw(text)
    doc["budget"] = {
        "max_ctx": draw(MAX_CTX),
        "reserve_out": draw(RESERVE_OUT),
        "headroom": draw(HEADROOM),
    }
    doc["sensor"] = draw(SENSOR)
    doc["trimming"] = draw(TRIMMING)
    doc["sections"] = [section(draw, i) for i in range(count)]
    return doc


valid_session = st.composite(draw_session)


WRONG = [None, True, 0, -1, 1.5, 10**30, 1e308, math.nan, math.inf, -math.inf, "", "x", [], {}, [1], {"a": 1}, "\x1b[2J"]
WRONG_VALUE = st.sampled_from(WRONG)
WEIRD_VALUE = st.sampled_from(WEIRD)
MISTAKES = st.integers(1, 2)
MISTAKE = st.sampled_from(["wrong", "wrong", "delete", "extra", "weird"])
EXTRA_KEY = st.sampled_from(["extra", "txet", "Priority", "meta", "\u202ekey"])


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path into ``doc``."""
    found = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.append((*prefix, key))
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found.append((*prefix, index))
            found.extend(_paths(value, (*prefix, index)))
    return found


def mutated(draw, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with a few small mistakes: wrong types, missing or extra keys, huge or weird values."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(MISTAKES)):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = draw(MISTAKE)
        if action == "wrong":
            parent[last] = draw(WRONG_VALUE)
        elif action == "delete":
            del parent[last]
        elif action == "extra" and isinstance(parent, dict):
            parent[draw(EXTRA_KEY)] = draw(WRONG_VALUE)
        elif action == "weird":
            parent[last] = draw(WEIRD_VALUE)
    return doc


def serialize(docs: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps(d, allow_nan=True) + "\n" for d in docs)
    if fmt == "json":
        return json.dumps(docs[-1], allow_nan=True, indent=1)
    return yaml.safe_dump(docs[-1], allow_unicode=True, sort_keys=False)


@st.composite
def files(draw) -> tuple[str, str]:
    """A file name and its text: one to three turns, the last maybe broken, maybe cut short."""
    fmt = draw(FORMAT)
    docs = [draw_session(draw) for _ in range(draw(TURNS) if fmt == "jsonl" else 1)]
    if draw(BOOL):
        docs[-1] = mutated(draw, docs[-1])
    content = serialize(docs, fmt)
    if content and draw(HALF_WRITTEN):  # half-written
        content = content[: draw(st.integers(1, len(content)))]
    return f"session.{fmt}", content


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


ENGINE = Engine(settings=Settings())


def check_plan(plan) -> None:
    """The layout invariants of CONTRACT §2 and §3 on one plan."""
    rendered = plan.render()
    as_dict = plan.to_dict()
    json.dumps(as_dict, allow_nan=False)  # the plan JSON is strict JSON
    assert as_dict["fingerprint"] == "sha256:" + hashlib.sha256(rendered.encode("utf-8")).hexdigest()
    assert rendered == "\n\n".join(s.text_after for s in plan.sections if s.text_after)
    count = ENGINE.counter(plan.tokenizer.name).tokenizer.count
    assert plan.tokens_after == count(rendered)
    assert plan.tokens_after == sum(s.tokens_after for s in plan.sections) + plan.joins
    for s in plan.sections:
        if s.critical and s.action != "skipped":
            assert s.action == "kept" and s.text_after == s.text_before and s.tokens_after == s.tokens_before
    if plan.ok:
        assert plan.tokens_after <= plan.budget.available
        assert as_dict["error"] is None
    else:
        assert as_dict["error"]["kind"] == "ContextCriticalOverflow" and not plan.steps


@FUZZ
@given(case=files())
def test_nothing_escapes_but_typed_errors_and_plans_keep_the_invariants(case, workdir):
    name, content = case
    path = workdir / name
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    try:
        session = load_session(path)
        plan = ENGINE.plan(session)
    except BadInput as error:
        assert error.path == str(path)
        text = str(error)
        assert "\n" not in text and "\x1b" not in text
        return
    check_plan(plan)
    again = Engine(settings=Settings()).plan(load_session(path))
    assert again.to_dict() == plan.to_dict() and again.render() == plan.render()


@FUZZ
@given(doc=valid_session(), fmt=st.sampled_from(["yaml", "json", "jsonl"]))
def test_valid_sessions_always_load_and_plan(doc, fmt, workdir):
    """The generator's valid sessions are valid: every format loads them, and the plan is sound."""
    path = workdir / f"valid.{fmt}"
    path.write_text(serialize([doc], fmt), encoding="utf-8")
    check_plan(ENGINE.plan(load_session(path)))
