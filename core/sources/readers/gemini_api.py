"""Gemini API ``generateContent`` request bodies (``POST …/models/<model>:generateContent`` and
``:streamGenerateContent``), beside the Anthropic and OpenAI bodies tokenbox reads.

A body is ``contents`` — ``{role: user|model, parts: [...]}`` — with ``systemInstruction``, ``tools``
(``functionDeclarations`` and server tools such as ``googleSearch``), ``toolConfig`` and
``generationConfig``. Parts are ``text`` (``thought: true`` for thinking sent back), ``functionCall``,
``functionResponse``, ``inlineData``/``fileData`` (media), ``executableCode``/``codeExecutionResult``,
and a ``thoughtSignature`` beside a part (an opaque signature, counted at its size). The model is in
the URL, not the body: a ``model`` key, when a tool wrote one, names it. Gemini's tokenizer is not
public: counts are ``≈``. A body alone records no usage; a request paired with its response (a
``{request, response}`` document, a claude-trace or context-lens capture: ``exchange``) has the
response's ``usageMetadata`` as recorded usage — context = ``promptTokenCount`` (cached included) plus
``toolUsePromptTokenCount`` (what server tools such as Google Search added) — and the media parts cost
what its ``promptTokensDetails`` says of their modality.
"""

from __future__ import annotations

from typing import Any

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
    fail,
    link_tool_names,
    pick_model,
    request_settings,
    tool_text,
)

SOURCE = "gemini-generate-content"
CHECKPOINT_HIDDEN = ("a saved chat holds the contents only: Gemini CLI's system prompt and tool definitions, "
                     "sent with them, are not counted")
_MODALITIES = {"image": "IMAGE", "audio": "AUDIO", "video": "VIDEO", "application": "DOCUMENT", "text": "DOCUMENT"}
_SERVER_TOOLS = ("googleSearch", "googleSearchRetrieval", "urlContext", "codeExecution", "fileSearch", "googleMaps",
                 "computerUse", "enterpriseWebSearch")


def detect(node: Node) -> bool:
    """A generateContent body: an object with a ``contents`` list of ``{parts}`` and no ``messages``."""
    value = node.value if isinstance(node, Node) else None
    if not isinstance(value, dict) or "tokenbox" in value or "messages" in value or "contents" not in value:
        return False
    contents = value["contents"].value
    return isinstance(contents, list) and all(isinstance(c.value, dict) and "parts" in c.value for c in contents[:20])


def convert(node: Node, path: str) -> list[Session]:
    """The body as one turn (estimated: a body records no usage)."""
    conv = conversation(node, path)
    conv.name = f"Gemini generateContent request ({conv.meta.get('model') or conv.model or 'no model'}, " \
                f"{len(conv.messages)} contents)"
    return [build_session(conv, path)]


def _checkpoint_history(node: Node) -> Node | None:
    """The ``contents`` of a Gemini CLI saved chat (``/chat save <tag>`` writes
    ``~/.gemini/tmp/<project>/checkpoint-<tag>.json``): a JSON array of ``{role, parts}``, or, in later
    versions, ``{history: [...], authType?}``; or of a tool call's restore point (``--checkpointing``:
    ``checkpoints/*.json``, whose ``clientHistory`` is what was sent); ``None`` for anything else."""
    value = _plain_of(node)
    if isinstance(value, dict) and "history" in value and set(value) <= {"history", "authType"}:
        node = value["history"]
    elif isinstance(value, dict) and {"clientHistory", "toolCall"} <= set(value):
        node = value["clientHistory"]
    value = _plain_of(node)
    if not isinstance(value, list) or not value:
        return None
    for item in value[:20]:
        fields = _plain_of(item)
        if not (isinstance(fields, dict) and isinstance(_plain_of(fields.get("parts")), list)
                and _plain_of(fields.get("role")) in ("user", "model")):
            return None
    return node


def _plain_of(node: Any) -> Any:
    """A parsed node's value (``None`` for anything that is not a node)."""
    return node.value if isinstance(node, Node) else None


def detect_checkpoint(node: Node) -> bool:
    """A Gemini CLI saved chat (``checkpoint-<tag>.json``): the contents of the next request, no usage."""
    return _checkpoint_history(node) is not None


def convert_checkpoint(node: Node, path: str) -> list[Session]:
    """A saved chat read as the ``contents`` of a request (estimated: no usage, system prompt and tools
    not saved)."""
    contents = _checkpoint_history(node)
    conv = conversation(Node({"contents": contents}, node.line, node.col, {"contents": (node.line, node.col)}), path)
    conv.name = f"Gemini CLI saved chat ({len(conv.messages)} contents)"
    session = build_session(conv, path)
    return [replace(session, warnings=(*session.warnings, CHECKPOINT_HIDDEN))]


def conversation(node: Node, path: str) -> Conversation:
    """The body as a neutral conversation: system instruction, tools, contents."""
    fields = as_dict(node, path, "the request")
    model = fields["model"].value if "model" in fields and isinstance(fields["model"].value, str) else None
    session_model, tokenizer = pick_model(model.removeprefix("models/") if model else None)
    meta: dict[str, Any] = {"request": {k: v for k, v in request_settings(fields).items() if k != "contents"}}
    if model and session_model is None:
        meta["model"] = model
    for key in ("generationConfig", "toolConfig", "safetySettings", "cachedContent"):
        if key in fields:
            meta["request"][key] = fields[key].plain()
    system: list[Block] = []
    if "systemInstruction" in fields:
        instruction = fields["systemInstruction"]
        parts = instruction.value.get("parts") if isinstance(instruction.value, dict) else None
        for index, part in enumerate(parts.value if parts is not None and isinstance(parts.value, list) else []):
            block = part_block(part, path)
            block.meta["path"] = f"systemInstruction.parts[{index}]"
            system.append(block)
    tools: list[ToolDef] = []
    for index, tool in enumerate(as_list(fields["tools"], path, "tools") if "tools" in fields else []):
        tools.extend(_tools(tool, path, index))
    messages = [message(item, path, index) for index, item in enumerate(as_list(fields["contents"], path, "contents"))]
    link_tool_names(messages)
    return Conversation(SOURCE, system=system, tools=tools, messages=messages, model=session_model, tokenizer=tokenizer,
                        meta=meta, line=node.line)


def _tools(node: Node, path: str, index: int) -> list[ToolDef]:
    fields = as_dict(node, path, f"tools[{index}]")
    found: list[ToolDef] = []
    declarations = fields.get("functionDeclarations") or fields.get("function_declarations")
    for number, item in enumerate(declarations.value if declarations is not None and isinstance(declarations.value, list) else []):
        value = item.plain()
        if not isinstance(value, dict):
            continue
        name = value.get("name") if isinstance(value.get("name"), str) else f"function-{number + 1}"
        extra = [(k, v) for k, v in value.items() if k not in ("name", "description")]
        text = tool_text(name, value.get("description") if isinstance(value.get("description"), str) else None, extra)
        found.append(ToolDef(name, text, {"path": f"tools[{index}].functionDeclarations[{number}]"}, line=item.line, col=item.col))
    for key, item in fields.items():
        if key in ("functionDeclarations", "function_declarations"):
            continue
        label = key if key in _SERVER_TOOLS else f"{key} (tool)"
        found.append(ToolDef(label, tool_text(key, None, [("config", item.plain())]), {"path": f"tools[{index}].{key}",
                                                                                       "server_tool": True},
                             line=item.line, col=item.col))
    return found


def message(node: Node, path: str, index: int) -> Message:
    """One ``contents`` item: ``role`` (``model`` is the assistant) and its parts."""
    fields = as_dict(node, path, f"contents[{index}]")
    if "parts" not in fields:
        raise fail(node, path, f"contents[{index}] has no `parts`", "each content lists its parts")
    role = fields["role"].value if "role" in fields and isinstance(fields["role"].value, str) else "user"
    blocks = []
    for number, part in enumerate(as_list(fields["parts"], path, f"contents[{index}].parts")):
        block = part_block(part, path)
        block.meta["path"] = f"contents[{index}].parts[{number}]"
        blocks.append(block)
    return Message("assistant" if role == "model" else role, blocks, index, line=node.line, col=node.col)


def part_block(node: Node, path: str) -> Block:
    """One part as the text that stands for it."""
    value = node.plain()
    pos = {"line": node.line, "col": node.col}
    if not isinstance(value, dict):
        raise fail(node, path, "a part must be an object", 'write parts as objects, e.g. {"text": "…"}')
    meta: dict[str, Any] = {}
    signature = value.get("thoughtSignature")
    if isinstance(signature, str):
        meta["thought_signature_chars"] = len(signature)
    if isinstance(value.get("text"), str):
        if value.get("thought") is True:
            return Block("thought", THINKING, value["text"], None, meta, **pos)
        return Block("text", TEXT, value["text"], None, meta, **pos)
    if isinstance(value.get("functionCall"), dict):
        call = value["functionCall"]
        name = call.get("name") if isinstance(call.get("name"), str) else "function"
        if isinstance(call.get("id"), str):
            meta["tool_use_id"] = call["id"]
        meta["tool_input"] = call.get("args", {})
        return Block("functionCall", CALL, f"[functionCall {name}]\n{compact(call.get('args', {}))}", name, meta, **pos)
    if isinstance(value.get("functionResponse"), dict):
        response = value["functionResponse"]
        name = response.get("name") if isinstance(response.get("name"), str) else None
        if isinstance(response.get("id"), str):
            meta["tool_use_id"] = response["id"]
        body = response.get("response")
        text = compact(body) if body is not None else ""
        if isinstance(response.get("parts"), list) and response["parts"]:
            text += "\n" + "\n".join(compact(p) for p in response["parts"])
        return Block("functionResponse", RESULT, text, name, meta, **pos)
    for key in ("inlineData", "fileData", "inline_data", "file_data"):
        data = value.get(key)
        if isinstance(data, dict):
            mime = data.get("mimeType") or data.get("mime_type") or "unknown type"
            size = len(data["data"]) if isinstance(data.get("data"), str) else None
            meta["modality"] = _MODALITIES.get(str(mime).split("/", 1)[0], "DOCUMENT")
            where = f"{size} characters of base64" if size is not None else str(data.get("fileUri") or data.get("file_uri") or "")
            return Block("media", MEDIA, f"[{key}: {mime}, {where}]", None, meta, **pos)
    if isinstance(signature, str) and len(value) == 1:
        return Block("thoughtSignature", THINKING, f"[thought signature: {len(signature)} characters]", None, meta, **pos)
    meta["unknown"] = not any(k in value for k in ("executableCode", "codeExecutionResult", "videoMetadata"))
    kind = next(iter(value), "part")
    return Block(kind, OTHER if meta["unknown"] else TEXT, compact(value), None, meta, **pos)


def apply_modalities(conv: Conversation, usage: Any) -> None:
    """Give media parts the tokens the response's ``promptTokensDetails`` records for their modality
    (shared evenly among the parts of one modality); the rest stays estimated."""
    details = usage.get("promptTokensDetails") if isinstance(usage, dict) else None
    if not isinstance(details, list):
        return
    counts = {d.get("modality"): d.get("tokenCount") for d in details if isinstance(d, dict)}
    media = [b for m in conv.messages for b in m.blocks if b.role == MEDIA]
    for modality in {b.meta.get("modality") for b in media}:
        tokens = counts.get(modality)
        blocks = [b for b in media if b.meta.get("modality") == modality]
        if isinstance(tokens, int) and tokens >= 0 and blocks:
            for number, block in enumerate(blocks):
                block.meta["tokens"] = tokens // len(blocks) + (1 if number < tokens % len(blocks) else 0)
                block.meta["tokens_from"] = "promptTokensDetails"
