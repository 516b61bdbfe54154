"""Catalogue argument conditions (`match`, `unless`) evaluated on a call's runtime arguments.

The analyzer matches literals in source; here the same patterns are applied to the values:
`"<int>"` an int, `"<none>"` the argument is absent or None, otherwise an fnmatch glob on the
string (str values as they are, other values by `str()`, so `torch.device("cuda:1")` matches "cuda*").
"""
from __future__ import annotations


TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any, Sequence


_MISSING = object()


def _value(slots: Sequence[str], args: tuple, kwargs: dict) -> Any:
    for slot in slots:
        if slot.isdigit():
            i = int(slot)
            if i < len(args):
                return args[i]
        elif slot in kwargs:
            return kwargs[slot]
    return _MISSING


def _holds(pattern: str, value: Any) -> bool:
    if pattern == "<none>":
        return value is _MISSING or value is None
    if value is _MISSING:
        return False
    if pattern == "<int>":
        return isinstance(value, int) and not isinstance(value, bool)
    import fnmatch  # here, not at the top: it imports re, and most programs never get here

    text = value if isinstance(value, str) else str(value)
    return fnmatch.fnmatchcase(text, pattern)


def applies(match: Sequence, unless: Sequence, args: tuple, kwargs: dict) -> bool:
    """All `match` conditions hold and no `unless` condition holds."""
    for slots, pattern in match:
        if not _holds(pattern, _value(slots, args, kwargs)):
            return False
    for slots, pattern in unless:
        if _holds(pattern, _value(slots, args, kwargs)):
            return False
    return True


def short_call(name: str, args: tuple, kwargs: dict) -> str:
    """`torch.cuda.set_device(1)`: plain literals only, never the repr of an arbitrary object
    (a tensor's repr may synchronize the device)."""
    def lit(v: Any) -> str:
        if v is None or isinstance(v, (bool, int, float)):
            return repr(v)
        if isinstance(v, str):
            return repr(v if len(v) <= 40 else v[:37] + "...")
        return "…"

    parts = [lit(a) for a in args[:3]] + [f"{k}={lit(v)}" for k, v in list(kwargs.items())[:3]]
    return f"{name}({', '.join(parts)})"


def env_applies(entry: dict) -> bool:
    """The entry's environment conditions hold now: no `unless_env` variable matches its pattern and
    every `when_env` one does (a missing variable matches nothing, not even "*")."""
    import os

    for var, pattern in entry.get("unless_env", ()):
        if var in os.environ and _holds(pattern, os.environ[var]):
            return False
    for var, pattern in entry.get("when_env", ()):
        if var not in os.environ or not _holds(pattern, os.environ[var]):
            return False
    return True
