"""Packing a plan into a request body a provider accepts (README, "Inside an agent's loop").

``pack(plan, "anthropic" | "openai")`` turns the layout after trimming back into a Messages or Chat
Completions body:

* system prompt and tool definitions as they were (critical, never trimmed; tools as sent);
* each kept message part as its block, in order; parts the layout cut are sent cut, dropped parts
  are left out; the ``inferred`` part (what a transcript does not hold) and a request's own reply are
  never sent; thinking blocks are left out (the API strips earlier ones anyway);
* tool calls and their results stay in pairs: a call whose result was dropped goes too, and the
  other way round; messages of one role that end up next to each other are merged, so roles
  alternate; when the layout dropped the opening user message, a one-line note stands in for it
  (``[earlier conversation trimmed]``), since the API needs a user message first;
* Anthropic ``cache_control`` marks stay on the blocks that remain (the last four, the API's limit).

A tokenbox session (no provider structure) packs as a system prompt of its critical parts and one
user message of the rest. Packing an OpenAI body as ``anthropic`` (or the reverse) converts text,
tool calls and tool results; other block types are refused with a one-line error.
"""

from __future__ import annotations

import json
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import NATIVE_FORMAT
from tokenbox.core.model.plan import Plan, SectionResult
from tokenbox.core.sources.readers.common import tool_input

FORMATS = ("anthropic", "openai")
MAX_CACHE_MARKS = 4
TRIMMED_NOTE = "[earlier conversation trimmed]"
_NOT_SENT = ("inferred", "reply")


def pack(plan: Plan, fmt: str) -> dict[str, Any]:
    """The trimmed request of ``plan`` as a body in ``fmt`` (``anthropic`` or ``openai``)."""
    if fmt not in FORMATS:
        raise SessionError(f"unknown request format {fmt!r}", f"use one of {', '.join(FORMATS)}", plan.session.path)
    session = plan.session
    if session.source_format == NATIVE_FORMAT:
        return _native(plan, fmt)
    system: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    messages: list[tuple[str, list[dict[str, Any]]]] = []
    current: int | None = None
    for result in plan.sections:
        meta = result.section.meta
        category = meta.get("category")
        if category in _NOT_SENT or result.action == "dropped":
            continue
        if category == "tool":
            definition = meta.get("definition")
            if isinstance(definition, dict):
                tools.append(_tool(definition, fmt, session.path))
            continue
        if category == "system":
            if result.text_after:
                block = {"type": "text", "text": result.text_after}
                if meta.get("cache_control") is not None:
                    block["cache_control"] = meta["cache_control"]
                system.append(block)
            continue
        block = _block(result, session.path)
        if block is None:
            continue
        index = meta.get("message")
        role = "assistant" if meta.get("role") == "assistant" else "user"
        if index != current or not messages:
            messages.append((role, []))
            current = index
        messages[-1][1].append(block)
    messages = _paired(messages)
    body = _request(plan)
    if fmt == "anthropic":
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        body["messages"] = [{"role": role, "content": blocks} for role, blocks in messages]
        _limit_cache_marks(body)
        return body
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": "\n\n".join(b["text"] for b in system)})
    for role, blocks in messages:
        out.extend(_openai_messages(role, blocks))
    body["messages"] = out
    if tools:
        body["tools"] = tools
    return body


def _request(plan: Plan) -> dict[str, Any]:
    settings = plan.session.meta.get("request") if isinstance(plan.session.meta.get("request"), dict) else {}
    body = {k: v for k, v in settings.items() if k in ("model", "max_tokens", "temperature", "stream", "max_completion_tokens")}
    model = plan.session.model or plan.session.meta.get("model")
    if model and "model" not in body:
        body["model"] = model
    return body


def _block(result: SectionResult, path: str) -> dict[str, Any] | None:
    meta = result.section.meta
    kind = meta.get("block")
    text = result.text_after
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind in ("tool_use", "tool_call", "function_call") or (kind or "").endswith("_tool_use"):
        arguments = tool_input(meta)
        if arguments is None and isinstance(meta.get("arguments"), str):
            try:
                arguments = json.loads(meta["arguments"])
            except ValueError:
                arguments = {"arguments": meta["arguments"]}
        return {"type": "tool_use", "id": meta.get("tool_use_id", ""), "name": meta.get("tool") or "tool",
                "input": arguments if isinstance(arguments, dict) else {}}
    if kind in ("tool_result", "tool") or (kind or "").endswith("_tool_result") or meta.get("role") == "tool":
        block = {"type": "tool_result", "tool_use_id": meta.get("tool_use_id", ""), "content": text}
        if meta.get("is_error"):
            block["is_error"] = True
        return block
    if not text:
        return None  # an image or a part with no text of its own cannot be sent from the plan
    block = {"type": "text", "text": text}
    if meta.get("cache_control") is not None:
        block["cache_control"] = meta["cache_control"]
    return block


def _paired(messages: list[tuple[str, list[dict[str, Any]]]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Tool calls and results kept in pairs, same-role neighbours merged, a user message first."""
    calls = {b["id"] for _, blocks in messages for b in blocks if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for _, blocks in messages for b in blocks if b["type"] == "tool_result"}
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for role, blocks in messages:
        kept = [b for b in blocks
                if not (b["type"] == "tool_use" and b["id"] not in results)
                and not (b["type"] == "tool_result" and b["tool_use_id"] not in calls)]
        if not kept:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(kept)
        else:
            out.append((role, kept))
    if out and out[0][0] != "user":
        # the layout dropped the opening user message: the API needs one, so a short note stands in
        out.insert(0, ("user", [{"type": "text", "text": TRIMMED_NOTE}]))
    return out


def _limit_cache_marks(body: dict[str, Any]) -> None:
    marked = [b for b in body.get("system", []) if "cache_control" in b]
    marked += [b for m in body["messages"] for b in m["content"] if isinstance(b, dict) and "cache_control" in b]
    for block in marked[: max(0, len(marked) - MAX_CACHE_MARKS)]:
        del block["cache_control"]


def _tool(definition: dict[str, Any], fmt: str, path: str) -> dict[str, Any]:
    is_openai = "function" in definition or definition.get("type") == "function"
    if fmt == "anthropic" and is_openai:
        function = definition.get("function", definition)
        return {"name": function.get("name"), "description": function.get("description", ""),
                "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
    if fmt == "openai" and is_openai and "function" not in definition:
        # a Responses API function tool is flat; Chat Completions nests it under "function"
        return {"type": "function", "function": {k: v for k, v in definition.items() if k != "type"}}
    if fmt == "openai" and not is_openai:
        if "input_schema" not in definition:
            raise SessionError(f"the server tool {definition.get('name')!r} has no OpenAI equivalent",
                               "pack this request with --format anthropic", path)
        return {"type": "function", "function": {"name": definition["name"], "description": definition.get("description", ""),
                                                 "parameters": definition["input_schema"]}}
    return definition


def _openai_messages(role: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if role == "assistant":
        text = "\n\n".join(b["text"] for b in blocks if b["type"] == "text")
        calls = [{"id": b["id"], "type": "function",
                  "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
                 for b in blocks if b["type"] == "tool_use"]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return [message]
    out = [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]} for b in blocks if b["type"] == "tool_result"]
    text = "\n\n".join(b["text"] for b in blocks if b["type"] == "text")
    if text:
        out.append({"role": "user", "content": text})
    return out


def _native(plan: Plan, fmt: str) -> dict[str, Any]:
    system = [s.text_after for s in plan.sections if s.text_after and s.critical and s.section.kind != "user"]
    user = [s.text_after for s in plan.sections if s.text_after and not (s.critical and s.section.kind != "user")]
    body: dict[str, Any] = {}
    if plan.session.model:
        body["model"] = plan.session.model
    content = "\n\n".join(user) or "(empty)"
    if fmt == "anthropic":
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = [{"role": "user", "content": content}]
        body["max_tokens"] = plan.budget.reserve_out or 1024
        return body
    body["messages"] = ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + [{"role": "user", "content": content}]
    return body
