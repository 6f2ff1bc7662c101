"""Settings precedence (README, "Configuration"): flag > environment > session file > config file > built-in default.

Environment: ``TOKENBOX_MAX_CTX``, ``TOKENBOX_TOKENIZER``, ``CONTEXT_MAX_TOKENS`` (passepartout's name,
below ``TOKENBOX_MAX_CTX``) and ``TOKENBOX_MAX_FILE_SIZE``. Config file:
``$XDG_CONFIG_HOME/tokenbox/config.yaml`` (``~/.config`` when unset) with keys ``max_ctx``,
``reserve_out``, ``headroom``, ``tokenizer``, ``max_file_size`` and ``prices`` (per-model prices that
override or extend the built-in table, ``tokenbox.core.model.prices``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from fractions import Fraction

from tokenbox.core.model.errors import ConfigError, SessionError, TokenizerError, WhatIfTooSmall
from tokenbox.core.model.llms import Window, WindowSource, lookup_model
from tokenbox.core.model.prices import PriceEntry, file_date, parse_overrides
from tokenbox.core.model.records import dataclass, field, replace
from tokenbox.core.model.session import Session
from tokenbox.core.parse.validator import Validator
from tokenbox.core.sources.files import read_text

DEFAULT_MAX_CTX = 16384
# warn_levels and compact_buffer are read by core/thresholds (kept light for the status line): allowed
# here, checked there
CONFIG_KEYS = ("max_ctx", "reserve_out", "headroom", "tokenizer", "max_file_size", "warn_levels", "compact_buffer", "prices")
MAX_COUNT = 10**9
WHAT_IF_STEP_PERCENT = 5  # one what-if step (``Engine.plan(what_if=k)``): k × 5% of the resolved max_ctx


@dataclass(frozen=True)
class Settings:
    """Values from the environment and the config file (``None`` = not set there)."""

    env_max_ctx: int | None = None
    env_tokenizer: str | None = None
    env_max_file_size: int | None = None
    config_max_ctx: int | None = None
    config_reserve_out: int | None = None
    config_headroom: float | None = None
    config_tokenizer: str | None = None
    config_max_file_size: int | None = None
    config_prices: Mapping[str, PriceEntry] = field(default_factory=dict)  # model key -> price in force

    @property
    def max_file_size(self) -> int | None:
        """The size limit set here (the environment's over the config file's); ``None`` when neither sets one:
        then each read has its default (``sources.files``: a file read whole, a log read a block at a time)."""
        return self.env_max_file_size or self.config_max_file_size


def _env_int(environ: Mapping[str, str], name: str, low: int = 1) -> int | None:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= MAX_COUNT:
        raise ConfigError(f"{name}={raw!r} is not a whole number from {low} to {MAX_COUNT}", f"unset {name} or fix its value")
    return int(text)


def config_path(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "tokenbox", "config.yaml")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the environment and the config file; bad values are ``ConfigError``s."""
    environ = os.environ if environ is None else environ
    values: dict = {}
    path = config_path(environ)
    if os.path.isfile(path):
        values = _read_config(path)
    tokenizer = environ.get("TOKENBOX_TOKENIZER") or None
    return Settings(
        env_max_ctx=_env_int(environ, "TOKENBOX_MAX_CTX") or _env_int(environ, "CONTEXT_MAX_TOKENS"),
        env_tokenizer=tokenizer.strip() if tokenizer else None,
        env_max_file_size=_env_int(environ, "TOKENBOX_MAX_FILE_SIZE"),
        **values,
    )


def _read_config(path: str) -> dict:
    try:
        text = read_text(path, 1024 * 1024)
        if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
            return {}  # an empty (or all-comment) config file sets nothing
        from tokenbox.core.parse.yamlnodes import parse_yaml  # start-up: PyYAML loads only when a config file exists

        node = parse_yaml(text, path)
        v = Validator(path)
        fields = v.mapping(node, "the config file", CONFIG_KEYS)
        result = {}
        if "max_ctx" in fields:
            result["config_max_ctx"] = v.integer(fields["max_ctx"], "max_ctx", 1, MAX_COUNT)
        if "reserve_out" in fields:
            result["config_reserve_out"] = v.integer(fields["reserve_out"], "reserve_out", 0, MAX_COUNT)
        if "headroom" in fields:
            result["config_headroom"] = v.number(fields["headroom"], "headroom", 0, 1, high_open=True)
        if "tokenizer" in fields:
            result["config_tokenizer"] = v.string(fields["tokenizer"], "tokenizer")
        if "max_file_size" in fields:
            result["config_max_file_size"] = v.integer(fields["max_file_size"], "max_file_size", 1, 2**40)
        if "prices" in fields:
            try:
                result["config_prices"] = parse_overrides(fields["prices"].plain(), "prices in the config file", file_date(path))
            except ConfigError as exc:
                line, col = fields["prices"].line, fields["prices"].col
                raise ConfigError(exc.problem, exc.remedy, path, line, col) from None
        return result
    except SessionError as exc:
        raise ConfigError(exc.problem, exc.remedy, exc.path, exc.line, exc.col) from None


@dataclass(frozen=True)
class Resolved:
    """Budget, tokenizer name and policy for one plan, after precedence.

    ``window`` is the context window the plan is measured against and where it came from (CONTRACT
    §11); ``explicit`` is true when a flag or the environment set ``max_ctx`` (a what-if the layout
    must fit, for a foreign log too).
    """

    max_ctx: int
    reserve_out: int
    headroom: float
    available: int
    tokenizer: str
    trimming: str
    window: Window | None = None
    explicit: bool = False


def available_tokens(max_ctx: int, headroom: float, reserve_out: int) -> int:
    """``floor(max_ctx * (1 - headroom)) - reserve_out``, with headroom taken as the decimal written."""
    return int(max_ctx * (1 - Fraction(repr(float(headroom))))) - reserve_out


def what_if_budget(resolved: Resolved, steps: int) -> Resolved:
    """``resolved`` with max_ctx moved by ``steps`` × ``WHAT_IF_STEP_PERCENT`` % (headroom and reserve kept).

    Raises ``WhatIfTooSmall`` when nothing would be left available.
    """
    if not steps:
        return resolved
    max_ctx = max(1, resolved.max_ctx * (100 + WHAT_IF_STEP_PERCENT * steps) // 100)
    available = available_tokens(max_ctx, resolved.headroom, resolved.reserve_out)
    if available <= 0:
        raise WhatIfTooSmall(
            f"what-if budget too small: max_ctx {max_ctx} ({WHAT_IF_STEP_PERCENT * steps:+d}%) leaves {available} tokens available",
            "press 0 for the file's budget",
        )
    return replace(resolved, max_ctx=max_ctx, available=available)


def resolve(
    session: Session,
    settings: Settings,
    *,
    budget: int | None = None,
    tokenizer: str | None = None,
    trimming: str | None = None,
    reserve_out: int | None = None,
) -> Resolved:
    """Apply the precedence rules; a missing tokenizer is an error, and so is an unknown model
    unless the tokenizer and the window are both named some other way (the model is then a label).
    """
    model = None
    unknown: TokenizerError | None = None
    if session.model:
        try:
            model = lookup_model(session.model)
        except TokenizerError as exc:
            unknown = exc
    flagged = budget or settings.env_max_ctx
    explicit_ctx = flagged or session.budget.max_ctx
    explicit_name = tokenizer or settings.env_tokenizer or session.tokenizer
    foreign = session.window is not None
    if unknown is not None and not foreign and not (explicit_ctx and explicit_name):
        raise unknown
    if flagged:
        window = Window(flagged, WindowSource.SETTING)
    elif foreign:
        # a foreign log's window as its reader resolved it (CONTRACT §11); the 16384 default is a tokenbox
        # session's only: an unknown window is laid out unbounded and said to be unknown
        window = session.window
    elif session.budget.max_ctx:
        window = Window(session.budget.max_ctx, WindowSource.SETTING)
    elif model is not None:
        window = Window(model.max_ctx, WindowSource.MODEL)
    elif settings.config_max_ctx:
        window = Window(settings.config_max_ctx, WindowSource.SETTING)
    else:
        window = Window(DEFAULT_MAX_CTX, WindowSource.DEFAULT)
    max_ctx = window.tokens or MAX_COUNT
    name = explicit_name or (model.tokenizer if model else None) or settings.config_tokenizer
    if not name:
        if model is not None:
            raise TokenizerError(
                f"model {session.model!r} has no public tokenizer",
                "name an approximation, e.g. `tokenizer: heuristic` in the session or --tokenizer heuristic",
                field="model",
            )
        raise TokenizerError(
            "no tokenizer: the session names neither `model` nor `tokenizer`",
            "add `tokenizer: o200k_base` or `model: gpt-4o` to the session, or pass --tokenizer",
            field="tokenizer",
        )
    reserve = reserve_out if reserve_out is not None else (
        session.budget.reserve_out if session.budget.reserve_out is not None else (settings.config_reserve_out or 0)
    )
    headroom = session.budget.headroom if session.budget.headroom is not None else (settings.config_headroom or 0.0)
    available = available_tokens(max_ctx, headroom, reserve)
    if available <= 0:
        raise ConfigError(
            f"no room left: floor({max_ctx} × (1 - {headroom})) - {reserve} = {available} tokens available",
            "raise max_ctx or lower reserve_out/headroom",
            field="budget",
        )
    return Resolved(max_ctx, reserve, headroom, available, name, trimming or session.trimming, window, bool(flagged))
