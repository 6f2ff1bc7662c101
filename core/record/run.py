"""Starting ``tokenbox record``: flag values, the foreground command and a background thread for the TUI.

aiohttp is imported only here, when a proxy starts, so ``import tokenbox.core`` stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from tokenbox.core.model.errors import ConfigError
from tokenbox.core.model.textsafe import printable
from tokenbox.core.record.capture import CaptureWriter, new_capture_path
from tokenbox.core.record.flags import DEFAULT_LISTEN, DEFAULT_UPSTREAM, listen_address, upstream_url  # noqa: F401 - also run's

_START_TIMEOUT = 30.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Recording:
    """A proxy running in a background thread (``start``): its capture file and address; ``stop()`` ends it."""

    path: str
    address: str
    _loop: asyncio.AbstractEventLoop
    _stop: asyncio.Event
    _thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the proxy and wait for its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)


def _config(listen: tuple[str, int], upstream: str, out: str | None, read_timeout: float | None):
    from tokenbox.core.record.proxy import READ_TIMEOUT, ProxyConfig  # start-up: aiohttp only when a proxy starts

    path = out or new_capture_path()
    config = ProxyConfig(listen[0], listen[1], upstream, path, read_timeout or READ_TIMEOUT)
    return config, CaptureWriter(path)


def start(
    listen: tuple[str, int] = ("127.0.0.1", 8787),
    upstream: str = DEFAULT_UPSTREAM,
    out: str | None = None,
    *,
    read_timeout: float | None = None,
    log: TextIO | None = None,
) -> Recording:
    """Start the proxy in a background thread with its own event loop; returns once it listens.

    Raises ``ConfigError`` when the capture file cannot be made or the address cannot be bound.
    ``log`` gets the per-request lines (``None``: nothing is printed, e.g. under the TUI).
    """
    from tokenbox.core.record.proxy import serve  # start-up: aiohttp only when a proxy starts

    config, writer = _config(listen, upstream, out, read_timeout)
    loop = asyncio.new_event_loop()
    stop_event = asyncio.Event()
    started = threading.Event()
    state: dict[str, object] = {}

    def ready(address: str) -> None:
        state["address"] = address
        started.set()

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve(config, writer, log, ready, stop_event))
        except OSError as exc:
            state["error"] = exc
        finally:
            writer.close()
            started.set()
            loop.close()

    thread = threading.Thread(target=main, name="tokenbox-record", daemon=True)
    thread.start()
    started.wait(_START_TIMEOUT)
    if "address" not in state:
        exc = state.get("error")
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it did not start"
        raise ConfigError(f"cannot listen on {config.host}:{config.port}: {reason}", "pick another --listen address")
    return Recording(config.out, str(state["address"]), loop, stop_event, thread)


@contextlib.contextmanager
def record_for_tui(listen: tuple[str, int] | None, upstream: str | None) -> Iterator[str]:
    """``tokenbox-tui --record``: a quiet proxy in the background while the TUI follows the yielded capture path.

    The non-loopback warning goes to stderr before the TUI takes the screen.
    """
    listen = listen or listen_address(DEFAULT_LISTEN)
    if not is_loopback(listen[0]):
        _warn_exposed(listen[0])
    recording = start(listen, upstream or DEFAULT_UPSTREAM)
    try:
        yield recording.path
    finally:
        recording.stop()
        if os.path.exists(recording.path):
            sys.stderr.write(f"tokenbox record: the capture is in {printable(recording.path)}\n")


def _warn_exposed(host: str) -> None:
    sys.stderr.write(
        f"tokenbox: warning: listening on {printable(host)}, not on this machine only: "
        "anyone who can reach it can use your API credentials through it\n"
    )


def run(listen: tuple[str, int], upstream: str, out: str | None, *, read_timeout: float | None = None) -> int:
    """``tokenbox record`` in the foreground: prints the address and capture file, then one line per request."""
    from tokenbox.core.record.proxy import safe_url, serve  # start-up: aiohttp only when a proxy starts

    if not is_loopback(listen[0]):
        _warn_exposed(listen[0])
    config, writer = _config(listen, upstream, out, read_timeout)

    def ready(address: str) -> None:
        sys.stdout.write(
            f"tokenbox record: listening on http://{address}, forwarding to {safe_url(upstream)}, capturing to {config.out}\n"
        )
        sys.stdout.flush()

    try:
        asyncio.run(_foreground(serve, config, writer, ready))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {config.host}:{config.port}: {exc.strerror or 'error'}", "pick another --listen address") from None
    finally:
        writer.close()
    return 0


async def _foreground(serve, config, writer, ready) -> None:
    """The proxy until Ctrl-C (or SIGTERM): the first lets open requests finish for a moment and cuts the
    rest, a second cuts them at once; either way the capture is written whole and nothing is printed but
    one line each (no traceback: the signals never raise ``KeyboardInterrupt`` inside the event loop)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    force = asyncio.Event()

    def interrupted() -> None:
        if stop.is_set():
            force.set()
            return
        stop.set()
        sys.stdout.write("tokenbox record: stopping (open requests get 2 s to finish; Ctrl-C again to cut them now)\n")
        sys.stdout.flush()

    handled = []
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(number, interrupted)
            handled.append(number)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass
    try:
        cut = await serve(config, writer, sys.stdout, ready, stop, force)
    finally:
        for number in handled:
            loop.remove_signal_handler(number)
    if cut:
        sys.stdout.write(f"tokenbox record: cut {cut} open request{'s' if cut != 1 else ''} (recorded as cut)\n")
    sys.stdout.write(f"tokenbox record: stopped; the capture is in {config.out}\n")
    sys.stdout.flush()
