"""The tokenbox session schema (README, "Session files"): a parsed document validated into a ``Session``.

Every problem is a ``SessionError`` naming the file, line and column, the problem and a remedy.
"""

from __future__ import annotations

import re
from typing import Any

from tokenbox.core.model import kinds
from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.session import (
    BEHAVIOR_KINDS,
    KEEP_ENDS,
    SENSORS,
    TRIMMING_POLICIES,
    Behavior,
    BudgetSpec,
    Calibration,
    Section,
    Session,
    Trimming,
)
from tokenbox.core.parse.lensspec import parse_lens
from tokenbox.core.parse.nodes import Node
from tokenbox.core.parse.validator import Item, Validator, short, type_name, value_of

SCHEMA_VERSION = 1
SESSION_KEYS = (
    "tokenbox", "name", "meta", "model", "tokenizer", "budget", "sensor", "trimming", "context_tokens", "calibration", "sections",
)
CALIBRATION_KEYS = ("method", "scale", "hidden", "turns", "source", "residual")
BUDGET_KEYS = ("max_ctx", "reserve_out", "headroom")
BEHAVIOR_KEYS = ("name", "kind", "activation", "content", "summary", "tags", "meta")
ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
MAX_COUNT = 10**9
MAX_WEIGHT = 10**6

# id(raw section value) -> (raw value, 1-based index, the Section it became)
Reusable = dict[int, tuple[Any, int, Section]]


# ---------------------------------------------------------------- sections


def _section(v: Validator, node: Node, index: int) -> Section:
    if not isinstance(node.value, dict):
        raise v.fail(node, f"section {index} must be a mapping, not {type_name(node.value)}", "write `- id: name` with its keys")
    raw = node.value
    kind = "text"
    if "kind" in raw:
        kind = v.choice(raw["kind"], "section kind", kinds.KINDS)
    fields = v.mapping(node, f"section {index} (kind {kind})", kinds.allowed_keys(kind))
    attrs: dict[str, Any] = dict(kinds.KIND_PRESETS[kind])
    if "id" in fields:
        sid = v.string(fields["id"], "section id")
        if not ID_PATTERN.fullmatch(sid):
            raise v.fail(fields["id"], f"section id {sid!r} has characters outside [A-Za-z0-9_.-]", "use letters, digits, _ . -")
    else:
        sid = f"section-{index}"
    attrs.update(id=sid, kind=kind, line=node.line, col=node.col)
    for key, item in fields.items():
        if key in ("id", "kind"):
            continue
        if key == "priority":
            attrs[key] = v.integer(item, "priority", -MAX_COUNT, MAX_COUNT)
        elif key == "min":
            attrs[key] = v.integer(item, "min", 0, MAX_COUNT)
        elif key in ("grow", "shrink"):
            attrs[key] = v.number(item, key, 0, MAX_WEIGHT)
        elif key == "strategy":
            attrs[key] = _strategy(v, item, kind)
        elif key == "keep":
            attrs[key] = v.choice(item, "keep", KEEP_ENDS)
        elif key in ("summary", "text", "assistant_name", "identity", "feedback", "tools"):
            attrs[key] = v.string(item, key)
        elif key in ("foveal_focus", "scope"):
            attrs[key] = None if value_of(item) is None else v.string(item, key)
        elif key == "memory":
            attrs[key] = v.string_list(item, "memory")
        elif key == "budget":
            attrs[key] = v.integer(item, "behaviors budget", 0, MAX_COUNT)
        elif key == "items":
            attrs[key] = _behaviors(v, item)
        elif key == "tokens":
            attrs[key] = v.integer(item, "inferred tokens", 0, MAX_COUNT)
        elif key == "meta":
            attrs[key] = v.meta(item)
    if kind == "inferred":
        if "tokens" not in fields:
            raise v.fail(node, f"section {sid!r} (kind inferred) has no tokens", "add `tokens: N`, the size of the hidden part")
        if attrs.get("shrink", 0) != 0:
            raise v.fail(fields["shrink"], f"section {sid!r} (kind inferred) cannot shrink", "an inferred part has no text to trim: remove `shrink`")
    if kind in ("text", "user", "logs", "mandates") and "text" not in fields:
        raise v.fail(node, f"section {sid!r} (kind {kind}) has no text", "add `text: ...`; an empty string is allowed")
    return Section(**attrs)


# Strategies already validated, by (specs, kind): the same few are written on many sections.
_STRATEGIES: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}


def _strategy(v: Validator, node: Item, kind: str) -> tuple[str, ...]:
    value = value_of(node)
    specs = (v.string(node, "strategy"),) if isinstance(value, str) else v.string_list(node, "strategy")
    known = _STRATEGIES.get((specs, kind))
    if known is not None:
        return known
    result = []
    for index, spec in enumerate(specs):
        where = value[index] if isinstance(value, list) else node
        try:
            name, _ = parse_lens(spec)
        except SessionError as exc:
            raise exc.located(v.path, *v.where(where)) from None
        if name == "demote" and kind != "behaviors":
            raise v.fail(where, "lens 'demote' works only on sections of kind behaviors", "remove it or change the kind")
        result.append(spec.strip())
    if len(_STRATEGIES) >= 1024:
        _STRATEGIES.clear()
    known = _STRATEGIES[(specs, kind)] = tuple(result)
    return known


def _behaviors(v: Validator, node: Item) -> tuple[Behavior, ...]:
    items = value_of(node)
    if not isinstance(items, list):
        raise v.fail(node, f"items must be a list of behaviours, not {type_name(items)}", "write `- {name: ..., content: ...}`")
    result = []
    seen: dict[str, Item] = {}
    for index, item in enumerate(items, start=1):
        fields = v.mapping(item, f"behaviour {index}", BEHAVIOR_KEYS)
        for required in ("name", "content"):
            if required not in fields:
                raise v.fail(item, f"behaviour {index} has no {required}", f"add `{required}: ...`")
        name = v.string(fields["name"], "behaviour name")
        if name in seen:
            raise v.fail(fields["name"], f"duplicate behaviour name {name!r}", "give each behaviour its own name")
        seen[name] = fields["name"]
        result.append(
            Behavior(
                name=name,
                kind=v.choice(fields["kind"], "behaviour kind", BEHAVIOR_KINDS) if "kind" in fields else "directive",
                activation=v.number(fields["activation"], "activation", 0, 1) if "activation" in fields else 1.0,
                content=v.string(fields["content"], "content"),
                summary=v.string(fields["summary"], "summary") if "summary" in fields else None,
                tags=v.string_list(fields["tags"], "tags") if "tags" in fields else (),
            )
        )
    return tuple(result)


# ---------------------------------------------------------------- sessions


def session_from_node(node: Node, path: str, previous: Reusable | None = None) -> Session:
    """Validate one parsed session object (the whole file, or one line of a ``.jsonl`` log).

    ``previous`` (raw section values and the ``Section`` each became, from an earlier load of the
    same file) lets a section whose raw value is the very same object, at the same index and
    position, be taken as it was: ``nodes.Reuse`` hands unchanged items over by identity.
    """
    v = Validator(path)
    if not isinstance(node.value, dict):
        raise v.fail(node, f"a session must be a mapping, not {type_name(node.value)}", "start the file with `tokenbox: 1`")
    fields = v.mapping(node, "the session", SESSION_KEYS)
    if "tokenbox" not in fields:
        raise v.fail(node, "missing `tokenbox` schema version", "add `tokenbox: 1` at the top")
    version = fields["tokenbox"]
    if type(version.value) is not int or version.value != SCHEMA_VERSION:
        raise v.fail(version, f"unsupported schema version {short(version.value)}", "this tokenbox reads `tokenbox: 1`")
    if "sections" not in fields:
        raise v.fail(node, "missing `sections`", "add `sections:` with a list of sections")
    sections_node = fields["sections"]
    if not isinstance(sections_node.value, list):
        raise v.fail(sections_node, f"sections must be a list, not {type_name(sections_node.value)}", "write `- id: ...` items")
    sections = []
    seen: dict[str, Node] = {}
    for index, item in enumerate(sections_node.value, start=1):
        found = previous.get(id(item.value)) if previous else None
        if (
            found is not None
            and found[0] is item.value
            and found[1] == index
            and found[2].line == item.line
            and found[2].col == item.col
        ):
            section = found[2]
        else:
            section = _section(v, item, index)
        if section.id in seen:
            first = seen[section.id]
            raise v.fail(item, f"duplicate section id {section.id!r} (first at line {first.line})", "give each section its own id")
        seen[section.id] = item
        sections.append(section)
    budget = BudgetSpec()
    if "budget" in fields:
        b = v.mapping(fields["budget"], "budget", BUDGET_KEYS)
        budget = BudgetSpec(
            max_ctx=v.integer(b["max_ctx"], "max_ctx", 1, MAX_COUNT) if "max_ctx" in b else None,
            reserve_out=v.integer(b["reserve_out"], "reserve_out", 0, MAX_COUNT) if "reserve_out" in b else None,
            headroom=v.number(b["headroom"], "headroom", 0, 1, high_open=True) if "headroom" in b else None,
        )
    calibration = _calibration(v, fields["calibration"]) if "calibration" in fields else None
    return Session(
        sections=tuple(sections),
        path=path,
        context_tokens=v.integer(fields["context_tokens"], "context_tokens", 0, MAX_COUNT) if "context_tokens" in fields else None,
        calibration=calibration,
        name=v.string(fields["name"], "name") if "name" in fields else None,
        model=v.string(fields["model"], "model") if "model" in fields else None,
        tokenizer=_tokenizer_name(v, fields["tokenizer"]) if "tokenizer" in fields else None,
        budget=budget,
        sensor=v.choice(fields["sensor"], "sensor", SENSORS) if "sensor" in fields else "user-input",
        trimming=v.choice(fields["trimming"], "trimming policy", TRIMMING_POLICIES) if "trimming" in fields else Trimming.TOKENBOX.value,
        meta=v.meta(fields["meta"]) if "meta" in fields else {},
        line=node.line,
        positions={key: (item.line, item.col) for key, item in fields.items()},
    )


def _tokenizer_name(v: Validator, node: Item) -> str:
    """The session's ``tokenizer``: a name (an empty one is an error, not "no tokenizer")."""
    name = v.string(node, "tokenizer")
    if not name.strip():
        raise v.fail(node, "tokenizer is empty", "name one (`tokenbox tokenizers` lists them) or remove the key")
    return name


def _calibration(v: Validator, node: Item) -> Calibration:
    """``calibration:`` as ``tokenbox import`` writes it (the fitted scale of a real agent's estimates)."""
    c = v.mapping(node, "calibration", CALIBRATION_KEYS)
    if "scale" not in c:
        raise v.fail(node, "calibration has no `scale`", "write `scale: 1.0` (the factor on the estimate)")
    hidden = c.get("hidden")
    turns = c.get("turns")
    return Calibration(
        method=v.string(c["method"], "calibration method") if "method" in c else "",
        scale=float(v.number(c["scale"], "calibration scale", 0.01, 100)),
        hidden=None if hidden is None or value_of(hidden) is None else v.integer(hidden, "calibration hidden", 0, MAX_COUNT),
        turns=tuple(v.integer(t, "calibration turn", 1, MAX_COUNT) for t in value_of(turns) or ()) if turns is not None else (),
        source=v.string(c["source"], "calibration source") if "source" in c else "",
        residual=v.integer(c["residual"], "calibration residual", -MAX_COUNT, MAX_COUNT) if "residual" in c else None,
    )


# Importers register here: (detector, converter). A detector looks at the parsed document and says
