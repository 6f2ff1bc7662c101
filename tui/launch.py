"""The ``tokenbox-tui`` console entry: load the file's tokenizer first, then import Textual and run the app.

Importing ``tokenbox.tui.app`` costs ≈ 250 ms (Textual, Rich, the widgets); loading the session's
BPE table costs about as much again. This module imports neither: it reads the flags, loads the
table the file will need (``tokenbox.tui.prewarm``, best effort), and only then imports the app,
whose ``main`` parses the flags again and reports every error exactly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tokenbox-tui`` (the same behaviour as ``tokenbox.tui.app.main``, started sooner)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        prewarm_for(args)
    except KeyboardInterrupt:  # interrupted while the table loads: the exit the app gives
        if argv is None:
            sys.exit(130)
        return 130
    from tokenbox.tui.app import main as app_main

    return app_main(argv)


def prewarm_for(args: list[str]) -> None:
    """Load the tokenizer of the file ``args`` open (the bundled sample without one); never raises.

    Bad flags and the modes that find their own file (``--claude``, ``--codex``, ``--record``) load
    nothing: the app reports the former, and the latter follow transcripts whose estimate needs no BPE table.
    """
    try:
        import contextlib
        import io

        from tokenbox.tui import prewarm
        from tokenbox.tui.cli import UsageError, parse_args

        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                options = parse_args(args)  # silent: --help and --version print once, from the app
        except (UsageError, SystemExit):  # --help, --version and bad flags: the app answers them
            return
        if options.claude or options.codex or options.record:
            return
        prewarm.load(options.file or _sample_file(), options.tokenizer)
    except Exception:  # best effort: the app's own start-up reports any problem
        return


def _sample_file() -> str | None:
    """The bundled default sample's path when it is a plain file (it is, unless installed zipped)."""
    import os
    from importlib import resources

    from tokenbox.tui.cli import DEFAULT_SAMPLE

    path = resources.files("tokenbox.samples").joinpath(DEFAULT_SAMPLE)
    return str(path) if isinstance(path, os.PathLike) and os.path.isfile(path) else None
