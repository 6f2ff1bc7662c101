"""Reading an agent's SQLite database without ever getting in its way: read-only, short, retried.

Agents write their databases while tokenbox reads them (OpenCode's ``opencode.db``, Copilot CLI's
``session-store.db``), usually in WAL mode. Every query here opens the file with ``mode=ro`` (the
standard library's ``sqlite3``, no write ever, ``PRAGMA query_only``), runs in one short transaction
and closes: a reader in WAL mode never blocks the writer, and in rollback mode it holds its shared lock
only for that one query. A busy database (``SQLITE_BUSY``, "database is locked": a writer is
committing) is retried a few times, then reported as a ``SessionError`` to read again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

from tokenbox.core.model.errors import SessionError

TYPE_CHECKING = False  # typing's constant: sqlite3 for type checkers only (see connect)
if TYPE_CHECKING:
    import sqlite3

BUSY_RETRIES = 5
BUSY_WAIT = 0.05  # seconds between retries of a busy database (the agent is writing)


class DatabaseBusy(SessionError):
    """The database stayed locked by its writer through every retry: read it again."""


def connect(path: str) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``): never a write, never a lock the agent waits on beyond one read."""
    # Every command that reads a session imports this module (through the loader); a plan of a transcript or a YAML
    # session never opens a database:
    import sqlite3  # start-up: sqlite3 and urllib.parse (≈2 ms) only when a database is read
    import urllib.parse

    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    connection = sqlite3.connect(uri, uri=True, timeout=BUSY_WAIT, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    return connection


def query(path: str, sql: str, parameters: Iterable[Any] = ()) -> list[tuple]:
    """Rows of one read-only query in a short transaction, retried while the database is busy."""
    import sqlite3  # start-up: see connect

    busy_codes = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    for attempt in range(BUSY_RETRIES):
        try:
            connection = connect(path)
            try:
                return connection.execute(sql, tuple(parameters)).fetchall()
            finally:
                connection.close()
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", None) in busy_codes
            if busy and attempt == BUSY_RETRIES - 1:
                raise DatabaseBusy(f"the database is busy ({exc})", "read it again (the agent is writing it)", path) from None
            if not busy:
                raise SessionError(f"cannot read the database ({exc})", "check the path and permissions", path) from None
            time.sleep(BUSY_WAIT)
        except sqlite3.DatabaseError as exc:
            raise SessionError(f"not a readable SQLite database ({exc})", "name the agent's database file", path) from None
    raise AssertionError("unreachable")


def tables(path: str) -> set[str]:
    """The tables of a database (empty when it cannot be read; ``DatabaseBusy`` when its writer holds it)."""
    try:
        return {row[0] for row in query(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except DatabaseBusy:
        raise
    except SessionError:
        return set()


