"""A capture that never breaks (issue 24): records whole or not at all, a torn record skipped with a warning,
de-duplication by conversation in bounded memory."""

from __future__ import annotations

import errno
import gc
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from tokenbox.core.commands.cli import main
from tokenbox.core.record import capture
from tokenbox.core.record.capture import CaptureWriter, Deltas
from tokenbox.core.sources.loader import load_turns
from tokenbox.core.sources.readers.capture_format import rebuild


def _body(conversation: int, turns: int) -> dict:
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"conversation {conversation}, question {turn}: " + "why? " * 20})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": f"answer {turn}: " + "because. " * 20})
    return {"model": "claude-sonnet-4", "max_tokens": 100, "system": f"You are agent {conversation % 3}. " * 50,
            "messages": messages}


def _request(writer: CaptureWriter, body: dict, tokens: int = 100) -> int:
    record_id = writer.request("POST", "/v1/messages", "anthropic-messages", {}, body, 0)
    writer.response(record_id, status=200, usage={"input_tokens": tokens})
    return record_id


class FailingWrite:
    """``os.write`` that fails (after writing part of the record, as a full disk does) when told to."""

    def __init__(self) -> None:
        self.fail_next = False

    def __call__(self, fd: int, data) -> int:
        if self.fail_next:
            self.fail_next = False
            os.write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data)


def test_a_failed_write_is_cut_back_and_the_next_record_is_whole(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    write = FailingWrite()
    writer = CaptureWriter(path, write=write)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    _request(writer, _body(1, 1))
    size = os.path.getsize(path)
    write.fail_next = True
    with pytest.raises(OSError):
        writer.request("POST", "/v1/messages", "anthropic-messages", {}, _body(1, 2), 0)
    assert os.path.getsize(path) == size  # nothing of the failed record is left
    _request(writer, _body(1, 3), 300)  # it must not be stored against the record that is not in the file
    writer.close()
    lines = open(path, encoding="utf-8").read().split("\n")
    assert lines[-1] == "" and all(json.loads(line) for line in lines[:-1])
    turns = load_turns(path)
    assert [t.recorded.context_tokens for t in turns] == [100, 300] and not turns[-1].warnings


def test_a_write_that_cannot_be_cut_back_leaves_one_torn_line_that_readers_skip(tmp_path, monkeypatch, capsys) -> None:
    path = str(tmp_path / "c.jsonl")
    write = FailingWrite()
    writer = CaptureWriter(path, write=write)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    _request(writer, _body(1, 1))
    write.fail_next = True

    def refuse(fd: int, size: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "ftruncate", refuse)
    with pytest.raises(OSError):
        writer.request("POST", "/v1/messages", "anthropic-messages", {}, _body(1, 2), 0)
    monkeypatch.undo()
    _request(writer, _body(1, 3), 300)
    writer.close()
    turns = load_turns(path)
    assert [t.recorded.context_tokens for t in turns] == [100, 300]
    assert main(["plan", path, "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("skipped torn capture line 4" in w for w in warnings), warnings
    from tokenbox.core.sources.loader import Loader  # the follower skips it too

    assert len(Loader().load_turns(path)) == 2


def test_a_file_size_limit_loses_records_whole_never_half(tmp_path) -> None:
    """RLIMIT_FSIZE in a child process: writes past it fail with EFBIG (Python ignores SIGXFSZ)."""
    path = str(tmp_path / "c.jsonl")
    script = textwrap.dedent(f"""
        import resource, sys
        from tokenbox.core.record.capture import CaptureWriter
        writer = CaptureWriter({path!r})
        writer.start("https://api.anthropic.com", "127.0.0.1:8787")
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))
        failed = 0
        for number in range(12):
            body = {{"model": "m", "messages": [{{"role": "user", "content": "conversation %d " % number + "x" * 700}}]}}
            try:
                record_id = writer.request("POST", "/v1/messages", "anthropic-messages", {{}}, body, 0)
                writer.response(record_id, status=200, usage={{"input_tokens": 10 + number}})
            except OSError:
                failed += 1
        writer.close()
        print(failed)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and int(result.stdout) > 0, result.stderr
    data = open(path, "rb").read()
    assert len(data) <= 6000 and data.endswith(b"\n")
    records = [json.loads(line) for line in data.splitlines()]  # every line whole
    assert records[0]["kind"] == "start" and sum(r["kind"] == "request" for r in records) >= 3
    assert len(load_turns(path)) == sum(r["kind"] == "request" for r in records)


def test_interleaved_conversations_are_stored_against_their_own_conversation() -> None:
    """Requests of 12 conversations taking turns: each stored against its own previous request (a few
    hundred bytes each), whatever the number of conversations between them; look-ups per request bounded."""
    conversations, turns = 12, 60
    deltas = Deltas()
    stored: dict[int, dict] = {}
    whole = written = 0
    record_id = 0
    most_lookups = 0
    for turn in range(1, turns + 1):
        for conversation in range(conversations):
            record_id += 1
            body = _body(conversation, turn)
            before = deltas.lookups
            encoded = json.loads(json.dumps(deltas.encode(record_id, "anthropic-messages", body)))
            most_lookups = max(most_lookups, deltas.lookups - before)
            whole += len(json.dumps(body))
            written += len(json.dumps(encoded))
            stored[record_id] = encoded["body"] if "body" in encoded else rebuild(stored[encoded["delta"]["base"]], encoded["delta"], "messages")
            assert stored[record_id] == body
            if turn > 1:
                assert encoded["delta"]["keep"] == 2 * turn - 3 and len(encoded["delta"]["append"]) == 2
    print(f"{record_id} requests: {whole} bytes of bodies, {written} bytes stored")
    assert written * 20 < whole  # the last-8 window stored every one of these bodies whole
    assert most_lookups <= 2 * (2 * turns) + 2  # one per message prefix at most, not one per conversation


def test_bodies_are_not_kept_after_they_are_encoded() -> None:
    deltas = Deltas()
    deltas.encode(1, "anthropic-messages", {"model": "m", "messages": [{"role": "user", "content": "small"}]})
    gc.collect()
    tracemalloc.start()
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "x" * (8 << 20)}]}
        deltas.encode(2, "anthropic-messages", body)
        del body
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1 << 20, held  # digests, not the 8 MB body


def test_non_finite_numbers_given_to_the_writer_are_stored_readably(tmp_path) -> None:
    path = str(tmp_path / "c.jsonl")
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    body = {**_body(1, 1), "temperature": float("nan"), "top_k": float("inf")}
    _request(writer, body)
    writer.close()
    stored = json.loads(open(path, encoding="utf-8").read().splitlines()[1])["body"]
    assert stored["temperature"] == "NaN" and stored["top_k"] == "Infinity"
    assert load_turns(path)[0].recorded.context_tokens == 100


def test_parse_body_reads_nan_as_text() -> None:
    assert capture.parse_body(b'{"a": NaN, "b": -Infinity, "c": 1e999, "d": 0.5}') == {"a": "NaN", "b": "-Infinity", "c": "1e999", "d": 0.5}


def test_a_followed_capture_is_read_past_the_one_shot_size_limit(tmp_path) -> None:
    """``tokenbox-tui --record`` stopped following at 64 MiB: the limit is for one read, not for a tail."""
    from tokenbox.core.model.errors import FileTooLarge
    from tokenbox.core.sources.loader import Loader

    path = str(tmp_path / "c.jsonl")
    writer = CaptureWriter(path)
    writer.start("https://api.anthropic.com", "127.0.0.1:8787")
    loader = Loader()
    limit = 6000
    for turn in range(1, 13):
        _request(writer, _body(turn % 3, turn), 100 + turn)
        turns = loader.load_turns(path, max_bytes=limit)
        assert len(turns) == turn and turns[-1].recorded.context_tokens == 100 + turn
    writer.close()
    assert os.path.getsize(path) > 2 * limit
    with pytest.raises(FileTooLarge):
        Loader().load_turns(path, max_bytes=limit)  # a one-shot read of the whole file keeps the limit


def test_what_counts_as_a_credential_in_a_body() -> None:
    from tokenbox.core.record.redact import REDACTED, redact, redact_url

    assert redact_url("https://user:pass@mcp.example/sse") == "https://[redacted]@mcp.example/sse"
    assert redact_url("https://mcp.example/sse?token=T&mode=full&SIG=S") == "https://mcp.example/sse?token=%5Bredacted%5D&mode=full&SIG=%5Bredacted%5D"
    assert redact_url("https://example.com is where it lives, mail me@x.org") == "https://example.com is where it lives, mail me@x.org"
    assert redact_url("plain text with user:pass@host") == "plain text with user:pass@host"
    body = {"metadata": {"user_id": "u-1", "GitHub-Token": "T1", "db_password": "T2", "credentials": {"user": "a", "pass": "T3"}},
            "tools": [{"name": "login", "input_schema": {"type": "object", "properties": {"password": {"type": "string"},
                                                                                         "api_key": {"type": "string"}}}}]}
    kept = redact(body)
    assert kept["metadata"] == {"user_id": "u-1", "GitHub-Token": REDACTED, "db_password": REDACTED, "credentials": REDACTED}
    assert kept["tools"] == body["tools"]  # parameter names of a schema are not credentials
