"""The checks every validated input shares: a ``Validator`` that turns positioned nodes into values,
failing with the node's position, and the wording of what a value is (``type_name``, ``short``).

The session schema (``schema``) and the config file (``tokenbox.core.planning.config``) use it.
"""

from __future__ import annotations

from typing import Any

from tokenbox.core.model.errors import SessionError
from tokenbox.core.parse.nodes import Node

# What the validator reads: a ``Node``, or (on the fast JSON path, below the positioned levels) the
# plain value itself. Errors raised on the fast path are never shown: any exception there makes the
# load run again on the positional path, whose messages and positions are the ones users get.
Item = Any


def value_of(item: Item) -> Any:
    """The value of a node, or ``item`` itself when it is a plain value (fast JSON path)."""
    return item.value if isinstance(item, Node) else item


class Validator:
    """Turns positioned nodes into model objects, failing with the node's position."""

    def __init__(self, path: str) -> None:
        self.path = path

    @staticmethod
    def where(item: Item) -> tuple[int | None, int | None]:
        """``item``'s position; none for a plain value (the fast path, whose errors are not shown)."""
        return (item.line, item.col) if isinstance(item, Node) else (None, None)

    def fail(self, node: Item, problem: str, remedy: str) -> SessionError:
        return SessionError(problem, remedy, self.path, *self.where(node))

    def mapping(self, node: Item, what: str, known: tuple[str, ...]) -> dict[str, Item]:
        """``node``'s fields, refusing any key not in ``known`` (a typo must not change a layout)."""
        fields = value_of(node)
        if not isinstance(fields, dict):
            raise self.fail(node, f"{what} must be a mapping, not {type_name(fields)}", "write `key: value` pairs")
        for key, value in fields.items():
            if key not in known:
                hint = suggest(key, known)
                keys = node.keys if isinstance(node, Node) else None
                line, col = (keys or {}).get(key) or self.where(value)
                raise SessionError(
                    f"unknown key {key!r} in {what}",
                    (f"did you mean {hint!r}? " if hint else "") + f"known keys: {', '.join(known)}" + ("; free-form data goes under meta" if "meta" in known else ""),
                    self.path,
                    line,
                    col,
                )
        return fields

    def string(self, node: Item, what: str) -> str:
        value = value_of(node)
        if not isinstance(value, str):
            raise self.fail(node, f"{what} must be a string, not {type_name(value)}", "quote the value")
        return value

    def integer(self, node: Item, what: str, low: int, high: int) -> int:
        value = value_of(node)
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and low <= value <= high:
                return int(value)
            got = short(value) if isinstance(value, float) else type_name(value)
            raise self.fail(node, f"{what} must be a whole number, not {got}", f"use a number from {low} to {high}")
        if not low <= value <= high:
            raise self.fail(node, f"{what} is {short(value)}, out of range", f"use a number from {low} to {high}")
        return value

    def number(self, node: Item, what: str, low: float, high: float, *, high_open: bool = False) -> float | int:
        value = value_of(node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(node, f"{what} must be a number, not {type_name(value)}", f"use a number from {low} to {high}")
        if value < low or value > high or (high_open and value >= high):
            bound = f"at least {low} and below {high}" if high_open else f"from {low} to {high}"
            raise self.fail(node, f"{what} is {short(value)}, out of range", f"use a number {bound}")
        return value

    def choice(self, node: Item, what: str, choices: tuple[str, ...]) -> str:
        value = self.string(node, what)
        if value not in choices:
            raise self.fail(node, f"unknown {what} {value!r}", f"use one of: {', '.join(choices)}")
        return value

    def string_list(self, node: Item, what: str) -> tuple[str, ...]:
        items = value_of(node)
        if not isinstance(items, list):
            raise self.fail(node, f"{what} must be a list of strings, not {type_name(items)}", "write `[a, b]`")
        return tuple(self.string(item, f"each item of {what}") for item in items)

    def meta(self, node: Item) -> dict[str, Any]:
        value = value_of(node)
        if not isinstance(value, dict):
            raise self.fail(node, f"meta must be a mapping, not {type_name(value)}", "write `meta: {key: value}`")
        return node.plain() if isinstance(node, Node) else value


def type_name(value: Any) -> str:
    """What ``value`` is, for messages; scalars are shown too (``1e3`` reads as a string in YAML)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, (int, float)):
        return f"a number ({short(value)})"
    if isinstance(value, str):
        return f"a string ({short(value)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def short(value: Any) -> str:
    """``value`` as written in a session file (true/false/null, not Python's names), kept short."""
    text = "null" if value is None else ("true" if value else "false") if isinstance(value, bool) else repr(value)
    return text if len(text) <= 24 else text[:20] + "…"


def suggest(key: str, known: tuple[str, ...]) -> str | None:
    """The known key closest to a misspelt ``key`` (``did you mean``), or ``None``."""
    import difflib  # start-up: only a misspelt key needs it, not every plan that loads the validator

    matches = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return matches[0] if matches else None

