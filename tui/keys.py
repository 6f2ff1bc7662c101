"""Every user action in one table: the footer bindings, the help screen and the command palette."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from tokenbox.core.planning.config import WHAT_IF_STEP_PERCENT as STEP


@dataclass(frozen=True)
class Key:
    keys: str  # Textual key names, comma separated
    action: str
    label: str  # short footer label
    help: str  # one line for the help screen and the command palette
    shown: str  # how the key is written for people
    footer: bool = True
    group: str = ""  # keys of one group share a footer label ("← → step"), which keeps the footer short
    listed: bool = True  # False: a stand-in that says why a key does not apply (not in the help or the palette)


# the footer labels of the key pairs
STEP_GROUP, BUDGET_GROUP, TURN_GROUP = "step", "budget", "turn"


# The footer shows the keys in this order and an 80-column terminal clips it at the right, so the keys
# people need first come first (help before the policy and tokenizer switches).
KEYS: tuple[Key, ...] = (
    Key("left", "step(-1)", "step◀", "Step backward through the trim trace (step 0 = untrimmed)", "←",
        group=STEP_GROUP),
    Key("right", "step(1)", "step▶", "Step forward through the trim trace", "→", group=STEP_GROUP),
    Key("home", "step_to(0)", "untrimmed", "Show the untrimmed layout (step 0)", "Home", footer=False),
    Key("end", "step_to(-1)", "final", "Show the final layout (last step)", "End", footer=False),
    Key("up", "select(-1)", "section↑", "Select the previous section", "↑", footer=False),
    Key("down", "select(1)", "section↓", "Select the next section", "↓", footer=False),
    Key("pageup", "select(-10)", "page↑", "Select the section ten rows up", "PgUp", footer=False),
    Key("pagedown", "select(10)", "page↓", "Select the section ten rows down", "PgDn", footer=False),
    Key("enter", "focus_detail", "detail", "Focus the selected section's text (Esc to come back)", "Enter", footer=False),
    Key("plus,equals_sign", "budget(1)", "budget+", f"What-if: raise max_ctx by {STEP}% of the file's max_ctx", "+",
        group=BUDGET_GROUP),
    Key("minus", "budget(-1)", "budget-", f"What-if: lower max_ctx by {STEP}% of the file's max_ctx", "-",
        group=BUDGET_GROUP),
    Key("0", "budget(0)", "file budget", "Back to the file's budget", "0", footer=False),
    Key("left_square_bracket", "turn(-1)", "turn◀", "Previous turn of a log (an agent's previous request)", "[", group=TURN_GROUP),
    Key("right_square_bracket", "turn(1)", "turn▶", "Next turn of a log (an agent's next request)", "]", group=TURN_GROUP),
    Key("f", "follow", "follow", "Follow the newest turn of a log (an agent's newest request)", "f"),
    Key("a", "threads", "threads", "An agent's threads: the main one and each sub-agent, with their context and cost", "a"),
    Key("w", "warnings", "warnings", "Every warning of the plan shown, whole", "w"),
    Key("v", "sidebar", "breakdown", "Sidebar: switch between the trim trace and the token breakdown", "v"),
    Key("s", "toggle_sidebar", "sidebar", "Show or hide the sidebar (hidden by itself below 100 columns)", "s", footer=False),
    Key("question_mark", "help", "help", "Show this help", "?"),
    Key("p", "policy", "policy", "Switch the trimming policy (tokenbox / progressive)", "p"),
    Key("t", "tokenizer", "tokenizer", "Cycle through the tokenizers", "t"),
    Key("q", "quit", "quit", "Quit", "q"),
    # Stand-ins, tried when the key above does not apply (Textual runs the next binding of a key whose
    # action is not allowed): they say why, instead of nothing happening.
    *(Key(keys, f"unavailable('{why}')", "", "", shown, footer=False, listed=False) for keys, shown, why in (
        ("left_square_bracket", "[", "turns"), ("right_square_bracket", "]", "turns"), ("f", "f", "turns"),
        ("left", "←", "trim"), ("right", "→", "trim"), ("home", "Home", "trim"), ("end", "End", "trim"),
        ("p", "p", "trim"), ("v", "v", "trim"), ("a", "a", "threads"), ("w", "w", "warnings"))),
)


def bindings() -> list[Binding]:
    """The app's bindings, in the footer's order (a group's keys are next to each other in ``KEYS``)."""
    return [
        Binding(k.keys, k.action, k.label, show=k.footer, key_display=k.shown, tooltip=k.help,
                group=Binding.Group(k.group) if k.group else None)
        for k in KEYS
    ]
