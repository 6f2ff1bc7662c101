"""``model.records``' ``dataclass`` behaves as the standard library's for the options tokenbox uses: each class is
made twice from the same body, once by each decorator, and the standard library's is the expected behaviour."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys

import pytest
from tokenbox.core.model import records


def _kinds(decorate, make_field):
    """The shapes of the chain's classes (session.Section, common.Block, claude_code.Thread, errors.BadInput…)
    made by ``decorate`` (``dataclass``) and ``make_field`` (``field``)."""

    @decorate(frozen=True, slots=True)
    class Part:
        """A frozen slotted record (``Section``)."""

        id: str
        kind: str
        priority: int = 0
        strategy: tuple[str, ...] = ()
        text: str | None = None
        meta: dict = make_field(default_factory=dict, compare=False, hash=False)
        history: tuple = make_field(default=(), compare=False, hash=False)
        line: int = 0

        @property
        def critical(self) -> bool:
            return self.priority == 0

    @decorate(slots=True)
    class Piece:
        """A mutable slotted record (``Block``)."""

        type: str
        text: str = ""
        meta: dict = make_field(default_factory=dict)

    @decorate
    class Holder:
        """A mutable record with a hidden field and ``__post_init__`` (``Thread``)."""

        name: str
        items: list = make_field(default_factory=list)
        cache: object = make_field(default=None, compare=False, repr=False)
        count: int = 0

        def __post_init__(self) -> None:
            self.count = len(self.items)

    @decorate(frozen=True)
    class Flat:
        """A frozen record with a dict (``Headline``, ``Window``)."""

        tokens: int
        label: str = "x"
        cost: float | None = None

    class Failure(Exception):
        """A base that is no record."""

    @decorate
    class Problem(Failure):
        """A record exception (``BadInput``)."""

        problem: str
        remedy: str = ""

        def __post_init__(self) -> None:
            super().__init__(self.problem)

    class Plain(Problem):
        """A subclass that adds nothing (``SessionError``)."""

    @decorate
    class Waiting(Plain):
        """A record subclass with a field of its own (``NotYetComplete``)."""

        awaiting: str = "more"

    return {"Part": Part, "Piece": Piece, "Holder": Holder, "Flat": Flat, "Problem": Problem, "Plain": Plain,
            "Waiting": Waiting}


STANDARD = _kinds(dataclasses.dataclass, dataclasses.field)
RECORDS = _kinds(records.dataclass, records.field)
for _kinds_made in (STANDARD, RECORDS):  # picklable by name: each set under a module attribute of its own
    for _name, _cls in _kinds_made.items():
        _cls.__qualname__ = f"{'STANDARD' if _kinds_made is STANDARD else 'RECORDS'}_{_name}"
        setattr(sys.modules[__name__], _cls.__qualname__, _cls)

CASES = [
    ("Part", ("a", "text"), {}),
    ("Part", ("a", "text"), {"priority": 3, "strategy": ("drop",), "meta": {"k": 1}, "history": (1, 2), "line": 9}),
    ("Piece", ("text",), {"text": "hello"}),
    ("Holder", ("main",), {"items": [1, 2, 3], "cache": object()}),
    ("Flat", (120,), {"cost": 0.5}),
    ("Problem", ("broken",), {"remedy": "fix it"}),
    ("Plain", ("broken",), {}),
    ("Waiting", ("broken", "r"), {"awaiting": "the end"}),
]


def _pair(name, args, kwargs):
    return STANDARD[name](*args, **kwargs), RECORDS[name](*args, **kwargs)


def _state(obj) -> tuple:
    """Everything the two classes' instances should agree on, besides the class's own name."""
    cls = type(obj)
    names = [f.name for f in dataclasses.fields(obj)]
    hashable = cls.__hash__ is not None
    text = repr(obj).split("(", 1)[1]
    return (tuple(getattr(obj, n) if n != "cache" else None for n in names) if "cache" in names
            else tuple(getattr(obj, n) for n in names), hashable, hash(obj) if hashable else None,
            text if "cache" not in names else None, cls.__match_args__, hasattr(obj, "__dict__"),
            obj.args if isinstance(obj, BaseException) else None, names)


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES)
def test_a_record_is_made_and_compared_as_a_standard_dataclass(name, args, kwargs):
    standard, record = _pair(name, args, kwargs)
    assert _state(record) == _state(standard)
    assert repr(record).split("(", 1)[1] == repr(standard).split("(", 1)[1]
    assert (record == RECORDS[name](*args, **kwargs)) == (standard == STANDARD[name](*args, **kwargs))
    other_args = ("other", *args[1:])
    assert (record == RECORDS[name](*other_args, **kwargs)) == (standard == STANDARD[name](*other_args, **kwargs))
    assert record.__eq__(standard) is NotImplemented and standard.__eq__(record) is NotImplemented
    assert dataclasses.is_dataclass(record) and dataclasses.is_dataclass(RECORDS[name])


def test_defaults_factories_and_post_init():
    for kinds in (STANDARD, RECORDS):
        first, second = kinds["Part"]("a", "t"), kinds["Part"]("a", "t")
        assert first.meta == {} and first.meta is not second.meta  # a new dict each
        assert kinds["Holder"]("h", [1, 2]).count == 2
        assert kinds["Flat"].label == "x"  # a plain class's default stays a class attribute
    with pytest.raises(TypeError):
        RECORDS["Part"]("only one")
    with pytest.raises(TypeError):
        STANDARD["Part"]("only one")


@pytest.mark.parametrize(("name", "args", "kwargs"), [case for case in CASES if case[0] in ("Part", "Flat")])
def test_a_frozen_record_refuses_assignment_as_a_standard_one(name, args, kwargs):
    for obj in _pair(name, args, kwargs):
        with pytest.raises(dataclasses.FrozenInstanceError, match=r"cannot assign to field '(kind|tokens)'"):
            setattr(obj, "kind" if name == "Part" else "tokens", 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(obj, "line" if name == "Part" else "label")


@pytest.mark.parametrize(("name", "args", "kwargs"), [case for case in CASES if case[0] != "Holder"])
def test_a_record_is_pickled_and_copied(name, args, kwargs):
    _, record = _pair(name, args, kwargs)
    for again in (pickle.loads(pickle.dumps(record)), copy.copy(record), copy.deepcopy(record)):
        assert type(again) is type(record)
        assert _state(again) == _state(record)


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES)
def test_replace_and_the_standard_tools(name, args, kwargs):
    standard, record = _pair(name, args, kwargs)
    first = dataclasses.fields(record)[0].name
    for replaced, expected in ((records.replace(record, **{first: "new"}), dataclasses.replace(standard, **{first: "new"})),
                               (dataclasses.replace(record, **{first: "new"}), dataclasses.replace(standard, **{first: "new"}))):
        assert type(replaced) is type(record)
        assert _state(replaced) == _state(expected)
    if name != "Holder":  # its hidden field holds an object() of each instance's own
        assert dataclasses.astuple(record) == dataclasses.astuple(standard)
        assert dataclasses.asdict(record) == dataclasses.asdict(standard)
    assert records.replace(standard, **{first: "new"}) == dataclasses.replace(standard, **{first: "new"})


def test_a_record_class_is_refused_where_a_standard_one_is():
    for decorate, make_field in ((dataclasses.dataclass, dataclasses.field), (records.dataclass, records.field)):
        with pytest.raises(ValueError, match="mutable default"):
            decorate(type("Bad", (), {"__annotations__": {"items": "list"}, "items": []}))
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
            decorate(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 0}))
        with pytest.raises(ValueError, match="cannot specify both default and default_factory"):
            make_field(default=1, default_factory=list)


def test_a_record_that_holds_itself_has_the_standard_repr():
    shown = []
    for kinds in (STANDARD, RECORDS):
        holder = kinds["Holder"]("loop")
        holder.items.append(holder)
        shown.append(repr(holder).split("(", 1)[1])
    assert shown[0] == shown[1] == "name='loop', items=[...], count=0)"
