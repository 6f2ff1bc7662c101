"""Anthropic Messages API request bodies: ``system`` (a string or text blocks), ``tools``, ``messages``.

Content blocks become the text that stands for them: ``text`` and ``thinking`` as written, tool calls
(``tool_use``, ``server_tool_use``, ``mcp_tool_use``) as ``[tool_use NAME]`` plus their input as compact
JSON, tool results (``tool_result`` and every ``*_tool_result``) as their content, ``search_result``
and text documents as their text, and binary media (images, PDFs, redacted thinking) as a one-line
placeholder naming what was there. Block types this module does not know are kept as their compact
JSON (category ``other``), so a newer API never breaks an import. ``cache_control`` marks are kept in
the section's meta and in its id (``….cache``): that is where the provider's cached prefix ends, in
Anthropic's prefix order (tools, system, messages), which the sections follow.

The request body records no usage, so ``Session.recorded`` is ``None``; ``max_tokens`` becomes
``budget.reserve_out`` (when the model's window is known). Claude's tokenizer is not public: the
session names the approximation ``heuristic`` (overridable with ``--tokenizer``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.session import Section, Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers import images
from tokenbox.core.sources.readers.common import (
    CALL,
    MEDIA,
    OTHER,
    RESULT,
    TEXT,
    THINKING,
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
    link_tool_names,
    opt_int,
    opt_str,
    pick_model,
    request_format,
    request_settings,
    reserve_for,
    tool_text,
)

SOURCE = "anthropic-messages"


def detect(node: Node) -> bool:
    """Whether a parsed document is an Anthropic Messages request body (by content)."""
    return request_format(node) == SOURCE


# Tokens of the system prompt the API adds when a request has tools, by model and ``tool_choice``
# (auto/none, any/tool), as Anthropic publishes them ("Tool use system prompt token count"). Model ids
# are matched by their longest listed prefix.
TOOL_SYSTEM_PROMPT: dict[str, tuple[int, int]] = {
    "claude-opus-4-8": (290, 410),
    "claude-opus-4-7": (675, 804),
    "claude-opus-4-6": (497, 589),
    "claude-opus-4-5": (496, 588),
    "claude-opus-4-1": (313, 315),
    "claude-opus-4": (313, 315),
    "claude-sonnet-5": (354, 474),
    "claude-sonnet-4-6": (497, 589),
    "claude-sonnet-4-5": (496, 588),
    "claude-sonnet-4": (313, 315),
    "claude-haiku-4-5": (496, 588),
    "claude-3-7-sonnet": (346, 313),
    "claude-3-5-sonnet-20241022": (346, 313),
    "claude-3-5-sonnet": (294, 261),
    "claude-3-5-haiku": (264, 355),
    "claude-3-opus": (530, 281),
    "claude-3-sonnet": (159, 235),
    "claude-3-haiku": (264, 340),
}


def tool_prompt_tokens(model: str | None, tool_choice: Any, has_tools: bool) -> int | None:
    """The published size of the tool-use system prompt for ``model`` (``None`` for an unknown model)."""
    choice = tool_choice.get("type") if isinstance(tool_choice, dict) else tool_choice
    if not has_tools:
        return 0
    if not isinstance(model, str):
        return None
    key = max((k for k in TOOL_SYSTEM_PROMPT if model.startswith(k)), key=len, default=None)
    if key is None:
        return None
    auto, forced = TOOL_SYSTEM_PROMPT[key]
    return forced if choice in ("any", "tool") else auto


def convert(node: Node, path: str) -> list[Session]:
    """The request as one turn, with the tool-use system prompt the API adds (Anthropic's published size)."""
    return [with_tool_prompt(build_session(conversation(node, path), path), node.plain())]


def with_tool_prompt(session: Session, body: dict[str, Any]) -> Session:
    """``session`` with the tool-use system prompt the API adds for ``body`` (Anthropic's published size)."""
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    size = tool_prompt_tokens(body.get("model"), body.get("tool_choice"), bool(tools))
    if size:
        added = Section(
            id="tool_use_system_prompt", kind="text", priority=0, shrink=0, tokens=size, text="",
            meta={"category": "system", "role": "system", "source": SOURCE,
                  "label": f"tool-use system prompt (added by the API: {size} tokens, Anthropic's published size)"},
        )
        # after the tool definitions (the API's prefix order is tools, system, messages)
        count = sum(1 for x in session.sections if x.meta.get("category") == "tool")
        session = replace(session, sections=(*session.sections[:count], added, *session.sections[count:]))
    elif size is None:
        session = replace(session, warnings=(f"the tool-use system prompt of model {body.get('model')!r} has no "
                                             "published size; it is not counted",))
    return session


def conversation(node: Node, path: str) -> Conversation:
    """Read a request body into the neutral model (errors carry the file position)."""
    fields = as_dict(node, path, "the request body")
    model = opt_str(fields, "model")
    session_model, tokenizer = pick_model(model)
    if "messages" not in fields:
        raise fail(node, path, "the request has no `messages`", "an Anthropic Messages request lists its messages")
    conv = Conversation(SOURCE, tools_first=True, model=session_model, tokenizer=tokenizer, line=node.line,
                        window=resolve_window(model))
    if "system" in fields:
        conv.system = system_blocks(fields["system"], path)
    if "tools" in fields and fields["tools"].value is not None:
        conv.tools = [tool_def(item, path, index) for index, item in enumerate(as_list(fields["tools"], path, "tools"))]
    for index, item in enumerate(as_list(fields["messages"], path, "messages")):
        conv.messages.append(message(item, path, index))
    link_tool_names(conv.messages)
    conv.reserve_out = reserve_for(session_model, opt_int(fields, "max_tokens"))
    conv.name = f"Anthropic Messages request ({model or 'no model'}, {len(conv.messages)} messages)"
    conv.meta = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "request": request_settings(fields)}
    return conv


def system_blocks(node: Node, path: str) -> list[Block]:
    """``system`` as a string (one block) or a list of text blocks."""
    if node.value is None:
        return []
    if isinstance(node.value, str):
        return [Block("text", TEXT, node.value, meta={"path": "system"}, line=node.line, col=node.col)]
    blocks = []
    for index, item in enumerate(as_list(node, path, "system")):
        block = content_block(item, path)
        block.meta["path"] = f"system[{index}]"
        blocks.append(block)
    return blocks


def tool_def(node: Node, path: str, index: int) -> ToolDef:
    """One tool definition: custom (name, description, input_schema) or a server tool (type, name, …)."""
    fields = as_dict(node, path, f"tools[{index}]")
    name = as_str(fields["name"], path, "a tool's name") if "name" in fields else None
    value = node.plain()
    if name is None:
        name = value.get("type") if isinstance(value.get("type"), str) else f"tool{index}"
    description = value.get("description") if isinstance(value.get("description"), str) else None
    extra = [(k, v) for k, v in value.items() if k not in ("name", "description", "cache_control")]
    meta: dict[str, Any] = {"path": f"tools[{index}]"}
    if isinstance(value.get("type"), str):
        meta["type"] = value["type"]
    meta["definition"] = {k: v for k, v in value.items() if k != "cache_control"}  # as sent, for packing
    return ToolDef(name, tool_text(name, description, extra), meta, value.get("cache_control"), node.line, node.col)


def message(node: Node, path: str, index: int) -> Message:
    """One message: ``role`` and ``content`` (a string or a list of blocks)."""
    fields = as_dict(node, path, f"messages[{index}]")
    if "role" not in fields:
        raise fail(node, path, f"messages[{index}] has no `role`", "each message names its role: user or assistant")
    role = as_str(fields["role"], path, "a message's role")
    if "content" not in fields:
        raise fail(node, path, f"messages[{index}] has no `content`", "each message has content: a string or a list of blocks")
    blocks = message_blocks(fields["content"], path, f"messages[{index}].content")
    return Message(role, blocks, index, line=node.line, col=node.col)


def message_blocks(node: Node, path: str, where: str) -> list[Block]:
    """A message's content: a string (one text block) or a list of content blocks."""
    if isinstance(node.value, str):
        return [Block("text", TEXT, node.value, meta={"path": where}, line=node.line, col=node.col)]
    return content_parts(node, path, where, content_block)


def content_block(node: Node, path: str) -> Block:
    """One content block rendered to text; unknown types are kept as compact JSON (role ``other``)."""
    fields = as_dict(node, path, "a content block")
    type_node = fields.get("type")
    if type_node is None or not isinstance(type_node.value, str):
        raise fail(
            node, path, "a content block has no `type`", 'write blocks as objects with a type, e.g. {"type": "text", "text": "…"}'
        )
    if type_node.value == "text" and "text" in fields:
        as_str(fields["text"], path, "a text block's text")
    return plain_block(node.plain(), node.line, node.col)


def plain_block(value: dict[str, Any], line: int = 0, col: int = 0) -> Block:
    """A content block given as plain JSON values (a transcript line read with ``json.loads``)."""
    btype = value["type"]
    cache = value.get("cache_control")
    meta: dict[str, Any] = {}
    if btype == "text":
        text = value.get("text")
        text = text if isinstance(text, str) else compact(text) if text is not None else ""
        if isinstance(value.get("citations"), list) and value["citations"]:
            meta["citations"] = len(value["citations"])
        return Block(btype, TEXT, text, None, meta, cache, line, col)
    if btype == "thinking":
        text = value.get("thinking") if isinstance(value.get("thinking"), str) else ""
        return Block(btype, THINKING, text, None, meta, cache, line, col)
    if btype == "redacted_thinking":
        data = value.get("data")
        size = len(data) if isinstance(data, str) else 0
        return Block(btype, THINKING, f"[redacted thinking: {size} characters of encrypted data]", None, meta, cache, line, col)
    if btype in ("image", "document"):
        size = images.block_size(value) if btype == "image" else None
        if size is not None:
            meta["width"], meta["height"] = size
            meta["tokens"] = images.anthropic_tokens(*size)
        return Block(btype, MEDIA, media_text(btype, value), None, meta, cache, line, col)
    if btype == "search_result":
        return Block(btype, RESULT, search_result_text(value), None, meta, cache, line, col)
    if btype == "tool_use" or btype.endswith("_tool_use"):
        name = value.get("name") if isinstance(value.get("name"), str) else btype
        if isinstance(value.get("id"), str):
            meta["tool_use_id"] = value["id"]
        if isinstance(value.get("server_name"), str):
            meta["server_name"] = value["server_name"]
        meta["tool_input"] = value.get("input", {})
        text = call_text(btype, name, value.get("input", {}))
        return Block(btype, CALL, text, name, meta, cache, line, col)
    if btype == "tool_result" or btype.endswith("_tool_result"):
        if isinstance(value.get("tool_use_id"), str):
            meta["tool_use_id"] = value["tool_use_id"]
        if value.get("is_error") is True:
            meta["is_error"] = True
        content = value.get("content")
        if isinstance(content, list):
            sizes = [images.block_size(item) for item in content if isinstance(item, dict) and item.get("type") == "image"]
            image_tokens = sum(images.anthropic_tokens(*s) for s in sizes if s is not None)
            if image_tokens:
                meta["image_tokens"] = image_tokens
        return Block(btype, RESULT, result_text(content), None, meta, cache, line, col)
    meta["unknown"] = True
    body = {k: v for k, v in value.items() if k != "cache_control"}
    return Block(btype, OTHER, compact(body), None, meta, cache, line, col)


def call_text(btype: str, name: str, arguments: Any) -> str:
    """A tool call as text: a ``[tool_use NAME]`` line, then each argument as ``key: value`` with string
    values as written (a command reads as the command), other values as compact JSON."""
    lines = [f"[{btype} {name}]"]
    if isinstance(arguments, dict):
        for key, item in arguments.items():
            lines.append(f"{key}: {item if isinstance(item, str) else compact(item)}")
    else:
        lines.append(compact(arguments))
    return "\n".join(lines)


def result_text(content: Any) -> str:
    """A tool result's content: a string, or blocks (text as written, media as placeholders)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_inner_block_text(item) for item in content)
    return compact(content)


def _inner_block_text(item: Any) -> str:
    if isinstance(item, dict):
        btype = item.get("type")
        if btype == "text" and isinstance(item.get("text"), str):
            return item["text"]
        if btype in ("image", "document"):
            return media_text(btype, item)
        if btype == "search_result":
            return search_result_text(item)
    if isinstance(item, str):
        return item
    return compact(item)


def media_text(kind: str, value: dict[str, Any]) -> str:
    """An image or document: text documents as their text, binary data as a one-line placeholder."""
    source = value.get("source")
    head = [value[k] for k in ("title", "context") if isinstance(value.get(k), str)]
    body = f"[{kind}]"
    if isinstance(source, dict):
        stype = source.get("type")
        if stype == "text" and isinstance(source.get("data"), str):
            body = source["data"]
        elif stype == "content":
            body = result_text(source.get("content"))
        elif stype == "base64":
            data = source.get("data")
            size = len(data) if isinstance(data, str) else 0
            body = f"[{kind}: {source.get('media_type', 'unknown type')}, base64, {size} characters]"
        elif stype == "url":
            body = f"[{kind}: {source.get('url', '')}]"
        elif stype == "file":
            body = f"[{kind}: file {source.get('file_id', '')}]"
    return "\n".join([*head, body])


def search_result_text(value: dict[str, Any]) -> str:
    head = [value[k] for k in ("title", "source") if isinstance(value.get(k), str)]
    return "\n".join([*head, result_text(value.get("content"))])
