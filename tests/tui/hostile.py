"""Hostile text for the TUI tests: every class of untrusted text that must stay inert on screen."""

from __future__ import annotations

import json
from pathlib import Path

MARKUP = "[bold]B[/] [/] [link=https://x]L[/link] [@click=app.quit]Q[/] [red on blue]R[/]"
ESCAPES = "\x1b[31mCSI\x1b[0m \x1b]8;;https://evil\x1b\\OSC8\x1b]8;;\x1b\\ \x1b]0;title\x07 \x9b31mC1 \x90dcs\x9c"
CONTROLS = "bel\x07 bs\x08 cr\rX del\x7f vt\x0b ff\x0c nel\x85 nul\x00"
WIDE = "漢字テスト 😀👍🏽"
INVISIBLE = "zw\u200bsp bom\ufeff rlo\u202eevil\u202c rli\u2067iso\u2069 ls\u2028ps\u2029"
CLASSES = {"markup": MARKUP, "escapes": ESCAPES, "controls": CONTROLS, "wide": WIDE, "invisible": INVISIBLE}
HOSTILE = " ".join(CLASSES.values())

# what must be seen literally (markup) or as visible escapes (everything else)
LITERAL = ("[bold]B[/]", "[@click=app.quit]Q[/]", "[link=https://x]L[/link]", "[red on blue]R[/]", "漢字テスト", "😀")
ESCAPED = ("\\x1b[31mCSI", "\\x1b]0;title\\x07", "\\x9b31mC1", "\\x08", "\\x7f", "\\x0d", "\\x00",
           "\\u200b", "\\ufeff", "\\u202e", "\\u2067", "\\u2028")


def hostile_session(max_ctx: int = 1900, lines: int = 12) -> dict:
    """A session whose every free-text field is hostile, tight enough for every kind of step.

    At the default ``max_ctx`` the trace has lenses (tail_lines, summary), drops, eight demotions
    (their notes quote the hostile behaviour names) and a truncation.
    """
    body = "\n".join(f"{i} {part}" for i in range(lines) for part in CLASSES.values())
    return {
        "tokenbox": 1,
        "name": "name " + MARKUP + " " + ESCAPES + " " + WIDE + " " + INVISIBLE,
        "tokenizer": "o200k_base",
        "budget": {"max_ctx": max_ctx},
        "sections": [
            {"id": "prefix", "kind": "prefix", "assistant_name": MARKUP, "identity": " " + ESCAPES, "tools": HOSTILE},
            {"id": "rules", "kind": "behaviors", "items": [
                {"name": f"b{i} {part}", "kind": "directive", "activation": 0.9 - i / 10,
                 "content": f"content {i} {HOSTILE}", "summary": f"summary {i} {part}", "tags": [part]}
                for i, part in enumerate(CLASSES.values())
            ]},
            {"id": "awareness", "kind": "context", "foveal_focus": MARKUP, "scope": ESCAPES, "memory": [WIDE, INVISIBLE]},
            {"id": "doc", "text": body, "summary": "summary " + HOSTILE, "priority": 5},
            {"id": "logs", "kind": "logs", "text": body},
            {"id": "user", "kind": "user", "text": "[bold]is this bold?[/bold] " + HOSTILE},
        ],
    }


def write_hostile(path: Path, **options) -> Path:
    path.write_text(json.dumps(hostile_session(**options)), encoding="utf-8")
    return path
