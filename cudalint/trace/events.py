"""The event stream: one JSON object per line, appended and flushed as it happens.

Why a raw fd with O_APPEND and one `os.write` per event: the traced program may crash, abort
(SIGABRT from llama.cpp), call `os._exit` or be killed, so nothing may sit in a Python buffer; and
after `fork` parent and child share the fd, where O_APPEND makes each line land whole at the end.
The pid is written into every event because both processes write to the same file.
O_CLOEXEC keeps the fd out of programs started with exec (subprocess), which run no hooks.
"""
from __future__ import annotations

import os
import threading
import time

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any, Iterator


_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
# our own references, taken before the program runs: a program that replaces os.write (to log, to
# capture output) must neither receive the tracer's events nor be able to loop back into the tracer
_write, _getpid, _time = os.write, os.getpid, time.time


class EventWriter:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, _FLAGS, 0o600)
        self.pid = _getpid()

    def after_fork_in_child(self) -> None:
        # the fd is inherited and still appends to the same file; only the cached pid changes
        self.pid = _getpid()

    def emit(self, kind: str, **fields: Any) -> None:
        fields["kind"] = kind
        fields["pid"] = self.pid
        fields["t"] = round(_time(), 6)
        fields.setdefault("thread", threading.current_thread().name)
        data = (_dump(fields) + "\n").encode("utf-8", "replace")
        try:
            while data:
                n = _write(self.fd, data)
                data = data[n:]
        except OSError:
            pass  # the tracer must never break the program it watches

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


try:  # the C string encoder behind `json`; the json package itself would import re and enum
    from _json import encode_basestring_ascii as _quote  # into every traced program at start-up
except ImportError:  # pragma: no cover - not CPython
    from json.encoder import py_encode_basestring_ascii as _quote


def _dump(obj: Any) -> str:
    """Compact JSON for the values events hold; anything else is written as its repr()."""
    if isinstance(obj, str):
        return _quote(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, float):
        return float.__repr__(obj) if obj == obj and obj not in (float("inf"), float("-inf")) else "null"
    if isinstance(obj, dict):
        return "{" + ",".join(_quote(str(k)) + ":" + _dump(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(_dump(v) for v in obj) + "]"
    return _quote(repr(obj))


def read_events(path: str) -> list[dict[str, Any]]:
    """Every complete line of the stream, in file order (which is the order of the writes).

    A line cut short by a kill is skipped; `seq` is the position in the file."""
    return list(_iter_events(path))


def _iter_events(path: str) -> Iterator[dict[str, Any]]:
    import json

    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return
    seq = 0
    for line in raw.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            event["seq"] = seq
            seq += 1
            yield event
