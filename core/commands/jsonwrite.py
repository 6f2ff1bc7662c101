"""``json.dumps(value, ensure_ascii=False, indent=2)``, written a piece at a time, faster.

With ``indent`` the standard library encodes in Python, a generator per container and one piece per
key, value and separator (a 50 MB transcript's plan: 700 000 pieces, a fifth of ``tokenbox plan``'s
work after the read). Here every container whose items are all plain (strings, numbers, ``true``,
``false``, ``null``, empty containers) — each section of a plan — is encoded by the standard
library's C encoder in one call, with the separators its level of indentation needs; the few
containers above them are walked here the way the standard library walks them. Anything else (a
subclass, a non-string key, an object the encoder refuses) is handed to the standard library's own
indented encoder, re-indented to its level: the text is the same, byte for byte, and so is any error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from operator import countOf

INDENT = "  "  # json.dumps(indent=2)
_PLAIN = frozenset({str, int, float, bool, type(None)})


class IndentedJson:
    """Pieces of ``json.dumps(value, ensure_ascii=False, indent=2)`` (see the module docstring)."""

    def __init__(self) -> None:
        self._standard = json.JSONEncoder(ensure_ascii=False, indent=len(INDENT))
        self._flat: dict[int, Callable[[object], str]] = {}  # level -> encodes a plain container's items

    def pieces(self, value: object) -> Iterator[str]:
        """The encoded text of ``value``, in pieces (joined: ``json.dumps(value, ensure_ascii=False, indent=2)``)."""
        text = self._text(value, 0)
        if text is not None:
            return iter((text,))
        return self._walk(value, 0, set())

    def _text(self, value: object, level: int) -> str | None:
        """The whole text of ``value`` at ``level`` when it needs no walk here (``None``: walk it)."""
        kind = type(value)
        if kind is str:
            return encode_basestring(value)
        if kind is dict:
            if not value:
                return "{}"
            if _PLAIN.issuperset(map(type, value)) and _plain(value.values()):  # type: ignore[attr-defined]
                return self._flat_text(value, level, "{", "}")
            if not _STR_KEYS.issuperset(map(type, value)):  # a key the standard library converts (or refuses)
                return self._standard_text(value, level)
            return None
        if kind is list or kind is tuple:
            if not value:
                return "[]"
            if _plain(value):  # type: ignore[arg-type]
                return self._flat_text(value, level, "[", "]")
            return None
        return self._standard_text(value, level)  # a number, true, false, null or what the standard library decides

    def _walk(self, value: object, level: int, path: set[int]) -> Iterator[str]:
        """A dict (string keys) or a list whose items are not all plain, walked as the standard library walks it."""
        marker = id(value)
        if marker in path:
            raise ValueError("Circular reference detected")  # the standard library's words
        path.add(marker)
        inner = "\n" + INDENT * (level + 1)
        separator = "," + inner
        is_dict = type(value) is dict
        yield ("{" if is_dict else "[") + inner
        first = True
        pairs = value.items() if is_dict else ((None, item) for item in value)  # type: ignore[attr-defined]
        for key, item in pairs:
            head = "" if first else separator
            if is_dict:
                head += encode_basestring(key) + ": "
            first = False
            text = self._text(item, level + 1)
            if text is not None:
                yield head + text
            else:
                yield head
                yield from self._walk(item, level + 1, path)
        yield "\n" + INDENT * level + ("}" if is_dict else "]")
        path.discard(marker)

    def _flat_text(self, value: object, level: int, opening: str, closing: str) -> str:
        """A container of plain items at ``level``: the C encoder's text with this level's separators."""
        encode = self._flat.get(level)
        if encode is None:
            encode = self._flat[level] = _flat_encoder("," + "\n" + INDENT * (level + 1))
        text = encode(value)
        return opening + "\n" + INDENT * (level + 1) + text[1:-1] + "\n" + INDENT * level + closing

    def _standard_text(self, value: object, level: int) -> str:
        """The standard library's indented text of ``value`` placed at ``level`` (a newline inside the
        text is always its indentation: strings carry theirs escaped)."""
        text = self._standard.encode(value)
        return text.replace("\n", "\n" + INDENT * level) if level else text


_CONTAINERS = (list, dict, tuple)
_STR_KEYS = frozenset({str})


def _plain(values: object) -> bool:
    """Whether every item is plain: a string, a number, a boolean, null or an empty container."""
    kinds = set(map(type, values))  # type: ignore[call-overload]
    if kinds <= _PLAIN:
        return True
    if not kinds <= _PLAIN_OR_CONTAINER:
        return False
    # each container among them is empty: as many of that type as items equal to its empty value (counted in C)
    return all(countOf(map(type, values), kind) == countOf(values, kind())  # type: ignore[call-overload]
               for kind in _CONTAINERS if kind in kinds)


_PLAIN_OR_CONTAINER = _PLAIN | frozenset(_CONTAINERS)


def _flat_encoder(separator: str) -> Callable[[object], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(separator, ": "))`` of a container of plain items:
    the standard library's C encoder made once (``JSONEncoder.encode`` makes one per call)."""
    if c_make_encoder is None:  # pragma: no cover - CPython has it; another Python takes the public path
        return json.JSONEncoder(ensure_ascii=False, separators=(separator, ": ")).encode
    encoder = c_make_encoder(None, _refuse, encode_basestring, None, ": ", separator, False, False, True)
    return lambda value: "".join(encoder(value, 0))


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")  # never reached: items are plain
