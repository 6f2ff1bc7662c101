"""Deterministic synthetic sessions for the benchmarks: prose, code, logs, tool output, behaviours.

``make_session(tokens, sections, seed)`` returns a session object (a ``dict`` ready for JSON or YAML)
of roughly ``tokens`` o200k tokens spread over ``sections`` sections of mixed kinds. Everything comes
from ``random.Random(seed)``: the same arguments give the same bytes on every machine.
``calibrated_session`` scales the text so that the untrimmed count lands close to the target, using
the real tokenizer (still deterministic: the count is exact).
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import yaml

# A small English-like vocabulary plus generated identifiers: realistic BPE behaviour (common words
# are single tokens, identifiers split into several) without shipping a corpus.
_WORDS = (
    "the of and to in is that for it as with was on be by this are from at or an have not which but "
    "all were when we there can more if will one about their has been would so what also into other "
    "than its only new some could these two may then do first any like now such our over most even "
    "make after well where through back much before must between each under never same another while "
    "cache layout token budget section prompt context agent model request response error retry queue "
    "worker thread socket buffer parser schema config deploy commit branch review test fixture "
    "assertion timeout latency throughput memory index search vector embedding summary window "
    "tokenizer encoder decoder gradient batch shard replica lease lock mutex channel stream event"
).split()
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "qu", "ex", "zo", "pla", "tri", "gen", "dor")
# Mostly ASCII, like real prompts: Latin-1 words now and then, other BMP symbols rarely, emoji very
# rarely (a single one makes CPython store a whole string at 4 bytes per character).
_LATIN1 = ("café", "naïve", "über", "données", "größe", "façade", "déjà", "señor")
_BMP = ("—", "→", "…", "日本語", "Ω", "“quoted”")
_ASTRAL = ("🙂", "🚀")
_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
_PATHS = ("/api/v1/plan", "/api/v1/render", "/healthz", "/api/v2/sessions", "/metrics", "/api/v1/check")
_TOOLS = ("read_file", "write_file", "run", "search", "list_dir", "apply_patch", "fetch_url", "ask_user")


class _Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def ident(self) -> str:
        r = self.r
        parts = ["".join(r.choice(_SYLLABLES) for _ in range(r.randint(1, 3))) for _ in range(r.randint(1, 3))]
        return "_".join(parts)

    def word(self) -> str:
        r = self.r
        x = r.random()
        if x < 0.85:
            return r.choice(_WORDS)
        if x < 0.97:
            return self.ident()
        if x < 0.9978:
            return r.choice(_LATIN1)
        if x < 0.9998:
            return r.choice(_BMP)
        return r.choice(_ASTRAL)

    def sentence(self) -> str:
        r = self.r
        words = [self.word() for _ in range(r.randint(6, 22))]
        words[0] = words[0].capitalize()
        if r.random() < 0.2:
            words.insert(r.randint(1, len(words) - 1), f"`{self.ident()}()`")
        if r.random() < 0.15:
            words.append(str(r.randint(2, 99999)))
        return " ".join(words) + r.choice(".....?!:")

    def prose(self, chars: int) -> str:
        r = self.r
        paragraphs: list[str] = []
        size = 0
        while size < chars:
            para = " ".join(self.sentence() for _ in range(r.randint(2, 6)))
            if r.random() < 0.15:
                para = f"## {self.sentence()[:-1]}\n" + para
            if r.random() < 0.15:
                para += "\n" + "\n".join(f"- {self.sentence()}" for _ in range(r.randint(2, 5)))
            paragraphs.append(para)
            size += len(para) + 2
        return "\n\n".join(paragraphs)

    def code(self, chars: int) -> str:
        r = self.r
        lines: list[str] = []
        size = 0
        while size < chars:
            name = self.ident()
            args = ", ".join(self.ident() for _ in range(r.randint(0, 3)))
            block = [f"def {name}({args}):", f'    """{self.sentence()}"""']
            for _ in range(r.randint(2, 12)):
                indent = "    " * r.randint(1, 3)
                choice = r.random()
                if choice < 0.3:
                    block.append(f"{indent}{self.ident()} = {self.ident()}({self.ident()}, {r.randint(0, 4096)})")
                elif choice < 0.5:
                    block.append(f"{indent}if {self.ident()} > {r.randint(0, 100)}:")
                elif choice < 0.65:
                    block.append(f"{indent}for {self.ident()} in range(len({self.ident()})):")
                elif choice < 0.8:
                    block.append(f"{indent}# {self.sentence()}")
                else:
                    block.append(f"{indent}return {{'{self.ident()}': {self.ident()}, 'n': {r.randint(0, 9)}}}")
            lines.extend(block)
            lines.append("")
            size += sum(len(x) + 1 for x in block) + 1
        return "\n".join(lines).rstrip("\n")

    def logs(self, chars: int) -> str:
        r = self.r
        lines: list[str] = []
        size = 0
        t = r.randint(0, 80000)
        while size < chars:
            t += r.randint(1, 5000)
            stamp = f"2025-05-14T{(t // 3600000) % 24:02d}:{(t // 60000) % 60:02d}:{(t // 1000) % 60:02d}.{t % 1000:03d}Z"
            level = r.choice(_LEVELS)
            if level == "ERROR" and r.random() < 0.5:
                msg = f"Traceback: {self.ident()}Error: {self.sentence()}"
            else:
                msg = (
                    f"{r.choice(_PATHS)} status={r.choice((200, 200, 200, 204, 404, 500))} "
                    f"took={r.randint(1, 2500)}ms req={r.getrandbits(48):012x} {self.sentence()}"
                )
            line = f"{stamp} {level:<5} worker-{r.randint(1, 16)} {msg}"
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)

    def tool_output(self, chars: int) -> str:
        r = self.r
        rows = []
        size = 0
        while size < chars:
            row = {"id": r.getrandbits(32), "name": self.ident(), "score": round(r.random(), 4), "note": self.sentence()}
            text = json.dumps(row, ensure_ascii=False)
            rows.append(text)
            size += len(text) + 1
        return f"$ {r.choice(_TOOLS)} --json\n" + "\n".join(rows)


# Characters per o200k token for each generator (measured on this generator; the calibration step
# corrects what is left).
_CPT = {"prose": 4.6, "code": 3.4, "logs": 3.1, "tool": 3.0}


def make_session(tokens: int, sections: int, seed: int = 4, *, scale: float = 1.0, max_ctx: int | None = None) -> dict[str, Any]:
    """A session of about ``tokens`` tokens in ``sections`` sections (at least 8)."""
    g = _Gen(seed)
    r = g.r
    sections = max(8, sections)
    fixed = 6  # prefix, mandates, awareness, behaviors, user, + a final logs section
    flexible = sections - fixed
    fixed_tokens = min(4000, tokens // 20)
    per_section = max(8.0, (tokens - fixed_tokens) / max(1, flexible)) * scale
    out: list[dict[str, Any]] = []
    tools = "\n".join(f"{name}({g.ident()}, {g.ident()}): {g.sentence()}" for name in _TOOLS)
    out.append(
        {
            "id": "prefix",
            "kind": "prefix",
            "assistant_name": "Benchy",
            "identity": "\n### Mode: concise\n" + g.prose(int(fixed_tokens * 0.3 * 4.6 * scale)),
            "feedback": "\nLast session the user asked for shorter answers.",
            "tools": tools,
        }
    )
    out.append({"id": "mandates", "kind": "mandates", "text": "\n".join(g.sentence() for _ in range(8))})
    out.append(
        {
            "id": "awareness",
            "kind": "context",
            "foveal_focus": f"task-{r.randint(1, 999)} {g.sentence()}",
            "scope": "repo:" + g.ident(),
            "memory": [g.sentence() for _ in range(20)],
        }
    )
    items = []
    for i in range(30):
        kind = r.choice(("constraint", "directive", "directive", "procedure", "preference"))
        items.append(
            {
                "name": f"b{i:02d}-{g.ident()}",
                "kind": kind,
                "activation": round(r.random(), 2),
                "content": " ".join(g.sentence() for _ in range(r.randint(1, 3))),
                "summary": g.sentence(),
                "tags": [g.ident() for _ in range(r.randint(0, 2))],
            }
        )
    out.append({"id": "behaviors", "kind": "behaviors", "budget": max(200, fixed_tokens // 4), "items": items})
    for i in range(flexible):
        size = per_section * math.exp(r.gauss(0, 0.6) - 0.18)  # log-normal, mean ~ per_section
        what = r.choices(("prose", "code", "logs", "tool"), weights=(4, 3, 2, 1))[0]
        chars = max(20, int(size * _CPT[what]))
        sid = f"{what}-{i:05d}"
        if what == "logs":
            out.append({"id": sid, "kind": "logs", "text": g.logs(chars)})
            continue
        text = g.prose(chars) if what == "prose" else g.code(chars) if what == "code" else g.tool_output(chars)
        sec: dict[str, Any] = {"id": sid, "text": text, "priority": r.randint(0, 5)}
        x = r.random()
        if what == "code":
            sec["strategy"] = ["dedupe_lines", f"head_lines:{r.randint(10, 60)}"] if x < 0.5 else []
        elif what == "tool":
            sec["strategy"] = [f"head_lines:{r.randint(3, 20)}"]
            sec["summary"] = f"[tool output of {sid} elided]"
        elif x < 0.3:
            sec["strategy"] = ["summary"]
            sec["summary"] = g.sentence()
        if r.random() < 0.2:
            sec["min"] = r.randint(10, 60)
        if r.random() < 0.3:
            sec["keep"] = "tail"
        if r.random() < 0.1:
            sec["grow"] = r.randint(1, 3)
        out.append(sec)
    out.append({"id": "recent-logs", "kind": "logs", "text": g.logs(int(fixed_tokens * 0.2 * 3.1 * scale) + 200)})
    out.append({"id": "user", "kind": "user", "text": g.prose(int(fixed_tokens * 0.1 * 4.6 * scale) + 40)})
    session: dict[str, Any] = {
        "tokenbox": 1,
        "name": f"synthetic {tokens} tokens / {sections} sections (seed {seed})",
        "meta": {"generator": "benchmarks.synth", "seed": seed},
        "tokenizer": "o200k_base",
        "budget": {"max_ctx": max_ctx or max(16384, tokens * 2), "reserve_out": 0, "headroom": 0},
        "sensor": "user-input",
        "sections": out,
    }
    return session


def section_texts(session: dict[str, Any]) -> list[str]:
    """The texts a plan assembles, approximately (prefix/context/behaviours as their raw fields)."""
    texts = []
    for s in session["sections"]:
        if s.get("kind") == "prefix":
            texts.append(f"IDENTITY: {s['assistant_name']}{s['identity']}{s['feedback']}\n\nTOOLS:\n{s['tools']}")
        elif s.get("kind") == "context":
            texts.append("\n".join([s["foveal_focus"], s["scope"], *s["memory"]]))
        elif s.get("kind") == "behaviors":
            texts.append("\n".join(b["content"] for b in s["items"]))
        else:
            texts.append(s["text"])
    return texts


def calibrated_session(tokens: int, sections: int, count, seed: int = 4) -> dict[str, Any]:
    """``make_session`` rescaled once so that the untrimmed count is within a few percent of ``tokens``."""
    first = make_session(tokens, sections, seed)
    measured = sum(count(t) for t in section_texts(first))
    if measured <= 0 or abs(measured - tokens) / tokens < 0.03:
        return first
    return make_session(tokens, sections, seed, scale=tokens / measured)


def edit_section(session: dict[str, Any], index: int, marker: str) -> dict[str, Any]:
    """A copy of ``session`` where flexible text section number ``index`` has one sentence changed."""
    sections = list(session["sections"])
    candidates = [i for i, s in enumerate(sections) if "text" in s and s.get("kind") in (None, "text", "logs")]
    target = candidates[index % len(candidates)]
    sec = dict(sections[target])
    text = sec["text"]
    middle = len(text) // 2
    cut = text.find(" ", middle)
    cut = middle if cut < 0 else cut
    sec["text"] = text[:cut] + f" edited {marker}" + text[cut:]
    sections[target] = sec
    return {**session, "sections": sections}


class _LiteralDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml when present: 15 x faster
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _str_representer)


def to_json(session: dict[str, Any]) -> str:
    return json.dumps(session, ensure_ascii=False, indent=1) + "\n"


def to_yaml(session: dict[str, Any]) -> str:
    return yaml.dump(session, Dumper=_LiteralDumper, allow_unicode=True, sort_keys=False, width=10_000)


def write(session: dict[str, Any], path: str) -> int:
    """Write ``session`` as JSON or YAML (by extension); returns the file size in bytes."""
    text = to_yaml(session) if path.endswith((".yaml", ".yml")) else to_json(session)
    data = text.encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(data)
    return len(data)
