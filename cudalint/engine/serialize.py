"""IR and findings to plain JSON and back: the CUD900 findings hashed into a run's key, and the
encoding by which two summaries are compared field for field (cudalint.engine.run_keys.same_summary).
The whole-run findings the cache keeps are `--format json`'s rows (cudalint.core.findings.Finding.
from_json: a run the cache answers whole imports neither this module nor typing). Summaries themselves are cached pickled
(cudalint.engine.summary_codec: read back five times faster).

Generic over the records of `cudalint.core.ir` (and Finding/Step), so new IR node types need no code
here. Only these known classes are ever built when decoding: a cache file planted in a repository can
at worst produce wrong data, never run code (and a planted file fails its signature first:
cudalint.core.cache_files).

The form is positional: an object is `{"ClassName": [its field values, in field order]}`, a dict
`{"": [[key, value], ...]}` (keys need not be strings), a tuple an array. The writer is json's C
encoder, which calls back into Python once per IR object (`_default`), never per scalar or tuple;
field names are not repeated in every object (when every summary was cached in this form,
transformers 5.23.0's were written in 2.1 s instead of 5.6 for the form before, `{"_": "Event",
"kind": ..., ...}`; `python benchmarks/cache_codec.py --corpus DIR` still measures this form beside
the pickled one).

The IR holds dicts only in fields annotated `dict` (ModuleIR.functions/classes), which `_default`
writes in the dict form. A dict anywhere else would reach json's own encoder as a JSON object and
come back as a refused entry (a miss): `_built` accepts only objects of the two forms above, with the
field count and the field types the class declares.
"""
from __future__ import annotations

import json
import operator
import sys
import typing
from typing import Any, Callable, Iterable

from cudalint.core import record
from cudalint.core.findings import Finding, Step  # (records: cudalint.core.record)

_SCALARS = (str, int, float, bool, type(None))
_intern = sys.intern
# the known classes, by name and by class: Finding and Step, and the IR's records once a value
# needs them (`_with_ir`): a run the cache answers whole decodes findings only, and importing the IR
# and reading its annotations was a tenth of such a run
_CLASSES: dict[str, type] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
_IR: list[bool] = []  # [True] once the IR's classes are known


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    get = operator.attrgetter(*names)
    return (lambda obj: (get(obj),)) if len(names) == 1 else get


def _dict_fields(cls: type) -> tuple[int, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(i for i, name in enumerate(_FIELDS[cls]) if (typing.get_origin(hints.get(name)) or hints.get(name)) is dict)


# class -> (its name, a function giving its field values in order, the places of its dict fields)
_OUT: dict[type, tuple[str, Callable[[Any], tuple], tuple[int, ...]]] = {}


def _expected(cls: type) -> tuple[tuple[int, type], ...]:
    """(place, type) of the fields whose annotation names one type (str, int, bool, a tuple, a
    dict); the rest (unions, `object`) are not checked."""
    hints = typing.get_type_hints(cls)
    out = []
    for i, name in enumerate(_FIELDS[cls]):
        hint = hints.get(name)
        origin = typing.get_origin(hint) or hint
        if origin in (str, int, bool, tuple, dict):
            out.append((i, origin))
    return tuple(out)


# class name -> (the class, its field count, its fields' expected types); a decoded entry whose
# fields have other types is damaged: a miss (cudalint.engine.cache), never a crash later
_IN: dict[str, tuple[type, int, tuple[tuple[int, type], ...]]] = {}


def _register(classes: Iterable[type]) -> None:
    for cls in classes:
        name = cls.__name__
        _CLASSES[name] = cls
        _FIELDS[cls] = record.fields(cls)
        _OUT[cls] = (name, _getter(_FIELDS[cls]), _dict_fields(cls))
        _IN[name] = (cls, len(_FIELDS[cls]), _expected(cls))


def _with_ir() -> bool:
    """Make the IR's classes known; False when they were already (what was asked for is unknown)."""
    if _IR:
        return False
    from cudalint.core import ir

    _register(cls for cls in (getattr(ir, name) for name in dir(ir)) if isinstance(cls, type) and record.is_record(cls) and cls.__module__ == ir.__name__)
    _IR.append(True)
    return True


_register((Finding, Step))


def known_classes() -> tuple[type, ...]:
    """Every class the cache may hold: Finding, Step and the IR's records (also the allowlist
    of the pickled summaries: cudalint.engine.summary_codec)."""
    _with_ir()
    return tuple(_CLASSES.values())


def has_field_types(obj: Any) -> bool:
    """Whether `obj`, of a known class, holds in each field whose annotation names one type
    (`_expected`) a value of that type: the check `_built` makes of what it decodes, for objects
    read another way."""
    made = _IN.get(type(obj).__name__)
    if made is None and _with_ir():
        made = _IN.get(type(obj).__name__)
    if made is None or made[0] is not type(obj):
        return False
    values = _OUT[made[0]][1](obj)
    return all(type(values[i]) is want for i, want in made[2])


def _default(obj: Any) -> dict:
    """json's encoder calls this for what it cannot write itself: an IR object."""
    out = _OUT.get(type(obj))
    if out is None and _with_ir():
        out = _OUT.get(type(obj))
    if out is None:
        raise TypeError(f"cannot encode {type(obj).__name__}")
    name, values, dicts = out
    fields = values(obj)
    if dicts:
        fields = list(fields)
        for i in dicts:
            fields[i] = {"": [[k, v] for k, v in fields[i].items()]}
    return {name: fields}


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_default, check_circular=False)


def dumps(value: Any) -> bytes:
    """`value` as the cache stores it (ASCII JSON: non-ASCII text and lone surrogates escaped).
    Raises TypeError for what is not IR, RecursionError for IR nested too deeply."""
    return _ENCODER.encode(value).encode("ascii")


def encode(value: Any) -> Any:
    """`value` as plain JSON data (lists, dicts, scalars), the same data `dumps` writes."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is tuple or kind is list:
        return [v if type(v) in _SCALARS else encode(v) for v in value]
    out = _OUT.get(kind)
    if out is None and kind is not dict and _with_ir():
        out = _OUT.get(kind)
    if out is not None:  # (a dict field becomes the dict form below)
        return {out[0]: [v if type(v) in _SCALARS else encode(v) for v in out[1](value)]}
    if kind is dict:
        return {"": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (str, int, float)):  # (subclasses: an enum's value, say)
        return value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot encode {kind.__name__}")


def loads(text: str | bytes) -> Any:
    """What `dumps` wrote, as objects again, in one pass: json's parser hands each object to
    `_built` as it closes, so only arrays are walked again (to make them tuples).

    Strings are interned: json makes a new object for every string value, and a summary repeats
    the same few ("param", "ret", "call", a module's qualified names) thousands of times (vllm's
    summaries: 4.7 million string objects, 529,000 distinct values, 331 MB)."""
    return json.loads(text, object_hook=_built)


def _tuple(items: list) -> tuple:
    return tuple([_tuple(v) if type(v) is list else _intern(v) if type(v) is str else v for v in items])


def _value(v: Any) -> Any:
    kind = type(v)
    if kind is str:
        return _intern(v)
    return _tuple(v) if kind is list else v


def _built(obj: dict) -> Any:
    if len(obj) != 1:
        raise ValueError("not an object of the cache's form")
    ((name, fields),) = obj.items()
    if type(fields) is not list:
        raise ValueError(f"{name!r}: not a list of fields")
    if name == "":
        return {_value(k): _value(v) for k, v in fields}
    made = _IN.get(name)
    if made is None and _with_ir():
        made = _IN.get(name)
    if made is None:
        raise ValueError(f"unknown type {name!r}")  # only the known classes are ever built
    cls, count, shape = made
    if len(fields) != count:
        raise ValueError(f"{name}: {len(fields)} fields where {count} belong")
    values = [_intern(v) if type(v) is str else _tuple(v) if type(v) is list else v for v in fields]
    for i, want in shape:
        if type(values[i]) is not want:
            raise ValueError(f"{name}: field {i} is {type(values[i]).__name__} where {want.__name__} belongs")
    return cls(*values)
