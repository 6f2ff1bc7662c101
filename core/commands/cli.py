"""The headless ``tokenbox`` command: ``plan``, ``render``, ``check``, ``tokenizers``, ``import``, ``record``, ``doctor``.

Exit codes: 0 fits (or ok), 1 critical overflow / over the gate, 2 bad input. Every error is one
line on stderr, ``tokenbox: error: FILE:LINE:COL: problem (remedy)``, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
from collections.abc import Sequence
from fractions import Fraction

from tokenbox.core.analysis import gates
from tokenbox.core.analysis.pack import pack
from tokenbox.core.analysis.report import plan_table
from tokenbox.core.commands.cliargs import (
    Parser,
    UsageError,
    VersionAction,
    file_size,
    non_negative_int,
    positive_int,
    tokenizer_name,
    turn_number,
)
from tokenbox.core.commands.completion import add_completion_flag
from tokenbox.core.commands.jsonwrite import IndentedJson
from tokenbox.core.commands.statusflags import DESCRIPTION, SUMMARY, add_arguments
from tokenbox.core.model.errors import BadInput, ConfigError, TokenboxError
from tokenbox.core.model.llms import MODELS
from tokenbox.core.model.session import TRIMMING_POLICIES
from tokenbox.core.model.textsafe import printable
from tokenbox.core.planning.config import load_settings
from tokenbox.core.record.flags import DEFAULT_LISTEN, DEFAULT_UPSTREAM, listen_address, upstream_url
from tokenbox.core.tokens.tokenizers import default_registry

EXIT_OK, EXIT_OVER, EXIT_BAD = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="tokenbox",
        description="Plan, render and gate LLM prompt sessions with a deterministic token-budget layout.",
        epilog="Exit codes: 0 fits, 1 critical overflow or over the context gate, 2 bad input.",
    )
    parser.add_argument("--version", action=VersionAction)
    add_completion_flag(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def session_command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("file", metavar="FILE", help="session file: .yaml/.yml, .json or .jsonl")
        sub.add_argument("--budget", type=positive_int, metavar="N", help="context window (max_ctx) in tokens")
        sub.add_argument("--tokenizer", type=tokenizer_name, metavar="NAME", help="tokenizer name (see `tokenbox tokenizers`)")
        sub.add_argument("--turn", type=turn_number, metavar="K", help="turn of a .jsonl log (1-based; -1 = newest)")
        sub.add_argument("--thread", metavar="NAME", help="thread of an agent's log: main (default) or a sub-agent's")
        sub.add_argument("--max-file-size", type=file_size, metavar="SIZE", help="refuse bigger files (default 64M; 512M for a Claude Code transcript, read a block at a time)")
        sub.add_argument("--reserve-out", type=non_negative_int, metavar="N",
                         help="tokens kept free for the reply (overrides a request's max_tokens)")
        return sub

    plan = session_command("plan", "plan a session: per-section tokens, actions and the trim trace")
    plan.add_argument("--json", action="store_true", help="print the plan JSON (tokenbox.plan/1)")
    plan.add_argument("--trimming", choices=TRIMMING_POLICIES, help="override the trimming policy")
    render = session_command("render", "print the rendered context, byte-exact")
    render.add_argument("--trimming", choices=TRIMMING_POLICIES, help="override the trimming policy")
    render.add_argument("--format", choices=("text", "anthropic", "openai"), default="text",
                        help="text: the rendered context (default); anthropic/openai: the trimmed request body")
    check = session_command("check", "pre-send gate: untrimmed tokens + reserve_out must fit max_ctx × (1 - headroom)")
    check.add_argument("--allow-over-context", action="store_true", help="warn instead of failing when over")
    check.add_argument("--stable-prefix", action="store_true",
                       help="also fail when the prompt prefix changed between the last two turns (a cache break)")
    check.add_argument("--max-growth", type=non_negative_int, metavar="N",
                       help="also fail when the newest turn grew by more than N tokens over the one before")
    # `tokenbox statusline` never comes here (entry.py runs it first): listed for --help and completion by its
    # words alone (statusflags), not by the status line's module and its reader
    add_arguments(commands.add_parser("statusline", help=SUMMARY, description=DESCRIPTION))
    commands.add_parser("tokenizers", help="list the tokenizers", description="List every tokenizer.")
    commands.add_parser("models", help="list the model table", description="List the built-in model table: window and tokenizer.")
    imported = commands.add_parser(
        "import", help="write a session (e.g. a Claude Code transcript or an API request) as tokenbox YAML",
        description="Write the equivalent tokenbox session (YAML, with a comment header) to stdout.",
    )
    imported.add_argument("file", metavar="FILE", help="a session, transcript or request body")
    imported.add_argument("--turn", type=turn_number, metavar="K", help="turn to write (1-based; -1 = newest)")
    imported.add_argument("--thread", metavar="NAME", help="thread of an agent's log: main (default) or a sub-agent's")
    imported.add_argument("--max-file-size", type=file_size, metavar="SIZE", help="refuse bigger files (default 64M; 512M for a Claude Code transcript, read a block at a time)")
    record = commands.add_parser(
        "record", help="run a capture proxy in front of an LLM API and log every request it forwards",
        description="Forward requests to the upstream unchanged and append each captured request with its "
                    "recorded usage to a capture log (see README, 'Capturing any agent').",
    )
    record.add_argument("--listen", type=listen_address, default=listen_address(DEFAULT_LISTEN), metavar="HOST:PORT",
                        help=f"address to listen on (default {DEFAULT_LISTEN}; other hosts get a warning)")
    record.add_argument("--upstream", type=upstream_url, default=DEFAULT_UPSTREAM, metavar="URL",
                        help=f"API to forward to (default {DEFAULT_UPSTREAM}; e.g. https://api.openai.com)")
    record.add_argument("--out", metavar="FILE", help="capture file to create (default: a new file under "
                        "$XDG_STATE_HOME/tokenbox/captures/)")
    doctor = commands.add_parser(
        "doctor", help="where tokenbox looks for each agent's sessions, what it found, what it skipped and why",
        description="Print every place tokenbox looks for agents' sessions (and the environment variable or "
                    "default that chose it), the sessions found there (count, newest) and every folder skipped "
                    "with its reason. Reads only; exit 0.",
    )
    doctor.add_argument("-v", "--verbose", action="store_true",
                        help="list every place that does not exist (by default an agent's missing places are counted in one line)")
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"tokenbox: error: {message}\n")
    return EXIT_BAD


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tokenbox``; returns the exit code (and exits with it when run as a script)."""
    if argv is None:  # a real run: text output must not crash on a terminal that cannot encode it
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["statusline"]:
        # start-up: Claude Code runs the status line every few hundred ms; nothing else is imported for it
        from tokenbox.core.commands.statusline import run

        code = run(args[1:], sys.stdin, sys.stdout, os.environ)
        if argv is None:
            sys.exit(code)
        return code
    code = _main(args)
    if argv is None:
        sys.exit(code)
    return code


def _main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return _fail(f"{printable(str(exc))} (see `tokenbox --help`)")
    if not args.command:
        return _fail("no command given (see `tokenbox --help`)")
    try:
        if args.command == "tokenizers":
            return _tokenizers()
        if args.command == "models":
            return _models()
        if args.command == "doctor":
            from tokenbox.core.commands.doctor import run as doctor  # start-up: the agents' table only for `tokenbox doctor`

            return doctor(sys.stdout, os.environ, verbose=args.verbose)
        if args.command == "record":
            from tokenbox.core.record.run import run  # start-up: asyncio and the proxy only for `tokenbox record`

            return run(args.listen, args.upstream, args.out)
        _one_shot_collector()
        if args.command == "import":
            return _import(args)
        return _session_command(args)
    except BadInput as exc:
        return _fail(str(exc))
    except TokenboxError as exc:
        return _fail(printable(str(exc)))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except MemoryError:
        return _fail("out of memory (the session is too large for this machine)")
    except RecursionError:
        return _fail("input nested too deeply (flatten the session)")
    except OSError as exc:  # the system refused a write (a full disk, a closed terminal): not a bug in tokenbox
        _silence_stdout()  # what is left in stdout's buffer would fail again at exit
        where = printable(str(exc.filename), 200) if exc.filename else "the output"
        reason = printable(exc.strerror or type(exc).__name__)
        return _fail(f"{where}: {reason} (free some space, or send the output elsewhere)")
    except Exception as exc:  # a bug must still end in one line, never a traceback
        return _fail(f"internal error: {type(exc).__name__}: {printable(str(exc))} (please report this with the input file)")


def _one_shot_collector() -> None:
    """A one-shot command builds millions of objects and few cycles, then exits: the cyclic collector runs
    far less often (a 100 000-line transcript: 10.2 -> 6.6 s, a 50 000-line turn log 5.3 -> 2.6 s);
    the garbage it would find is still found, later."""
    gc.set_threshold(100_000, 50, 1000)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def _session_command(args: argparse.Namespace) -> int:
    # start-up: the engine, the loader and every reader only for the commands that read a session
    from tokenbox.core.planning.engine import Engine
    from tokenbox.core.sources.loader import Loader

    engine = Engine()
    max_bytes = args.max_file_size or engine.settings.max_file_size
    # A loader of its own, dropped once the session is built: a one-shot command follows nothing, so what
    # the reader keeps to follow the file (every line's context, the threads) is freed before the plan is
    # made (peak memory of a 50 MB transcript's plan: the plan and its JSON reuse that memory)
    loader = Loader(one_shot=True)
    try:
        session = loader.load_session(args.file, args.turn, max_bytes=max_bytes, thread=args.thread)
    finally:
        loader.forget()  # what it read is freed here (a reader refers back to itself: see TranscriptFollower.release)
    del loader
    if args.command == "check":
        return _check(engine, session, args)
    plan = engine.plan(session, args.budget, args.tokenizer, trimming=getattr(args, "trimming", None), reserve_out=args.reserve_out)
    if args.command == "render":
        if not plan.ok:
            sys.stderr.write(f"tokenbox: {printable(session.path)}: ContextCriticalOverflow: {printable(plan.error['message'])}\n")  # type: ignore[index]
            return EXIT_OVER
        if args.format != "text":
            packed = pack(plan, args.format)
            if args.reserve_out is not None:  # the reply limit the input was packed for
                reply_key = "max_completion_tokens" if "max_completion_tokens" in packed else "max_tokens"
                packed[reply_key] = args.reserve_out
            body = json.dumps(packed, ensure_ascii=False, indent=2) + "\n"
            sys.stdout.buffer.write(body.encode("utf-8", "replace"))
            sys.stdout.flush()
            return EXIT_OK
        sys.stdout.buffer.write(plan.render().encode("utf-8", "replace"))  # a lone surrogate: "?"
        sys.stdout.flush()
        return EXIT_OK
    if args.json:
        _write_json(plan.to_dict())
    else:
        sys.stdout.write(plan_table(plan))
    sys.stdout.flush()
    if not plan.ok:
        sys.stderr.write(f"tokenbox: {printable(session.path)}: ContextCriticalOverflow: {printable(plan.error['message'])}\n")  # type: ignore[index]
        return EXIT_OVER
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    # start-up: the loader and every reader, and PyYAML to write, only for `tokenbox import`
    from tokenbox.core.sources.export import session_yaml
    from tokenbox.core.sources.loader import load_session

    max_bytes = args.max_file_size or load_settings().max_file_size
    text = session_yaml(load_session(args.file, args.turn, max_bytes=max_bytes, thread=args.thread))
    sys.stdout.buffer.write(text.encode("utf-8", "replace"))
    sys.stdout.flush()
    return EXIT_OK


def _check(engine, session, args: argparse.Namespace) -> int:
    resolved = engine.resolve(session, budget=args.budget, tokenizer=args.tokenizer, reserve_out=args.reserve_out)
    plan = engine.plan(session, args.budget, args.tokenizer, reserve_out=args.reserve_out)
    tokens = plan.tokens_before
    where = printable(session.path)
    # the window the request must fit (CONTRACT §11): a foreign log's own, which a pending prediction may
    # exceed (its plan is laid out whole, so its max_ctx is not the gate); max_ctx for a tokenbox session
    window = plan.window_tokens
    if window is None:
        sys.stderr.write(f"tokenbox: warning: {where}: window unknown, nothing to check the {tokens} tokens against "
                         "(pass --budget N)\n")
        return EXIT_OK
    limit = window * (1 - Fraction(repr(float(resolved.headroom))))
    approx = "≈" if plan.headline_kind.approximate else ""
    what = "max_ctx" if plan.window is None or args.budget else f"window ({plan.window.source})"
    numbers = (
        f"{approx}{tokens} tokens + {resolved.reserve_out} reserve_out "
        f"{'>' if tokens + resolved.reserve_out > limit else '<='} {_fmt(limit)} "
        f"({what} {window} × (1 - headroom {resolved.headroom}), {resolved.tokenizer})"
    )
    if tokens + resolved.reserve_out > limit:
        if args.allow_over_context:
            sys.stderr.write(f"tokenbox: warning: {where}: over context, allowed by --allow-over-context: {numbers}\n")
            return EXIT_OK
        remedy = ("the pending request would exceed the window: the agent will compact first"
                  if plan.pending else "trim the session or pass --allow-over-context")
        sys.stderr.write(f"tokenbox: check failed: {where}: over context: {numbers} ({remedy})\n")
        return EXIT_OVER
    if args.stable_prefix or args.max_growth is not None:
        failed = _history_gates(engine, session, args, where)
        if failed:
            return EXIT_OVER
    sys.stdout.write(f"ok: {where}: {numbers}\n")
    return EXIT_OK


def _history_gates(engine, session, args: argparse.Namespace, where: str) -> bool:
    """``--stable-prefix`` and ``--max-growth`` on the last two turns; True when one failed."""
    from tokenbox.core.sources.loader import load_threads, load_turns  # start-up: see _session_command

    turns = load_threads(args.file)[args.thread] if args.thread else load_turns(args.file)
    index = session.turn - 1 if 0 < session.turn <= len(turns) else len(turns) - 1
    if index < 1:
        sys.stdout.write(f"note: {where}: one turn only, nothing to compare with\n")
        return False
    earlier, newest = turns[index - 1], turns[index]
    failed = False
    if args.stable_prefix:
        reason = gates.prefix_break(engine, earlier, newest)
        if reason is not None:
            sys.stderr.write(f"tokenbox: check failed: {where}: turn {index + 1}: {printable(reason)}\n")
            failed = True
    if args.max_growth is not None:
        before, after = gates.growth(engine, earlier, newest)
        if after - before > args.max_growth:
            sys.stderr.write(
                f"tokenbox: check failed: {where}: turn {index + 1} grew by {after - before} tokens "
                f"({before} → {after}), more than --max-growth {args.max_growth}\n"
            )
            failed = True
    return failed


def _models() -> int:
    width = max(len(name) for name in MODELS)
    for info in MODELS.values():
        tokenizer = info.tokenizer or "none public (name one, e.g. heuristic)"
        sys.stdout.write(f"{info.name:<{width}}  {info.max_ctx:>9}  {tokenizer}\n")
    return EXIT_OK


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.2f}"


def _tokenizers() -> int:
    registry = default_registry()
    rows = []
    for entry in registry.entries():
        version = entry.source
        exact = "exact" if entry.exact else "approximate"
        try:
            tokenizer = registry.get(entry.name)
            version = tokenizer.version
            exact = "exact" if tokenizer.exact else "approximate"
        except ConfigError as exc:
            version = f"unavailable: {exc.problem}"
        except BadInput as exc:
            version = f"unavailable: {exc.problem}"
        rows.append((entry.name, exact, printable(version)))
    width = max(len(r[0]) for r in rows)
    for name, exact, version in rows:
        sys.stdout.write(f"{name:<{width}}  {exact:<11}  {version}\n")
    for problem in registry.plugin_errors:
        sys.stdout.write(f"# {printable(problem)}\n")
    return EXIT_OK


_JSON_BATCH = 1 << 20  # characters of the encoder's output written at a time


def _write_json(value: object) -> None:
    """``json.dumps(value, ensure_ascii=False, indent=2)`` and a newline to stdout, written as the encoder
    makes it, in batches: a big plan (a 50 MB transcript's: 4 MB of JSON) is never held as one list of
    pieces and one string beside the plan. The encoder (``jsonwrite``) writes each section in one piece."""
    batch: list[str] = []
    size = 0
    for piece in IndentedJson().pieces(value):
        batch.append(piece)
        size += len(piece)
        if size >= _JSON_BATCH:
            sys.stdout.write("".join(batch))
            batch.clear()
            size = 0
    batch.append("\n")
    sys.stdout.write("".join(batch))


if __name__ == "__main__":  # pragma: no cover
    main()

