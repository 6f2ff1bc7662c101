"""The status line's words for ``argparse`` — its summary, description, default template and flags — apart from
the status line itself, so that ``tokenbox --help`` lists it and a ``plan`` or ``check`` builds its parser
without importing the status line's reader (``statusline.py``, which imports this module for its own ``--help``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_FORMAT = "ctx {pending}{pct}% · {to_compact} to compact · {biggest} {biggest_tokens}"
SUMMARY = "one line for Claude Code's status line: context, room before auto-compact, the biggest part, cost"
DESCRIPTION = (
    "Reads the JSON Claude Code passes on stdin (transcript_path, model, …) and prints one line: the context "
    "of the newest request, its percent of the window, the room before Claude Code auto-compacts and the "
    "biggest part. Set it in ~/.claude/settings.json: "
    '{"statusLine": {"type": "command", "command": "tokenbox statusline"}}. '
    "It always exits 0; on bad input it prints \"ctx –\"."
)
PLACEHOLDERS = ("pct", "tokens", "window", "to_compact", "compact_at", "biggest", "biggest_tokens", "model", "pending",
                "thread", "cost", "session_cost")


def add_arguments(parser: Any) -> None:
    """The status line's flags on an ``argparse`` parser (for ``--help``; ``_options`` reads them itself)."""
    placeholders = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
    template = DEFAULT_FORMAT.replace("%", "%%")  # argparse expands % in help texts
    parser.add_argument("--format", metavar="TEMPLATE",
                        help=f"the line's template, with {placeholders} (default: {template!r}); {{cost}} is the "
                             "newest request's cost from tokenbox's price table, {session_cost} Claude Code's own "
                             "session total")
    parser.add_argument("--no-color", action="store_true", help="no colours (also NO_COLOR)")
    parser.add_argument("--warn-levels", metavar="A,B,C",
                        help="the percentages that turn the line yellow and red (default 75,90,100; also "
                             "TOKENBOX_WARN_LEVELS or warn_levels in the config file)")
    parser.add_argument("--compact-buffer", metavar="N",
                        help="tokens between the window and the auto-compact threshold (default: Claude Code's "
                             "formula; also TOKENBOX_COMPACT_BUFFER or compact_buffer in the config file)")
