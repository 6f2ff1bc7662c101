"""Run ``tokenbox ARGS`` inside the test process: ``tokenbox.core.commands.cli.main`` with its own streams.

A subprocess per CLI run costs ~0.5 s of interpreter start and imports on this machine; the suite
runs hundreds of them. This helper gives the same observable result (exit code, stdout and stderr
bytes) by calling ``main([...])`` with the environment, working folder and standard streams swapped
for the duration of the call. Runs are serialised (the process has one environment and one cwd).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

_LOCK = threading.Lock()


@contextlib.contextmanager
def _swapped(environ: dict[str, str] | None, cwd: Path | str | None, stdin: bytes) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    try:
        if environ is not None:
            os.environ.clear()
            os.environ.update(environ)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        # What a real run's streams do: strict UTF-8 text over a byte buffer, no newline translation.
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", newline="", write_through=True)
        yield out, err
    finally:
        with contextlib.suppress(ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = saved
        os.chdir(saved_cwd)
        if environ is not None:
            os.environ.clear()
            os.environ.update(saved_env)


def run_main(
    args: Sequence[str],
    *,
    environ: dict[str, str] | None = None,
    cwd: Path | str | None = None,
    stdin: bytes = b"",
) -> subprocess.CompletedProcess[bytes]:
    """``tokenbox ARGS`` in this process; the result looks like ``subprocess.run(..., capture_output=True)``'s."""
    from tokenbox.core.commands.cli import main

    with _LOCK, _swapped(environ, cwd, stdin) as (out, err):
        code = main(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(["tokenbox", *args], code, stdout, stderr)
