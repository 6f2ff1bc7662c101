"""Flag parsing shared by ``tokenbox`` and ``tokenbox-tui``: value types, a parser that raises
instead of exiting, and the package version. Bad values become one-line errors upstream.
"""

from __future__ import annotations

import argparse
import sys

MAX_FLAG = 10**9
MAX_FILE_SIZE_FLAG = 2**40


class UsageError(Exception):
    """A bad flag; ``str()`` is the message without the ``tokenbox: error:`` prefix."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises ``UsageError`` instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def positive_int(text: str) -> int:
    """A whole number from 1 to ``MAX_FLAG`` (``--budget``)."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_FLAG:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_FLAG}")
    return int(value)


def non_negative_int(text: str) -> int:
    """A whole number from 0 to ``MAX_FLAG`` (``--reserve-out``)."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) > MAX_FLAG:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {MAX_FLAG}")
    return int(value)


def turn_number(text: str) -> int:
    """A turn of a log: 1-based, negative counts from the end, never 0."""
    value = text.strip()
    body = value[1:] if value.startswith("-") else value
    if not body.isascii() or not body.isdigit() or int(value) == 0 or abs(int(value)) > MAX_FLAG:
        raise argparse.ArgumentTypeError(f"{text!r} is not a turn number (1-based; negative counts from the end)")
    return int(value)


def file_size(text: str) -> int:
    """A size in bytes with an optional K/M/G/T unit (``64M``)."""
    value = text.strip().upper()
    units = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
    factor = 1
    if value.endswith("B"):
        value = value[:-1]
    if value and value[-1] in units:
        factor = units[value[-1]]
        value = value[:-1]
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) * factor <= MAX_FILE_SIZE_FLAG:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size from 1 byte to 1T (e.g. 64M)")
    return int(value) * factor


def tokenizer_name(text: str) -> str:
    """A non-empty tokenizer name (whether it exists is checked when planning)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name is no tokenizer; `tokenbox tokenizers` lists them")
    return text.strip()


def package_version() -> str:
    """The installed distribution's version."""
    from importlib import metadata  # start-up: ≈20 ms that a command not asked its version never pays

    try:
        return metadata.version("tokenbox")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0+unknown"


class VersionAction(argparse.Action):
    """``--version``: ``PROG VERSION`` on stdout and exit 0, as argparse's own ``version`` action, with the
    version looked up only when the flag is given (argparse's needs it when the parser is built)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, default: str = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {package_version()}\n")
        parser.exit()
