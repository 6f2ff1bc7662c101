"""Write a ``Session`` as a tokenbox session file (YAML), so imported layouts can be edited by hand.

``session_yaml(session)`` gives a YAML document that ``load_session`` reads back into the same
sections (same ids, kinds, layout attributes, texts and meta) and so the same plan fingerprint.
Multi-line texts are written as block scalars where YAML allows it; a comment header says where the
session came from. The provider's recorded usage has no place in the session schema, so it is kept
under ``meta.recorded`` (informational: plans of the exported file carry no ``recorded`` field).
"""

from __future__ import annotations

from typing import Any

import yaml
from tokenbox.core.model.names import MAIN_THREAD, NATIVE_FORMAT
from tokenbox.core.model.session import Section, Session
from tokenbox.core.model.textsafe import printable
from tokenbox.core.sources import yamlwrite
from tokenbox.core.sources.readers.common import HeldInput, tool_input

FORMAT_LABELS = {
    "claude-code": "Claude Code transcript",
    "inferred": "inferred",
    "anthropic-messages": "Anthropic Messages request",
    "openai-chat": "OpenAI Chat Completions request",
    "tokenbox": "tokenbox session",
}
_TEXT_KINDS = ("text", "user", "logs", "mandates")
_WIDTH = 120


class _Flow(list):
    """A list written in flow style (``[a, b]``): lens pipelines, tags."""


class _Dumper(yaml.SafeDumper):
    """Safe dumper: block scalars for multi-line strings, no anchors/aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted style by itself when a block scalar cannot hold the text exactly,
    # but with allow_unicode it writes NEL unescaped in single quotes, where it reads back as a space:
    # texts with Unicode line breaks are double-quoted, which escapes them.
    if any(ch in value for ch in _UNICODE_BREAKS):
        style = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_flow(dumper: yaml.SafeDumper, value: _Flow) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(value), flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Flow, _represent_flow)


def _number(value: float) -> int | float:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def header(session: Session) -> str:
    """The comment lines above the document: source, turn, recorded usage, tokenizer, what to edit."""
    label = FORMAT_LABELS.get(session.source_format, session.source_format)
    lines = [f"tokenbox session written from {printable(session.path)} ({printable(label)})"]
    meta = session.meta
    if session.turn_count > 1 or session.source_format == "claude-code":
        where = f"turn {session.turn} of {session.turn_count}"
        if isinstance(meta.get("message_id"), str):
            where += f": assistant request {printable(meta['message_id'], 80)}"
        if isinstance(meta.get("line"), int):
            where += f", line {meta['line']}"
        if session.thread != MAIN_THREAD:
            where += f" (thread {printable(session.thread, 80)})"
        if session.pending:
            where += " (pending: the request about to be sent)"
        lines.append(where)
    r = session.recorded
    if r is not None:
        lines.append(
            f"recorded usage: context {r.context_tokens} tokens = input {r.input_tokens} + cache write "
            f"{r.cache_creation_input_tokens} + cache read {r.cache_read_input_tokens}; output {r.output_tokens}"
        )
    elif session.source_format != NATIVE_FORMAT:
        lines.append("recorded usage: none in the file")
    if isinstance(meta.get("not_recorded"), str):
        lines.append(f"not in the file: {printable(meta['not_recorded'])}")
    if session.tokenizer == "heuristic":
        lines.append("tokenizer: heuristic, an approximation (Claude's tokenizer is not public); --tokenizer overrides it")
    elif session.tokenizer == "claude-estimate":
        lines.append("tokenizer: claude-estimate, an approximation calibrated to the recorded usage (`calibration`); "
                     "--tokenizer overrides it")
    lines.append("edit priority, shrink, strategy, keep and min by hand; `tokenbox plan` reads this file")
    return "".join(f"# {line}\n" for line in lines)


def session_document(session: Session) -> dict[str, Any]:
    """The session as plain data in the session-file schema (keys in the documented order)."""
    doc: dict[str, Any] = {"tokenbox": 1}
    if session.name is not None:
        doc["name"] = session.name
    meta = dict(session.meta)
    if session.recorded is not None:
        meta["recorded"] = session.recorded.to_dict()
    if meta:
        doc["meta"] = meta
    if session.model is not None:
        doc["model"] = session.model
    if session.tokenizer is not None:
        doc["tokenizer"] = session.tokenizer
    budget = {
        key: _number(value)
        for key, value in (
            ("max_ctx", session.budget.max_ctx),
            ("reserve_out", session.budget.reserve_out),
            ("headroom", session.budget.headroom),
        )
        if value is not None
    }
    if budget:
        doc["budget"] = budget
    doc["sensor"] = session.sensor
    doc["trimming"] = session.trimming
    if session.context_tokens is not None:
        doc["context_tokens"] = session.context_tokens
    if session.calibration is not None:
        doc["calibration"] = session.calibration.to_dict()
    doc["sections"] = [section_document(s) for s in session.sections]
    return doc


def section_document(section: Section) -> dict[str, Any]:
    """One section with every layout attribute spelled out (so they can be edited), content last."""
    doc: dict[str, Any] = {
        "id": section.id,
        "kind": section.kind,
        "priority": section.priority,
        "shrink": _number(section.shrink),
        "strategy": _Flow(section.strategy),
        "keep": section.keep,
    }
    if section.min:
        doc["min"] = section.min
    if section.grow:
        doc["grow"] = _number(section.grow)
    if section.summary is not None:
        doc["summary"] = section.summary
    if section.meta:
        doc["meta"] = dict(section.meta)  # (a transcript's section keeps a ``SectionMeta``: written as the dict it is)
        if isinstance(section.meta.get("tool_input"), HeldInput):  # a followed transcript's call: its input as read
            doc["meta"] = {**section.meta, "tool_input": tool_input(section.meta)}
    if section.tokens is not None:
        doc["tokens"] = section.tokens
    kind = section.kind
    if kind in _TEXT_KINDS:
        doc["text"] = section.text or ""
    elif kind == "prefix":
        for key in ("assistant_name", "identity", "feedback", "tools"):
            if getattr(section, key):
                doc[key] = getattr(section, key)
    elif kind == "context":
        if section.foveal_focus is not None:
            doc["foveal_focus"] = section.foveal_focus
        if section.scope is not None:
            doc["scope"] = section.scope
        if section.memory:
            doc["memory"] = list(section.memory)
        if section.text is not None:
            doc["text"] = section.text
    elif kind == "behaviors":
        if section.budget is not None:
            doc["budget"] = section.budget
        doc["items"] = [_behavior(b) for b in section.items]
    return doc


def _behavior(item: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": item.name, "kind": item.kind, "activation": item.activation, "content": item.content}
    if item.summary is not None:
        doc["summary"] = item.summary
    if item.tags:
        doc["tags"] = _Flow(item.tags)
    return doc


def session_yaml(session: Session) -> str:
    """The session as a commented tokenbox YAML file.

    Written by ``yamlwrite`` (PyYAML's bytes in linear time); a document outside its shapes by PyYAML.
    """
    document = session_document(session)
    body = yamlwrite.dump(document, _Flow)
    if body is not None:
        return header(session) + body
    body = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=_WIDTH,
        default_flow_style=False,
    )
    return header(session) + body
