"""Checks of the Python API's arguments: a wrong type or value is a typed ``BadInput``, never a default.

The CLI validates its flags itself; these guard calls from Python (``Engine``, ``Engine.plan``,
``load_session``...), where ``budget=0`` must not quietly mean "no override".
"""

from __future__ import annotations

from typing import Any

from tokenbox.core.errors import ConfigError, SessionError

TRIMMING_POLICIES = ("tokenbox", "progressive")


def _kind(value: Any) -> str:
    return type(value).__name__


def is_int(value: Any) -> bool:
    """A real integer (``bool`` is not one here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_budget(budget: Any) -> None:
    """``budget`` is ``None`` or a positive whole number of tokens."""
    if budget is None:
        return
    if not is_int(budget):
        raise ConfigError(f"budget must be a whole number of tokens, not {_kind(budget)} {budget!r:.40}", "pass e.g. budget=128000 or None")
    if budget <= 0:
        raise ConfigError(f"budget must be positive, not {budget}", "pass e.g. budget=128000 or None for the session's own")


def check_reserve_out(reserve_out: Any) -> None:
    """``reserve_out`` is ``None`` or a whole number ≥ 0."""
    if reserve_out is None:
        return
    if not is_int(reserve_out):
        raise ConfigError(f"reserve_out must be a whole number of tokens, not {_kind(reserve_out)} {reserve_out!r:.40}", "pass e.g. reserve_out=4096 or None")
    if reserve_out < 0:
        raise ConfigError(f"reserve_out must be 0 or more, not {reserve_out}", "pass e.g. reserve_out=4096 or None")


def check_tokenizer(tokenizer: Any) -> None:
    """``tokenizer`` is ``None`` or a non-empty name."""
    if tokenizer is None:
        return
    if not isinstance(tokenizer, str):
        raise ConfigError(f"tokenizer must be a name (str), not {_kind(tokenizer)}", "pass e.g. tokenizer='o200k_base' (see `tokenbox tokenizers`)")
    if not tokenizer.strip():
        raise ConfigError("tokenizer must not be empty", "pass e.g. tokenizer='o200k_base' or None")


def check_trimming(trimming: Any) -> None:
    """``trimming`` is ``None`` or one of the policies."""
    if trimming is None:
        return
    if not isinstance(trimming, str) or trimming not in TRIMMING_POLICIES:
        raise ConfigError(f"unknown trimming {trimming!r:.40}", f"use one of: {', '.join(TRIMMING_POLICIES)}")


def check_session(session: Any, what: str = "plan") -> None:
    """``session`` is a ``Session`` (what ``load_session`` returns)."""
    from tokenbox.core.session import Session

    if not isinstance(session, Session):
        raise SessionError(f"{what} needs a Session, not {_kind(session)}", "load one with load_session(PATH) or session_from_data(DATA)")


def check_path(path: Any, what: str = "path") -> None:
    """``path`` is a ``str`` or an ``os.PathLike`` naming a file."""
    import os

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise SessionError(f"{what} must be a file path (str or Path), not {_kind(path)}", "pass e.g. 'session.yaml'")


def check_turn(turn: Any) -> None:
    """``turn`` is ``None`` or a non-zero whole number (1-based; negative counts from the newest)."""
    if turn is None:
        return
    if not is_int(turn):
        raise SessionError(f"turn must be a whole number, not {_kind(turn)} {turn!r:.40}", "pass e.g. turn=1, or -1 for the newest")
    if turn == 0:
        raise SessionError("turn 0 does not exist (turns are 1-based)", "pass e.g. turn=1, or -1 for the newest")


def check_positive_size(value: Any, what: str) -> None:
    """``value`` is ``None`` or a positive whole number of bytes."""
    if value is None:
        return
    if not is_int(value) or value <= 0:
        raise ConfigError(f"{what} must be a positive whole number of bytes, not {value!r:.40}", f"pass e.g. {what}=64*1024*1024 or None")
