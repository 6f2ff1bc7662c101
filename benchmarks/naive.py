"""The naive baseline: the same layout, re-tokenizing the whole prompt after every trimming step.

This is what seed 004's ``enforce-token-budget`` does (``total-tokens`` counts every part again after
each level), generalised to tokenbox's policies so that the result can be compared with the real
plan: same compression order, same lenses, same truncation rule, same stopping point. Nothing is
cached and nothing is incremental: every total is ``count("\\n\\n".join(kept texts))``.

``naive_plan`` returns the rendered context, its token count and the number of steps; the benchmark
checks that they equal tokenbox's, so the comparison is between two ways of computing one answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenbox.core.model.session import Session
from tokenbox.core.parse.lensspec import parse_lens
from tokenbox.core.planning import lenses
from tokenbox.core.planning.assembly import Assembler, AssemblyState

SEPARATOR = "\n\n"
_MIN_RETRIES = 8


@dataclass
class NaiveResult:
    render: str
    tokens_before: int
    tokens_after: int
    steps: int
    full_counts: int  # how many times the whole prompt was tokenized


def naive_plan(session: Session, available: int, tokenizer, policy: str = "tokenbox") -> NaiveResult:
    count = tokenizer.count
    state = AssemblyState()
    assembler = Assembler(count)
    for earlier in session.history:
        assembler.assemble(earlier, state, texts=False)
    parts = assembler.assemble(session, state).parts
    texts = [p.text for p in parts]
    tiers = [list(p.tiers) if p.tiers else None for p in parts]
    full_counts = 0

    def total() -> int:
        nonlocal full_counts
        full_counts += 1
        return count(SEPARATOR.join(t for t in texts if t))

    critical = count(SEPARATOR.join(t for p, t in zip(parts, texts, strict=True) if p.section.critical and t))
    if critical > available:
        raise OverflowError(f"critical load {critical} > {available}")
    tot = before = total()
    steps = 0

    def lens_pass(i: int) -> None:
        nonlocal tot, steps
        section = parts[i].section
        for spec in section.strategy:
            name, _ = parse_lens(spec)
            while texts[i] and tot > available:
                size = count(texts[i])
                if name == "demote":
                    probe_text, probe_tiers = texts[i], tiers[i]
                    found = None
                    while True:
                        result = lenses.apply(spec, section, probe_text, probe_tiers)
                        if result.tiers is None or result.tiers == probe_tiers:
                            break
                        probe_text, probe_tiers = result.text, result.tiers
                        if not result.text or count(result.text) < size:
                            found = result
                            break
                    if found is None:
                        break
                    tiers[i] = found.tiers
                    texts[i] = found.text
                else:
                    result = lenses.apply(spec, section, texts[i], tiers[i])
                    if (count(result.text) if result.text else 0) >= size:
                        break
                    texts[i] = result.text
                tot = total()
                steps += 1

    def cut(text: str, target: int, minimum: int, keep: str) -> str:
        new = tokenizer.truncate(text, target, keep)
        extra = 1
        while minimum and count(new) < minimum and extra <= _MIN_RETRIES:
            new = tokenizer.truncate(text, target + extra, keep)
            extra += 1
        return new

    def truncate(i: int) -> None:
        nonlocal tot, steps
        section = parts[i].section
        if not texts[i] or tot <= available:
            return
        size = count(texts[i])
        target = max(section.min, size - (tot - available))
        if target >= size or target <= 0:
            return
        source = texts[i]
        new = cut(source, target, section.min, section.keep)
        if not new:
            return
        texts[i] = new
        tot = total()
        tokens = count(new)
        while tot > available and tokens > max(section.min, 1):
            target = max(section.min, tokens - (tot - available), 1)
            if target >= tokens:
                target = tokens - 1
            if target < max(section.min, 1):
                break
            shorter = cut(source, target, section.min, section.keep)
            if not shorter or shorter == texts[i]:
                break
            texts[i] = shorter
            tot = total()
            tokens = count(shorter)
        steps += 1

    def drop(i: int) -> None:
        nonlocal tot, steps
        if not texts[i] or tot <= available:
            return
        texts[i] = ""
        tot = total()
        steps += 1

    if tot > available:
        order = sorted(
            (i for i, p in enumerate(parts) if not p.section.critical and p.text),
            key=lambda i: (parts[i].section.priority, -parts[i].section.shrink, i),
        )
        if policy == "progressive":
            for i in order:
                lens_pass(i)
                if tot <= available:
                    break
            for i in order:
                if tot <= available:
                    break
                truncate(i)
                drop(i)
        else:
            for i in order:
                lens_pass(i)
                truncate(i)
                drop(i)
                if tot <= available:
                    break
    return NaiveResult(SEPARATOR.join(t for t in texts if t), before, tot, steps, full_counts)
