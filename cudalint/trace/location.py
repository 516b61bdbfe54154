"""Which frame is "user code": the innermost frame whose file is not in the standard library,
site-packages or cudalint itself. That is the line the user can change, so every event names it.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../cudalint


def _library_prefixes() -> tuple[str, ...]:
    # the standard library is where `os` lives (lib-dynload is inside it); installed packages are
    # recognised by their site-packages/dist-packages directory below. (sysconfig would say the
    # same at a start-up cost the traced program would pay.)
    prefixes = {_PKG_DIR + os.sep, os.path.dirname(os.path.realpath(os.__file__)) + os.sep}
    return tuple(sorted(prefixes))


_PREFIXES = _library_prefixes()
_IS_USER: dict[str, bool] = {}  # filename -> is user code; one realpath per file, ever
_REAL: dict[str, str] = {}


def _classify(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False  # <frozen importlib._bootstrap>, <string>: not a line the user can open
    real = os.path.realpath(filename)
    _REAL[filename] = real
    if real.startswith(_PREFIXES):
        return False
    parts = real.split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


def is_user_file(filename: str) -> bool:
    r = _IS_USER.get(filename)
    if r is None:
        r = _IS_USER[filename] = _classify(filename)
    return r


def _site(frame: Any) -> dict[str, Any]:
    fn = frame.f_code.co_filename
    return {"path": _REAL.get(fn) or os.path.realpath(fn), "line": frame.f_lineno, "func": frame.f_code.co_name}


_OS_FILE = os.path.realpath(os.__file__)


def _environ_caller(frame: Any) -> Any:
    """The frame that wrote through `os.environ`, above os.py's `_Environ.__setitem__` /
    `__delitem__` (a program may have replaced os.putenv with its own function: the write is
    still the line that assigned to os.environ, not the replacement's body)."""
    f = frame
    while f is not None:
        code = f.f_code
        if code.co_name in ("__setitem__", "__delitem__") and code.co_filename in (os.__file__, _OS_FILE, "<frozen os>"):
            return f.f_back
        f = f.f_back
    return frame


def sites(depth: int = 1, environ: bool = False) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(user site, immediate caller site) for the frame `depth` levels above the caller.

    The caller differs from the user site when a library made the call on the user's behalf
    (CUDA initialized inside `import transformers`): the report names both. `environ`: the
    event is an environment write; see `_environ_caller`."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return None, None
    if environ:
        frame = _environ_caller(frame)
    # stacked cudalint wrappers sit between the hooked call and its caller: skip them
    while frame is not None and frame.f_code.co_filename.startswith(_PKG_DIR + os.sep):
        frame = frame.f_back
    if frame is None:
        return None, None
    caller = frame
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            user = _site(frame)
            return user, (user if frame is caller else _site_lib(caller))
        frame = frame.f_back
    return None, _site_lib(caller)


def _site_lib(frame: Any) -> dict[str, Any]:
    fn = frame.f_code.co_filename
    return {"path": fn, "line": frame.f_lineno, "func": frame.f_code.co_name}


def user_stack(depth: int = 1, limit: int = 24) -> list[list[Any]]:
    """[path, line] of every user frame above the caller, innermost first: which lines of the
    program were on the way to an event (the witness steps of a finding are checked against it)."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return []
    out: list[list[Any]] = []
    while frame is not None and len(out) < limit:
        fn = frame.f_code.co_filename
        if is_user_file(fn):
            out.append([_REAL.get(fn) or os.path.realpath(fn), frame.f_lineno])
        frame = frame.f_back
    return out
