"""Parrot logs, a made-up format (the worked example of ARCHITECTURE.md): JSON lines
``{"parrot": 1, "role": "user" | "parrot", "text": "…"}``, one turn per user line (what was sent then)."""

from __future__ import annotations

from tokenbox.core.model.session import Session
from tokenbox.core.parse.nodes import Node
from tokenbox.core.sources.readers.common import TEXT, Block, Conversation, Message, build_session

SOURCE = "parrot-log"


def detect(nodes: list[Node]) -> bool:
    """A parrot log: its first line carries the ``parrot`` marker."""
    return bool(nodes) and isinstance(nodes[0].value, dict) and "parrot" in nodes[0].value


def convert(nodes: list[Node], path: str) -> list[Session]:
    """One session per user line: the conversation up to it, laid out by the shared rules."""
    messages: list[Message] = []
    turns: list[Session] = []
    for node in nodes:
        fields = node.plain()
        role = "assistant" if fields.get("role") == "parrot" else "user"
        block = Block("text", TEXT, str(fields.get("text", "")), line=node.line, col=node.col)
        messages.append(Message(role, [block], len(messages), line=node.line, col=node.col))
        if role == "user":
            conversation = Conversation(SOURCE, messages=list(messages), tokenizer="heuristic", line=node.line)
            turns.append(build_session(conversation, path))
    return turns
