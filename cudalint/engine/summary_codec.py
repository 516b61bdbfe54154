"""A cache entry's summary (or the CUD900 finding of a file that has none) to bytes and back.

The form is pickle's (protocol 5). The IR's classes pickle as calls of themselves with their field
values (cudalint.core.ir._pickled_as_calls), and pickle's memo writes a value that one summary
holds many times (the interned names, the shared positions and texts of cudalint.summary.summarize,
a label carried by many events) once, where the JSON form (cudalint.engine.serialize) wrote every
copy and rebuilt each object in Python. vllm 0.33.0's 3,231 summaries (`python
benchmarks/cache_codec.py --corpus DIR`): read back in 0.98 s instead of 4.83, written in 1.08
instead of 2.06, 72 MB of entries instead of 188; the objects held once read are about as big (303
MB against 320). A run after an edit reads every summary back: vllm's went from 8.7 s to 4.5 s, its
peak from 421 MB to 351 (`benchmarks/bench.py`, "one file edited").

Reading builds only the IR's classes and the findings' (`_Reader.find_class`): a pickle that names
anything else (`os.system`, `builtins.eval`, a class of another module) is refused whole, and so is
one that pickle cannot read; `loads` raises ValueError for both, which cudalint.core.cache_files
counts a miss. The entry's signature is checked before (a planted entry never gets here); the
allowlist keeps an entry signed with a stolen key to the harm the JSON form allowed: wrong data,
never code run, since those classes' constructors only store their fields. The classes and the
field types are the JSON form's (cudalint.engine.serialize.known_classes, has_field_types): what
comes back must be a finding, or a summary whose own fields have their types and whose functions
and classes are of theirs (`_whole`); the JSON form checked the fields of every object, which is
most of what made it slow to read.
"""
from __future__ import annotations

import io
from typing import Any

from cudalint.engine import serialize

try:  # pickle's C half, which `pickle` itself re-exports: 0.5 ms to import where `pickle` takes 1.9, a
    # share of a run in which one file was touched, which reads only that file's summary before
    import _pickle as pickle
except ImportError:  # (a Python without the accelerator)
    import pickle  # type: ignore[no-redef]

_ALLOWED: dict[tuple[str, str], type] = {}


def _allowed() -> dict[tuple[str, str], type]:
    if not _ALLOWED:
        _ALLOWED.update(((cls.__module__, cls.__qualname__), cls) for cls in serialize.known_classes())
    return _ALLOWED


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        cls = _allowed().get((module, name))
        if cls is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not a class of a summary")
        return cls


def dumps(value: Any) -> bytes:
    """`value` as bytes; RecursionError for an IR nested deeper than the stack allows (the caller
    skips the entry: cudalint.engine.cache)."""
    try:
        return pickle.dumps(value, protocol=5)
    except pickle.PicklingError as exc:
        raise TypeError(str(exc)) from None


def loads(payload: bytes) -> Any:
    """What `dumps` wrote; ValueError for anything else, whatever pickle made of it."""
    try:
        value = _Reader(io.BytesIO(payload)).load()
    except Exception as exc:  # (bytes from outside: every way pickle can fail is a refusal)
        raise ValueError(f"not a summary entry: {type(exc).__name__}: {exc}") from None
    if not _whole(value):
        raise ValueError(f"not a summary entry: {type(value).__name__} of the wrong shape")
    return value


def _whole(value: Any) -> bool:
    from cudalint.core.findings import Finding
    from cudalint.core.ir import ClassInfo, Function, ModuleIR

    kind = type(value)
    if kind not in (Finding, ModuleIR) or not serialize.has_field_types(value):
        return False
    return kind is Finding or (
        all(type(f) is Function for f in value.functions.values()) and all(type(c) is ClassInfo for c in value.classes.values())
    )
