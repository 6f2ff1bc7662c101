"""Which notifications a new plan deserves: thresholds crossed, cache breaks, errors asked for.

Pure: the app keeps the previous ``Watermark`` and shows what ``alerts`` returns as toasts.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenbox.core import Plan
from tokenbox.core.commands.thresholds import DEFAULT_WARN_LEVELS
from tokenbox.core.model.plan import PrefixCache
from tokenbox.core.model.textsafe import printable
from tokenbox.tui.view import Levels, band


@dataclass(frozen=True)
class Watermark:
    """What the last notifications were based on."""

    band: int = 0
    ok: bool = True
    error: str | None = None
    turn_key: tuple[str, int] | None = None


@dataclass(frozen=True)
class Alert:
    message: str
    severity: str  # information | warning | error
    title: str = ""


def alerts(
    previous: Watermark, plan: Plan | None, error: str | None, levels: Levels = DEFAULT_WARN_LEVELS,
    rebase: bool = False,
) -> tuple[list[Alert], Watermark]:
    """The alerts for the newly shown plan/error (usage bands by the warning ``levels``), and the new watermark.

    ``rebase``: the plan is another thread's, picked by the user: its usage and prefix are where the new
    watermark starts, not a change to announce (nothing crossed a threshold; the view moved)."""
    out: list[Alert] = []
    if error and error != previous.error:  # errors live in the status line; a toast only when asked for
        out.append(Alert(printable(error), "error", "error"))
    if plan is None:
        return out, Watermark(previous.band, previous.ok, error, previous.turn_key)
    usage = plan.usage_percent if plan.window is None else plan.window_percent
    now = band(usage, levels)
    if plan.pending:
        now = min(now, len(levels) - 1)  # a prediction never reaches the last level: nothing was sent yet
    if rebase:
        return out, Watermark(now, plan.ok, error, (plan.session.path, plan.session.turn))
    if now > previous.band:
        threshold = levels[now - 1]
        severity = ("information", "warning", "error")[now - 1]
        what = "predicted context" if plan.pending else "context usage"
        message = f"{what} reached {usage}%" if usage == threshold else f"{what} {usage}% crossed {threshold}%"
        out.append(Alert(message, severity, "budget pressure"))
    elif now < previous.band:
        out.append(Alert(f"context usage back to {usage}%", "information", "budget pressure"))
    # a critical overflow is not toasted: the status line's error row and the gauge's badge show it for
    # as long as it lasts (one place per error, and no toast over the section bars it explains)
    turn_key = (plan.session.path, plan.session.turn)
    if plan.session.turn > 1 and plan.prefix_cache == PrefixCache.MISS and turn_key != previous.turn_key:
        out.append(Alert(
            f"turn {plan.session.turn}: the prefix changed, so the provider's prompt cache would miss too",
            "warning",
            "prefix cache break",
        ))
    return out, Watermark(now, plan.ok, error, turn_key)
