"""Claude Code's context windows and auto-compact threshold, as the CLI computes them.

Claude Code compacts a conversation automatically when the context reaches a threshold below the
window. Its (minified) source computes it as the *effective window* — the model's window less the
reply reserve, ``min(max output tokens, 20 000)`` — less a 13 000-token buffer: 167 000 of a 200 000
window, 967 000 of a 1M one (anthropics/claude-code#12004 and #31806 quote the code; sirmalloc/
ccstatusline#319 uses the same formula). ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` (a percentage, or a
fraction ≤ 1) can only lower it; ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` caps the window used;
``DISABLE_AUTO_COMPACT`` or ``DISABLE_COMPACT`` turn it off. tokenbox's own ``compact_buffer``
setting (config file, ``TOKENBOX_COMPACT_BUFFER``, ``--compact-buffer``) replaces the whole
distance between window and threshold, for agents or versions that differ.

Windows: Claude models have 200 000 tokens; Claude Code names the 1M variants with a ``[1m]`` suffix
(``claude-opus-4-7[1m]``), which reaches the status line's ``model.id``. A transcript does not carry
the suffix; a thread that recorded more than 200 000 tokens shows it ran with the 1M window.
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_WINDOW = 200_000
LONG_WINDOW = 1_000_000
REPLY_RESERVE = 20_000  # Claude Code keeps min(max output tokens, 20 000) for the reply
COMPACT_MARGIN = 13_000  # and compacts this far below the effective window
_TRUE = ("1", "true", "yes", "on")


def window_for(model_id: str | None, known: int | None = None) -> int:
    """The context window of ``model_id`` (``known``: a window the session already established)."""
    if model_id and model_id.lower().endswith("[1m]"):
        return LONG_WINDOW
    return known or DEFAULT_WINDOW


def compact_threshold(window: int, environ: Mapping[str, str], buffer: int | None = None) -> int | None:
    """The context at which Claude Code compacts automatically (``None`` when it is turned off).

    ``buffer`` (tokenbox's setting) is the distance from the window to the threshold; without it
    Claude Code's own formula applies, with its environment variables.
    """
    if any(environ.get(name, "").strip().lower() in _TRUE for name in ("DISABLE_AUTO_COMPACT", "DISABLE_COMPACT")):
        return None
    if buffer is not None:
        return max(0, window - buffer)
    cap = _number(environ.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW"))
    if cap is not None and cap > 0:
        window = min(window, int(cap))
    effective = window - min(REPLY_RESERVE, window // 10)
    threshold = effective - COMPACT_MARGIN
    override = _number(environ.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"))
    if override is not None and override > 0:
        fraction = override if override <= 1 else override / 100
        if fraction <= 1:
            threshold = min(threshold, int(effective * fraction))  # the override only lowers it
    return max(0, threshold)


def _number(raw: str | None) -> float | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None
