"""Formats tokenbox does not read, told apart by their content, so that they are refused by name.

``load_session`` asks here before it reports a file as a broken tokenbox session: a file that parses
but is another tool's format (``sniff_document`` for one JSON/YAML document, ``sniff_lines`` for a
JSON-lines file) or that does not parse at all but is recognisably another tool's text
(``sniff_text``) raises ``UnsupportedFormat`` at 1:1, one line saying what the file looks like and
which formats tokenbox reads. Nothing here ever claims a document with a ``tokenbox`` key.
"""

from __future__ import annotations

import re
from typing import Any

from tokenbox.core.model.errors import UnsupportedFormat
from tokenbox.core.parse.nodes import Node

READS = ("tokenbox reads its own sessions and captures; Claude Code, Codex, Gemini CLI, Copilot CLI, "
         "Cline/Roo/Kilo, OpenCode and aider sessions; claude-trace and context-lens captures; "
         "Anthropic, OpenAI and Gemini request bodies")
_HEAD = 4096  # text sniffing looks at the start of the file only
_AIDER_INPUT = re.compile(r"^# \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[.\d]*\n\+", re.MULTILINE)


def refuse(what: str, hint: str, path: str) -> UnsupportedFormat:
    """The one-line refusal: what the file is, what to do instead, and what tokenbox reads."""
    remedy = f"{hint}; {READS}" if hint else READS
    return UnsupportedFormat(f"this looks like {what}, which tokenbox does not read", remedy, path, 1, 1)


def sniff_text(text: str, path: str, node: Node | None = None) -> UnsupportedFormat | None:
    """A refusal for another tool's recognisable text (``None`` when it is not recognised).

    Used when the text does not parse, and when it parses (markdown is often valid YAML) into anything
    but a mapping with a ``tokenbox`` key, which is always read as a session.
    """
    if node is not None and "tokenbox" in _keys(node.value):
        return None
    head = text[:_HEAD].lstrip("\ufeff")
    first = head.lstrip().split("\n", 1)[0]
    if first.startswith("# aider chat started at"):  # read by path; here from a pipe, or with a bad line
        return refuse("an aider chat history read from a pipe", "name the .aider.chat.history.md file itself", path)
    if _AIDER_INPUT.search(head):
        return refuse("an aider input history (.aider.input.history)", "", path)
    if "_Exported on" in head and "from Cursor" in head:
        return refuse("a Cursor chat export (markdown)", "", path)
    if head.lstrip().startswith("<!DOCTYPE html") or head.lstrip().lower().startswith("<html"):
        return refuse("an HTML page (e.g. a claude-trace report)", "open the .jsonl log or a request body instead", path)
    return None


def _plain(node: Node | Any) -> Any:
    return node.value if isinstance(node, Node) else node


def _keys(value: Any) -> set[str]:
    return set(value) if isinstance(value, dict) else set()


_CODEX_PROMPT = {"session_id", "ts", "text"}  # a line of ~/.codex/history.jsonl: one prompt typed
_GEMINI_PROMPT = {"sessionId", "messageId", "type", "message"}  # an entry of ~/.gemini/tmp/<project>/logs.json


def _codex_prompt_refusal() -> tuple[str, str]:
    """What Codex's prompt history is and what to open instead (its lines hold the typed prompts only)."""
    return ("Codex CLI's prompt history (~/.codex/history.jsonl: the prompts typed, not what was sent)",
            "open a rollout under ~/.codex/sessions instead")


def sniff_document(node: Node, path: str) -> UnsupportedFormat | None:
    """A refusal for one parsed document of another tool's format (``None`` when it is not recognised)."""
    value = _plain(node)
    if isinstance(value, list) and value and all(_GEMINI_PROMPT <= _keys(_plain(v)) for v in value):
        return refuse("Gemini CLI's prompt log (~/.gemini/tmp/<project>/logs.json: the prompts typed, not what "
                      "was sent)", "open the chat under chats/session-*.json beside it instead", path)
    keys = _keys(value)
    if keys == _CODEX_PROMPT:
        return refuse(*_codex_prompt_refusal(), path)
    if not keys or "tokenbox" in keys:
        return None
    log = _plain(value.get("log"))
    if "log" in keys and "entries" in _keys(log):
        return refuse("an HTTP archive (HAR)", "save one request's postData.text as a .json file", path)
    if {"sessionId", "requests"} <= keys:
        return refuse("a VS Code GitHub Copilot Chat session (workspaceStorage/…/chatSessions/*.json)", "", path)
    if {"requesterUsername", "requests"} <= keys or {"responderUsername", "requests"} <= keys:
        return refuse("a VS Code chat export", "", path)
    opencode = _opencode_record(value, keys)
    if opencode is not None:
        return refuse(f"one {opencode} of an OpenCode session on its own",
                      "open the session's file under storage/session/<project>/, or the storage folder", path)
    if {"agentType", "spawnDepth"} <= keys:  # Claude Code writes one beside each sub-agent's transcript
        return refuse("a Claude Code sub-agent's metadata (subagents/agent-*.meta.json)",
                      "open the agent-*.jsonl beside it, or the session's transcript, which brings its sub-agents", path)
    if amp_thread(node):
        return refuse("an Amp thread (~/.local/share/amp/threads/T-*.json)", "", path)
    if {"session_id", "transcript_path"} <= keys:  # what Claude Code writes on a command's stdin
        if "context_window" in keys or "workspace" in keys:
            return refuse("Claude Code's status-line input", "pipe it to tokenbox statusline, or open its transcript_path", path)
        return refuse("a Claude Code hook's input", "open its transcript_path instead", path)
    if "request" in keys and "response" in keys:
        return refuse("a claude-trace record (an HTTP request and response)",
                      "save its request.body as a .json file", path)
    if "choices" in keys and _plain(value.get("object")) in ("chat.completion", "chat.completion.chunk"):
        return refuse("an OpenAI Chat Completions response", "open the request body that was sent instead", path)
    if "output" in keys and _plain(value.get("object")) == "response":
        return refuse("an OpenAI Responses API response", "open the request body that was sent instead", path)
    if _plain(value.get("type")) == "message" and _plain(value.get("role")) == "assistant" and "usage" in keys:
        return refuse("an Anthropic Messages response", "open the request body that was sent instead", path)
    return None


def _opencode_record(value: dict, keys: set[str]) -> str | None:
    """``message`` or ``part`` for one record file of OpenCode's JSON storage (``storage/message/<session>/
    msg_*.json``, ``storage/part/<message>/prt_*.json``), else ``None``: a session is read from its tree.
    Known by its keys, not its id's prefix (``msg_``, ``prt_`` as OpenCode makes them; other tools' copies
    and older versions differ), and a part by its message's id (older parts have no ``sessionID``)."""
    if not isinstance(_plain(value.get("id")), str):
        return None
    if "sessionID" in keys and {"role", "time"} <= keys:
        return "message"
    if isinstance(_plain(value.get("messageID")), str) and "type" in keys:
        return "part"
    return None


def agent_log(values: list[Any]) -> str | None:
    """What another coding agent's JSON-lines session log is, from its first parsed lines (``None``: not one
    of these). Their records look like Claude Code's (a ``type``, a ``message`` with a ``role``, ids), so
    the Claude Code row asks here first and declines them, and ``sniff_lines`` refuses them by name."""
    records = [v for v in values if isinstance(v, dict)]
    if not records or any("tokenbox" in v for v in records):
        return None
    first = records[0]
    kind = _plain(first.get("type"))
    if kind == "session" and "version" in first and "cwd" in first:
        return "a Pi or OpenClaw agent session (~/.pi/agent/sessions/…/*.jsonl)"
    if kind == "session_start" and "id" in first:
        return "a Factory Droid session (~/.factory/sessions/…/*.jsonl)"
    if kind == "metadata" and "protocol_version" in first:
        return "a Kimi CLI session log (~/.kimi/sessions/…)"
    if "step_index" in first and "source" in first and isinstance(kind, str) and kind.isupper():
        return "a Google Antigravity conversation log (numbered steps)"
    turns = [v for v in records if "type" not in v and _plain(v.get("role")) in ("user", "assistant")
             and isinstance(_plain(v.get("message")), dict)]
    if turns and turns[0] is first and 2 * len(turns) >= len(records):  # (a ``turn_ended`` record between them)
        return "a Cursor agent transcript (role and message per line)"
    if any(_plain(v.get("type")) == "message" and "role" in v and "text" in v and ("session_id" in v or "sessionId" in v)
           for v in records):
        return "a Factory Droid stream-json log (droid exec --output-format stream-json)"
    if any(_plain(v.get("type")) in ("user", "assistant") and "content" in v and ("prompt_index" in v or "model_id" in v)
           and "uuid" not in v for v in records):
        return "a Grok CLI chat history (chat_history.jsonl)"
    for value in records:
        message = _plain(value.get("message"))
        # Qwen Code keeps Gemini's message shape ({"role": "model", "parts": [...]}) in Claude-like records
        if isinstance(message, dict) and "parts" in message and "content" not in message and "uuid" in value:
            return "a Qwen Code chat (~/.qwen/projects/…/chats/*.jsonl)"
    return None


def sniff_lines(nodes: list[Node], path: str) -> UnsupportedFormat | None:
    """A refusal for a JSON-lines file of another tool's format (``None`` when it is not recognised)."""
    values = [_plain(n) for n in nodes[:50]]
    if not values or any(not isinstance(v, dict) or "tokenbox" in v for v in values):
        return None
    if all("request" in v and "response" in v for v in values):
        return refuse("a claude-trace log (.claude-trace/log-*.jsonl, HTTP request/response pairs)",
                      "save one line's request.body as a .json file", path)
    if all("messages" in v and isinstance(_plain(v["messages"]), list) for v in values):
        return refuse("an OpenAI chat fine-tuning or eval dataset ({\"messages\": [...]} per line)",
                      "save one line as a .json file to read it as an OpenAI Chat request", path)
    agent = agent_log(values)
    if agent is not None:
        return refuse(agent, "", path)
    if all(set(v) == _CODEX_PROMPT for v in values):
        return refuse(*_codex_prompt_refusal(), path)
    first = values[0]
    if _plain(first.get("kind")) == 0 and isinstance(_plain(first.get("v")), dict):
        return refuse("a VS Code GitHub Copilot Chat session journal (chatSessions/*.jsonl)", "", path)
    if {"id", "timestamp"} <= set(first) and "instructions" in first and any("record_type" in v for v in values):
        return refuse("an early Codex CLI rollout (before session_meta lines)", "", path)
    if len(values) == 1:
        return sniff_document(nodes[0], path)
    return None


def amp_thread(node: Node | Any) -> bool:
    """An Amp thread: ``{"id": "T-…", "messages": [...]}`` with Amp's own keys (``agentMode``, ``env``, ``created``)."""
    value = _plain(node)
    if not isinstance(value, dict) or "tokenbox" in value:
        return False
    ident = _plain(value.get("id"))
    return (isinstance(ident, str) and ident.startswith("T-") and isinstance(_plain(value.get("messages")), list)
            and any(k in value for k in ("agentMode", "env", "created")))


def refuse_amp(node: Node, path: str) -> list[Any]:
    """The ``formats`` row of Amp threads reads none: an Amp thread's messages look like an Anthropic
    request, so it is refused before the request rows would take it for one."""
    raise refuse("an Amp thread (~/.local/share/amp/threads/T-*.json)", "", path)


# SQLite files tokenbox does not read, told by their tables: what each is, and what to open instead.
_DATABASES = (
    ({"cursorDiskKV", "ItemTable"}, "Cursor's state database (state.vscdb)", ""),
    ({"assistant_usage_events"}, "GitHub Copilot CLI's session store (session-store.db)",
     "open the session's events.jsonl: tokenbox reads this store beside it"),
    ({"ItemTable"}, "a VS Code state database (state.vscdb)", ""),
    ({"threads", "logs"}, "Codex's state index (state.sqlite)", "open a rollout under ~/.codex/sessions instead"),
)


def sniff_database(tables: set[str], path: str) -> UnsupportedFormat:
    """The refusal of a SQLite database no reader claims (by the tables it has)."""
    for needed, what, hint in _DATABASES:
        if needed <= tables:
            return refuse(what, hint, path)
    return refuse("a SQLite database", "", path)
