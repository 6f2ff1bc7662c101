"""OpenAI Responses API request bodies: ``instructions``, ``input`` (a string or a list of items) and ``tools``.

Input items become blocks of the neutral model: ``message`` items (roles system, developer, user,
assistant; parts ``input_text``, ``output_text``, ``refusal``, images and files) as text or one-line
media placeholders; ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` as
``[tool_call NAME]`` plus the arguments as sent; their ``*_output`` items as tool results (linked by
``call_id``); ``reasoning`` items as their visible text (summary and reasoning text) — an
``encrypted_content`` the model reads but nobody else can is not counted, and the block says so in its
meta (``encrypted_chars``, ``approximate``). Any other item is kept as its compact JSON (``other``).

``item_message`` is shared with the Codex rollout reader, whose ``response_item`` lines are these
same items. The leading system/developer messages and ``instructions`` are the critical prefix.
"""

from __future__ import annotations

import math
import os
from typing import Any

from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import Node
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
    build_session,
    compact,
    content_parts,
    fail,
    link_tool_names,
    opt_int,
    opt_str,
    pick_model,
    reserve_for,
    tool_text,
)
from tokenbox.core.sources.readers.openai_chat import with_framing
from tokenbox.core.sources.readers.openai_framing import chat_view

SOURCE = "openai-responses"
# Characters of ``encrypted_content`` per reasoning token (≈): 6.9 and 5.3 on recorded pairs (pydantic-ai cassettes)
REASONING_CHARS = 6.0
_SYSTEM_ROLES = ("system", "developer")
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output")
# Items the model produced (its side of the conversation); everything else is input.
OUTPUT_ITEM_TYPES = ("reasoning", "web_search_call", "image_generation_call", "code_interpreter_call",
                     "file_search_call", "computer_call", "mcp_call", *CALL_TYPES)
_RESPONSES_KEYS = ("instructions", "previous_response_id", "max_output_tokens", "reasoning", "text",
                   "store", "include", "truncation", "parallel_tool_calls", "tool_choice", "conversation")


def detect(node: Node) -> bool:
    """Whether a parsed document is a Responses API request body: ``input`` and no ``messages``."""
    value = node.value if isinstance(node, Node) else None
    if not isinstance(value, dict) or "tokenbox" in value or "messages" in value or "input" not in value:
        return False
    inner = value["input"].value
    if not isinstance(inner, (str, list)):
        return False
    return "model" in value or any(key in value for key in _RESPONSES_KEYS)


def convert(node: Node, path: str) -> list[Session]:
    """The request as one turn (its reasoning items sized, or left out before the last user input)."""
    conv = conversation(node, path)
    session = build_session(conv, path)
    notes = []
    strip = session.meta.get("stripped_thinking", 0)
    counted = [b for m in conv.messages for b in m.blocks if b.meta.get("sized_from") == "encrypted length"]
    if counted and len(counted) > strip:
        note = reasoning_note(conv.messages)
        if note:
            notes.append(note)
    replays = sorted({b.type for m in conv.messages for b in m.blocks if b.type in SERVER_CALLS})
    if replays:
        notes.append(f"{', '.join(replays)} items: what those tools returned is kept by the provider and counted as input, "
                     "and is not in the body")
    session = replace(session, warnings=(*session.warnings, *notes)) if notes else session
    # the message and tool framing, as the Chat API counts it (the same models, the same rule)
    framed = with_framing(session, chat_view(node.plain()))
    return [replace(framed, calibration=None if framed.calibration is None else
                    replace(framed.calibration, method=framed.calibration.method.replace("OpenAI Chat framing",
                                                                                          "OpenAI framing (Responses input as Chat messages)")))]


# Hosted tools whose results the provider keeps and counts on the next request, without the body holding them.
SERVER_CALLS = ("web_search_call", "code_interpreter_call", "file_search_call", "image_generation_call", "mcp_call")


def conversation(node: Node, path: str) -> Conversation:
    """Read a request body into the neutral model (errors carry the file position)."""
    fields = as_dict(node, path, "the request body")
    model = opt_str(fields, "model")
    session_model, tokenizer = pick_model(model)
    conv = Conversation(SOURCE, model=session_model, tokenizer=tokenizer, line=node.line,
                        window=resolve_window(model))
    instructions = fields.get("instructions")
    if instructions is not None and isinstance(instructions.value, str) and instructions.value:
        conv.system.append(Block("instructions", TEXT, instructions.value, meta={"path": "instructions", "role": "system"},
                                 line=instructions.line, col=instructions.col))
    items = fields["input"]
    leading = True
    if isinstance(items.value, str):
        conv.messages.append(Message("user", [Block("input_text", TEXT, items.value, meta={"path": "input"},
                                                    line=items.line, col=items.col)], 0, {}, items.line, items.col))
    else:
        for index, item in enumerate(as_list(items, path, "input")):
            msg = item_message(item, path, f"input[{index}]", index)
            if leading and msg.role in _SYSTEM_ROLES:
                for block in msg.blocks:
                    block.meta["role"] = msg.role
                conv.system.extend(msg.blocks)
                continue
            leading = False
            append_merged(conv.messages, msg)
    if "tools" in fields and fields["tools"].value is not None:
        for index, tool in enumerate(as_list(fields["tools"], path, "tools")):
            conv.tools.append(tool_def(tool, path, index))
    link_tool_names(conv.messages)
    conv.reserve_out = reserve_for(session_model, opt_int(fields, "max_output_tokens"))
    count = len(items.value) if isinstance(items.value, list) else 1
    conv.name = f"OpenAI Responses request ({model or 'no model'}, {count} input items)"
    settings = {k: n.value for k, n in fields.items()
                if k not in ("input", "instructions", "tools") and (n.value is None or isinstance(n.value, (str, int, float, bool)))}
    meta: dict[str, Any] = {"source": {"format": SOURCE, "file": os.path.basename(path)}, "request": settings}
    if model and session_model is None:
        meta["model"] = model
    conv.meta = meta
    return conv


def tool_def(node: Node, path: str, index: int) -> ToolDef:
    """A Responses tool: ``{"type": "function", "name": …, "parameters": …}`` or a built-in tool by its type."""
    as_dict(node, path, f"tools[{index}]")
    value = node.plain()
    name = value.get("name") if isinstance(value.get("name"), str) else value.get("type")
    if not isinstance(name, str):
        raise fail(node, path, f"tools[{index}] has no name or type", 'write {"type": "function", "name": …}')
    description = value.get("description") if isinstance(value.get("description"), str) else None
    extra = [(k, v) for k, v in value.items() if k not in ("name", "description", "type")]
    meta: dict[str, Any] = {"path": f"tools[{index}]"}
    if isinstance(value.get("type"), str):
        meta["type"] = value["type"]
    meta["definition"] = value  # as sent, for packing
    return ToolDef(name, tool_text(name, description, extra), meta, None, node.line, node.col)


def append_merged(messages: list[Message], msg: Message) -> None:
    """Add ``msg``, merged into the last message when both have the same role (one provider turn)."""
    if messages and messages[-1].role == msg.role:
        last = messages[-1]
        messages[-1] = Message(last.role, last.blocks + msg.blocks, last.index, dict(last.meta), last.line, last.col)
    else:
        messages.append(Message(msg.role, list(msg.blocks), len(messages), dict(msg.meta), msg.line, msg.col))


def item_role(value: dict[str, Any]) -> str:
    """The conversation side an input item stands on: its role, ``assistant`` for model output, ``tool`` for results."""
    kind = value.get("type")
    if kind in OUTPUT_TYPES:
        return "tool"
    if kind in OUTPUT_ITEM_TYPES:
        return "assistant"
    role = value.get("role")
    if isinstance(role, str):
        return role
    return "user" if kind in (None, "message") else "assistant"


def item_message(node: Node, path: str, where: str, index: int) -> Message:
    """One input item as a message of one or more blocks (errors carry the item's position)."""
    fields = as_dict(node, path, where)
    value = node.plain()
    kind = value.get("type", "message" if "role" in value else None)
    role = item_role(value)
    pos = dict(line=node.line, col=node.col)
    if kind == "message":
        blocks = _content(fields.get("content"), path, f"{where}.content", node)
    elif kind in CALL_TYPES:
        blocks = [_call(value, where, kind, node)]
    elif kind in OUTPUT_TYPES:
        blocks = [_output(value, where, kind, node)]
    elif kind == "reasoning":
        blocks = [_reasoning(value, where, node)]
    else:
        label = kind if isinstance(kind, str) else "item"
        blocks = [Block(label, OTHER, compact(value), meta={"path": where, "unknown": True}, **pos)]
    return Message(role, blocks, index, {}, node.line, node.col)


def _content(node: Node | None, path: str, where: str, item: Node) -> list[Block]:
    if node is None or node.value is None:
        return [Block("text", TEXT, "", meta={"path": where}, line=item.line, col=item.col)]
    if isinstance(node.value, str):
        return [Block("input_text", TEXT, node.value, meta={"path": where}, line=node.line, col=node.col)]
    return content_parts(node, path, where, _part)


def _part(node: Node, path: str) -> Block:
    as_dict(node, path, "a content part")
    value = node.plain()
    kind = value.get("type") if isinstance(value.get("type"), str) else "part"
    pos = dict(line=node.line, col=node.col)
    if isinstance(value.get("text"), str) and kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
        return Block(kind, TEXT, value["text"], **pos)
    if kind == "refusal":
        return Block(kind, TEXT, str(value.get("refusal", "")), **pos)
    if kind == "input_image":
        url = value.get("image_url") or value.get("file_id") or "inline data"
        if isinstance(url, str) and url.startswith("data:"):
            url = f"{url[5:].split(';', 1)[0] or 'unknown type'}, data URL, {len(url)} characters"
        return Block(kind, MEDIA, f"[image: {url}]", **pos)
    if kind in ("input_file", "input_audio"):
        name = value.get("filename") or value.get("file_id") or value.get("file_url") or "inline data"
        return Block(kind, MEDIA, f"[{kind[6:]}: {name}]", **pos)
    return Block(kind, OTHER, compact(value), meta={"unknown": True}, **pos)


def _call(value: dict[str, Any], where: str, kind: str, node: Node) -> Block:
    if kind == "local_shell_call":
        name = "local_shell"
        arguments: Any = value.get("action", {})
    else:
        name = value.get("name") if isinstance(value.get("name"), str) else kind
        arguments = value.get("arguments", value.get("input", ""))
    if not isinstance(arguments, str):
        arguments = compact(arguments)
    meta: dict[str, Any] = {"path": where}
    call_id = value.get("call_id", value.get("id"))
    if isinstance(call_id, str):
        meta["tool_use_id"] = call_id
    return Block(kind, CALL, f"[tool_call {name}]\n{arguments}", name, meta, None, node.line, node.col)


def output_text(output: Any) -> str:
    """A tool output as text: a string as written, parts by their text, anything else as compact JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for part in output:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "input_image":
                texts.append("[image]")
            else:
                texts.append(compact(part))
        return "\n".join(texts)
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]  # Codex's {"content": …, "success": …} shape
    return "" if output is None else compact(output)


def _output(value: dict[str, Any], where: str, kind: str, node: Node) -> Block:
    meta: dict[str, Any] = {"path": where}
    call_id = value.get("call_id")
    if isinstance(call_id, str):
        meta["tool_use_id"] = call_id
    output = value.get("output")
    if isinstance(output, dict) and output.get("success") is False:
        meta["is_error"] = True
    return Block(kind, RESULT, output_text(output), None, meta, None, node.line, node.col)


def _reasoning(value: dict[str, Any], where: str, node: Node) -> Block:
    """Visible reasoning text (summary, then reasoning content); encrypted content is noted, not counted."""
    texts = []
    for key in ("summary", "content"):
        parts = value.get(key)
        if isinstance(parts, str):
            texts.append(parts)
        elif isinstance(parts, list):
            texts.extend(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    meta: dict[str, Any] = {"path": where}
    encrypted = value.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        # The model reads the encrypted reasoning back (inside a tool loop; an earlier turn's is dropped):
        # sized by what its request recorded where a reader knows it (Codex), else by its length (≈)
        meta["encrypted_chars"] = len(encrypted)
        meta["tokens"] = math.ceil(len(encrypted) / REASONING_CHARS)
        meta["sized_from"] = "encrypted length"
        meta["approximate"] = True
    return Block("reasoning", THINKING, "\n".join(texts), None, meta, None, node.line, node.col)


def reasoning_note(messages: list[Message]) -> str | None:
    """The warning for reasoning items counted from their encrypted length (the body records no usage)."""
    estimated = [b for m in messages for b in m.blocks if b.meta.get("sized_from") == "encrypted length"]
    if not estimated:
        return None
    return (f"{len(estimated)} encrypted reasoning item(s): the model reads them back inside a tool loop (they are left "
            f"out before the last user message); sized from their encrypted length, ≈{REASONING_CHARS:g} characters a "
            "token (the request that produced them recorded the exact count)")
