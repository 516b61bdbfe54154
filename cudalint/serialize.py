"""IR and findings to plain JSON and back.

Generic over the dataclasses of `cudalint.ir` (and Finding/Step), so new IR node types need no code
here. Only these known classes are ever built when decoding: a cache file planted in a repository can
at worst produce wrong data, never run code.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from cudalint import ir
from cudalint.findings import Finding, Step

_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (getattr(ir, name) for name in dir(ir))
    if isinstance(cls, type) and dataclasses.is_dataclass(cls)
}
_CLASSES.update({"Finding": Finding, "Step": Step})


def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"_": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = encode(getattr(value, f.name))
        return out
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"_": "dict", "items": [[encode(k), encode(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot encode {type(value).__name__}")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(decode(v) for v in value)
    if isinstance(value, dict):
        kind = value.get("_")
        if kind == "dict":
            return {decode(k): decode(v) for k, v in value["items"]}
        cls = _CLASSES.get(kind)  # type: ignore[arg-type]
        if cls is None:
            raise ValueError(f"unknown type {kind!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: decode(v) for k, v in value.items() if k in names})
    return value
