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
import re
from sys import intern

from tokenbox.core.model.llms import resolve_window
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import Section, Session
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
    call_text,
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

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from tokenbox.core.parse.nodes import Node

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


def output_schema(body: dict[str, Any]) -> Any:
    """The JSON schema of a request's structured output (``output_config.format``, or the beta
    ``output_format``), else ``None``."""
    for holder in (body.get("output_config"), body):
        if isinstance(holder, dict):
            fmt = holder.get("format") if holder is not body else holder.get("output_format")
            if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and fmt.get("schema") is not None:
                return fmt["schema"]
    return None


# What the API adds to a request beyond its text, where Anthropic publishes no figure: fitted (≈) on
# the recorded requests of tests/importers/fixtures (pydantic-ai cassettes), each said to be fitted.
STRUCTURED_OUTPUT_PROMPT = 140  # the instructions that come with an output schema (claude-sonnet-4-5: 222 recorded)
# Server tools' own definitions, by type prefix; what they return inside the request (search results,
# fetched pages, code output) is counted by the provider as input of that same request and is not in the body.
SERVER_TOOL_PROMPT = {"web_fetch_": 310}
# A tool call and its result carry a random id and JSON structure beyond their text; extended thinking,
# when enabled, comes with instructions of its own.
CALL_FRAMING = 20
RESULT_FRAMING = 15
THINKING_PROMPT = 40
SERVER_TOOL_PREFIXES = ("web_search_", "web_fetch_", "code_execution_", "bash_code_execution", "text_editor_code_execution",
                        "tool_search_tool_", "mcp_toolset", "advisor_")


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
        session = replace(session, warnings=(*session.warnings, f"the tool-use system prompt of model {body.get('model')!r} has no "
                                             "published size; it is not counted",))
    added: list[Section] = []
    notes: list[str] = []
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
        added.append(_api_part("thinking_prompt", THINKING_PROMPT, f"extended-thinking instructions (added by the API: "
                               f"≈{THINKING_PROMPT} tokens, fitted on recorded requests: not published)"))
    session = _with_block_framing(session)
    if output_schema(body) is not None:
        added.append(_api_part("structured_output_prompt", STRUCTURED_OUTPUT_PROMPT,
                               f"structured-output instructions (added by the API: ≈{STRUCTURED_OUTPUT_PROMPT} tokens, fitted on "
                               "recorded requests: not published)"))
    server = sorted({t["type"] for t in tools if isinstance(t, dict) and isinstance(t.get("type"), str)
                     and t["type"].startswith(SERVER_TOOL_PREFIXES)})
    for kind in server:
        prefix = next((p for p in SERVER_TOOL_PROMPT if kind.startswith(p)), None)
        if prefix is not None:
            added.append(_api_part(f"server_tool.{kind}", SERVER_TOOL_PROMPT[prefix],
                                   f"{kind} definition (added by the API: ≈{SERVER_TOOL_PROMPT[prefix]} tokens, fitted: not published)"))
    if server:
        notes.append(f"server tools ({', '.join(server)}) run inside the request: what they return there (search results, "
                     "fetched pages, code output) is counted by the provider as input of this same request and is not in "
                     "the body; a definition's size is counted where it was fitted on recorded requests, and is not otherwise")
    if added or notes:
        count = sum(1 for x in session.sections if x.meta.get("category") in ("tool", "system"))
        session = replace(session, sections=(*session.sections[:count], *added, *session.sections[count:]),
                          warnings=(*session.warnings, *notes))
    return session


def _with_block_framing(session: Session) -> Session:
    """Each message's tool calls and results carry an id and JSON structure beyond their text: a part of
    that size before the message's first part, of its priority (trimmed first of the message: a layout
    that keeps a call never drops less than its framing), critical when the message is."""
    sizes: dict[int, int] = {}
    for section in session.sections:
        message = section.meta.get("message")
        if message is not None and section.meta.get("block") in ("tool_use", "tool_result") \
                and section.meta.get("category") != "reply":
            sizes[message] = sizes.get(message, 0) + (CALL_FRAMING if section.meta["block"] == "tool_use" else RESULT_FRAMING)
    if not sizes:
        return session
    out: list[Section] = []
    for section in session.sections:
        message = section.meta.get("message")
        if message in sizes and section.meta.get("category") != "reply":
            size = sizes.pop(message)
            out.append(Section(id=f"m{message:02d}.framing", kind="text", priority=section.priority, shrink=section.shrink,
                               tokens=size, text="",
                               meta={"category": section.meta.get("category"), "role": section.meta.get("role"),
                                     "message": message, "source": SOURCE, "approximate": True,
                                     "label": f"tool call and result framing (ids and structure: ≈{CALL_FRAMING} a call, "
                                              f"≈{RESULT_FRAMING} a result, fitted on recorded requests)"}))
        out.append(section)
    return replace(session, sections=tuple(out))


def _api_part(section_id: str, tokens: int, label: str) -> Section:
    """A fixed-size part the API adds to the request (no text in the body)."""
    return Section(id=section_id, kind="text", priority=0, shrink=0, tokens=tokens, text="",
                   meta={"category": "system", "role": "system", "source": SOURCE, "label": label, "approximate": True})


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
    schema = output_schema(node.plain())
    if schema is not None:
        # structured outputs: the API writes the schema into the request (README, "Request bodies")
        conv.system.append(Block("output_schema", TEXT, compact(schema), meta={"path": "output_config.format.schema",
                                                                              "label": "structured output schema"},
                                 line=node.line, col=node.col))
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
    """A message's content: a string (one text block) or a list of content blocks (the images inside a
    tool result follow it as parts of their own)."""
    if isinstance(node.value, str):
        return [Block("text", TEXT, node.value, meta={"path": where}, line=node.line, col=node.col)]
    blocks = []
    for block, item in zip(content_parts(node, path, where, content_block), node.value, strict=True):
        blocks.append(block)
        if block.role == RESULT and isinstance(item.value, dict):
            for index, image in enumerate(result_images(item.plain(), item.line, item.col)):
                image.meta["path"] = f"{block.meta.get('path', where)}.content.image[{index}]"
                blocks.append(image)
    return blocks


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
    # the type and a tool's name are a handful of words said again in every block of a long session:
    # each block keeps the one copy (``sys.intern``), not the one its line was decoded with
    btype = intern(value["type"])
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
    if btype == "image":
        return image_block(value, line, col, cache=cache)
    if btype == "document":
        return Block(btype, MEDIA, media_text(btype, value), None, meta, cache, line, col)
    if btype == "search_result":
        return Block(btype, RESULT, search_result_text(value), None, meta, cache, line, col)
    if btype == "tool_use" or btype.endswith("_tool_use"):
        name = intern(value["name"]) if isinstance(value.get("name"), str) else btype
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
        loaded = tool_references(content)
        if loaded:
            meta["tool_references"] = loaded
            meta["note"] = (f"a ToolSearch result loads {len(loaded)} tool definitions the transcript does not show "
                            f"({', '.join(loaded)}): counted as ≈{TYPICAL_TOOL_DEFINITION} tokens each (typical, not read)")
        return Block(btype, RESULT, result_text(content, with_images=False), None, meta, cache, line, col)
    meta["unknown"] = True
    body = {k: v for k, v in value.items() if k != "cache_control"}
    return Block(btype, OTHER, compact(body), None, meta, cache, line, col)


# A ``tool_reference`` (a ToolSearch result of Claude Code 2.1.x, for its deferred tools) is expanded by the API
# into the tool's whole definition, which the transcript does not hold: counted as a typical definition.
# Fitted on the recorded growth of tests/fixtures/real_sessions (claude-code-log ef958aa1 and its sub-agents,
# 2.1.114): 25 tools in 8 searches added 24 472 tokens, 545–1 488 per tool.
TYPICAL_TOOL_DEFINITION = 1000


def tool_references(content: Any) -> list[str]:
    """The names of the tools a tool result's ``tool_reference`` blocks load, in order (``[]``: none)."""
    if not isinstance(content, list):
        return []
    return [item["tool_name"] if isinstance(item.get("tool_name"), str) else "?"
            for item in content if isinstance(item, dict) and item.get("type") == "tool_reference"]


def result_text(content: Any, with_images: bool = True) -> str:
    """A tool result's content: a string, or blocks (text as written, media as placeholders; images left
    out with ``with_images`` false: ``result_images`` makes them parts of their own)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_inner_block_text(item) for item in content
                         if with_images or not (isinstance(item, dict) and item.get("type") == "image"))
    return compact(content)


# An image's size written beside it (``Successfully captured screenshot (958x1003, jpeg)``) or in its URL.
_DIMENSIONS = re.compile(r"(?<![\d.])(\d{2,5})\s*[x×]\s*(\d{2,5})(?![\d.])")
# An image whose size cannot be told (a remote URL, a redacted payload) is counted as a typical web
# image, 600 × 400 (320 tokens; the remote images of the recorded requests in tests/ are 540 × 360 and
# 400 × 301), with a warning: an image costs from a few dozen tokens to about 1 600.
TYPICAL_IMAGE = (600, 400)


def image_block(value: dict[str, Any], line: int = 0, col: int = 0, *, context: str = "", cache: Any = None) -> Block:
    """An image block, costed by Anthropic's size rule: the size from its header (base64), else from a
    ``W×H`` in its URL or in the text beside it (``context``), else a typical image and a note saying so."""
    from tokenbox.core.sources.readers import images  # start-up: base64 and the image headers only for an image

    meta: dict[str, Any] = {}
    size = images.block_size(value)
    how = "read from the image"
    source = value.get("source") if isinstance(value.get("source"), dict) else {}
    if size is None:
        for text, where in ((source.get("url"), "its URL"), (context, "the text beside it")):
            found = _DIMENSIONS.search(text) if isinstance(text, str) else None
            if found is not None and 0 < int(found.group(1)) <= 1 << 16 and 0 < int(found.group(2)) <= 1 << 16:
                size, how = (int(found.group(1)), int(found.group(2))), f"as {where} says"
                break
    if size is None:
        size = TYPICAL_IMAGE
        what = f"the image at {source['url']}" if isinstance(source.get("url"), str) else "an image"
        meta["note"] = (f"{what}: its size cannot be read (a remote or unreadable image): counted as a typical "
                        f"{size[0]}×{size[1]} image, {images.anthropic_tokens(*size)} tokens (≈; an image costs up to ≈1 600)")
        meta["approximate"] = True
        how = "typical, not read"
    meta["width"], meta["height"] = size
    meta["tokens"] = images.anthropic_tokens(*size)
    meta["size_from"] = how
    return Block("image", MEDIA, media_text("image", value), None, meta, cache, line, col)


def result_images(value: dict[str, Any], line: int = 0, col: int = 0) -> list[Block]:
    """The images inside a tool result, each a part of its own (the result's text carries none of them),
    linked to the result's call."""
    content = value.get("content")
    if not isinstance(content, list):
        return []
    texts = " ".join(item["text"] for item in content if isinstance(item, dict) and isinstance(item.get("text"), str))
    out = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "image":
            block = image_block(item, line, col, context=texts)
            block.meta["in_tool_result"] = True
            if isinstance(value.get("tool_use_id"), str):
                block.meta["tool_use_id"] = value["tool_use_id"]
            out.append(block)
    return out


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
