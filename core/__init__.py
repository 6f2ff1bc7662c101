"""tokenbox.core: compile prompt sessions into deterministic, exact, explainable token-budget plans.

Pure logic: no UI, no network, no global state beyond the loaded tokenizer tables.

    from tokenbox.core import Engine, load_session
    plan = Engine().plan(load_session("session.yaml"))
    plan.render(); plan.to_dict()
"""

from __future__ import annotations

from tokenbox.core.engine import Engine
from tokenbox.core.errors import (
    BadInput,
    ConfigError,
    ContextCriticalOverflow,
    FileTooLarge,
    SessionError,
    TokenboxError,
    TokenizerError,
    UnsupportedFormat,
)
from tokenbox.core.model import Behavior, BudgetSpec, Calibration, RecordedUsage, Section, Session
from tokenbox.core.plan import Plan, SectionResult, Step
from tokenbox.core.session import load_session, load_threads, load_turns
from tokenbox.core.tokenizers import Tokenizer, TokenizerRegistry, default_registry

__all__ = [
    "BadInput",
    "Behavior",
    "BudgetSpec",
    "Calibration",
    "ConfigError",
    "ContextCriticalOverflow",
    "Engine",
    "FileTooLarge",
    "Plan",
    "RecordedUsage",
    "Section",
    "SectionResult",
    "Session",
    "SessionError",
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
]
