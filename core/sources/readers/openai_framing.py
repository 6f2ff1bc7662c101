"""What an OpenAI Chat Completions request costs, framing included, as the API counts it.

The API wraps each message in ChatML (``<|start|>role<|message|>content<|end|>``: 3 tokens a message,
1 more for a ``name``), primes the reply with 3 tokens, and writes the tool definitions into the
system message as a TypeScript namespace (``namespace functions { type NAME = (_: {...}) => any; }``),
which costs 9 tokens of framing beyond its text, 4 fewer when a system message is already there to
hold it. These rules are the ones the community has verified against ``usage.prompt_tokens``
(exact on requests without images for the GPT-4/4o families). Images cost OpenAI's tile rule when
their size can be read from a ``data:`` URL; a remote image's size is unknown, which is a warning and
makes the figure an estimate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tokenbox.core.sources.readers import images

PER_MESSAGE = 3
PER_NAME = 1
REPLY_PRIMING = 3
TOOLS_FRAMING = 9
TOOLS_WITH_SYSTEM = -4


def prompt_tokens(body: dict[str, Any], count: Callable[[str], int]) -> tuple[int, list[str]]:
    """``(prompt tokens, warnings)`` of a Chat Completions body, counting text with ``count``."""
    warnings: list[str] = []
    model = body.get("model") if isinstance(body.get("model"), str) else None
    tools = functions(body)
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    total = 0
    padded = False
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role") if isinstance(message.get("role"), str) else ""
        text, media = _content(message.get("content"), model, warnings)
        if role in ("system", "developer") and tools and not padded:
            text += "\n"
            padded = True
        tokens = PER_MESSAGE + count(role) + (count(text) if text else 0) + media
        name = message.get("name")
        if isinstance(name, str) and name:
            tokens += count(name) + PER_NAME
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                # a call is written as `functions.NAME` and its arguments, with its own framing
                tokens += count("functions." + str(function.get("name", ""))) + count(str(function.get("arguments", ""))) + 3
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            tokens += count(str(legacy.get("name", ""))) + count(str(legacy.get("arguments", ""))) + 3
        if role == "function":
            tokens -= 2  # the legacy function role: the name takes the role's place
        total += tokens
    total += REPLY_PRIMING
    if tools:
        total += count(functions_text(tools)) + TOOLS_FRAMING
        if any(isinstance(m, dict) and m.get("role") in ("system", "developer") for m in messages):
            total += TOOLS_WITH_SYSTEM
    choice = body.get("tool_choice", body.get("function_call"))
    if choice == "none":
        total += 1
    elif isinstance(choice, dict):
        chosen = choice.get("function", choice)
        name = chosen.get("name") if isinstance(chosen, dict) else None
        total += count(name) + 4 if isinstance(name, str) else 0
    return total, warnings


def functions(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The function tools of a Chat body (``tools`` or the legacy ``functions``), as their definitions."""
    out = []
    for tool in body.get("tools") or body.get("functions") or []:
        if isinstance(tool, dict):
            function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if isinstance(function.get("name"), str):
                out.append(function)
    return out


def _content(content: Any, model: str | None, warnings: list[str]) -> tuple[str, int]:
    """The text of a message's content and the tokens of its images."""
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False), 0
    texts = []
    media = 0
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            url = part["image_url"].get("url", "")
            detail = part["image_url"].get("detail", "auto")
            size = images.data_url_size(url) if isinstance(url, str) else None
            if detail == "low":
                media += images.openai_tokens(1, 1, "low", model)
            elif size is not None:
                media += images.openai_tokens(*size, detail, model)
            else:
                media += images.openai_tokens(512, 512, detail, model)
                warnings.append("an image's size cannot be read (a remote URL): counted as one 512-px tile (≈)")
    return "".join(texts), media


def functions_text(functions: list[dict[str, Any]]) -> str:
    """The tool definitions as the API writes them into the prompt (a TypeScript namespace)."""
    lines = ["namespace functions {", ""]
    for function in functions:
        description = function.get("description")
        if isinstance(description, str) and description:
            lines.append(f"// {description}")
        parameters = function.get("parameters") if isinstance(function.get("parameters"), dict) else {}
        properties = parameters.get("properties") if isinstance(parameters.get("properties"), dict) else {}
        if properties:
            lines.append(f"type {function['name']} = (_: {{")
            lines.append(_object(parameters, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {function['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _object(schema: dict[str, Any], indent: int) -> str:
    lines = []
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name, param in properties.items():
        param = param if isinstance(param, dict) else {}
        if isinstance(param.get("description"), str) and indent < 2:
            lines.append(f"// {param['description']}")
        mark = "" if name in required else "?"
        lines.append(f"{name}{mark}: {_type(param, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _type(param: dict[str, Any], indent: int) -> str:
    kind = param.get("type")
    enum = param.get("enum") if isinstance(param.get("enum"), list) else None
    if kind == "string":
        return " | ".join(f'"{v}"' for v in enum) if enum else "string"
    if kind in ("number", "integer"):
        return " | ".join(str(v) for v in enum) if enum else "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "object":
        return "\n".join(["{", _object(param, indent + 2), "}"])
    if kind == "array":
        items = param.get("items")
        return f"{_type(items, indent)}[]" if isinstance(items, dict) else "any[]"
    return ""


def chat_view(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses API body as the Chat body the same model would be sent (instructions as a system message,
    input items as messages, function calls and their outputs as tool calls and tool messages, function
    tools as functions), for ``prompt_tokens``. Reasoning and hosted-tool items are left out: their cost
    is another part's."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = [_chat_part(part) for part in content if isinstance(part, dict)]
            messages.append({"role": item.get("role", "user"), "content": content})
        elif kind in ("function_call", "custom_tool_call"):
            call = {"function": {"name": item.get("name", ""), "arguments": item.get("arguments", item.get("input", ""))}}
            if messages and messages[-1].get("role") == "assistant" and "tool_calls" in messages[-1]:
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            messages.append({"role": "tool", "content": output if isinstance(output, (str, list)) else json.dumps(output)})
    tools = [{"type": "function", "function": {k: v for k, v in tool.items() if k in ("name", "description", "parameters")}}
             for tool in body.get("tools") or [] if isinstance(tool, dict) and tool.get("type", "function") == "function"]
    view: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if tools:
        view["tools"] = tools
    return view


def _chat_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "refusal":
        return {"type": "refusal", "refusal": part.get("refusal", "")}
    if kind == "input_image":
        return {"type": "image_url", "image_url": {"url": part.get("image_url") or "", "detail": part.get("detail", "auto")}}
    return {"type": "other"}
