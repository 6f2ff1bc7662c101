"""Writes OpenCode session records as OpenCode stores them: its SQLite database (the tables of
``packages/opencode/src/session/session.sql.ts``, the columns tokenbox reads) and the older JSON tree
(``storage/session|message|part``). Used to build the OpenCode fixtures and the following tests."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT, directory TEXT NOT NULL,
  title TEXT NOT NULL, version TEXT NOT NULL, cost REAL DEFAULT 0, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX message_session_idx ON message (session_id);
CREATE INDEX part_message_idx ON part (message_id);
"""


def _plain(record: dict[str, Any], *drop: str) -> str:
    return json.dumps({k: v for k, v in record.items() if k not in drop}, separators=(",", ":"))


def write_db(path: Path, records: dict[str, Any], *, wal: bool = False) -> None:
    """A database holding ``records`` ({"sessions": [...], "messages": [...], "parts": [...]})."""
    connection = sqlite3.connect(path)
    try:
        if wal:
            connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(SCHEMA)
        add(connection, records)
    finally:
        connection.close()


def add(connection: sqlite3.Connection, records: dict[str, Any]) -> None:
    """Insert (or replace) records, as OpenCode does when it writes them."""
    for s in records.get("sessions", []):
        connection.execute("INSERT OR REPLACE INTO session VALUES (?,?,?,?,?,?,?,?,?,?)",
                           (s["id"], s["projectID"], s.get("parentID"), s.get("slug"), s["directory"], s["title"],
                            s["version"], 0, s["time"]["created"], s["time"]["updated"]))
    for m in records.get("messages", []):
        created = m["time"]["created"]
        updated = m["time"].get("completed", created)
        connection.execute("INSERT OR REPLACE INTO message VALUES (?,?,?,?,?)",
                           (m["id"], m["sessionID"], created, updated, _plain(m, "id", "sessionID")))
    for p in records.get("parts", []):
        stamp = p.get("_time", 0)
        connection.execute("INSERT OR REPLACE INTO part VALUES (?,?,?,?,?,?)",
                           (p["id"], p["messageID"], p["sessionID"], stamp, stamp, _plain(p, "id", "messageID", "sessionID", "_time")))
    connection.commit()


def write_tree(storage: Path, records: dict[str, Any]) -> None:
    """The same records as the older JSON tree under ``storage``."""
    for s in records.get("sessions", []):
        _write(storage / "session" / s["projectID"] / f"{s['id']}.json", s)
    for m in records.get("messages", []):
        _write(storage / "message" / m["sessionID"] / f"{m['id']}.json", m)
    for p in records.get("parts", []):
        _write(storage / "part" / p["messageID"] / f"{p['id']}.json", {k: v for k, v in p.items() if k != "_time"})
    (storage / "migration").write_text("3", encoding="utf-8")


def _write(path: Path, value: dict[str, Any]) -> None:
    os.makedirs(path.parent, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
