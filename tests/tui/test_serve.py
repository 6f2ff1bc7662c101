"""``tokenbox-tui --serve``: the flag, the command each browser tab runs (through a real shell), the
address checks, and the app served to a real headless Chromium that draws it and sends it a key."""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import pytest
from tokenbox.tui import serve as served
from tokenbox.tui.app import main
from tokenbox.tui.cli import UsageError, parse_args

from tests.tui.browser import Browser, chromium_path
from tests.tui.helpers import copy_sample

# every character a shell would act on, in a folder and a file name the served app must open as given
NASTY = "a b $(touch PWNED) ;`touch PWNED2`; 'q\" *|&>x"


@pytest.mark.parametrize("flags, expected", [
    (["--serve"], ("127.0.0.1", 8788)),
    (["--serve=9000"], ("127.0.0.1", 9000)),
    (["--serve", "0.0.0.0:0"], ("0.0.0.0", 0)),
    (["--serve", "[::1]:8000", "f.yaml"], ("::1", 8000)),
    (["f.yaml", "--serve"], ("127.0.0.1", 8788)),
    ([], None),
])
def test_serve_flag_values(flags, expected):
    assert parse_args(flags).serve == expected


@pytest.mark.parametrize("flags", [["--serve", "f.yaml"], ["--serve=nohost:"], ["--serve", "h:70000"], ["--ser"]])
def test_bad_serve_values_are_usage_errors(flags):
    with pytest.raises(UsageError):
        parse_args(flags)


def test_bad_serve_address_is_one_line_exit_2(capsys):
    assert main(["--serve", "session.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tokenbox: error: argument --serve:") and "give FILE before --serve" in err


def test_an_address_in_use_is_one_line_exit_2(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--serve", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err == f"tokenbox: error: cannot serve on 127.0.0.1:{port}: Address already in use (pick another --serve address)\n"


def test_no_session_to_follow_is_one_line_exit_2_before_serving(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no codex here"))
    assert main(["--codex", "--serve", "127.0.0.1:0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("tokenbox: error: no Codex sessions in ") and err.count("\n") == 1


@pytest.mark.parametrize("argv", [
    ["--serve"],
    ["f.yaml", "--serve"],
    ["--serve", "127.0.0.1:0", "f.yaml", "--budget", "900"],
    ["--budget", "900", "--serve=[::1]:0", "--trimming", "progressive", "f.yaml"],
    ["--serve", "--", "-odd name.yaml"],
    ["--claude", "--serve", "localhost:1", "--warn-levels", "50,60,70"],
    ["--serve", "127.0.0.1:1", "--", "--serve"],
])
def test_each_tab_runs_the_same_flags_less_serve(argv):
    expected = dataclasses.replace(parse_args(argv), serve=None)
    assert parse_args(served.app_arguments(argv)) == expected


def test_with_record_the_tabs_follow_the_servers_capture():
    argv = ["--record", "--listen", "127.0.0.1:9", "--serve", "--upstream=https://api.openai.com", "--budget", "900"]
    options = parse_args(served.app_arguments(argv, capture="/tmp/x y/capture.jsonl"))
    assert (options.file, options.record, options.listen, options.upstream, options.budget) == (
        "/tmp/x y/capture.jsonl", False, None, None, 900)


def test_the_command_reaches_the_app_word_for_word_through_a_real_shell(tmp_path):
    # textual-serve runs the command with the shell: each word must come back exactly as given
    printer = tmp_path / "print args"
    printer.write_text('#!/bin/sh\nprintf "%s\\0" "$@"\n')
    printer.chmod(0o755)
    words = [f"{tmp_path}/{NASTY}/f.yaml", "--budget", "100", "", "$HOME", "a\nb", "*", "~", "--x=$(id)"]
    command = served.app_command(words, python=str(printer))
    result = subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, capture_output=True, check=True)
    assert result.stdout.split(b"\0")[:-1] == [w.encode() for w in ["-m", "tokenbox.tui", *words]]
    assert not list(tmp_path.glob("PWNED*"))


def test_serving_prints_the_address_and_warns_off_loopback(monkeypatch, capsys):
    from aiohttp import web

    bound = []
    monkeypatch.setattr(web, "run_app", lambda app, sock, **_: (app.close(), bound.append(sock.getsockname())))
    assert main(["--serve", "127.0.0.1:0", "--budget", "900"]) == 0
    out, err = capsys.readouterr()
    assert out == f"tokenbox-tui: serving at http://127.0.0.1:{bound[0][1]}/ (each browser tab runs its own inspector; Ctrl-C stops)\n"
    assert err == ""  # loopback: no warning
    assert main(["--serve", "0.0.0.0:0"]) == 0
    assert bound[1][0] == "0.0.0.0"
    assert capsys.readouterr().err == (
        "tokenbox-tui: warning: serving on 0.0.0.0, not on this machine only: whoever can reach it sees the "
        "session and can drive the app\n")


def test_textual_serve_still_runs_the_command_through_the_shell():
    """What tui/serve.py relies on in textual-serve: each tab's command goes to the shell (so it is quoted,
    and starts with ``exec``), and the server builds its app in ``_make_app`` (serve runs it on our socket)."""
    import inspect

    from textual_serve.app_service import AppService
    from textual_serve.server import Server

    assert re.search(r"create_subprocess_shell\(\s*self\.command\b", inspect.getsource(AppService._open_app_process))
    assert inspect.iscoroutinefunction(Server._make_app)


@pytest.mark.parametrize("host, origin, loopback_only, refused", [
    ("127.0.0.1:8788", None, True, False),
    ("localhost:8788", "http://localhost:8788", True, False),
    ("[::1]:8788", "http://[::1]:8788", True, False),
    ("attacker.example:8788", None, True, True),  # DNS rebinding: another name pointed at 127.0.0.1
    ("127.0.0.1:8788", "http://attacker.example", True, True),  # another site's script
    ("127.0.0.1:8788", "null", True, True),
    ("192.168.1.5:8788", "http://192.168.1.5:8788", False, False),
    ("192.168.1.5:8788", "http://attacker.example", False, True),
    ('x"><script>', None, False, True),
])
def test_which_requests_are_refused(host, origin, loopback_only, refused):
    assert served.foreign(host, origin, loopback_only=loopback_only) is refused


# ------------------------------------------------------------------------------ in a real browser

CHROMIUM = chromium_path()
HEADLINE = re.compile(r"Context (\d+)%")


def _first_line(stream, timeout: float) -> str:
    if not select.select([stream], [], [], timeout)[0]:
        raise AssertionError(f"the server printed nothing in {timeout} s")
    return stream.readline().decode()


def _refused(port: int, headers: dict[str, str], path: str = "/") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def _group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install chromium; .ci/run does)")
def test_served_app_in_a_real_browser(tmp_path):
    folder = tmp_path / NASTY
    folder.mkdir()
    path = copy_sample("facet_layout.yaml", folder, as_name="facet layout.yaml")
    server = subprocess.Popen(
        [sys.executable, "-m", "tokenbox.tui", str(path), "--serve", "127.0.0.1:0"], cwd=tmp_path,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    browser = None
    try:
        browser = Browser(CHROMIUM, tmp_path / "profile")  # starts while the server does
        line = _first_line(server.stdout, 15)
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url, line
        port = int(url.group(1))
        # another site's name pointed at 127.0.0.1, another site's websocket: refused before any app starts
        assert _refused(port, {"Host": f"attacker.example:{port}"}) == 403
        assert _refused(port, {"Origin": "http://attacker.example", "Upgrade": "websocket", "Connection": "Upgrade",
                               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}, "/ws") == 403

        page = browser.open(url.group(0))
        before = int(page.wait_for(HEADLINE.search, 20).group(1))
        assert "facet layout.yaml" in page.screen()  # the file the shell must not have split or expanded
        page.press("+")  # what-if: max_ctx 5% higher, so the same context is a smaller part of it
        after = int(page.wait_for(lambda s: (m := HEADLINE.search(s)) and int(m.group(1)) != before and m, 10).group(1))
        assert after < before and "max_ctx +5%" in page.screen()
        assert not list(tmp_path.rglob("PWNED*"))

        os.kill(server.pid, signal.SIGINT)  # Ctrl-C, with a tab still connected
        assert server.wait(10) == 0
        assert _group_gone(server.pid, 5), "an app the server started outlived it"
        errors = server.stderr.read()
        assert b"Traceback" not in errors, errors.decode(errors="replace")
    finally:
        if browser is not None:
            browser.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        # shown by pytest when the test failed: the server's lines and what a tab's app wrote on stderr
        print(server.stdout.read().decode(errors="replace"), server.stderr.read().decode(errors="replace"))
        server.stdout.close()
        server.stderr.close()
