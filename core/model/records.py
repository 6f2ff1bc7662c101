"""``dataclass``, ``field`` and ``replace`` for the modules on the status line's chain, without ``dataclasses``.

``tokenbox statusline`` is a process of a few tens of milliseconds (ARCHITECTURE.md). Importing the standard
library's ``dataclasses`` costs ≈6.5 ms (it imports ``inspect``, which imports ``ast``, ``dis``, ``tokenize``),
and each class it makes ≈0.5 ms: it compiles every generated method (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``) one by one, ≈12 ms for the two dozen classes the chain
defines. Here a class costs its fields' bookkeeping: ``__init__``, ``__eq__`` and ``__hash__`` (the same code
``dataclasses`` generates) are compiled the first time they are called, ``__repr__`` and the frozen guard are
shared functions, so the status line compiles the few ``__init__`` methods it calls and nothing else.

The meaning is the standard library's (Python 3.11) for what tokenbox uses: ``frozen`` and ``slots``;
a field's ``default``, ``default_factory``, ``repr``, ``hash`` and ``compare``; base classes' fields first;
``__post_init__``; ``__match_args__``; equality and hashing (none for a mutable class with ``__eq__``);
``FrozenInstanceError`` on assignment to a frozen instance; pickling and copying a frozen slotted one.
The standard library's tools keep working on these classes (``dataclasses.replace``, ``fields``,
``astuple``, ``asdict``, ``is_dataclass``): ``__dataclass_fields__`` is built the first time something
reads it (importing ``dataclasses`` then, from a standard dataclass of the same fields). Not supported:
the other decorator options, ``init=False`` fields, ``ClassVar`` and ``InitVar`` annotations. Type checkers
read the three names as the standard library's (the end of the module).
"""

from __future__ import annotations

import _thread

TYPE_CHECKING = False  # typing's constant without importing typing (the status line's start-up: ARCHITECTURE.md)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_MISSING = object()  # no default: not None, which is a default like any other
_RECORD = "__record_fields__"  # the class attribute holding a record's fields, in ``__init__``'s order


class Field:
    """One field of a record: its name (set by the decorator), default or factory and what it takes part in."""

    __slots__ = ("compare", "default", "default_factory", "hash", "name", "repr", "type")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING, repr: bool = True,
                 hash: bool | None = None, compare: bool = True) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.hash = hash
        self.compare = compare

    @property
    def hashed(self) -> bool:
        """Whether the field is part of ``__hash__`` (``hash=None``: as it is part of ``__eq__``)."""
        return self.compare if self.hash is None else self.hash

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, repr: bool = True, hash: bool | None = None,
          compare: bool = True) -> Any:
    """A field's default or factory and options, as ``dataclasses.field`` (without ``init``, ``metadata``,
    ``kw_only``)."""
    return Field(default, default_factory, repr, hash, compare)


def dataclass(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
    """``@dataclass``, ``@dataclass(frozen=True, slots=True)``: the class with the standard library's
    ``__init__``, ``__repr__``, ``__eq__`` and hash (see the module docstring)."""

    def wrap(cls: type) -> type:
        return _process(cls, frozen, slots)

    return wrap if cls is None else wrap(cls)


def fields_of(cls: type) -> tuple[Field, ...]:
    """A record class's fields in ``__init__``'s order (its bases' first)."""
    return getattr(cls, _RECORD)


def replace(obj: Any, /, **changes: Any) -> Any:
    """A copy of ``obj`` with ``changes``, as ``dataclasses.replace`` (which a standard dataclass goes to)."""
    fields = getattr(type(obj), _RECORD, None)
    if fields is None:
        import dataclasses  # start-up: the standard library's only for its own classes

        return dataclasses.replace(obj, **changes)
    for each in fields:
        if each.name not in changes:
            changes[each.name] = getattr(obj, each.name)
    return obj.__class__(**changes)


# ------------------------------------------------------------------------------------------ the class


def _process(cls: type, frozen: bool, slots: bool) -> type:
    fields: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        for each in base.__dict__.get(_RECORD, ()):
            fields[each.name] = each
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (as dataclasses reads them: inspect is what is spared)
    for name, annotation in own.items():
        value = cls.__dict__.get(name, _MISSING)
        each = value if isinstance(value, Field) else Field(default=value)
        each.name, each.type = name, annotation
        if each.default is not _MISSING and each.default.__class__.__hash__ is None:  # as dataclasses refuses it
            raise ValueError(f"mutable default {type(each.default)} for field {name} is not allowed: use default_factory")
        fields[name] = each
        if isinstance(value, Field):  # the class attribute is the default, as dataclasses leaves it
            if each.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, each.default)
    ordered = tuple(fields.values())
    seen_default = False
    for each in ordered:  # dataclasses finds this when it compiles __init__: at the class, here too
        if each.default is _MISSING and each.default_factory is _MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {each.name!r} follows default argument")
        else:
            seen_default = True
    if slots:
        cls = _with_slots(cls, ordered)
    setattr(cls, _RECORD, ordered)
    _install(cls, ordered, frozen, slots)
    return cls


def _with_slots(cls: type, fields: tuple[Field, ...]) -> type:
    """The class made again with ``__slots__`` (they cannot be set on a class made), as dataclasses does."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    namespace = dict(cls.__dict__)
    inherited = {name for base in cls.__mro__[1:-1] for name in _slots_of(base)}
    namespace["__slots__"] = tuple(each.name for each in fields if each.name not in inherited)
    for each in fields:
        namespace.pop(each.name, None)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


def _slots_of(cls: type) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _install(cls: type, fields: tuple[Field, ...], frozen: bool, slots: bool) -> None:
    own = dict(cls.__dict__)  # what the class body defined (the class's own dict changes below)
    names = tuple(each.name for each in fields)
    if "__init__" not in own:
        cls.__init__ = _compiled_on_call(cls, "__init__", lambda: _init_source(cls, fields, frozen))  # type: ignore[misc]
    if "__repr__" not in own:
        cls.__repr__ = _repr_of(tuple(each.name for each in fields if each.repr))  # type: ignore[method-assign]
    if "__eq__" not in own:
        compared = tuple(each.name for each in fields if each.compare)
        cls.__eq__ = _compiled_on_call(cls, "__eq__", lambda: _eq_source(compared))  # type: ignore[method-assign]
    # dataclasses' hash rule for eq=True: an explicit __hash__ stays; frozen → one of the fields; else none
    explicit = own.get("__hash__", _MISSING)
    if explicit is _MISSING or (explicit is None and "__eq__" in own):
        if frozen:
            hashed = tuple(each.name for each in fields if each.hashed)
            cls.__hash__ = _compiled_on_call(cls, "__hash__", lambda: _hash_source(hashed))  # type: ignore[method-assign]
        else:
            cls.__hash__ = None  # type: ignore[assignment]
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
        cls.__setattr__, cls.__delattr__ = _frozen_guards(cls, frozenset(names))  # type: ignore[method-assign]
        if slots:
            if "__getstate__" not in own:
                cls.__getstate__ = _getstate_of(names)  # type: ignore[attr-defined]
            if "__setstate__" not in own:
                cls.__setstate__ = _setstate_of(names)  # type: ignore[attr-defined]
    if "__match_args__" not in own:
        cls.__match_args__ = names  # type: ignore[attr-defined]
    for name in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(cls, name, _Standard(cls, name, frozen))


# --------------------------------------------------------------------- methods compiled on first call


def _compiled_on_call(cls: type, name: str, source: Callable[[], tuple[str, dict[str, Any]]]) -> Callable[..., Any]:
    """A method that compiles ``cls``'s own on its first call, puts it on the class and calls it."""

    def first_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(cls, name)
        if method is first_call:  # another thread may have compiled it meanwhile
            text, scope = source()
            namespace: dict[str, Any] = {}
            exec(text, scope, namespace)  # the same code dataclasses compiles, once, for a class used
            method = namespace[name]
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
        return method(self, *args, **kwargs)

    first_call.__name__ = name
    first_call.__qualname__ = f"{cls.__qualname__}.{name}"
    return first_call


def _init_source(cls: type, fields: tuple[Field, ...], frozen: bool) -> tuple[str, dict[str, Any]]:
    scope: dict[str, Any] = {"__set": object.__setattr__, "__factory_marker": _MISSING}
    params, body = ["self"], []
    for each in fields:
        name = each.name
        slot = _slot_setter(cls, name) if frozen else None
        if slot is not None:
            # a frozen slotted record's field set through its slot, as ``object.__setattr__`` ends up doing, without
            # looking the name up along the class's bases for each field (a section of twenty-odd fields: ≈35 % less)
            scope[f"__slot_{name}"] = slot
        if each.default_factory is not _MISSING:
            scope[f"__factory_{name}"] = each.default_factory
            params.append(f"{name}=__factory_marker")
            value = f"__factory_{name}() if {name} is __factory_marker else {name}"
        elif each.default is not _MISSING:
            scope[f"__default_{name}"] = each.default
            params.append(f"{name}=__default_{name}")
            value = name
        else:
            params.append(name)
            value = name
        if slot is not None:
            body.append(f"    __slot_{name}(self, {value})")
        else:
            body.append(f"    __set(self, {name!r}, {value})" if frozen else f"    self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    return f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n", scope


_MEMBER = type(Field.name)  # a ``__slots__`` entry's descriptor (``member_descriptor``)


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None] | None:
    """The ``__set__`` of the slot ``object.__setattr__(instance, name, …)`` sets on an instance of ``cls`` (the
    first class along its bases that defines ``name``), or ``None`` when that is not a slot."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name)
        if found is not None:  # mutation: equivalent (`is None`: the setter is always None, each field set by __set: same, slower)
            return found.__set__ if type(found) is _MEMBER else None
    return None


def _eq_source(names: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    mine = "".join(f"self.{name}," for name in names)
    theirs = "".join(f"other.{name}," for name in names)
    return ("def __eq__(self, other):\n"
            "    if other.__class__ is self.__class__:\n"
            f"        return ({mine})==({theirs})\n"
            "    return NotImplemented\n"), {}


def _hash_source(names: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    return "def __hash__(self):\n" f"    return hash(({''.join(f'self.{name},' for name in names)}))\n", {}


# ------------------------------------------------------------------------------- shared methods


_repr_running: set[tuple[int, int]] = set()  # (object, thread) whose repr is being made: a cycle shows "..."


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        key = (id(self), _thread.get_ident())
        if key in _repr_running:
            return "..."
        _repr_running.add(key)
        try:
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
            return f"{self.__class__.__qualname__}({inner})"
        finally:
            _repr_running.discard(key)

    return __repr__


def _frozen_guards(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise _frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _frozen_error(message: str) -> Exception:
    from dataclasses import FrozenInstanceError  # start-up: the standard library's error, only when raised

    return FrozenInstanceError(message)


def _getstate_of(names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    return __getstate__


def _setstate_of(names: tuple[str, ...]) -> Callable[[Any, list[Any]], None]:
    def __setstate__(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)  # the frozen guard does not apply to unpickling

    return __setstate__


class _Standard:
    """``__dataclass_fields__`` or ``__dataclass_params__``, made the first time they are read: those of a
    standard dataclass of the same fields, which ``dataclasses.replace``, ``fields``, ``astuple`` read."""

    def __init__(self, cls: type, name: str, frozen: bool) -> None:
        self.cls, self.name, self.frozen = cls, name, frozen

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        import dataclasses  # start-up: the standard library's tools only when something uses them

        cls = self.cls
        namespace: dict[str, Any] = {"__annotations__": {}}
        for each in getattr(cls, _RECORD):
            namespace["__annotations__"][each.name] = each.type
            options: dict[str, Any] = {"repr": each.repr, "hash": each.hash, "compare": each.compare}
            if each.default is not _MISSING:
                options["default"] = each.default
            if each.default_factory is not _MISSING:
                options["default_factory"] = each.default_factory
            namespace[each.name] = dataclasses.field(**options)
        standard = dataclasses.dataclass(frozen=self.frozen)(type(cls.__name__, (), namespace))
        type.__setattr__(cls, "__dataclass_fields__", standard.__dataclass_fields__)
        type.__setattr__(cls, "__dataclass_params__", standard.__dataclass_params__)
        return getattr(cls, self.name)


if TYPE_CHECKING:  # type checkers read them as the standard library's, whose meaning they have
    from dataclasses import dataclass, field, replace  # noqa: F401 (what the modules import, for type checkers)
