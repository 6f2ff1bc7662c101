"""The ``tokenbox`` console script: ``tokenbox statusline`` runs before anything heavy is imported.

Claude Code starts the status line every few hundred milliseconds, so it must not pay for the
argument parser, the engine or the tokenizer registry; every other command goes to ``cli.main``.
"""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    """Entry point of the ``tokenbox`` command."""
    if sys.argv[1:2] == ["statusline"]:
        # A process of a few tens of milliseconds whose work is bounded (the transcript's tail and head, a few
        # MiB at most): the cyclic collector's passes over the classes and objects it builds only cost time
        gc.disable()
        # start-up: the status line's reader alone, not argparse, the engine or the tokenizer registry
        from tokenbox.core.commands.statusline import run

        sys.exit(run(sys.argv[2:], sys.stdin, sys.stdout, os.environ))
    from tokenbox.core.commands.cli import main as cli_main  # start-up: see the status line above

    cli_main()
