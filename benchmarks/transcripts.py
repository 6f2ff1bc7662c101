"""Big Claude Code transcripts for the benchmarks, built by repeating a real one.

The source is a real Claude Code session (``tests/fixtures/real_sessions/claude-code_ccviewer_5c0375b4-….jsonl``,
53 lines, 125 KB, two sub-agent runs). Each repetition gets fresh ``uuid``s and ``message.id``s (lines
of one request keep sharing theirs) and keeps the source's own ``parentUuid`` links (a sub-agent's lines
stay a side chain rooted at ``null``, as Claude Code 1.x writes them); its first line continues the main
chain of the repetition before, so the result is one long conversation. Where Claude Code would compact
(before the next prompt, once the conversation since the last compaction reaches about
``COMPACT_TOKENS`` tokens, estimated at 4 characters per token) a ``system`` line with ``subtype:
compact_boundary`` and an ``isCompactSummary`` user line are inserted, as Claude Code writes them;
``compact=False`` gives one chain that is never compacted (far over any budget).

Deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(
    ROOT, "tests", "fixtures", "real_sessions", "claude-code_ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)
COMPACT_TOKENS = 150_000
_CHARS_PER_TOKEN = 4


def _source() -> list[dict]:
    with open(SOURCE, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class Transcript:
    """A growing transcript: ``lines`` so far; ``turn()`` gives the lines of the next request."""

    def __init__(self, *, compact: bool = True, seed: int = 10) -> None:
        self.compact = compact
        self._records = _source()
        self._seed = seed
        self._serial = 0
        self._last: str | None = None  # uuid of the newest line of the main chain
        self._mapped: dict[str, str] = {}  # the source's uuids to this repetition's
        self._since_compact = 0  # characters since the last compaction
        self._rep = 0
        self._pos = 0  # next record of the source to copy
        self._ids: dict[str, str] = {}
        self.lines: list[str] = []
        self.size = 0

    def _uuid(self) -> str:
        self._serial += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"tokenbox-bench/{self._seed}/{self._serial}"))

    def _emit(self, record: dict) -> str:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self.lines.append(line)
        self.size += len(line.encode("utf-8")) + 1
        self._since_compact += len(line)
        return line

    def _compaction(self) -> list[str]:
        boundary = self._uuid()
        out = [self._emit({
            "type": "system", "subtype": "compact_boundary", "parentUuid": None, "logicalParentUuid": self._last,
            "isSidechain": False, "userType": "external", "cwd": "/path/to/Demo", "sessionId": "bench-session",
            "version": "1.0.108", "uuid": boundary, "timestamp": "2025-09-07T10:00:00.000Z",
            "content": "Conversation compacted", "level": "info",
            "compactMetadata": {"trigger": "auto", "preTokens": self._since_compact // _CHARS_PER_TOKEN},
        })]
        summary = self._uuid()
        out.append(self._emit({
            "type": "user", "parentUuid": boundary, "isSidechain": False, "userType": "external", "cwd": "/path/to/Demo",
            "sessionId": "bench-session", "version": "1.0.108", "uuid": summary, "timestamp": "2025-09-07T10:00:01.000Z",
            "isCompactSummary": True,
            "message": {"role": "user", "content": [{"type": "text", "text":
                "This session is being continued from a previous conversation that ran out of context. "
                f"Summary: repetition {self._rep} of the orchestrator task; CLAUDE.md was being updated."}]},
        }))
        self._last = summary
        self._since_compact = 0
        return out

    def _copy(self, record: dict) -> str:
        new = dict(record)
        new["uuid"] = self._mapped[record["uuid"]] = self._uuid()
        parent = record.get("parentUuid")
        if parent is not None:
            new["parentUuid"] = self._mapped[parent]
        elif record.get("isSidechain") is not True:
            new["parentUuid"] = self._last  # the repetition continues the conversation
        new["sessionId"] = "bench-session"
        message = record.get("message")
        if isinstance(message, dict) and "id" in message:
            mid = message["id"]
            fresh = self._ids.get(mid)
            if fresh is None:
                fresh = self._ids[mid] = f"msg_bench{self._seed}_{self._serial:08d}"
            new["message"] = {**message, "id": fresh}
        if record.get("isSidechain") is not True:
            self._last = new["uuid"]
        return self._emit(new)

    def turn(self) -> list[str]:
        """The lines of the next request: up to and including the next assistant message's lines."""
        out: list[str] = []
        # Claude Code compacts before sending a new prompt: here, at the start of a repetition
        if self.compact and self._pos in (0, len(self._records)) and self._since_compact >= COMPACT_TOKENS * _CHARS_PER_TOKEN:
            out.extend(self._compaction())
        records = self._records
        seen_assistant = None
        while True:
            if self._pos >= len(records):
                self._pos = 0
                self._rep += 1
                self._ids = {}
                self._mapped = {}
            record = records[self._pos]
            message = record.get("message") if isinstance(record.get("message"), dict) else {}
            if seen_assistant is not None and message.get("id") != seen_assistant:
                break  # the next request starts here
            self._pos += 1
            out.append(self._copy(record))
            if record.get("type") == "assistant":
                seen_assistant = message.get("id")
        return out

    def grow_to(self, size: int) -> Transcript:
        """Append requests until the transcript holds at least ``size`` bytes."""
        while self.size < size:
            self.turn()
        return self

    def grow_lines(self, count: int) -> Transcript:
        """Append requests until the transcript has at least ``count`` lines."""
        while len(self.lines) < count:
            self.turn()
        return self

    def write(self, path: str) -> int:
        with open(path, "w", encoding="utf-8") as handle:
            for line in self.lines:
                handle.write(line + "\n")
        return self.size


def turns_of(transcript: Transcript, count: int) -> Iterator[str]:
    """``count`` more requests, each as the text to append (lines with their newlines)."""
    for _ in range(count):
        yield "".join(line + "\n" for line in transcript.turn())


def main_requests_of(transcript: Transcript, count: int) -> Iterator[str]:
    """``count`` more requests of the main thread, each as the text to append: the lines of the
    sub-agents' requests that come before it, then its own (the main thread's request count grows by one
    with each text, as a follower of the main thread sees it)."""
    for _ in range(count):
        lines: list[str] = []
        while True:
            turn = transcript.turn()
            lines.extend(turn)
            if any('"type":"assistant"' in line and '"isSidechain":false' in line for line in turn):
                break
        yield "".join(line + "\n" for line in lines)


def write_chain(path: str | os.PathLike[str], size: int, seed: int, appended: int = 0) -> list[str]:
    """An uncompacted chain of at least ``size`` bytes at ``path`` (figure 9's, from ``seed``), ending with a
    main-thread request and its reply; the texts of ``appended`` more main-thread requests to append to it."""
    transcript = Transcript(compact=False, seed=seed).grow_to(size)
    list(main_requests_of(transcript, 1))
    transcript.write(str(path))
    return list(main_requests_of(transcript, appended))
