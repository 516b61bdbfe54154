"""IR and findings to plain JSON and back.

Generic over the dataclasses of `cudalint.core.ir` (and Finding/Step), so new IR node types need no code
here. Only these known classes are ever built when decoding: a cache file planted in a repository can
at worst produce wrong data, never run code.

Every summary a run writes to the cache or reads from it goes through here (torch: 2,070 summaries,
3.5 million values), so both directions avoid a call per scalar and look each class's fields up once.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import typing
from typing import Any

from cudalint.core import ir
from cudalint.core.findings import Finding, Step

_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (getattr(ir, name) for name in dir(ir))
    if isinstance(cls, type) and dataclasses.is_dataclass(cls)
}
_CLASSES.update({"Finding": Finding, "Step": Step})
_FIELDS: dict[type, tuple[str, ...]] = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES.values()}
# class name -> the class and its fields' names
_BY_NAME: dict[str, tuple[type, frozenset[str]]] = {name: (cls, frozenset(_FIELDS[cls])) for name, cls in _CLASSES.items()}
_SCALARS = (str, int, float, bool, type(None))
_intern = sys.intern


def _expected(cls: type) -> dict[str, type]:
    """Field name -> the one type its decoded value must have, for the fields whose annotation
    names one (str, int, bool, a tuple, a dict); the rest (unions, `object`) are not checked."""
    hints = typing.get_type_hints(cls)
    out: dict[str, type] = {}
    for name in _FIELDS[cls]:
        hint = hints.get(name)
        origin = typing.get_origin(hint) or hint
        if origin in (str, int, bool, tuple, dict):
            out[name] = origin  # type: ignore[assignment]
    return out


# a decoded entry whose fields have other types is damaged: a miss (cudalint.engine.cache), never a crash
# later; made on first use (a run the cache answers whole decodes only its findings)
_SHAPES: dict[str, dict[str, type]] = {}


def encode(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is tuple or kind is list:
        return [v if type(v) in _SCALARS else encode(v) for v in value]
    names = _FIELDS.get(kind)
    if names is not None:
        out = {"_": kind.__name__}
        for name in names:
            v = getattr(value, name)
            out[name] = v if type(v) in _SCALARS else encode(v)
        return out
    if kind is dict:
        return {"_": "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (str, int, float)):  # (subclasses: an enum's value, say)
        return value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot encode {kind.__name__}")


def decode(value: Any) -> Any:
    kind = type(value)
    if kind is list:
        return tuple([v if type(v) in _SCALARS else decode(v) for v in value])
    if kind is dict:
        name = value.get("_")
        if name == "dict":
            return {decode(k): decode(v) for k, v in value["items"]}
        _cls, names = _BY_NAME.get(name) or _unknown(name)
        return _make(name, {k: v if type(v) in _SCALARS else decode(v) for k, v in value.items() if k in names})
    return value


def loads(text: str) -> Any:
    """`decode(json.loads(text))` in one pass: json's parser hands each object to `_built` as it
    closes, so only arrays are walked again (to make them tuples). About a quarter faster on
    torch's cached summaries (1.1 s against 1.5 s), which a run with one file touched reads all of.

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
    name = obj.get("_")
    if name == "dict":
        return {_value(k): _value(v) for k, v in obj["items"]}
    _cls, names = _BY_NAME.get(name) or _unknown(name)
    return _make(name, {k: _value(v) for k, v in obj.items() if k in names})


def _make(name: str, fields: dict) -> Any:
    shape = _SHAPES.get(name)
    if shape is None:
        shape = _SHAPES[name] = _expected(_BY_NAME[name][0])
    for k, want in shape.items():
        if k in fields and type(fields[k]) is not want:
            raise ValueError(f"{name}.{k}: {type(fields[k]).__name__} where {want.__name__} belongs")
    return _BY_NAME[name][0](**fields)


def _unknown(name: object) -> Any:
    """Only the known classes are ever built."""
    raise ValueError(f"unknown type {name!r}")
