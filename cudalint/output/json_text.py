"""JSON text as `json.dump(value, out, indent=2)` writes it, byte for byte, at twice its speed.

With `indent` set, the standard library leaves its C encoder aside and runs a Python generator per
value: on the generated import cycles of benchmarks/adversarial.py (4,000 modules, 743 findings
whose witnesses hold 45,000 steps, 6.3 MB of JSON) that was 0.13 s of a 4 s run, and the witnesses,
so the text, grow faster than the project. Here one recursive function appends pieces to a list;
strings still go through the C encoder's `encode_basestring_ascii`. Anything but dict (with str
keys), list, tuple, str, int, float, bool and None (a subclass too) is handed to `json.dump`, which
then writes or rejects the whole value as it always did.
"""
from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _text

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, TextIO

_INFINITY = float("inf")


def _number(v: float) -> str:
    # (json's own spelling of the values JSON lacks: allow_nan is on by default)
    if v != v:
        return "NaN"
    if v == _INFINITY:
        return "Infinity"
    if v == -_INFINITY:
        return "-Infinity"
    return float.__repr__(v)


def _emit(v: Any, nl: str, parts: list) -> None:
    t = type(v)
    if t is str:
        parts.append(_text(v))
    elif t is dict:
        if not v:
            parts.append("{}")
            return
        inner = nl + "  "
        sep = "{" + inner
        for k, x in v.items():
            if type(k) is not str:
                raise TypeError(k)  # (json turns an int key into a string: left to it)
            parts.append(sep)
            parts.append(_text(k))
            parts.append(": ")
            _emit(x, inner, parts)
            sep = "," + inner
        parts.append(nl + "}")
    elif t is list or t is tuple:
        if not v:
            parts.append("[]")
            return
        inner = nl + "  "
        sep = "[" + inner
        for x in v:
            parts.append(sep)
            _emit(x, inner, parts)
            sep = "," + inner
        parts.append(nl + "]")
    elif v is None:
        parts.append("null")
    elif v is True:
        parts.append("true")
    elif v is False:
        parts.append("false")
    elif t is int:
        parts.append(int.__repr__(v))
    elif t is float:
        parts.append(_number(v))
    else:
        raise TypeError(t)


def dumps(value: Any) -> str:
    """`json.dumps(value, indent=2)`."""
    parts: list = []
    try:
        _emit(value, "\n", parts)
    except (TypeError, RecursionError):
        return json.dumps(value, indent=2)  # (its own answer: the same text, or its own error)
    return "".join(parts)


def dump(value: Any, out: TextIO) -> None:
    """`json.dump(value, out, indent=2)`; nothing is written when the value cannot be encoded."""
    out.write(dumps(value))
