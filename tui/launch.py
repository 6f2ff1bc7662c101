"""The ``tokenbox-tui`` console entry: start the first plan, then import Textual and run the app.

Importing ``tokenbox.tui.app`` costs ≈ 300 ms (Textual, Rich, the widgets); loading the session's
BPE table and planning the file costs about as much again, and both hold the GIL. This module
imports neither: it forks at once a process that reads the flags and, for a session file (or the
bundled sample), plans the request the app will make first (``tokenbox.tui.firstplan``), while this
one imports the app, whose ``main`` parses the flags, reports every error exactly as before and
draws the handed-over plan. Where no process can be forked the table the file needs is loaded
before the import instead (``tokenbox.tui.prewarm``, best effort). For the board (``--all``) the process
glances at every recent session instead (``tokenbox.tui.board.firstlooks``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

BOARD_FLAG = "--all"  # the board's flag (``tokenbox.tui.board.firstlooks``; flags are spelt whole)

if TYPE_CHECKING:
    from tokenbox.tui.board.firstlooks import FirstLooks
    from tokenbox.tui.firstplan import FirstPlan
    from tokenbox.tui.planner import PlanRequest


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tokenbox-tui`` (the same behaviour as ``tokenbox.tui.app.main``, started sooner)."""
    args = list(sys.argv[1:] if argv is None else argv)
    first: FirstPlan | FirstLooks | None = None
    try:
        try:
            first = start(args)
            from tokenbox.tui.app import main as app_main
        except KeyboardInterrupt:  # interrupted before the app runs: the exit the app gives, no traceback
            if argv is None:
                sys.exit(130)
            return 130
        return app_main(argv, first_plan=first)
    finally:
        if first is not None:
            first.close()  # the app quit (or never opened) before the child was done


def start(args: list[str]) -> FirstPlan | FirstLooks | None:
    """What ``tokenbox-tui ARGS`` does before it imports Textual: fork a process that plans the file
    ARGS open (``first_request``), returned for the app to take; where no process can be forked,
    prewarm the file's tokenizer instead (``None``). For the board (``--all``) the process glances at its
    sessions instead (``tokenbox.tui.board.firstlooks``). Never raises.

    Only what both processes need is imported first, once, instead of in each after the fork: the
    flags' parser and the planner (tokenbox.core's model, loader and engine; no thread, no table).
    The child parses the flags, so its table load starts as soon as it can. Bad flags and the modes
    that find their own file (``--claude``, ``--codex``, ``--record``) plan nothing there: the app
    reports the former, and the latter discover their file once the app runs.
    """
    try:
        import tokenbox.tui.cli

        if BOARD_FLAG in args:  # the board: its first looks instead (the child checks the flags)
            # start-up: the board's sessions (tokenbox.core's readers and engine) for both processes, no Textual
            from tokenbox.tui.board.firstlooks import FirstLooks

            return FirstLooks.start(args)
        import tokenbox.tui.state  # noqa: F401 - imported for both processes (the planner with it)
        from tokenbox.tui.firstplan import FirstPlan

        first = FirstPlan.start(lambda: first_request(args))
    except Exception:  # best effort: the app plans itself
        return None
    if first is None:
        prewarm_for(args)
    return first


def prewarm_for(args: list[str]) -> None:
    """Load the tokenizer of the file ``args`` open (the bundled sample without one); never raises."""
    try:
        request = first_request(args)
        if request is not None:
            from tokenbox.tui import prewarm

            prewarm.load(request.path, request.tokenizer)
    except Exception:  # best effort: the app's own start-up reports any problem
        return


def first_request(args: list[str]) -> PlanRequest | None:
    """The first request the app will make for ``args`` (``TokenboxApp.request_plan("start")``), or
    ``None``: bad flags, ``--help``/``--version``, a mode that discovers its file, a directory, no
    sample file. Prints nothing."""
    import contextlib
    import io
    import os

    from tokenbox.tui.cli import UsageError, parse_args

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            options = parse_args(args)  # silent: --help and --version print once, from the app
    except (UsageError, SystemExit):  # --help, --version and bad flags: the app answers them
        return None
    if options.claude or options.codex or options.record or options.agent or options.all or options.serve:  # --serve: each tab's app plans
        return None
    path = options.file or _sample_file()
    if path is None or os.path.isdir(path):  # a directory: the app's one-line error
        return None
    from tokenbox.tui.state import ViewState

    # the state the app starts in, and its one way to a request (``FirstPlan.take`` checks that the app
    # asks for the same, its number and reason aside)
    state = ViewState(budget=options.budget, reserve_out=options.reserve_out, tokenizer=options.tokenizer,
                      trimming=options.trimming)
    return state.request(os.path.abspath(path), reload=True, reason="start")


def _sample_file() -> str | None:
    """The bundled default sample's path when it is a plain file (it is, unless installed zipped)."""
    import os
    from importlib import resources

    from tokenbox.tui.cli import DEFAULT_SAMPLE

    path = resources.files("tokenbox.samples").joinpath(DEFAULT_SAMPLE)
    return str(path) if isinstance(path, os.PathLike) and os.path.isfile(path) else None
