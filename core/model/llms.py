"""The built-in model table: which tokenizer a model uses and how large its context window is."""

from __future__ import annotations

from dataclasses import dataclass

from tokenbox.core.model.errors import TokenizerError


@dataclass(frozen=True)
class ModelInfo:
    """A model's context window and its public tokenizer (``None`` when the vendor publishes none)."""

    name: str
    max_ctx: int
    tokenizer: str | None


_TABLE = [
    ModelInfo("gpt-5", 400_000, "o200k_base"),
    ModelInfo("gpt-5-mini", 400_000, "o200k_base"),
    ModelInfo("gpt-5-nano", 400_000, "o200k_base"),
    # Models Codex CLI runs (its rollouts also record the window it uses, which wins over these).
    ModelInfo("gpt-5-codex", 400_000, "o200k_base"),
    ModelInfo("gpt-5.1", 400_000, "o200k_base"),
    ModelInfo("gpt-5.1-codex", 400_000, "o200k_base"),
    ModelInfo("gpt-5.1-codex-mini", 400_000, "o200k_base"),
    ModelInfo("gpt-5.1-codex-max", 400_000, "o200k_base"),
    ModelInfo("gpt-5.2", 400_000, "o200k_base"),
    ModelInfo("gpt-5.2-codex", 400_000, "o200k_base"),
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
    ModelInfo("claude-opus-4", 200_000, None),
    ModelInfo("claude-sonnet-4", 200_000, None),
    ModelInfo("claude-haiku-4", 200_000, None),
    ModelInfo("claude-3-7-sonnet", 200_000, None),
    ModelInfo("claude-3-5-sonnet", 200_000, None),
    ModelInfo("claude-3-5-haiku", 200_000, None),
    ModelInfo("claude-3-opus", 200_000, None),
    ModelInfo("claude-3-haiku", 200_000, None),
    ModelInfo("gemini-2.5-pro", 1_048_576, None),
    ModelInfo("gemini-2.5-flash", 1_048_576, None),
    ModelInfo("gemini-2.0-flash", 1_048_576, None),
    ModelInfo("gemini-3-pro", 1_048_576, None),  # gemini-3-pro-preview, as Gemini CLI names it
    ModelInfo("gemini-3-flash", 1_048_576, None),
]
MODELS: dict[str, ModelInfo] = {m.name: m for m in _TABLE}


def lookup_model(name: str) -> ModelInfo:
    """The table entry for ``name``; dated or suffixed names match their family (longest prefix)."""
    if name in MODELS:
        return MODELS[name]
    candidates = [m for m in MODELS if name.startswith(m + "-") or name.startswith(m + "@")]
    if not candidates and name.startswith("claude-"):
        # e.g. claude-sonnet-4-5-20250929, claude-opus-4-1: family names vary; the window does not.
        return ModelInfo(name, 200_000, None)
    if not candidates:
        raise TokenizerError(
            f"unknown model {name!r}",
            "name both `tokenizer:` and `budget.max_ctx` to use it as a label, "
            "or pick a known model: `tokenbox models` lists them",
            field="model",
        )
    best = max(candidates, key=len)
    return MODELS[best]
