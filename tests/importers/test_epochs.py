"""A followed Claude Code transcript keeps its main thread since the last compaction, not its history.

Transcripts written here in Claude Code 2.x's layout (prompts, replies with thinking whose text the
transcript leaves out, tool calls and their results, ``compact_boundary`` lines each followed by the
summary): the reader keeps the blocks and contexts of the main thread's last epoch only, a request of an
earlier epoch is built again from the file and equals the one a reader that keeps everything builds,
and a rewind past a compaction arriving live makes the follower read again, keeping it all.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenbox.core import Engine
from tokenbox.core.analysis.compactions import ledger
from tokenbox.core.commands.cli import main as cli_main
from tokenbox.core.sources.readers.claude_code import TranscriptFollower

SESSION = "7e0c5e1a-0000-4000-8000-0000000000e7"
MODEL = "claude-sonnet-4-5-20250929"


class _Writer:
    """Claude Code's lines for a session of prompts, replies and tool calls, with compactions."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.last: str | None = None
        self.serial = 0
        self.context = 12_000

    def _uuid(self) -> str:
        self.serial += 1
        return f"00000000-0000-4000-8000-{self.serial:012d}"

    def _line(self, record: dict, *, chain: bool = True) -> str:
        uuid = self._uuid()
        self.lines.append({"uuid": uuid, "parentUuid": self.last if chain else None, "sessionId": SESSION,
                           "isSidechain": False, "version": "2.0.14", **record})
        self.last = uuid
        return uuid

    def _reply(self, content: list[dict]) -> None:
        self.context += 900
        message_id = f"msg_{self.serial:08d}"
        for block in content:  # one line per block, the request's usage repeated
            self._line({"type": "assistant", "message": {
                "id": message_id, "role": "assistant", "model": MODEL, "content": [block],
                "usage": {"input_tokens": 4, "cache_creation_input_tokens": 300, "cache_read_input_tokens": self.context,
                          "output_tokens": 250}}})

    def exchange(self, n: int) -> None:
        """A prompt, a reply that reads a file, the result, and the answer."""
        self._line({"type": "user", "message": {"role": "user", "content": f"step {n}: look at part {n} of the module"}})
        call = f"toolu_{n:06d}_{self.serial}"
        self._reply([{"type": "thinking", "thinking": "", "signature": "c2ln"},
                     {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"/src/part{n}.py"}}])
        body = "\n".join(f"{i:4d}  def part_{n}_{i}(value): return value * {i}  # {'x' * (n % 7)}" for i in range(12 + n % 5))
        self._line({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": body}]},
            "toolUseResult": {"type": "text", "file": {"filePath": f"/src/part{n}.py", "content": body, "numLines": 12}}})
        self._reply([{"type": "text", "text": f"Part {n} multiplies its argument; nothing to change there."}])

    def compaction(self) -> None:
        """Claude Code's boundary and the summary the next context starts from."""
        before = self.last
        self._line({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                    "logicalParentUuid": before, "compactMetadata": {"trigger": "auto", "preTokens": self.context}},
                   chain=False)
        self._line({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                    "message": {"role": "user", "content": f"This session is being continued. Summary: {self.serial} steps."}})
        self.context = 15_000

    def text(self, start: int = 0) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines[start:])


def _session(epochs: int, per_epoch: int) -> _Writer:
    writer = _Writer()
    for epoch in range(epochs):
        if epoch:
            writer.compaction()
        for n in range(per_epoch):
            writer.exchange(epoch * 100 + n)
    return writer


def _held_in(lines: list[dict]) -> tuple[int, int]:
    """The content blocks and the requests of ``lines``, counted from the lines written."""
    blocks = sum(len(line["message"]["content"]) if isinstance(line["message"]["content"], list) else 1
                 for line in lines if "message" in line)
    return blocks, len({line["message"]["id"] for line in lines if line["type"] == "assistant"})


def _last_epoch_held(writer: _Writer) -> tuple[int, int]:
    """What a reader of the main thread since its last compaction holds: the blocks and requests from its
    last compaction on, and of each compaction before, the first request after it (its reply's blocks and its
    context: the summary's size is read from it)."""
    boundaries = [i for i, line in enumerate(writer.lines) if line.get("subtype") == "compact_boundary"]
    blocks, requests = _held_in(writer.lines[boundaries[-1]:] if boundaries else writer.lines)
    for at in boundaries[:-1]:
        first = next(line["message"]["id"] for line in writer.lines[at:] if line["type"] == "assistant")
        blocks += _held_in([line for line in writer.lines[at:] if line.get("message", {}).get("id") == first])[0]
        requests += 1
    return blocks, requests


def test_a_followed_transcript_keeps_the_main_threads_last_epoch_only(tmp_path: Path) -> None:
    writer = _session(4, 5)
    path = tmp_path / "session.jsonl"
    path.write_text(writer.text(), encoding="utf-8")
    follower = TranscriptFollower(str(path), None)
    reader = follower.read()
    assert reader.held("main") == _last_epoch_held(writer) == (30, 12)
    assert _held_in(writer.lines) == (103, 40)  # what a reader that keeps it all holds
    assert len(reader.main_turns()) == 40
    # live: requests appended, then a new compaction: the epoch before it is dropped in turn
    written = len(writer.lines)
    writer.exchange(900)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(writer.text(written))
    assert follower.read().held("main") == _last_epoch_held(writer) == (35, 14)
    written = len(writer.lines)
    writer.compaction()
    writer.exchange(901)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(writer.text(written))
    assert follower.read().held("main") == _last_epoch_held(writer) == (12, 5)
    assert follower.resets == 0


def _plans_equal(dropped, kept, index: int) -> None:
    engine = Engine()
    assert dropped[index] == kept[index]
    assert engine.plan(dropped[index]).to_dict() == engine.plan(kept[index]).to_dict()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=0, max_value=49), min_size=1, max_size=4))
def test_a_request_before_the_last_compaction_is_built_again_as_it_was(tmp_path: Path, viewed: list[int]) -> None:
    path = tmp_path / "session.jsonl"
    if not path.exists():
        path.write_text(_session(5, 5).text(), encoding="utf-8")
    kept = TranscriptFollower(str(path), None, drop_history=False).read().main_turns()
    dropped = TranscriptFollower(str(path), None).read().main_turns()
    assert len(dropped) == len(kept) == 50
    for index in viewed:  # any request, in any order (each epoch read again when first asked for)
        _plans_equal(dropped, kept, index)


def test_the_compactions_ledger_reads_no_epoch_again(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text(_session(6, 3).text(), encoding="utf-8")
    reader = TranscriptFollower(str(path), None).read()
    records = ledger(reader.main_turns())
    assert len(records) == 5 and all(r.summary for r in records)
    assert records == ledger(TranscriptFollower(str(path), None, drop_history=False).read().main_turns())
    assert reader.epochs_read == 0  # each summary's size from the first request after it, kept
    assert reader.main_turns()[0].sections  # a request of the first epoch: read again
    assert reader.epochs_read == 1


def test_a_past_request_of_a_compacted_transcript_plans_the_same_from_the_command_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text(_session(3, 3).text(), encoding="utf-8")
    kept = TranscriptFollower(str(path), None, drop_history=False).read().main_turns()
    engine = Engine()
    for turn in (1, 4, 6, 9):
        assert cli_main(["plan", "--json", "--turn", str(turn), str(path)]) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(engine.plan(kept[turn - 1]).to_dict()))


def test_a_rewind_past_a_compaction_arriving_live_reads_the_file_again_keeping_it_all(tmp_path: Path) -> None:
    writer = _session(3, 3)
    path = tmp_path / "session.jsonl"
    path.write_text(writer.text(), encoding="utf-8")
    follower = TranscriptFollower(str(path), None)
    assert follower.read().held("main") == _last_epoch_held(writer) == (18, 7)
    # the user rewinds to a reply before the last compaction and goes on from there
    before = next(line["uuid"] for line in reversed(writer.lines[: writer.lines.index(
        next(line for line in reversed(writer.lines) if line.get("subtype") == "compact_boundary"))])
        if line["type"] == "assistant")
    written = len(writer.lines)
    writer.last = before
    writer.exchange(500)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(writer.text(written))
    reader = follower.read()
    assert follower.resets == 1 and reader.held("main") == _held_in(writer.lines) == (52, 20)  # all kept, read again
    kept = TranscriptFollower(str(path), None, drop_history=False).read().main_turns()
    turns = reader.main_turns()
    assert len(turns) == len(kept) == 20
    for index in range(20):
        _plans_equal(turns, kept, index)
