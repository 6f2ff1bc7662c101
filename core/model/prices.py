"""What a request cost: an offline price table (USD per million tokens) and the arithmetic.

Each model has four prices: input (uncached), cache write, cache read and output (Anthropic's models a
fifth, the 1-hour cache write, see below). A request's
recorded usage is priced as

    uncached input = context - cache writes - cache reads     (every reader's ``context_tokens``)
    usd = (uncached × input + writes × cache write + reads × cache read + output × output) / 1e6

which fits both conventions: Anthropic records uncached input apart (context = input + writes +
reads), OpenAI and Gemini record the cached part inside the input (context = input, writes 0).
OpenAI and Gemini charge nothing extra to write their implicit caches, so their cache write price
is the input price. A model priced in tiers (a long-context surcharge, Claude Haiku 5.5's prompts
over 100 000 tokens) has a second row used for the whole request when its context is above the
threshold. Anthropic's 1-hour cache writes (what Claude Code 2.x writes; its transcripts and the API's
usage say how many: ``cache_creation.ephemeral_1h_input_tokens``) cost 2× input where a 5-minute write
costs 1.25×: ``writes`` above is priced at ``cache_write`` for the 5-minute part and ``cache_write_1h``
for the 1-hour part.

The table was compiled on ``PRICES_AS_OF`` from the providers' published price pages (Anthropic's
"Pricing" page, OpenAI's API pricing page, Google's Gemini API pricing page); prices change, so the
date travels with every figure (``Cost.prices_as_of``) and the config file can override any model
or add one (key ``prices``, see ``parse_overrides``). A model the table does not know has no
price: its cost is ``None``, never a guess.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from sys import intern
from typing import Any

from tokenbox.core.model.errors import ConfigError
from tokenbox.core.model.records import dataclass, replace
from tokenbox.core.model.session import RecordedUsage

PRICES_AS_OF = "2026-11-25"  # when the built-in table below was compiled from the providers' pages
PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens; ``long`` is ``(threshold, rates)``: above ``threshold`` context tokens the
    whole request is priced at ``rates``."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    long: tuple[int, Price] | None = None
    cache_write_1h: float | None = None  # an hour-long cache write (Anthropic); None: as ``cache_write``

    def for_context(self, context: int) -> Price:
        """The rates that apply to a request of ``context`` tokens."""
        if self.long is not None and context > self.long[0]:
            return self.long[1]
        return self


@dataclass(frozen=True, slots=True)
class Cost:
    """What one request (or a sum of them) cost, priced for ``model`` with prices dated ``prices_as_of``."""

    usd: float
    model: str
    prices_as_of: str

    def to_dict(self) -> dict[str, Any]:
        """The plan JSON's ``cost`` (CONTRACT §11)."""
        return {"usd": round(self.usd, 6), "model": self.model, "prices_as_of": self.prices_as_of}


def usd(value: float) -> str:
    """Dollars with the digits that matter: ``$6.29``, ``$0.037``, ``$0.0004``."""
    if value >= 1:
        return f"${value:,.2f}"
    if value >= 0.01:
        return f"${value:.3f}"
    return f"${value:.4f}"


def _anthropic(input: float, output: float, cache_read: float | None = None) -> Price:
    """Anthropic's rule: a 5-minute cache write costs 1.25× input, a 1-hour write 2×, a cache read 0.1× input
    (unless given)."""
    return Price(input, input * 1.25, input / 10 if cache_read is None else cache_read, output, cache_write_1h=input * 2)


def _implicit(input: float, cache_read: float, output: float) -> Price:
    """OpenAI's and Gemini's implicit caches: writing costs what input costs."""
    return Price(input, input, cache_read, output)


_OPUS_NEW = _anthropic(5, 25)
_OPUS_OLD = _anthropic(15, 75)
_SONNET = _anthropic(3, 15)
_SONNET_LONG = replace(_SONNET, long=(200_000, _anthropic(6, 22.5)))  # 1M-context beta above 200k
_GPT5 = _implicit(1.25, 0.125, 10)
_GPT5_MINI = _implicit(0.25, 0.025, 2)
_GPT52 = _implicit(1.75, 0.175, 14)
_GEMINI3_PRO = replace(_implicit(2, 0.2, 12), long=(200_000, _implicit(4, 0.4, 18)))
_GEMINI3_FLASH = _implicit(0.5, 0.05, 3)
_GEMINI31_FLASH_LITE = _implicit(0.25, 0.025, 1.5)

PRICES: dict[str, Price] = {
    # Anthropic (platform.claude.com, "Pricing"; the model pages for Opus 5.5 and Sonnet 5.5)
    "claude-fable-5-1": _anthropic(10, 50, 0.25),
    "claude-mythos-5-1": _anthropic(10, 50, 0.25),
    "claude-fable-5": _anthropic(10, 50, 1.0),
    "claude-mythos-5": _anthropic(10, 50, 1.0),
    "claude-opus-5-5": _anthropic(4, 20, 0.2),
    "claude-opus-5": _OPUS_NEW,
    "claude-opus-4-8": _OPUS_NEW,
    "claude-opus-4-7": _OPUS_NEW,
    "claude-opus-4-6": _OPUS_NEW,
    "claude-opus-4-5": _OPUS_NEW,
    "claude-opus-4-1": _OPUS_OLD,
    "claude-opus-4": _OPUS_OLD,
    "claude-opus-4-0": _OPUS_OLD,
    "claude-sonnet-5-5": _anthropic(2, 10, 0.1),  # cache reads cut from 0.20 on 2026-10-07
    "claude-sonnet-5": _anthropic(2, 10),
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET_LONG,
    "claude-sonnet-4": _SONNET_LONG,
    "claude-sonnet-4-0": _SONNET_LONG,
    "claude-3-7-sonnet": _SONNET,
    "claude-haiku-5-5": replace(_anthropic(0.1, 0.5), long=(100_000, _anthropic(0.5, 2.5))),
    "claude-haiku-4-5": _anthropic(1, 5),
    "claude-3-5-haiku": _anthropic(0.8, 4),
    "claude-3-haiku": Price(0.25, 0.3, 0.03, 1.25),
    # OpenAI (API pricing page; standard tier, contexts under 272k)
    "gpt-5.5": _implicit(5, 0.5, 30),
    "gpt-5.5-pro": _implicit(30, 30, 180),
    "gpt-5.4": _implicit(2.5, 0.25, 15),
    "gpt-5.4-mini": _implicit(0.75, 0.075, 4.5),
    "gpt-5.4-nano": _implicit(0.2, 0.02, 1.25),
    "gpt-5.4-pro": _implicit(30, 30, 180),
    "gpt-5.3-codex": _GPT52,
    "gpt-5.2": _GPT52,
    "gpt-5.2-codex": _GPT52,
    "gpt-5.1": _GPT5,
    "gpt-5.1-codex": _GPT5,
    "gpt-5.1-codex-max": _GPT5,
    "gpt-5.1-codex-mini": _GPT5_MINI,
    "gpt-5": _GPT5,
    "gpt-5-codex": _GPT5,
    "gpt-5-mini": _GPT5_MINI,
    "gpt-5-nano": _implicit(0.05, 0.005, 0.4),
    "codex-mini-latest": _implicit(1.5, 0.375, 6),
    # Google (Gemini API pricing page; paid tier, text)
    "gemini-3.5-flash": _implicit(1.5, 0.15, 9),
    "gemini-3.1-pro": _GEMINI3_PRO,
    "gemini-3.1-pro-preview": _GEMINI3_PRO,
    "gemini-3-pro": _GEMINI3_PRO,
    "gemini-3-pro-preview": _GEMINI3_PRO,
    "gemini-3.1-flash-lite": _GEMINI31_FLASH_LITE,
    "gemini-3.1-flash-lite-preview": _GEMINI31_FLASH_LITE,
    "gemini-3-flash": _GEMINI3_FLASH,
    "gemini-3-flash-preview": _GEMINI3_FLASH,
    "gemini-2.5-pro": replace(_implicit(1.25, 0.125, 10), long=(200_000, _implicit(2.5, 0.25, 15))),
    "gemini-2.5-flash": _implicit(0.3, 0.03, 2.5),
    "gemini-2.5-flash-lite": _implicit(0.1, 0.01, 0.4),
    "gemini-2.0-flash": _implicit(0.1, 0.025, 0.4),
}

# What is not part of a model's name in the table: a provider prefix, the 1M-window suffix, a date.
_PROVIDER = re.compile(r"^(?:models/|anthropic/|openai/|google/|vertex_ai/|bedrock/)")
_DATED = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2}|@\d{3})$")
_FIELDS = ("input", "cache_write", "cache_write_1h", "cache_read", "output")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class PriceEntry:
    """A price in force: its rates and the date they are as of."""

    price: Price
    as_of: str


Overrides = Mapping[str, PriceEntry]


def model_key(model: str) -> str:
    """The name a model is priced under: lower case, without a provider prefix, ``[1m]`` or a date."""
    name = model.strip().lower().removesuffix("[1m]")
    name = _PROVIDER.sub("", name)
    return _DATED.sub("", name)


def price_for(model: str | None, overrides: Overrides | None = None) -> tuple[str, PriceEntry] | None:
    """``(key, entry)`` of ``model``: the config file's override, else the built-in table; ``None`` when
    neither knows it."""
    if not model:
        return None
    key = intern(model_key(model))  # kept with every priced request of a session: one copy per model
    if overrides and key in overrides:
        return key, overrides[key]
    if key in PRICES:
        return key, PriceEntry(PRICES[key], PRICES_AS_OF)
    return None


def usage_cost(usage: RecordedUsage, price: Price) -> float:
    """USD of one request's recorded ``usage`` at ``price`` (see the module docstring)."""
    rates = price.for_context(usage.context_tokens)
    writes = max(0, usage.cache_creation_input_tokens)
    hour_writes = min(writes, max(0, usage.cache_creation_1h_input_tokens))
    hour_rate = rates.cache_write if rates.cache_write_1h is None else rates.cache_write_1h
    reads = max(0, usage.cache_read_input_tokens)
    uncached = max(0, usage.context_tokens - writes - reads)
    return (uncached * rates.input + (writes - hour_writes) * rates.cache_write + hour_writes * hour_rate
            + reads * rates.cache_read + max(0, usage.output_tokens) * rates.output) / PER


def request_cost(model: str | None, usage: RecordedUsage | None, overrides: Overrides | None = None) -> Cost | None:
    """What a request cost (``None`` without recorded usage or without a price for ``model``)."""
    if usage is None:
        return None
    found = price_for(model, overrides)
    if found is None:
        return None
    key, entry = found
    return Cost(usage_cost(usage, entry.price), key, entry.as_of)


def file_date(path: str) -> str:
    """The day (UTC, ``YYYY-MM-DD``) ``path`` was last changed: the date of prices written there without one."""
    try:
        return time.strftime("%Y-%m-%d", time.gmtime(os.stat(path).st_mtime))
    except OSError:
        return "1970-01-01"


def parse_overrides(raw: Any, where: str, default_as_of: str) -> dict[str, PriceEntry]:
    """The config file's ``prices``: a mapping of model names to ``{input, cache_write, cache_write_1h,
    cache_read, output, as_of}`` (USD per million tokens; ``as_of`` a ``YYYY-MM-DD`` date, ``default_as_of`` when
    left out). A model the built-in table knows may give only the prices that differ; a new model needs
    ``input`` and ``output`` (its cache prices are then its input price). ``ConfigError`` otherwise."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} is not a mapping of model names to prices",
                          "write e.g. prices: {claude-opus-4-6: {input: 5, output: 25}}")
    out: dict[str, PriceEntry] = {}
    for name, fields in raw.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where}: {str(name)[:40]!r} is not a model name", "name the model as the agent records it")
        here = f"{where}.{name[:60]}"
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{here} is not a mapping of prices", "give input, cache_write, cache_read and output in USD per million tokens")
        unknown = sorted(str(k) for k in fields if k not in (*_FIELDS, "as_of"))
        if unknown:
            raise ConfigError(f"{here}: unknown key {unknown[0][:40]!r}", f"the keys are {', '.join(_FIELDS)} and as_of")
        values = {}
        for field in _FIELDS:
            if field in fields:
                value = fields[field]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e6:
                    raise ConfigError(f"{here}.{field} = {str(value)[:40]!r} is not a price", "write USD per million tokens, e.g. 3 or 0.30")
                values[field] = float(value)
        as_of = fields.get("as_of", default_as_of)
        as_of = as_of.isoformat() if hasattr(as_of, "isoformat") else as_of  # YAML reads a bare date as a date
        if not isinstance(as_of, str) or not _DATE.match(as_of):
            raise ConfigError(f"{here}.as_of = {str(as_of)[:40]!r} is not a date", "write YYYY-MM-DD")
        key = model_key(name)
        base = PRICES.get(key)
        if base is None:
            if "input" not in values or "output" not in values:
                raise ConfigError(f"{here}: a model the built-in table does not know needs input and output",
                                  "give at least input and output (USD per million tokens)")
            base = Price(values["input"], values["input"], values["input"], values["output"])
        out[key] = PriceEntry(replace(base, **values, long=None) if values else base, as_of)
    return out
