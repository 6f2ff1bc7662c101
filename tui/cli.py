"""Command line of ``tokenbox-tui``: flags, the bundled default sample, one-line errors (exit 2)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from tokenbox.core.commands.cliargs import Parser, UsageError, non_negative_int, package_version, positive_int
from tokenbox.core.commands.completion import add_completion_flag
from tokenbox.core.model.session import TRIMMING_POLICIES
from tokenbox.core.model.textsafe import printable

EXIT_BAD = 2
DEFAULT_SAMPLE = "facet_layout.yaml"  # a sample that trims: the first screen shows the product


@dataclass(frozen=True)
class Options:
    """What the user asked for on the command line."""

    file: str | None
    budget: int | None = None
    tokenizer: str | None = None
    trimming: str | None = None
    reserve_out: int | None = None
    claude: bool = False  # follow the newest Claude Code transcript of a project
    claude_project: str | None = None  # that project's directory (default: the current one)
    record: bool = False  # run a capture proxy (tokenbox record) and follow its capture
    listen: tuple[str, int] | None = None
    upstream: str | None = None
    codex: bool = False  # follow the newest Codex CLI rollout of the current directory
    warn_levels: str | None = None  # "75,90,100": overrides TOKENBOX_WARN_LEVELS and the config file
    agent: str | None = None  # follow the newest session of this agent for the current directory (``discovery``)
    serve: tuple[str, int] | None = None  # --serve: the address to serve the app to web browsers on
    all: bool = False  # --all: the board of every recent agent session
    since: float | None = None  # --since: seconds of inactivity after which a session leaves the board


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tokenbox-tui",
        allow_abbrev=False,  # flags spelt whole: --serve's app gets the same flags less it (tui/serve.py)
        description=(
            "Live inspector of a prompt session: follows FILE as your agent rewrites it, re-plans it on "
            "every change and shows the context gauge, a token bar per section, the trim trace and the "
            "final text of each section. The file is only ever read."
        ),
        epilog=(
            "keys: ←/→ step through the trim trace, Home/End first/last step, ↑/↓ select a section, "
            "Enter show its text, +/- what-if budget (5% of max_ctx), 0 reset, p trimming policy, "
            "t tokenizer, [/] previous/next turn of a log (an agent's request), f follow the newest, "
            "a an agent's threads, w every warning, v breakdown/trace, s sidebar, ? help, ctrl+p command palette, "
            "q quit."
        ),
    )
    parser.add_argument(
        "file", nargs="?", metavar="FILE",
        help="session file (.yaml/.yml, .json or .jsonl); without it a bundled sample opens",
    )
    parser.add_argument("--budget", type=positive_int, metavar="N", help="context window (max_ctx) in tokens")
    parser.add_argument("--tokenizer", metavar="NAME", help="tokenizer name (see `tokenbox tokenizers`)")
    parser.add_argument("--trimming", choices=TRIMMING_POLICIES, help="trimming policy (default: the file's)")
    parser.add_argument("--reserve-out", type=non_negative_int, metavar="N",
                        help="tokens kept free for the reply (default: the file's, e.g. a request's max_tokens)")
    parser.add_argument("--warn-levels", metavar="A,B,C",
                        help="the three usage percentages that colour the gauge and raise notifications "
                             "(default 75,90,100; also TOKENBOX_WARN_LEVELS or warn_levels in the config file)")
    parser.add_argument(
        "--claude", action="store_true",
        help="follow the newest Claude Code transcript of the current directory's project "
             "(~/.claude/projects/, or $CLAUDE_CONFIG_DIR/projects/), switching to new sessions as they start; "
             "a project without one is an error that says so",
    )
    parser.add_argument(
        "--claude-project", metavar="DIR",
        help="like --claude, for the project in DIR, or DIR itself when it is a folder of transcripts "
             "(~/.claude/projects/<project>, or a copy anywhere)",
    )
    parser.add_argument(
        "--codex", action="store_true",
        help="follow the newest Codex CLI rollout started in the current directory "
             "(~/.codex/sessions/, or $CODEX_HOME/sessions/)",
    )
    from tokenbox.core.sources.discovery import AGENTS

    parser.add_argument(
        "--agent", choices=[a.name for a in AGENTS], metavar="NAME",
        help="follow the newest session of agent NAME started in the current directory's project: "
             + ", ".join(f"{a.name} ({a.label})" for a in AGENTS) + "; --claude and --codex are shorthands",
    )
    parser.add_argument(
        "--all", action="store_true",
        help="a board of every agent session that changed recently (Claude Code with its sub-agents, Codex, Gemini CLI, "
             "Copilot, Cline/Roo/Kilo, OpenCode, aider, tokenbox record's captures): context used, room before "
             "compaction, sub-agents running, live; Enter opens one in the inspector, Esc comes back",
    )
    parser.add_argument("--since", type=duration, metavar="DURATION",
                        help="with --all: sessions idle longer than this leave the board (e.g. 30m, 2h, 1d; default 2h)")
    # the flags only, not the proxy's machinery (asyncio): the first plan waits for this parser
    from tokenbox.core.record.flags import DEFAULT_LISTEN, DEFAULT_UPSTREAM, listen_address, upstream_url

    parser.add_argument("--record", action="store_true",
                        help="run a capture proxy (as `tokenbox record`) and follow its capture log")
    parser.add_argument("--listen", type=listen_address, metavar="HOST:PORT", help=f"with --record: address (default {DEFAULT_LISTEN})")
    parser.add_argument("--upstream", type=upstream_url, metavar="URL", help=f"with --record: API to forward to (default {DEFAULT_UPSTREAM})")
    from tokenbox.tui.serve import DEFAULT_SERVE, serve_address

    parser.add_argument("--serve", nargs="?", const=serve_address(DEFAULT_SERVE), type=serve_address, metavar="HOST:PORT",
                        help=f"serve the app to web browsers instead (default {DEFAULT_SERVE}; each tab runs its own; "
                             "another address than this machine's is seen by whoever can reach it)")
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    add_completion_flag(parser)
    return parser


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (the installed metadata costs tens of ms to read)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"tokenbox-tui {package_version()}\n")  # where argparse's own ``version`` prints it
        parser.exit()


def parse_args(argv: Sequence[str]) -> Options:
    """Parse ``argv``; raises ``UsageError`` for bad flags or an unknown tokenizer name."""
    args = build_parser().parse_args(list(argv))
    if args.tokenizer is not None:
        from tokenbox.core.tokens.tokenizers import default_registry

        names = default_registry().names()
        if args.tokenizer not in names:
            raise UsageError(
                f"argument --tokenizer: unknown tokenizer {printable(args.tokenizer)!r} "
                f"(known tokenizers: {', '.join(names)})"
            )
    if args.agent is not None and (args.file is not None or args.claude or args.claude_project is not None or args.codex
                                   or args.record or args.all):
        raise UsageError("--agent excludes FILE, --claude/--claude-project, --codex, --record and --all (give one of them)")
    agent = args.agent
    if agent == "claude":  # the shorthands, with their own following (a new session is switched to)
        args.claude, agent = True, None
    elif agent == "codex":
        args.codex, agent = True, None
    claude = args.claude or args.claude_project is not None
    if args.all and (args.file is not None or claude or args.codex or args.record):
        raise UsageError("--all excludes FILE, --claude/--claude-project, --codex, --agent and --record (give one of them)")
    if args.since is not None and not args.all:
        raise UsageError("--since goes with --all")
    if claude and args.file is not None:
        raise UsageError("FILE and --claude/--claude-project exclude each other (give one of them)")
    if args.codex and (claude or args.record or args.file is not None):
        raise UsageError("--codex excludes FILE, --claude/--claude-project and --record (give one of them)")
    if (args.listen or args.upstream) and not args.record:
        raise UsageError("--listen and --upstream go with --record")
    if args.record and (claude or args.file is not None):
        raise UsageError("--record follows its own capture: give no FILE and no --claude")
    return Options(args.file, args.budget, args.tokenizer, args.trimming, args.reserve_out, claude, args.claude_project,
                   args.record, args.listen, args.upstream, args.codex, args.warn_levels, agent, args.serve, args.all,
                   args.since)


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """``--since``'s value: a number of seconds, or numbers with units (``90s``, ``30m``, ``2h``, ``1d``,
    ``1h30m``); positive."""
    import re  # start-up: only when --since is given

    value = text.strip().lower()
    parts = re.fullmatch(r"(?:\d+(?:\.\d+)?[smhd])+|\d+(?:\.\d+)?", value)
    if parts is None:
        raise argparse.ArgumentTypeError(f"{printable(text, 40)!r} is not a duration (e.g. 30m, 2h, 1d, 1h30m)")
    if value[-1].isdigit():
        seconds = float(value)
    else:
        seconds = sum(float(n) * DURATION_UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([smhd])", value))
    if not 0 < seconds < 10 * 365 * 86400:
        raise argparse.ArgumentTypeError(f"{printable(text, 40)!r}: give a duration above 0 (e.g. 30m, 2h)")
    return seconds


def sample_path(stack: contextlib.ExitStack, name: str = DEFAULT_SAMPLE) -> str:
    """A real file path of a bundled sample, valid while ``stack`` is open (works from a wheel)."""
    # start-up: importlib.resources (with tempfile and shutil, ≈4 ms) only when no file is named: `tokenbox-tui`
    # imports this module before it forks its first plan's process (tui/launch.py), which a file named waits for
    from importlib import resources

    resource = resources.files("tokenbox.samples").joinpath(name)
    return str(stack.enter_context(resources.as_file(resource)))


def fail(message: str) -> int:
    """Write one ``tokenbox: error:`` line on stderr and return exit code 2."""
    sys.stderr.write(f"tokenbox: error: {message}\n")
    return EXIT_BAD


def usage_message(exc: UsageError) -> str:
    text = printable(str(exc))
    if "(" not in text:
        text += " (see `tokenbox-tui --help`)"
    return text
