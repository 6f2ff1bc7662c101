"""The readable plan table printed by ``tokenbox plan`` (plain text, untrusted values escaped)."""

from __future__ import annotations

from tokenbox.core.model.names import MAIN_THREAD
from tokenbox.core.model.plan import HeadlineKind, Plan
from tokenbox.core.model.textsafe import printable


def plan_table(plan: Plan) -> str:
    """A fixed-width summary: header, one row per section, the trim trace."""
    approx = "≈" if plan.headline_kind.approximate else ""
    b = plan.budget
    lines = []
    title = printable(plan.session.name or plan.session.path, 80)
    turn = f" (turn {plan.session.turn}/{plan.session.turn_count})" if plan.session.turn_count > 1 else ""
    lines.append(f"{title}{turn}")
    usage = "-" if plan.usage_percent is None else f"{plan.usage_percent}%"
    lines.append(
        f"tokenizer {plan.tokenizer.name} ({'exact' if plan.tokenizer.exact else 'approximate'})  "
        f"max_ctx {b.max_ctx}  reserve_out {b.reserve_out}  headroom {b.headroom}  available {b.available}"
    )
    lines.append(
        f"tokens {approx}{plan.tokens_before} → {approx}{plan.tokens_after} (joins {plan.joins})  usage {usage}  "
        f"prefix cache {plan.prefix_cache}  context {plan.context_cache}  policy {plan.trimming}"
    )
    kind = plan.headline_kind
    if plan.recorded is not None and not plan.pending and kind in (HeadlineKind.RECORDED, HeadlineKind.ESTIMATED):
        r = plan.recorded
        lines.append(
            f"context {r.context_tokens} tokens as recorded (input {r.input_tokens} + cache write "  # type: ignore[union-attr]
            f"{r.cache_creation_input_tokens} + cache read {r.cache_read_input_tokens}); parts ≈, calibrated"  # type: ignore[union-attr]
        )
    elif kind == HeadlineKind.PREDICTED:
        what = "pending request, about to be sent" if plan.pending else "no usage recorded for this request"
        lines.append(f"context ≈{plan.tokens_before} tokens predicted ({what})")
    if plan.thread != MAIN_THREAD:
        lines.append(f"thread {printable(plan.thread, 80)}")
    if plan.calibration is not None:
        lines.append(f"calibration: {printable(plan.calibration.method)}")
    for warning in plan.warnings[:20]:
        lines.append(f"warning: {printable(warning)}")
    if len(plan.warnings) > 20:
        lines.append(f"warning: … {len(plan.warnings) - 20} more (see --json)")
    if not plan.ok:
        lines.append(f"OVERFLOW: {printable(plan.error['message'])}")  # type: ignore[index]
    lines.append("")
    labelled = any("label" in s.section.meta for s in plan.sections)
    headers = ("id", "kind", "prio", "crit", "before", "after", "allot", "action", "lenses") + (("part",) if labelled else ())
    rows = [
        (
            printable(s.id, 60),
            s.kind,
            str(s.section.priority),
            "*" if s.critical else "",
            str(s.tokens_before),
            str(s.tokens_after),
            str(s.allotment),
            s.action,
            ",".join(s.lenses),
        ) + ((printable(str(s.section.meta.get("label", "")), 70),) if labelled else ())
        for s in plan.sections
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    numeric = {2, 4, 5, 6}

    def fmt(row: tuple[str, ...]) -> str:
        cells = [c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(row)]
        return "  ".join(cells).rstrip()

    lines.append(fmt(headers))
    lines.extend(fmt(r) for r in rows)
    if plan.steps:
        lines.append("")
        lines.append("steps:")
        for step in plan.steps:
            lines.append(
                f"  {step.index:>3}. {step.section} {step.op} {printable(step.detail, 60)}: "
                f"{step.tokens_before} → {step.tokens_after}, deficit {step.deficit_after}"
                + (f"  ({printable(step.note, 80)})" if step.note else "")
            )
    fingerprint = plan.fingerprint
    lines.append("")
    lines.append(f"fingerprint {fingerprint}")
    return "\n".join(lines) + "\n"
