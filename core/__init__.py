"""tokenbox.core: compile prompt sessions into deterministic, exact, explainable token-budget plans.

No UI; network code only in ``record`` (the capture proxy, imported only when it runs). Layers
import only downward (ARCHITECTURE.md). Process-wide state is limited to the loaded tokenizer tables and two
bounded memo tables of pure parsing results (lens specs, section strategies), which never change an
answer; an ``Engine`` owns its count and layout caches, a log reader its line cache.

    from tokenbox.core import Engine, load_session
    plan = Engine().plan(load_session("session.yaml"))
    plan.render(); plan.to_dict()
"""

from __future__ import annotations

from importlib import import_module

# Where each public name lives. They load on first use: importing one submodule (the status line's
# reader) must not load the engine, the tokenizer registry or YAML.
_EXPORTS = {
    "Engine": "planning.engine",
    "SessionLog": "sources.agent",
    "session_from_dict": "sources.agent",
    "BadInput": "model.errors",
    "ConfigError": "model.errors",
    "ContextCriticalOverflow": "model.errors",
    "FileTooLarge": "model.errors",
    "SessionError": "model.errors",
    "TokenboxError": "model.errors",
    "TokenizerError": "model.errors",
    "UnsupportedFormat": "model.errors",
    "Behavior": "model.session",
    "BudgetSpec": "model.session",
    "Calibration": "model.session",
    "RecordedUsage": "model.session",
    "Section": "model.session",
    "Session": "model.session",
    "Plan": "model.plan",
    "SectionResult": "model.plan",
    "Step": "model.plan",
    "Loader": "sources.loader",
    "load_session": "sources.loader",
    "load_threads": "sources.loader",
    "load_turns": "sources.loader",
    "Tokenizer": "tokens.base",
    "TokenizerRegistry": "tokens.tokenizers",
    "default_registry": "tokens.tokenizers",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenbox.core' has no attribute {name!r}")
    value = getattr(import_module(f"tokenbox.core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from typing import Any

    from tokenbox.core.model.errors import (
        BadInput,
        ConfigError,
        ContextCriticalOverflow,
        FileTooLarge,
        SessionError,
        TokenboxError,
        TokenizerError,
        UnsupportedFormat,
    )
    from tokenbox.core.model.plan import Plan, SectionResult, Step
    from tokenbox.core.model.session import Behavior, BudgetSpec, Calibration, RecordedUsage, Section, Session
    from tokenbox.core.planning.engine import Engine
    from tokenbox.core.sources.agent import SessionLog, session_from_dict
    from tokenbox.core.sources.loader import Loader, load_session, load_threads, load_turns
    from tokenbox.core.tokens.base import Tokenizer
    from tokenbox.core.tokens.tokenizers import TokenizerRegistry, default_registry

__all__ = [
    "BadInput",
    "Behavior",
    "BudgetSpec",
    "Calibration",
    "ConfigError",
    "ContextCriticalOverflow",
    "Engine",
    "FileTooLarge",
    "Loader",
    "Plan",
    "RecordedUsage",
    "Section",
    "SectionResult",
    "Session",
    "SessionError",
    "SessionLog",
    "Step",
    "TokenboxError",
    "Tokenizer",
    "TokenizerError",
    "TokenizerRegistry",
    "UnsupportedFormat",
    "default_registry",
    "load_session",
    "load_threads",
    "load_turns",
    "session_from_dict",
]
