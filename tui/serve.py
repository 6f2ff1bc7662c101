"""``tokenbox-tui --serve [HOST:PORT]``: the same app in a web browser, through textual-serve.

Each browser tab that connects gets an app of its own: textual-serve starts the command it was given
as a subprocess *through the shell* (``asyncio.create_subprocess_shell``) and relays its screen and
keys over a websocket. That command is this interpreter running ``-m tokenbox.tui`` with the flags
``tokenbox-tui`` was given less ``--serve``, every argument quoted for the shell (``shlex.join``), so a
path with spaces, quotes, ``$``, ``;`` or backticks reaches the app as the one argument it was, never
as shell syntax; ``exec`` replaces the shell by the app, so no shell outlives a tab.

With ``--record`` the server runs the one capture proxy (a proxy per tab would fight over its address
and die with the tab) and every tab follows its capture log.

Loopback by default: whoever reaches the port sees the session and can drive the app, so any other
address must be given explicitly and prints a warning. Two checks keep other web pages out of a
loopback server: a ``Host`` that is not a loopback name is refused (DNS rebinding), and a websocket
whose ``Origin`` is not the page's own is refused (another site's script opening ``ws://127.0.0.1``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import shlex
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from aiohttp import web
    from tokenbox.tui.cli import Options

DEFAULT_SERVE = "127.0.0.1:8788"  # beside `tokenbox record`'s 8787
SERVE_FLAG = "--serve"
RECORD_FLAGS = {"--record": 0, "--listen": 1, "--upstream": 1}  # flag -> how many values follow it
TITLE = "tokenbox-tui"
HOST_HEADER = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")  # name or [v6], port


def serve_address(text: str) -> tuple[str, int]:
    """The value of ``--serve``: ``HOST:PORT``, ``[v6]:PORT`` or a bare ``PORT`` (on 127.0.0.1); as a flag type."""
    value = text.strip()
    if value.isascii() and value.isdigit():
        value = f"{DEFAULT_SERVE.rpartition(':')[0]}:{value}"
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isascii() or not port.isdigit() or not 0 <= int(port) <= 65535:
        from tokenbox.core.model.textsafe import printable  # start-up: only for a bad value

        raise argparse.ArgumentTypeError(
            f"{printable(text, 80)!r} is not HOST:PORT (e.g. {DEFAULT_SERVE}; "
            f"give FILE before --serve, or --serve=HOST:PORT)"
        )
    return host, int(port)


def without_flags(argv: Sequence[str], flags: dict[str, int]) -> list[str]:
    """``argv`` less each flag of ``flags`` and the values it took (``--flag=V`` or ``--flag V …``).

    ``--serve``'s value is optional (``flags[SERVE_FLAG]`` is -1): it took the next argument when that
    does not start with ``-``, as argparse reads it. The parser allows no abbreviations, so a flag is
    always spelt whole; after ``--`` every argument is positional and kept.
    """
    kept: list[str] = []
    index = 0
    while index < len(argv):
        argument = argv[index]
        index += 1
        if argument == "--":
            kept.extend(argv[index - 1:])
            break
        name, equals, _ = argument.partition("=")
        if name not in flags:
            kept.append(argument)
            continue
        if equals:
            continue
        values = flags[name]
        if values < 0:  # an optional value
            values = 1 if index < len(argv) and not argv[index].startswith("-") else 0
        index += values
    return kept


def app_arguments(argv: Sequence[str], capture: str | None = None) -> list[str]:
    """The arguments each tab's app runs with: ``argv`` less ``--serve`` (and, when the server records
    to ``capture``, less ``--record``/``--listen``/``--upstream``, with the capture as FILE)."""
    flags = {SERVE_FLAG: -1}
    if capture is not None:
        flags.update(RECORD_FLAGS)
    arguments = without_flags(argv, flags)
    if capture is not None:
        arguments += [capture] if "--" in arguments else ["--", capture]
    return arguments


def app_command(arguments: Sequence[str], python: str | None = None) -> str:
    """The shell command textual-serve runs per tab: this interpreter, ``-m tokenbox.tui`` and
    ``arguments``, each one quoted so that the shell reads it back as exactly that one word."""
    words = [python or sys.executable, "-m", "tokenbox.tui", *arguments]
    if os.name == "nt":  # pragma: no cover - cmd.exe has its own quoting
        import subprocess  # start-up: Windows only

        return subprocess.list2cmdline(words)
    return "exec " + shlex.join(words)


def url(host: str, port: int) -> str:
    """``http://host:port/`` with an IPv6 address in brackets."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (a free port for 0): connections wait in its backlog from now
    on, so the address can be printed before the server runs. Raises ``OSError`` when it cannot (address
    in use, no such host, not this machine's address)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    listening = socket.socket(family, kind, proto)
    try:
        if os.name != "nt":
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp would: restart at once
        listening.bind(address)
        listening.listen(128)
    except BaseException:
        listening.close()
        raise
    return listening


def foreign(host: str, origin: str | None, *, loopback_only: bool) -> bool:
    """Whether a request must be refused: one whose ``Host`` (``host[:port]``) is no loopback name on a
    loopback server (a page of another site whose name was re-pointed at 127.0.0.1), or a websocket whose
    ``Origin`` is not the address the page came from (another site's script). A request without
    ``Origin`` comes from no web page (browsers always send one on websockets) and is let through.
    A ``Host`` that is no host name at all is refused too: the page is built from it."""
    from tokenbox.core.record.run import is_loopback  # start-up: only when serving

    if not HOST_HEADER.fullmatch(host):
        return True
    name = urlsplit(f"//{host}").hostname or ""
    if loopback_only and not is_loopback(name):
        return True
    return origin is not None and urlsplit(origin).netloc.lower() != host.lower()


def discovery_error(options: Options) -> str | None:
    """Why a tab's app would stop before it draws: no session to follow for ``--claude``, ``--codex`` or
    ``--agent`` (``None``: nothing known wrong). Asked once before serving, so that it is one line in the
    terminal and exit 2 rather than an empty page in every tab; each tab's app still finds its session
    itself, the newest when it opens."""
    from tokenbox.tui.claude import DiscoveryError, discover  # start-up: discovery only when serving

    try:
        if options.claude:
            discover(options.claude_project, fallback=options.claude_project is None)
        elif options.codex:
            from tokenbox.tui.codex import discover as discover_codex

            discover_codex()
        elif options.agent:
            from tokenbox.core.sources.discovery import newest

            newest(options.agent)
    except DiscoveryError as exc:
        return str(exc)
    return None


def serve(options: Options, argv: Sequence[str]) -> int:
    """Serve the app ``argv`` describes until Ctrl-C (or SIGTERM); 0, or 2 with one error line."""
    from tokenbox.core.model.textsafe import printable  # start-up: the server's parts only when serving
    from tokenbox.core.record.run import is_loopback
    from tokenbox.tui.cli import fail

    problem = discovery_error(options)
    if problem is not None:
        return fail(problem)
    host, port = options.serve or serve_address(DEFAULT_SERVE)
    try:
        listening = listen(host, port)
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        return fail(f"cannot serve on {printable(host)}:{port}: {printable(reason)} (pick another --serve address)")
    with listening:
        loopback = is_loopback(host)
        if not loopback:
            sys.stderr.write(
                f"tokenbox-tui: warning: serving on {printable(host)}, not on this machine only: whoever can reach "
                "it sees the session and can drive the app\n"
            )
        if not options.record:
            return _serve(listening, host, app_command(app_arguments(argv)), loopback,
                          "board" if options.all else "inspector")
        from tokenbox.core.model.errors import BadInput
        from tokenbox.core.record.run import record_for_tui

        try:
            with record_for_tui(options.listen, options.upstream) as capture:
                return _serve(listening, host, app_command(app_arguments(argv, capture)), loopback)
        except BadInput as exc:
            return fail(str(exc))


def _serve(listening: socket.socket, host: str, command: str, loopback: bool, what: str = "inspector") -> int:
    port = int(listening.getsockname()[1])
    shown = socket.gethostname() if host in ("0.0.0.0", "::") else host
    sys.stdout.write(f"tokenbox-tui: serving at {url(shown, port)} (each browser tab runs its own {what}; Ctrl-C stops)\n")
    sys.stdout.flush()
    server = _server_class()(command, host=host, port=port, title=TITLE)
    server.listening = listening
    server.loopback_only = loopback
    server.serve()
    return 0


def _server_class() -> type:
    """textual-serve's ``Server`` with tokenbox's output, request checks and a prompt shutdown, run on
    the socket ``serve`` bound.

    ``serve`` is textual-serve's own (1.1.x: a new event loop whose SIGINT and SIGTERM end the server,
    and ``web.run_app`` on the app its ``_make_app`` builds, routes named ``websocket`` and ``static``),
    given the bound socket instead of a host and port; tests/tui/test_serve.py checks those parts.
    """
    import asyncio  # start-up: aiohttp and textual-serve only when serving
    import logging
    import signal

    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server

    class TokenboxServer(Server):
        listening: socket.socket
        loopback_only = True
        handlers: dict[asyncio.Task[object] | None, web.Request]  # each open tab's handler and its request

        def initialize_logging(self) -> None:
            """Warnings and errors only, one plain line each, on stderr (no access log, no banner)."""
            logging.basicConfig(level=logging.WARNING, format="tokenbox-tui: %(message)s", stream=sys.stderr)
            # a tab's app that exits just after the server's loop closed was still reaped (by asyncio's
            # child watcher thread); only its callback finds the loop gone and would say so
            logging.getLogger("asyncio").setLevel(logging.ERROR)

        def serve(self, debug: bool = False) -> None:
            self.debug = debug
            self.handlers = {}
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(number, self.request_exit)
            try:
                web.run_app(self._make_app(), sock=self.listening, handle_signals=False, loop=loop, print=None)
            finally:
                loop.close()

        async def on_startup(self, app: web.Application) -> None:
            """Nothing to print: ``serve`` printed the address once the socket listened."""

        async def on_shutdown(self, app: web.Application) -> None:
            """Cut every tab's connection and wait (5 s at most) for its handler, which then tells its app
            to quit and waits for it: a closing handshake with each browser would take seconds, and
            aiohttp would wait up to a minute for open websockets."""
            for request in self.handlers.values():
                if request.transport is not None:
                    request.transport.close()
            tasks = [task for task in self.handlers if task is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=5)
            await _close_app_transports()

        @aiohttp_jinja2.template("app_index.html")
        async def handle_index(self, request: web.Request) -> dict[str, object]:
            """The page, its websocket and static addresses built from the address the browser used
            (``localhost`` or ``127.0.0.1``, or this machine's name when serving on every interface)."""
            if foreign(request.host, None, loopback_only=self.loopback_only):
                raise web.HTTPForbidden(text="tokenbox-tui: this address is not served here\n")
            base = f"{request.scheme}://{request.host}"
            socket_scheme = "wss" if request.scheme == "https" else "ws"
            return {
                "font_size": min(max(_int(request.query.get("fontsize"), 16), 6), 48),
                "app_websocket_url": f"{socket_scheme}://{request.host}{request.app.router['websocket'].url_for()}",
                "config": {"static": {"url": f"{base}{request.app.router['static'].url_for(filename='/')}".rstrip("/") + "/"}},
                "application": {"name": self.title},
            }

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            if foreign(request.host, request.headers.get("Origin"), loopback_only=self.loopback_only):
                raise web.HTTPForbidden(text="tokenbox-tui: websocket from another origin refused\n")
            task = asyncio.current_task()
            if task is not None:
                self.handlers[task] = request
            try:
                return await super().handle_websocket(request)
            finally:
                self.handlers.pop(task, None)

    return TokenboxServer


async def _close_app_transports() -> None:
    """Close every tab's subprocess transport while the server's loop still runs.

    textual-serve never waits for a tab's app process, so its transport lives on until the collector
    frees it, and closes itself then through its loop: after aiohttp's ``run_app`` closed the loop that
    printed a traceback ("Event loop is closed") on stderr whenever an app was slow to exit (seen under
    load). The tabs had their grace in ``on_shutdown``; closing a transport whose process still runs
    kills it, and closing one twice does nothing.
    """
    import asyncio  # start-up: only when serving
    from asyncio.base_subprocess import BaseSubprocessTransport

    loop = asyncio.get_running_loop()
    gc.collect()
    for transport in [o for o in gc.get_objects() if isinstance(o, BaseSubprocessTransport)]:
        if transport._loop is loop and not transport.is_closing():  # asyncio has no public getter
            transport.close()
    await asyncio.sleep(0)  # their connection_lost callbacks run now


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
