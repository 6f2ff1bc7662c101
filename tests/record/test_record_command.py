"""``tokenbox record`` as a user runs it: one subprocess, its first line, a request, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

from tests.record.fake_provider import FakeProvider


def test_record_command_prints_address_and_capture_then_one_line_per_request(tmp_path) -> None:
    fake = FakeProvider()
    out = tmp_path / "captures" / "mine.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # A shell starts background jobs (``pytest ... &``) with SIGINT ignored, and a child inherits
    # that: Ctrl-C would never reach it. A user's terminal delivers it, so the child gets it too.
    inherited = signal.getsignal(signal.SIGINT)
    if inherited == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tokenbox.core.commands.cli", "record", "--listen", "127.0.0.1:0", "--upstream", fake.url, "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    try:
        first = process.stdout.readline()
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
