"""Run one function with room for deep recursion: a thread with a large stack and a high limit.

The summarizer, the fixer (libcst) and the serializer recurse once per nesting level of an expression; a
generated file with 1,000 nested brackets exceeds Python's default limit of 1,000 frames. Only
files that hit the limit pay for this.
"""
from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024  # reserved address space, not memory actually used
RECURSION_LIMIT = 60_000
# (`_thread`'s lock, and threading imported by the one call that starts a thread: every run the
# cache answers imports this module, none of them calls it; threading was 0.4 ms of a warm run)
_lock = _thread.allocate_lock()


def call_deep(fn: Callable[[], T]) -> T:
    import threading

    result: dict = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc

    with _lock:  # the recursion limit is per process: one deep call at a time
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            sys.setrecursionlimit(RECURSION_LIMIT)
            thread = threading.Thread(target=run, name="cudalint-deep")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(old_stack)
            sys.setrecursionlimit(old_limit)
    if "error" in result:
        raise result["error"]
    return result["value"]


def call_roomy(fn: Callable[..., T], *args: object) -> T:
    """fn(*args), again with a deep stack if the data is nested too deeply for the default one."""
    try:
        return fn(*args)
    except RecursionError:
        return call_deep(lambda: fn(*args))
