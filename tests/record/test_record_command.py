"""``tokenbox record`` as a user runs it: one subprocess, its first line, a request, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request

import pytest
from tokenbox.core.record.proxy import CUT

from tests.record.fake_provider import FakeProvider

WAIT = 30.0  # an upper bound for another process (never a timing assertion)


def test_record_command_prints_address_and_capture_then_one_line_per_request(tmp_path) -> None:
    fake = FakeProvider()
    out = tmp_path / "captures" / "mine.jsonl"
    process, first = _record(fake, out)
    try:
        match = re.search(r"listening on http://(127\.0\.0\.1:\d+), forwarding to (\S+), capturing to (\S+)$", first.strip())
        assert match, first
        assert match.group(2) == fake.url and match.group(3) == str(out)
        body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(f"http://{match.group(1)}/v1/chat/completions", body,
                                         {"Content-Type": "application/json", "Authorization": "Bearer sk-test-SECRET-cmd"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["usage"]["prompt_tokens"] == 1010
        assert process.stdout.readline().strip() == "POST /v1/chat/completions 200 gpt-4o context 1,010 tokens"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # never leave the proxy running after a failed test
            process.communicate()
            raise
        finally:
            fake.stop()
    assert process.returncode in (0, 130) and "Traceback" not in stderr and stderr == ""
    text = out.read_text(encoding="utf-8")
    assert "SECRET" not in text + stdout + stderr
    assert [json.loads(line)["kind"] for line in text.splitlines()] == ["start", "request", "response"]


def _record(fake: FakeProvider, out) -> tuple[subprocess.Popen, str]:
    """``tokenbox record`` in a child process that gets Ctrl-C as a terminal would deliver it; its first line.

    A shell starts background jobs (``pytest ... &``) with SIGINT ignored, and a child inherits that:
    Ctrl-C would never reach it. A user's terminal delivers it, so the child gets it too.
    """
    inherited = signal.getsignal(signal.SIGINT)
    if inherited == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tokenbox.core.commands.cli", "record", "--listen", "127.0.0.1:0", "--upstream", fake.url, "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    return process, process.stdout.readline()


def _open_stream(address: str) -> tuple[threading.Thread, dict, threading.Event]:
    """An endless stream through the proxy, read in a thread until it ends; ``outcome['error']`` is how."""
    import anthropic

    outcome: dict = {}
    started = threading.Event()

    def read() -> None:
        client = anthropic.Anthropic(base_url=f"http://{address}", api_key="sk-test-SECRET-cut", max_retries=0)
        try:
            with client.messages.stream(model="endless-model", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as stream:
                for _ in stream:
                    started.set()
            outcome["error"] = None
        except Exception as exc:  # how the client learns its stream was cut
            outcome["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, outcome, started


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_cuts_open_streams_records_them_as_cut_and_exits_cleanly(tmp_path, presses: int) -> None:
    fake = FakeProvider()
    out = tmp_path / "capture.jsonl"
    process, first = _record(fake, out)
    try:
        address = re.search(r"listening on http://(127\.0\.0\.1:\d+)", first).group(1)
        thread, outcome, started = _open_stream(address)
        assert started.wait(WAIT)
        process.send_signal(signal.SIGINT)
        if presses == 2:
            assert "stopping" in process.stdout.readline()
            process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=WAIT)
        thread.join(WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        fake.stop()
    assert process.returncode == 0 and stderr == "", stderr  # no traceback, however many presses
    assert outcome["error"] is not None  # the client saw its stream cut, not a clean end
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    response = next(r for r in records if r["kind"] == "response")
    assert response["error"] == CUT and response["usage"]["input_tokens"] == 1010
    assert "cut 1 open request" in stdout
