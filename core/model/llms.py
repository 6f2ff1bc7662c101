"""The built-in model table: which tokenizer a model uses and how large its context window is.

Windows are the providers' own (the API's), as their model pages publish them in 2026: Anthropic's
"Models overview" and each model's page (Claude Opus 4.6 and later, Sonnet 4.6 and later and every
5.x model take 1M tokens; Opus 4.5, Sonnet 4.5 and Haiku 4.5 200K), OpenAI's (GPT-5.4 and GPT-5.5:
1 050 000; the GPT-5 to 5.3 line 400 000) and Google's (Gemini 2.x and 3.x: 1 048 576). An agent
can run a model with a smaller window than the API's (Codex writes the one it uses to its rollouts,
Claude Code names its 1M variants ``[1m]``): what a file records wins over this table.

A name the table does not list is matched by its family when it has one (``family_model``):
``claude-*`` (1M from the 4.6 generation on, 200K before), anything naming ``gpt-5`` (400 000,
``o200k_base``) and ``gemini-*`` (1 048 576). ``resolve_window`` puts the order together: what the
file records, the table, the family rule, else the window is unknown.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache

from tokenbox.core.model.errors import TokenizerError
from tokenbox.core.model.records import dataclass

CLAUDE_STANDARD = 200_000
CLAUDE_LONG = 1_000_000
GEMINI_WINDOW = 1_048_576
GPT5_WINDOW = 400_000
GPT5_LONG = 1_050_000


@dataclass(frozen=True)
class ModelInfo:
    """A model's context window and its public tokenizer (``None`` when the vendor publishes none).

    ``family`` is set when the entry was not listed but matched by a family rule (``claude-*``, ``gpt-5*``,
    ``gemini-*``): its window is the family's, a guess the plan says is one.
    """

    name: str
    max_ctx: int
    tokenizer: str | None
    family: str | None = None


_TABLE = [
    ModelInfo("gpt-5", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5-mini", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5-nano", GPT5_WINDOW, "o200k_base"),
    # Models Codex CLI runs (its rollouts also record the window it uses, which wins over these).
    ModelInfo("gpt-5-codex", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.1", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.1-codex", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.1-codex-mini", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.1-codex-max", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.2", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.2-codex", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.3-codex", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.3-codex-spark", 128_000, "o200k_base"),
    ModelInfo("gpt-5.4", GPT5_LONG, "o200k_base"),
    ModelInfo("gpt-5.4-mini", GPT5_WINDOW, "o200k_base"),
    ModelInfo("gpt-5.5", GPT5_LONG, "o200k_base"),
    ModelInfo("gpt-5.5-pro", GPT5_LONG, "o200k_base"),
    ModelInfo("codex-mini-latest", 200_000, "o200k_base"),
    ModelInfo("gpt-4.1", 1_047_576, "o200k_base"),
    ModelInfo("gpt-4.1-mini", 1_047_576, "o200k_base"),
    ModelInfo("gpt-4.1-nano", 1_047_576, "o200k_base"),
    ModelInfo("gpt-4.5-preview", 128_000, "o200k_base"),
    ModelInfo("gpt-4o", 128_000, "o200k_base"),
    ModelInfo("gpt-4o-mini", 128_000, "o200k_base"),
    ModelInfo("chatgpt-4o-latest", 128_000, "o200k_base"),
    ModelInfo("o1", 200_000, "o200k_base"),
    ModelInfo("o1-mini", 128_000, "o200k_base"),
    ModelInfo("o1-pro", 200_000, "o200k_base"),
    ModelInfo("o3", 200_000, "o200k_base"),
    ModelInfo("o3-mini", 200_000, "o200k_base"),
    ModelInfo("o3-pro", 200_000, "o200k_base"),
    ModelInfo("o4-mini", 200_000, "o200k_base"),
    ModelInfo("gpt-oss-120b", 131_072, "o200k_base"),
    ModelInfo("gpt-oss-20b", 131_072, "o200k_base"),
    ModelInfo("gpt-4-turbo", 128_000, "cl100k_base"),
    ModelInfo("gpt-4", 8_192, "cl100k_base"),
    ModelInfo("gpt-4-32k", 32_768, "cl100k_base"),
    ModelInfo("gpt-3.5-turbo", 16_385, "cl100k_base"),
    ModelInfo("text-embedding-3-small", 8_191, "cl100k_base"),
    ModelInfo("text-embedding-3-large", 8_191, "cl100k_base"),
    ModelInfo("text-embedding-ada-002", 8_191, "cl100k_base"),
    # No public tokenizer: a window is known, a tokenizer must be named.
    ModelInfo("claude-fable-5", CLAUDE_LONG, None),
    ModelInfo("claude-mythos-5", CLAUDE_LONG, None),
    ModelInfo("claude-opus-5", CLAUDE_LONG, None),
    ModelInfo("claude-opus-4-8", CLAUDE_LONG, None),
    ModelInfo("claude-opus-4-7", CLAUDE_LONG, None),
    ModelInfo("claude-opus-4-6", CLAUDE_LONG, None),
    ModelInfo("claude-opus-4-5", CLAUDE_STANDARD, None),
    ModelInfo("claude-opus-4-1", CLAUDE_STANDARD, None),
    ModelInfo("claude-opus-4", CLAUDE_STANDARD, None),
    ModelInfo("claude-sonnet-5", CLAUDE_LONG, None),
    ModelInfo("claude-sonnet-4-6", CLAUDE_LONG, None),
    ModelInfo("claude-sonnet-4-5", CLAUDE_STANDARD, None),
    ModelInfo("claude-sonnet-4", CLAUDE_STANDARD, None),
    ModelInfo("claude-haiku-5", CLAUDE_LONG, None),
    ModelInfo("claude-haiku-4-5", CLAUDE_STANDARD, None),
    ModelInfo("claude-haiku-4", CLAUDE_STANDARD, None),
    ModelInfo("claude-3-7-sonnet", CLAUDE_STANDARD, None),
    ModelInfo("claude-3-5-sonnet", CLAUDE_STANDARD, None),
    ModelInfo("claude-3-5-haiku", CLAUDE_STANDARD, None),
    ModelInfo("claude-3-opus", CLAUDE_STANDARD, None),
    ModelInfo("claude-3-haiku", CLAUDE_STANDARD, None),
    ModelInfo("gemini-2.5-pro", GEMINI_WINDOW, None),
    ModelInfo("gemini-2.5-flash", GEMINI_WINDOW, None),
    ModelInfo("gemini-2.5-flash-lite", GEMINI_WINDOW, None),
    ModelInfo("gemini-2.0-flash", GEMINI_WINDOW, None),
    ModelInfo("gemini-3-pro", GEMINI_WINDOW, None),  # gemini-3-pro-preview, as Gemini CLI names it
    ModelInfo("gemini-3-flash", GEMINI_WINDOW, None),
    ModelInfo("gemini-3.1-pro", GEMINI_WINDOW, None),
    ModelInfo("gemini-3.1-flash", GEMINI_WINDOW, None),
    ModelInfo("gemini-3.1-flash-lite", GEMINI_WINDOW, None),
]
MODELS: dict[str, ModelInfo] = {m.name: m for m in _TABLE}

# Provider prefixes and suffixes that name the same model: ``anthropic/…``, Bedrock's
# ``us.anthropic.…-v1:0``, Vertex's ``…@20250514``, Claude Code's ``[1m]``.
_PREFIX = re.compile(r"^(?:[a-z0-9_-]+/)+|^(?:(?:us|eu|apac|global)\.)?(?:anthropic|openai|google)\.")
_BEDROCK_SUFFIX = re.compile(r"-v\d+(?::\d+)?$")
_CLAUDE_VERSION = re.compile(r"^claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d))?(?:-|$)")
_GPT5 = re.compile(r"(?:^|[/_.:-])gpt-5")
# a Claude name with its version before its tier (``claude-4-5-opus``): Anthropic's order before Claude 4
_CLAUDE_VERSION_FIRST = re.compile(r"^claude-(\d+)(?:-(\d))?-(opus|sonnet|haiku|fable|mythos)(-.*|)$")


def canonical(name: str) -> str:
    """``name`` without a provider's prefix or Claude Code's ``[1m]`` suffix, lower-cased; a gateway's alias
    of a Claude model (``claude_4_5_opus``, ``claude_opus_4_6``) in Anthropic's own spelling."""
    plain = name.strip().lower().removesuffix("[1m]")
    plain = _PREFIX.sub("", plain)
    plain = _BEDROCK_SUFFIX.sub("", plain)
    if plain.startswith("claude_"):
        plain = plain.replace("_", "-")
    alias = _CLAUDE_VERSION_FIRST.match(plain)
    if alias is not None and int(alias.group(1)) >= 4:  # Anthropic writes the tier first from Claude 4 on
        minor = f"-{alias.group(2)}" if alias.group(2) else ""
        plain = f"claude-{alias.group(3)}-{alias.group(1)}{minor}{alias.group(4)}"
    return plain


# Anthropic's API drops the thinking blocks of assistant turns before the newest user message for older Claude
# models; newer ones keep every earlier thinking block in the context (the extended-thinking documentation: Opus
# 4.5 and later, Sonnet 4.6 and later, Mythos; every Haiku through 4.5 keeps only the last turn's). A tier ->
# the first version that keeps them; a tier or version not documented keeps the older rule.
_KEEPS_THINKING_FROM = {"opus": (4, 5), "sonnet": (4, 6), "mythos": (0, 0)}


# a transcript asks this of every request's model (a few names, each a handful of regular expressions): kept per name
@lru_cache(maxsize=256)
def keeps_prior_thinking(name: str | None) -> bool:
    """Whether a Claude model named ``name`` keeps earlier turns' thinking blocks in its context (``False``
    for older models, which drop those before the newest user message, and for names that are not Claude's)."""
    if not name:
        return False
    plain = canonical(name)
    if plain.startswith("claude-mythos"):
        return True  # (Claude Mythos Preview: no version in its name)
    found = _CLAUDE_VERSION.match(plain)
    if found is None:
        return False
    since = _KEEPS_THINKING_FROM.get(found.group(1))
    return since is not None and (int(found.group(2)), int(found.group(3) or 0)) >= since


def lookup_model(name: str) -> ModelInfo:
    """The table entry for ``name``; dated or suffixed names match their family (longest prefix), and a
    name the table does not list matches its family rule (``family_model``)."""
    if name in MODELS:
        return MODELS[name]
    plain = canonical(name)
    if plain in MODELS:
        return MODELS[plain]
    candidates = [m for m in MODELS if plain.startswith(m + "-") or plain.startswith(m + "@")]
    if candidates:
        return MODELS[max(candidates, key=len)]
    family = family_model(name)
    if family is not None:
        return family
    raise TokenizerError(
        f"unknown model {name!r}",
        "name both `tokenizer:` and `budget.max_ctx` to use it as a label, "
        "or pick a known model: `tokenbox models` lists them",
        field="model",
    )


def family_model(name: str) -> ModelInfo | None:
    """The family rule's entry for a model the table does not list (``None``: no family known)."""
    plain = canonical(name)
    if plain.startswith("claude-"):
        version = _CLAUDE_VERSION.match(plain)
        long = version is not None and (int(version.group(2)), int(version.group(3) or 0)) >= (4, 6)
        return ModelInfo(name, CLAUDE_LONG if long else CLAUDE_STANDARD, None, "claude-*")
    if _GPT5.search(plain):
        return ModelInfo(name, GPT5_WINDOW, "o200k_base", "gpt-5*")
    if plain.startswith("gemini-"):
        return ModelInfo(name, GEMINI_WINDOW, None, "gemini-*")
    return None


class WindowSource(StrEnum):
    """Where a plan's context window came from (the plan JSON's ``window.source``)."""

    RECORDED = "recorded"  # the file or its caller recorded it (Codex, Claude Code's status line, ``[1m]``)
    MODEL = "model"  # the model table
    FAMILY = "family"  # a family rule: a guess, said as one
    RAISED = "raised"  # a recorded context was larger than the window: the window is at least that
    SETTING = "setting"  # a flag, the environment, the config file or the session file set it
    UNKNOWN = "unknown"  # nothing tells it
    DEFAULT = "default"  # a tokenbox session's 16384


@dataclass(frozen=True)
class Window:
    """A context window and where it came from (``tokens`` ``None`` when unknown)."""

    tokens: int | None
    source: WindowSource
    note: str = ""

    @property
    def known(self) -> bool:
        return self.tokens is not None


def resolve_window(model: str | None, recorded: int | None = None) -> Window:
    """The window of a foreign log's request (CONTRACT §11): what the file records, the model table,
    the family rule, else unknown (its ``note`` says why, for the plan's warnings)."""
    if recorded:
        return Window(recorded, WindowSource.RECORDED)
    if model and model.strip().lower().endswith("[1m]"):
        return Window(CLAUDE_LONG, WindowSource.RECORDED)
    if model:
        try:
            info = lookup_model(model)
        except TokenizerError:
            return Window(None, WindowSource.UNKNOWN, f"window unknown: the model {model!r} is not in the model table "
                          "and no family rule names it; pass --budget N to set it")
        if info.family is not None:
            return Window(info.max_ctx, WindowSource.FAMILY, f"window {info.max_ctx} from the family rule {info.family} "
                          f"(the model {model!r} is not in the model table)")
        return Window(info.max_ctx, WindowSource.MODEL)
    return Window(None, WindowSource.UNKNOWN, "window unknown: the file names no model and records no window; "
                  "pass --budget N to set it")
