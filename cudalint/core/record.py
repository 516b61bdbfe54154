"""Frozen value classes for what every run builds, made without the dataclasses module.

A run the cache answers whole (cudalint.engine.indexed.reused_run) builds objects of eleven small
classes: its options, settings, files, findings. As dataclasses they cost it a third of its
instructions (callgrind, lightning, Python 3.11: 75 M of 211 M): `dataclasses` imports `inspect`
(with ast, dis and tokenize), and it compiles source for each method of each class. `record` gives
a class the methods `@dataclass(frozen=True)` would (`__init__` taking the fields in order or by
name, `__repr__`, `__eq__`, `__hash__`, and the four orderings with `order=True`), read from its
annotations, with no code compiled. The analysis's classes (cudalint.core.ir), made once a run
needs them, stay dataclasses. tests/test_record.py holds both kinds side by side.

What it leaves out, because these classes need none of it: `field()` (a default is a plain class
attribute and must be immutable), `__post_init__`, `InitVar`, `ClassVar`, slots, inheritance
between records. `replace` and `fields` stand for dataclasses' own.
"""
from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    T = TypeVar("T")

_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """An attempt to set or delete a field of a record (dataclasses.FrozenInstanceError's role)."""


def record(cls: "type[T] | None" = None, *, order: bool = False, not_compared: tuple[str, ...] = ()) -> Any:
    """`@record` or `@record(order=True, not_compared=("cell",))`: `cls` as a frozen value class.
    `not_compared`: fields left out of equality, hashing and ordering (`field(compare=False)`)."""

    def make(cls: type) -> type:
        return _make(cls, order, not_compared)

    return make if cls is None else make(cls)


def fields(obj: Any) -> tuple[str, ...]:
    """The field names of a record class or object, in order."""
    return getattr(obj, _FIELDS)


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record `obj` with `changes` (dataclasses.replace)."""
    values = {name: getattr(obj, name) for name in fields(obj)}
    values.update(changes)
    return type(obj)(**values)


def _make(cls: type, order: bool, not_compared: tuple[str, ...]) -> type:
    names = tuple(getattr(cls, "__annotations__", {}))  # (3.14 makes it on first use: PEP 649)
    unknown = [n for n in not_compared if n not in names]
    if unknown:
        raise TypeError(f"{cls.__name__}: not fields: {', '.join(unknown)}")
    missing = object()
    defaults = tuple(cls.__dict__.get(name, missing) for name in names)
    first_default = next((i for i, d in enumerate(defaults) if d is not missing), len(names))
    if any(d is missing for d in defaults[first_default:]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with a default")
    compared = tuple(n for n in names if n not in not_compared)
    known = frozenset(names)

    count = len(names)
    # given the first n fields by position, the rest take their defaults: these
    rests = {n: tuple(zip(names[n:], defaults[n:])) for n in range(first_default, count + 1)}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        rest = rests.get(len(args)) if not kwargs else None
        if rest is not None:
            # by position, with defaults after: how the analysis makes its steps, thousands a run
            store = self.__dict__
            store.update(zip(names, args))
            if rest:
                store.update(rest)
            return
        if len(args) > count:
            raise TypeError(f"{cls.__name__}() takes {count} arguments, {len(args)} given")
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in known:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
            values[name] = value
        store = self.__dict__
        for name, default in zip(names, defaults):
            value = values.get(name, default)
            if value is missing:
                raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
            store[name] = value

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({inner})"

    # the compared values as a tuple (attrgetter of several names makes one, at C speed)
    if len(compared) > 1:
        key = attrgetter(*compared)
    elif compared:
        get = attrgetter(compared[0])
        key = lambda self: (get(self),)  # noqa: E731
    else:
        key = lambda self: ()  # noqa: E731

    def __eq__(self: Any, other: Any) -> Any:
        return key(self) == key(other) if other.__class__ is self.__class__ else NotImplemented

    def __hash__(self: Any) -> int:
        return hash(key(self))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    methods: dict[str, Callable[..., Any]] = {
        "__init__": __init__, "__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__,
        "__setattr__": __setattr__, "__delattr__": __delattr__,
    }
    if order:
        for name, test in (("__lt__", tuple.__lt__), ("__le__", tuple.__le__), ("__gt__", tuple.__gt__), ("__ge__", tuple.__ge__)):
            methods[name] = _ordering(test, key)
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    setattr(cls, _FIELDS, names)
    cls.__match_args__ = names  # type: ignore[attr-defined]
    return cls


def _ordering(test: Callable[[tuple, tuple], bool], key: Callable[[Any], tuple]) -> Callable[[Any, Any], Any]:
    def compare(self: Any, other: Any) -> Any:
        return test(key(self), key(other)) if other.__class__ is self.__class__ else NotImplemented

    return compare
