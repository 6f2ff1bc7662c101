"""OpenAI Chat Completions request bodies: ``messages`` (system, developer, user, assistant with
``tool_calls``, tool, and the legacy function role) and ``tools`` (or the legacy ``functions``).

The leading system/developer messages are the critical prefix, followed by one critical section per
tool; the rest of the conversation follows the common layout rules. Text parts are kept as written,
``refusal`` parts as their text, each tool call as ``[tool_call NAME]`` plus its ``arguments`` string
as sent, media parts (images, audio, files) as one-line placeholders, unknown parts as compact JSON.

Models in the built-in table get their exact tokenizer (``o200k_base`` or ``cl100k_base``); the count
is exact for the rendered sections (the provider's per-message framing tokens are not part of them).
A model the table does not know gets the named approximation ``heuristic``.
"""

from __future__ import annotations

import os
from typing import Any

from tokenbox.core.model.errors import TokenizerError
from tokenbox.core.model.llms import lookup_model, resolve_window
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import Calibration, Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers.common import (
    CALL,
    MEDIA,
    OTHER,
    RESULT,
    TEXT,
    Block,
    Conversation,
    Message,
    ToolDef,
    as_dict,
    as_list,
    as_str,
    build_session,
    compact,
    content_parts,
    fail,
    inferred_section,
    link_tool_names,
    opt_int,
    opt_str,
    pick_model,
    request_format,
    request_settings,
    reserve_for,
    tool_text,
)
from tokenbox.core.sources.readers.openai_framing import functions_text, prompt_tokens
from tokenbox.core.tokens.tokenizers import default_registry

SOURCE = "openai-chat"
_SYSTEM_ROLES = ("system", "developer")


def detect(node: Node) -> bool:
    """Whether a parsed document is an OpenAI Chat Completions request body (by content)."""
    return request_format(node) == SOURCE


def convert(node: Node, path: str) -> list[Session]:
    """The request as one turn, its headline the prompt tokens the API counts (framing included)."""
    session = build_session(conversation(node, path), path)
    return [with_framing(session, node.plain())]


def with_framing(session: Session, body: dict[str, Any]) -> Session:
    """``session`` with the API's message and tool framing as a sized part, so that its headline is the
    request's prompt tokens as OpenAI counts them (README, "Real agents"). Models without a public tokenizer keep
    the estimate."""
    if session.model is None:
        return session
    try:
        name = lookup_model(session.model).tokenizer
        tokenizer = default_registry().get(name) if name else None
    except TokenizerError:
        return session
    if tokenizer is None or not tokenizer.exact:
        return session
    target, warnings = prompt_tokens(body, tokenizer.count)
    target += sum(s.tokens for s in session.sections if s.tokens)  # parts of a fixed size (reasoning items)
    framing = inferred_section(0, "message and tool framing (as the API counts it)")
    method = ("OpenAI Chat framing: 3 tokens per message and 1 per name, 3 priming the reply, tools written as a "
              "TypeScript namespace plus 9; the framing part is what the sections' exact counts leave of that total")
    return replace(
        session,
        sections=(framing, *session.sections),
        context_tokens=target,
        calibration=Calibration(method, 1.0, None),
        warnings=(*session.warnings, *warnings),
    )


def conversation(node: Node, path: str) -> Conversation:
    """Read a request body into the neutral model (errors carry the file position)."""
    fields = as_dict(node, path, "the request body")
    model = opt_str(fields, "model")
    session_model, tokenizer = pick_model(model)
    conv = Conversation(SOURCE, model=session_model, tokenizer=tokenizer, line=node.line,
                        window=resolve_window(model))
    items = as_list(fields["messages"], path, "messages")
    leading = True
    for index, item in enumerate(items):
        msg = message(item, path, index)
        if leading and msg.role in _SYSTEM_ROLES:
            for block in msg.blocks:
                block.meta["role"] = msg.role
            conv.system.extend(msg.blocks)
            continue
        leading = False
        conv.messages.append(msg)
    for key in ("tools", "functions"):
        if key in fields and fields[key].value is not None:
            for index, tool in enumerate(as_list(fields[key], path, key)):
                conv.tools.append(tool_def(tool, path, key, index))
    link_tool_names(conv.messages)
    limit = opt_int(fields, "max_completion_tokens")
    conv.reserve_out = reserve_for(session_model, limit if limit is not None else opt_int(fields, "max_tokens"))
    conv.name = f"OpenAI Chat Completions request ({model or 'no model'}, {len(items)} messages)"
    meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "request": request_settings(fields)}
    if model and session_model is None:
        meta["model"] = model
    conv.meta = meta
    return conv


def tool_def(node: Node, path: str, key: str, index: int) -> ToolDef:
    """``{"type": "function", "function": {...}}``, ``{"type": "custom", "custom": {...}}`` or a legacy function."""
    as_dict(node, path, f"{key}[{index}]")
    value = node.plain()
    inner = value
    for wrapper in ("function", "custom"):
        if isinstance(value.get(wrapper), dict):
            inner = value[wrapper]
            break
    name = inner.get("name")
    if not isinstance(name, str):
        raise fail(node, path, f"{key}[{index}] has no name", 'write {"type": "function", "function": {"name": …}}')
    description = inner.get("description") if isinstance(inner.get("description"), str) else None
    meta: dict[str, Any] = {"path": f"{key}[{index}]"}
    if isinstance(value.get("type"), str):
        meta["type"] = value["type"]
    if isinstance(inner.get("parameters", {}), dict) and value.get("type", "function") == "function":
        # as the API writes it into the prompt: a TypeScript type in the `functions` namespace
        text = functions_text([inner]).removeprefix("namespace functions {\n\n").removesuffix("\n\n} // namespace functions")
    else:
        extra = [(k, v) for k, v in inner.items() if k not in ("name", "description")]
        text = tool_text(name, description, extra)
    meta["definition"] = value  # as sent, for packing
    return ToolDef(name, text, meta, None, node.line, node.col)


def message(node: Node, path: str, index: int) -> Message:
    """One chat message with its content parts, refusal, tool calls and audio as blocks."""
    fields = as_dict(node, path, f"messages[{index}]")
    if "role" not in fields:
        raise fail(
            node,
            path,
            f"messages[{index}] has no `role`",
            "each message names its role: system, developer, user, assistant or tool",
        )
    role = as_str(fields["role"], path, "a message's role")
    where = f"messages[{index}]"
    blocks: list[Block] = []
    result = role in ("tool", "function")
    content = fields.get("content")
    if content is not None and content.value is not None:
        blocks.extend(_content(content, path, f"{where}.content", result))
    elif result:
        blocks.append(Block("tool_result", RESULT, "", meta={"path": f"{where}.content"}, line=node.line, col=node.col))
    if result and blocks:
        merged = Block(
            "tool_result",
            RESULT,
            "\n".join(b.text for b in blocks),
            meta={"path": f"{where}.content"},
            line=blocks[0].line,
            col=blocks[0].col,
        )
        call_id = opt_str(fields, "tool_call_id")
        if call_id is not None:
            merged.meta["tool_use_id"] = call_id
        if role == "function" and opt_str(fields, "name"):
            merged.tool = opt_str(fields, "name")
        blocks = [merged]
    refusal = opt_str(fields, "refusal")
    if refusal:
        blocks.append(
            Block(
                "refusal",
                TEXT,
                refusal,
                meta={"path": f"{where}.refusal"},
                line=fields["refusal"].line,
                col=fields["refusal"].col,
            )
        )
    if "tool_calls" in fields and fields["tool_calls"].value is not None:
        for k, call in enumerate(as_list(fields["tool_calls"], path, f"{where}.tool_calls")):
            blocks.append(_tool_call(call, path, f"{where}.tool_calls[{k}]"))
    if "function_call" in fields and fields["function_call"].value is not None:
        blocks.append(_tool_call(fields["function_call"], path, f"{where}.function_call", legacy=True))
    audio = fields.get("audio")
    if audio is not None and isinstance(audio.value, dict):
        audio_id = audio.plain().get("id", "")
        blocks.append(
            Block("audio", MEDIA, f"[audio: {audio_id}]", meta={"path": f"{where}.audio"}, line=audio.line, col=audio.col)
        )
    meta = {"name": fields["name"].value} if role != "function" and opt_str(fields, "name") else {}
    return Message(role, blocks, index, meta, node.line, node.col)


def _content(node: Node, path: str, where: str, result: bool) -> list[Block]:
    if isinstance(node.value, str):
        return [
            Block(
                "tool_result" if result else "text",
                RESULT if result else TEXT,
                node.value,
                meta={"path": where},
                line=node.line,
                col=node.col,
            )
        ]
    return content_parts(node, path, where, _part)


def _part(node: Node, path: str) -> Block:
    fields = as_dict(node, path, "a content part")
    value = node.plain()
    kind = value.get("type")
    if not isinstance(kind, str):
        raise fail(node, path, "a content part has no `type`", 'write parts as {"type": "text", "text": "…"}')
    if kind == "text":
        text = as_str(fields["text"], path, "a text part's text") if "text" in fields else ""
        return Block(kind, TEXT, text, line=node.line, col=node.col)
    if kind == "refusal":
        return Block(kind, TEXT, str(value.get("refusal", "")), line=node.line, col=node.col)
    if kind in ("image_url", "input_audio", "file"):
        return Block(kind, MEDIA, _media_text(kind, value.get(kind)), line=node.line, col=node.col)
    return Block(kind, OTHER, compact(value), meta={"unknown": True}, line=node.line, col=node.col)


def _media_text(kind: str, value: Any) -> str:
    if not isinstance(value, dict):
        return f"[{kind}]"
    if kind == "image_url":
        url = value.get("url", "")
        if isinstance(url, str) and url.startswith("data:"):
            media_type = url[5:].split(";", 1)[0].split(",", 1)[0] or "unknown type"
            return f"[image: {media_type}, data URL, {len(url)} characters]"
        detail = f", detail {value['detail']}" if isinstance(value.get("detail"), str) else ""
        return f"[image: {url}{detail}]"
    if kind == "input_audio":
        data = value.get("data")
        return f"[audio: {value.get('format', 'unknown format')}, base64, {len(data) if isinstance(data, str) else 0} characters]"
    name = value.get("filename") or value.get("file_id") or "inline data"
    return f"[file: {name}]"


def _tool_call(node: Node, path: str, where: str, *, legacy: bool = False) -> Block:
    as_dict(node, path, where)
    value = node.plain()
    inner = value if legacy else value.get("function") or value.get("custom") or {}
    if not isinstance(inner, dict):
        raise fail(
            node, path, f"{where} has no function", 'write {"type": "function", "function": {"name": …, "arguments": "…"}}'
        )
    name = inner.get("name") if isinstance(inner.get("name"), str) else "function"
    arguments = inner.get("arguments", inner.get("input", ""))
    if not isinstance(arguments, str):
        arguments = compact(arguments)
    meta: dict[str, Any] = {"path": where, "arguments": arguments}  # pack rebuilds the call's input from it
    if isinstance(value.get("id"), str):
        meta["tool_use_id"] = value["id"]
    return Block("tool_call", CALL, f"[tool_call {name}]\n{arguments}", name, meta, None, node.line, node.col)
