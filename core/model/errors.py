"""Typed errors of the engine: bad input with a position, and critical overflow with its numbers."""

from __future__ import annotations

from enum import StrEnum

from tokenbox.core.model.records import dataclass, replace
from tokenbox.core.model.textsafe import printable


class TokenboxError(Exception):
    """Base class of every error tokenbox raises on purpose."""


@dataclass
class BadInput(TokenboxError):
    """Input that cannot be used: a file, value or flag, with where it is and how to fix it.

    ``str()`` gives ``FILE:LINE:COL: problem (remedy)``; parts that are unknown are left out. ``field``
    names the session key the problem concerns (``model``, ``tokenizer``, ``budget``…) when it is one:
    the engine places the error at that key's position.
    """

    problem: str
    remedy: str = ""
    path: str | None = None
    line: int | None = None
    col: int | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.problem)

    def located(self, path: str | None = None, line: int | None = None, col: int | None = None) -> BadInput:
        """A copy with the position filled in where it was not known yet."""
        return replace(  # replace(): a subclass's own fields are kept
            self,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            col=self.col if self.col is not None else col,
        )

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = printable(self.path)
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        text = where + printable(self.problem)
        if self.remedy:
            text += f" ({printable(self.remedy)})"
        return text


class SessionError(BadInput):
    """The session file is malformed: syntax, shape, types, values."""


@dataclass
class NotYetComplete(SessionError):
    """The file holds no complete turn yet (an agent is still writing it): a state to wait in, not a fault."""

    awaiting: str = "the first complete turn"  # what the file still lacks ("waiting for …")


class UnsupportedFormat(SessionError):
    """The file is another tool's format that tokenbox does not read (told apart by its content)."""


class FileTooLarge(SessionError):
    """The file is bigger than the configured size limit; it was not read."""


class TokenizerError(BadInput):
    """No usable tokenizer: unknown name, unknown model, or none named."""


class ConfigError(BadInput):
    """A bad value in the environment, the config file or a command-line flag."""


class WhatIfTooSmall(ConfigError):
    """A what-if budget (``Engine.plan(what_if=k)``) leaves no tokens available; the file itself is fine."""


class ContextCriticalOverflow(TokenboxError):
    """The critical sections alone (with their separators) do not fit the available budget."""

    def __init__(self, fixed_load: int, available: int, critical: list[tuple[str, int]]) -> None:
        self.fixed_load = fixed_load
        self.available = available
        self.critical = critical
        self.overflow = fixed_load - available
        names = ", ".join(f"{sid} {tokens}" for sid, tokens in critical) or "none"
        super().__init__(
            f"critical sections need {fixed_load} tokens but only {available} are available "
            f"(over by {self.overflow}; critical: {names})"
        )


class ErrorKind(StrEnum):
    """What an error crossing into an application (the TUI) is, by the exception's class."""

    LOAD = "load"  # the file cannot be read or parsed
    WAITING = "waiting"  # no complete turn yet: a state to wait in, not a fault
    WHAT_IF = "what_if"  # the what-if budget leaves nothing available (the file is fine)
    SETTINGS = "settings"  # a flag, the environment or the config file
    INTERNAL = "internal"  # a bug


def error_kind(exc: BaseException, *, loading: bool) -> ErrorKind:
    """The kind of ``exc``, raised while loading a file (``loading``) or while planning it."""
    if isinstance(exc, NotYetComplete):
        return ErrorKind.WAITING
    if isinstance(exc, WhatIfTooSmall):
        return ErrorKind.WHAT_IF
    if isinstance(exc, ConfigError):
        return ErrorKind.SETTINGS
    if isinstance(exc, BadInput):
        return ErrorKind.LOAD if loading else ErrorKind.SETTINGS
    return ErrorKind.INTERNAL
