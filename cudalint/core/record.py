"""Frozen value classes for what every run builds, made without the dataclasses module.

A run the cache answers whole (cudalint.engine.indexed.reused_run) builds objects of eleven small
classes: its options, settings, files, findings. As dataclasses they cost it a third of its
instructions (callgrind, lightning, Python 3.11: 75 M of 211 M): `dataclasses` imports `inspect`
(with ast, dis and tokenize), and it compiles source for each method of each class. `record` gives
a class the methods `@dataclass(frozen=True)` would (`__init__` taking the fields in order or by
name, `__repr__`, `__eq__`, `__hash__`, and the four orderings with `order=True`), read from its
annotations, with no code compiled (but a slotted class's `__init__`). tests/test_record.py holds
both kinds side by side.

`slots=True` makes the class anew with `__slots__` (the IR, which a run makes by the million: no
`__dict__` per object) and gives it a compiled `__init__` and a `__reduce__` that pickles an object
as a call of its class with its values. `eq=False` leaves equality and hashing to the class (its
own methods, or identity), and a class that defines `__eq__` keeps it, as with dataclasses. A
default made anew for each object is `factory(dict)` (`field(default_factory=dict)`).

What it leaves out, because these classes need none of it: `__post_init__`, `InitVar`,
`ClassVar`, mutable records, inheritance between records. `replace` and `fields` stand for
dataclasses' own.
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


class factory:  # noqa: N801 (it reads as a default: `functions: dict = factory(dict)`)
    """A field's default made anew for each object (dataclasses' `field(default_factory=...)`)."""

    __slots__ = ("make",)

    def __init__(self, make: "Callable[[], Any]") -> None:
        self.make = make


def record(
    cls: "type[T] | None" = None, *, order: bool = False, not_compared: tuple[str, ...] = (), slots: bool = False, eq: bool = True
) -> Any:
    """`@record` or `@record(order=True, not_compared=("cell",))`: `cls` as a frozen value class.
    `not_compared`: fields left out of equality, hashing and ordering (`field(compare=False)`).
    `slots`: the class made anew with `__slots__`; `eq=False`: no `__eq__`/`__hash__` made."""

    def make(cls: type) -> type:
        return _make(cls, order, not_compared, slots, eq)

    return make if cls is None else make(cls)


def is_record(obj: Any) -> bool:
    """Whether `obj` is a record class or object (dataclasses.is_dataclass's role)."""
    return hasattr(obj, _FIELDS)


def fields(obj: Any) -> tuple[str, ...]:
    """The field names of a record class or object, in order."""
    return getattr(obj, _FIELDS)


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record `obj` with `changes` (dataclasses.replace)."""
    values = {name: getattr(obj, name) for name in fields(obj)}
    values.update(changes)
    return type(obj)(**values)


def _make(cls: type, order: bool, not_compared: tuple[str, ...], slots: bool = False, eq: bool = True) -> type:
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
    if slots:
        cls = _slotted(cls, names)
    init = _slotted_init(cls, names, defaults, missing) if slots else _generic_init(cls, names, defaults, missing, first_default)

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

    methods: dict[str, Callable[..., Any]] = {"__init__": init, "__repr__": __repr__, "__setattr__": __setattr__, "__delattr__": __delattr__}
    if eq and "__eq__" not in cls.__dict__:
        methods.update(__eq__=__eq__, __hash__=__hash__)
    if slots:
        methods["__reduce__"] = _reduce_to_call(names)
    if order:
        for name, test in (("__lt__", tuple.__lt__), ("__le__", tuple.__le__), ("__gt__", tuple.__gt__), ("__ge__", tuple.__ge__)):
            methods[name] = _ordering(test, key)
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    setattr(cls, _FIELDS, names)
    cls.__match_args__ = names  # type: ignore[attr-defined]
    return cls


def _generic_init(cls: type, names: tuple[str, ...], defaults: tuple, missing: object, first_default: int) -> "Callable[..., None]":
    """An unslotted record's `__init__`: it fills the object's `__dict__` (no code compiled)."""
    known = frozenset(names)
    count = len(names)
    # given the first n fields by position, the rest take their defaults: these, as (the fixed
    # ones, the ones made anew for each object)
    rests = {
        n: (
            tuple((name, d) for name, d in zip(names[n:], defaults[n:]) if type(d) is not factory),
            tuple((name, d.make) for name, d in zip(names[n:], defaults[n:]) if type(d) is factory),
        )
        for n in range(first_default, count + 1)
    }

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        rest = rests.get(len(args)) if not kwargs else None
        if rest is not None:
            # by position, with defaults after: how the analysis makes its steps, thousands a run
            store = self.__dict__
            store.update(zip(names, args))
            fixed, fresh = rest
            if fixed:
                store.update(fixed)
            for name, make in fresh:
                store[name] = make()
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
            store[name] = value.make() if value is default and type(value) is factory else value

    return __init__


def _slotted(cls: type, names: tuple[str, ...]) -> type:
    """`cls` made again with a slot per field (as dataclasses' `slots=True` does): a class's slots
    are fixed when it is made. The defaults live in `__init__`, not as class attributes."""
    space = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
    space["__slots__"] = names
    made = type(cls)(cls.__name__, cls.__bases__, space)
    made.__qualname__ = cls.__qualname__
    return made


def _slotted_init(cls: type, names: tuple[str, ...], defaults: tuple, missing: object) -> Callable[..., None]:
    """A slotted record's `__init__`, compiled: the IR makes millions of objects on a big project,
    and the generic `__init__`'s loop over the fields cost twice a compiled one's time. One short
    function per class (dataclasses compiles six)."""
    space: dict[str, Any] = {"_set": object.__setattr__, "_MISSING": missing}
    params, body = [], []
    for i, (name, default) in enumerate(zip(names, defaults)):
        if default is missing:
            params.append(name)
        elif type(default) is factory:
            space[f"_make_{i}"] = default.make
            params.append(f"{name}=_MISSING")
            name = f"_make_{i}() if {name} is _MISSING else {name}"  # (the value set below)
        else:
            space[f"_default_{i}"] = default
            params.append(f"{name}=_default_{i}")
        body.append(f" _set(self, {names[i]!r}, {name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or [" pass"]), space)  # noqa: S102 (our own field names)
    return space["__init__"]


def _reduce_to_call(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """Pickled as a call of the class with the field values (read by one attrgetter): a frozen,
    slotted object cannot be given its state afterwards, and the call is the cheapest way back
    (the workers hand every summary to the parent pickled)."""
    get = attrgetter(*names) if names else (lambda self: ())
    if len(names) == 1:
        return lambda self: (type(self), (get(self),))
    return lambda self: (type(self), get(self))


def _ordering(test: Callable[[tuple, tuple], bool], key: Callable[[Any], tuple]) -> Callable[[Any, Any], Any]:
    def compare(self: Any, other: Any) -> Any:
        return test(key(self), key(other)) if other.__class__ is self.__class__ else NotImplemented

    return compare
