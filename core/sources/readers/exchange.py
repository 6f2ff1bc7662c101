"""Peers' captures of HTTP requests with their responses, read like tokenbox's own capture log.

* **claude-trace** (``.claude-trace/log-*.jsonl``): one line per request/response pair,
  ``{request: {timestamp, method, url, headers, body}, response: {status_code, headers, body | body_raw},
  logged_at}``; a streamed response is its SSE text in ``body_raw``.
* **context-lens LHAR** (``*.lhar``, JSON lines; or ``.lhar.json``, one document ``{"lhar": {…,
  "entries": [...]}}``): a ``{"type": "session"}`` line, then one ``{"type": "entry"}`` per request with
  ``http.api_format``, ``gen_ai.usage`` (``input_tokens`` without the cache) and ``usage_ext``
  (``cache_read_tokens``, ``cache_write_tokens``); the bodies are in ``raw`` only when context-lens ran
  with ``CONTEXT_LENS_PRIVACY=full``, else an entry carries its ``context_lens.composition`` (tokens per
  category) and is read as those parts.
* **one pair** ``{"request": …, "response": …}`` (a claude-trace line saved alone, or a body with its
  response): one turn.

Each request is translated into the records of ``capture_format`` and read by the capture reader (its
threads, its calibration: the whole request is there, so its estimates are fitted to the recorded
usage and little is left to infer). The API is told by the URL (``/v1/messages``, ``/chat/completions``,
``/responses``, ``:generateContent``; other endpoints such as ``count_tokens`` are skipped) or, without
one, by the body. The recorded usage is the response's: Anthropic's ``usage`` (a stream's
``message_start`` merged with its ``message_delta``), OpenAI's ``usage`` (a stream's last chunk, the
Responses API's ``response.completed``), Gemini's ``usageMetadata`` (a stream's last chunk).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.records import replace
from tokenbox.core.model.session import RecordedUsage, Section, Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers.capture_follow import CaptureFollower
from tokenbox.core.sources.readers.capture_format import FORMAT_KEY, FORMAT_VERSION
from tokenbox.core.sources.readers.common import inferred_section, request_format
from tokenbox.core.sources.turns import LazyTurns

TRACE = "claude-trace"
LHAR = "context-lens-lhar"
PAIR = "request-response-pair"
_LHAR_APIS = {"anthropic-messages": "anthropic-messages", "anthropic": "anthropic-messages", "openai-chat": "openai-chat",
              "openai-chat-completions": "openai-chat", "openai-responses": "openai-responses", "google-gemini": "google-gemini",
              "gemini": "google-gemini"}
# context-lens composition categories -> tokenbox's section categories
_CATEGORIES = {"system_prompt": "system", "system": "system", "tool_definitions": "tool", "tools": "tool",
               "tool_results": "tool_result", "tool_result": "tool_result", "tool_calls": "history",
               "assistant_text": "history", "user_text": "history", "thinking": "history", "images": "history"}


# ---------------------------------------------------------------- telling the API and the usage


def api_of(url: Any, body: Any) -> tuple[str | None, str | None]:
    """``(API, model from the URL)`` of a request; ``(None, None)`` for an endpoint that is not a model request."""
    path = urllib.parse.urlparse(url).path if isinstance(url, str) else ""
    if path:
        if path.endswith("/messages"):
            return "anthropic-messages", None
        if path.endswith("/chat/completions"):
            return "openai-chat", None
        if path.endswith("/responses"):
            return "openai-responses", None
        if ":generateContent" in path or ":streamGenerateContent" in path:
            model = path.rsplit("/", 1)[-1].split(":", 1)[0]
            return "google-gemini", model or None
        return None, None
    if not isinstance(body, dict):
        return None, None
    if "contents" in body:
        return "google-gemini", None
    if "input" in body and "messages" not in body:
        return "openai-responses", None
    if "messages" in body:
        return request_format(_nodes(body)), None
    return None, None


def _nodes(value: Any) -> Node:
    if isinstance(value, dict):
        return Node({k: _nodes(v) for k, v in value.items()}, 1, 1)
    if isinstance(value, list):
        return Node([_nodes(v) for v in value], 1, 1)
    return Node(value, 1, 1)


def _events(text: str) -> Iterator[dict[str, Any]]:
    """The JSON ``data:`` payloads of an SSE stream."""
    for line in text.split("\n"):
        if line.startswith("data:"):
            try:
                value = json.loads(line[5:].strip())
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def response_usage(api: str, response: Any) -> dict[str, Any] | None:
    """The usage a response reported, in its API's own shape (``None`` when it reported none)."""
    if not isinstance(response, dict):
        return None
    body = response.get("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = None
    raw = response.get("body_raw") if isinstance(response.get("body_raw"), str) else None
    key = "usageMetadata" if api == "google-gemini" else "usage"
    if isinstance(body, dict):
        usage = body.get(key)
        if api == "openai-responses" and isinstance(body.get("response"), dict):
            usage = body["response"].get("usage")
        return usage if isinstance(usage, dict) else None
    chunks = body if isinstance(body, list) else list(_events(raw)) if raw else []
    usage: dict[str, Any] | None = None
    for event in chunks:
        if not isinstance(event, dict):
            continue
        if api == "anthropic-messages":
            if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
                usage = dict(event["message"].get("usage") or {})
            elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict) and usage is not None:
                usage.update({k: v for k, v in event["usage"].items() if v is not None})
        elif api == "openai-responses":
            inner = event.get("response")
            if event.get("type") == "response.completed" and isinstance(inner, dict) and isinstance(inner.get("usage"), dict):
                usage = inner["usage"]
        elif isinstance(event.get(key), dict):
            usage = event[key]  # OpenAI chat's usage chunk, Gemini's chunks: the last one is the total
    return usage


def _records(number: int, api: str, body: dict[str, Any], model: str | None, usage: dict[str, Any] | None,
             status: Any, path: str) -> list[dict[str, Any]]:
    """A request and its response as capture records (numbered by the line they came from)."""
    if api == "google-gemini" and model and "model" not in body:
        body = {**body, "model": model}  # the URL's model, for the reader (the body itself has none)
    request = {FORMAT_KEY: FORMAT_VERSION, "kind": "request", "id": number, "api": api, "path": path, "body": body}
    answer = {FORMAT_KEY: FORMAT_VERSION, "kind": "response", "id": number, "status": status,
              "model": model or body.get("model"), "usage": usage}
    return [request, answer] if usage is not None or status is not None else [request]


def pair_records(number: int, value: Any) -> list[dict[str, Any]]:
    """A claude-trace line (or any ``{request, response}`` pair) as capture records; ``[]`` when it is
    not a model request."""
    if not isinstance(value, dict) or not isinstance(value.get("request"), dict):
        return []
    request = value["request"]
    body = request.get("body") if "body" in request else request
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return []
    if not isinstance(body, dict):
        return []
    url = request.get("url")
    api, model = api_of(url, body)
    if api is None:
        return []
    response = value.get("response") if isinstance(value.get("response"), dict) else None
    wrapped = response if response is None or "body" in response or "body_raw" in response else {"body": response}
    usage = response_usage(api, wrapped) if wrapped is not None else None
    status = response.get("status_code", 200) if response is not None else None
    path = urllib.parse.urlparse(url).path if isinstance(url, str) else ""
    return _records(number, api, body, model, usage, status, path)


def lhar_records(number: int, value: Any) -> list[dict[str, Any]] | None:
    """An LHAR entry with its request body as capture records (``None``: it has no body, read its composition)."""
    raw = value.get("raw") if isinstance(value.get("raw"), dict) else {}
    body = raw.get("request_body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = None
    if not isinstance(body, dict):
        return None
    http = value.get("http") if isinstance(value.get("http"), dict) else {}
    api = _LHAR_APIS.get(str(http.get("api_format")))
    url_api, model = api_of(http.get("url"), body)
    api = api or url_api
    if api is None:
        return []
    gen_ai = value.get("gen_ai") if isinstance(value.get("gen_ai"), dict) else {}
    requested = gen_ai.get("request", {}).get("model") if isinstance(gen_ai.get("request"), dict) else None
    usage = _lhar_usage(api, value)
    return _records(number, api, body, model or (requested if isinstance(requested, str) else None), usage,
                    http.get("status_code", 200), urllib.parse.urlparse(http.get("url") or "").path)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def lhar_context(value: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """``(input without the cache, cache read, cache write, output)`` of an LHAR entry."""
    gen_ai = value.get("gen_ai") if isinstance(value.get("gen_ai"), dict) else {}
    usage = gen_ai.get("usage") if isinstance(gen_ai.get("usage"), dict) else None
    if usage is None or not isinstance(usage.get("input_tokens"), int):
        return None
    ext = value.get("usage_ext") if isinstance(value.get("usage_ext"), dict) else {}
    return (_count(usage.get("input_tokens")), _count(ext.get("cache_read_tokens")), _count(ext.get("cache_write_tokens")),
            _count(usage.get("output_tokens")))


def _lhar_usage(api: str, value: dict[str, Any]) -> dict[str, Any] | None:
    """An LHAR entry's usage in its API's shape (LHAR's input excludes the cache)."""
    found = lhar_context(value)
    if found is None:
        return None
    inp, read, write, out = found
    if api == "anthropic-messages":
        return {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": out}
    if api == "google-gemini":
        return {"promptTokenCount": inp + read + write, "cachedContentTokenCount": read, "candidatesTokenCount": out}
    if api == "openai-chat":
        return {"prompt_tokens": inp + read + write, "prompt_tokens_details": {"cached_tokens": read}, "completion_tokens": out}
    return {"input_tokens": inp + read + write, "input_tokens_details": {"cached_tokens": read}, "output_tokens": out}


# ---------------------------------------------------------------- followers


class PeerFollower:
    """Follows a peer's capture line by line (a ``formats.LineFollower``): each line is translated once
    into capture records and fed to a ``CaptureFollower``; an LHAR entry without its body becomes a turn
    of its composition. ``turns()`` are built when read, labelled with the peer's format."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self.inner = CaptureFollower(path)
        self.order: list[tuple[str, Any]] = []  # ("capture", its turn index) or ("parts", a session)
        self.skipped = 0
        self.count = 0  # requests translated so far (their capture ids)

    def feed(self, number: int, text: str) -> None:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            self.skipped += 1
            return
        if self.source == LHAR:
            if value.get("type") != "entry":
                return
            records = lhar_records(number, value)
            if records is None:
                session = composition_turn(self.path, number, value)
                if session is not None:
                    self.order.append(("parts", session))
                return
        else:
            records = pair_records(number, value)
        self.count += 1
        for record in records:  # one id per request: the entries of one document share a line number
            record["id"] = self.count
        before = len(self.inner.turn_requests)
        for record in records:
            self.inner.feed_record(number, record)
        if len(self.inner.turn_requests) > before:
            self.order.append(("capture", before))

    def turns(self) -> LazyTurns:
        if not self.order:
            what = "context-lens log" if self.source == LHAR else "claude-trace log"
            raise SessionError(f"the {what} has no model request yet", "read it again once the agent sent one", self.path, 1, 1)
        captured = self.inner.turns() if self.inner.turn_requests else None
        order = list(self.order)
        count = len(order)

        def build(index: int) -> Session:
            kind, item = order[index]
            session = captured[item] if kind == "capture" and captured is not None else item
            meta = {**session.meta, "source": {**session.meta.get("source", {}), "format": self.source,
                                                "file": os.path.basename(self.path)}}
            return replace(session, meta=meta, turn=index + 1, turn_count=count)

        def info(index: int) -> dict[str, Any]:
            kind, item = order[index]
            if kind == "capture" and captured is not None:
                return captured.info(item)
            return {"request": f"line {item.line}", "thread": item.thread, "line": item.line, "recorded": item.recorded}

        return LazyTurns(count, build, info)


def trace_follower(path: str) -> PeerFollower:
    return PeerFollower(path, TRACE)


def lhar_follower(path: str) -> PeerFollower:
    return PeerFollower(path, LHAR)


def _follow_all(follower: PeerFollower, nodes: list[Node]) -> list[Session]:
    for node in nodes:
        follower.feed(node.line, json.dumps(node.plain()))
    return list(follower.turns())


# ---------------------------------------------------------------- the table's rows


def detect_trace(nodes: list[Node]) -> bool:
    """A claude-trace log: its lines are ``{request: {url, body}, response}`` pairs."""
    values = [n.value for n in nodes[:20]]
    return bool(values) and all(
        isinstance(v, dict) and "request" in v and "response" in v and isinstance(v["request"].value, dict)
        and "url" in v["request"].value for v in values)


def convert_trace(nodes: list[Node], path: str) -> list[Session]:
    return _follow_all(trace_follower(path), nodes)


def detect_lhar(nodes: list[Node]) -> bool:
    """A context-lens LHAR log: a ``{"type": "session", "trace_id"}`` line or ``entry`` lines with ``gen_ai``."""
    for node in nodes[:5]:
        value = node.value
        if not isinstance(value, dict) or "type" not in value:
            return False
        kind = value["type"].value
        if kind == "session" and "trace_id" in value:
            return True
        if kind == "entry" and "gen_ai" in value:
            return True
    return False


def convert_lhar(nodes: list[Node], path: str) -> list[Session]:
    return _follow_all(lhar_follower(path), nodes)


def detect_document(node: Node) -> bool:
    """One ``{request, response}`` pair whose request is a model request, or an ``.lhar.json`` document."""
    value = node.value if isinstance(node, Node) else None
    if not isinstance(value, dict) or "tokenbox" in value:
        return False
    if set(value) == {"lhar"} and isinstance(value["lhar"].value, dict) and "entries" in value["lhar"].value:
        return True
    if "request" not in value or "response" not in value:
        return False
    return bool(pair_records(1, node.plain()))


def convert_document(node: Node, path: str) -> list[Session]:
    """The turns of an ``.lhar.json`` document, or the one turn of a pair."""
    value = node.value
    if "lhar" in value:
        follower = lhar_follower(path)
        entries = value["lhar"].value["entries"]
        for entry in entries.value if isinstance(entries.value, list) else []:
            follower.feed(entry.line, json.dumps({"type": "entry", **(entry.plain() if isinstance(entry.value, dict) else {})}))
        return list(follower.turns())
    follower = PeerFollower(path, PAIR)
    follower.feed(node.line, json.dumps(node.plain()))
    return list(follower.turns())


# ---------------------------------------------------------------- an entry without its body


def composition_turn(path: str, number: int, value: dict[str, Any]) -> Session | None:
    """An LHAR entry read as the composition context-lens measured (tokens per category), with its
    recorded context as the headline and an ``inferred`` part for what the categories leave."""
    found = lhar_context(value)
    lens = value.get("context_lens") if isinstance(value.get("context_lens"), dict) else {}
    composition = lens.get("composition") if isinstance(lens.get("composition"), list) else []
    if found is None:
        return None
    inp, read, write, out = found
    target = inp + read + write
    sections: list[Section] = [inferred_section(0, "what context-lens's categories do not cover")]
    for index, item in enumerate(composition):
        if not isinstance(item, dict) or not isinstance(item.get("tokens"), int):
            continue
        name = str(item.get("category") or f"part-{index + 1}")
        sections.append(Section(id=f"lens.{''.join(c if c.isalnum() or c in '_.-' else '_' for c in name)}", kind="text",
                                shrink=0, tokens=max(0, item["tokens"]), text="",
                                meta={"category": _CATEGORIES.get(name, "other"), "label": f"{name} (context-lens)",
                                      "count": item.get("count")}))
    source = value.get("source") if isinstance(value.get("source"), dict) else {}
    thread = MAIN_THREAD if source.get("agent_role") in (None, "main") else "subagent"
    gen_ai = value.get("gen_ai") if isinstance(value.get("gen_ai"), dict) else {}
    model = gen_ai.get("request", {}).get("model") if isinstance(gen_ai.get("request"), dict) else None
    window = lens.get("window_size") if isinstance(lens.get("window_size"), int) and lens["window_size"] > 0 else None
    from tokenbox.core.model.session import BudgetSpec  # start-up: only for an entry without its body

    return Session(sections=tuple(sections), path=path, name=f"context-lens entry {value.get('id', number)}",
                   tokenizer="heuristic", budget=BudgetSpec(max_ctx=max(window, target) if window else None),
                   meta={"line": number, "model": model, "composition_only": True}, line=number,
                   recorded=RecordedUsage(target, inp, write, read, out), source_format=LHAR, context_tokens=target,
                   thread=thread,
                   warnings=("context-lens kept no request body (run it with CONTEXT_LENS_PRIVACY=full to keep them): "
                             "the parts are its categories' token counts",))
