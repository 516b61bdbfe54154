"""Detect two threads inside the llama-context methods of one object at the same time.

Each `touches_context` method (catalogue) is wrapped; a per-instance table records which threads are
inside and from which user line they entered (the outermost entry: `__call__` -> `create_completion`
-> `eval` in one thread counts once). When a thread enters while another thread is inside, a
`concurrent` event names both threads and both call sites. It is written before the second thread
reaches llama.cpp, so it survives the GGML_ASSERT/SIGABRT that usually follows.

Generators (`generate`, `create_completion(stream=True)`) hold the context while they are iterated,
so a returned generator is wrapped and each step counts as being inside.

`llama_context` constructors: two threads constructing at once give a `concurrent_construct` event.

Two threads inside two *different* instances at once give a `concurrent_separate` event (CUD103:
separate GPU contexts decoding at the same time); whether they offload to the GPU is the static
finding's part.
"""
from __future__ import annotations

import threading
import types

from time import time as _time

from cudalint.trace.location import sites
from cudalint.trace.wrap import wraps
from cudalint.trace.state import TraceState

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any, Callable, Generator

_lock = threading.Lock()
# id(instance) -> {thread ident: [depth, method, site, thread name]}
_inside: dict[int, dict[int, list[Any]]] = {}
_reported: set[tuple[Any, ...]] = set()
_used: set[tuple[Any, ...]] = set()
_constructing: dict[int, list[Any]] = {}  # thread ident -> [depth, class, site, thread name]


def _key(site: dict[str, Any] | None) -> tuple[Any, ...]:
    return (site["path"], site["line"]) if site else ("?", 0)


def _enter(state: TraceState, obj: Any, method: str) -> None:
    tid = threading.get_ident()
    key = id(obj)
    with _lock:
        threads = _inside.setdefault(key, {})
        mine = threads.get(tid)
        if mine is not None:
            mine[0] += 1
            return
        user, _ = sites(0)
        name = threading.current_thread().name
        threads[tid] = [1, method, user, name, _time()]
        others = [v for t, v in threads.items() if t != tid]
        elsewhere = [v for k, ts in _inside.items() if k != key for t, v in ts.items() if t != tid]
    cls = type(obj).__module__ + "." + type(obj).__qualname__
    use_key = (key, tid, _key(user))
    if use_key not in _used:
        _used.add(use_key)
        state.emit("llama_use", cls=cls, instance=key, method=method, site=user)
    for depth, other_method, other_site, other_name, _t0 in others:
        # one event per pair of call sites: four pool threads on one line are one bug, not six
        pair = (key, tuple(sorted([_key(other_site), _key(user)])))
        if pair in _reported:
            continue
        _reported.add(pair)
        state.emit(
            "concurrent", cls=cls, instance=key,
            threads=[
                {"name": other_name, "method": other_method, "site": other_site},
                {"name": name, "method": method, "site": user},
            ],
        )
    for _depth, other_method, other_site, other_name, _t0 in elsewhere:
        pair = ("separate", tuple(sorted([_key(other_site), _key(user)])))
        if pair in _reported:
            continue
        _reported.add(pair)
        state.emit(
            "concurrent_separate", cls=cls,
            threads=[
                {"name": other_name, "method": other_method, "site": other_site},
                {"name": name, "method": method, "site": user},
            ],
        )


def _leave(obj: Any) -> list[Any] | None:
    """The thread's entry when this was its outermost call (the span the timeline draws)."""
    tid = threading.get_ident()
    key = id(obj)
    with _lock:
        threads = _inside.get(key)
        if not threads or tid not in threads:
            return None
        mine = threads[tid]
        mine[0] -= 1
        if mine[0] <= 0:
            del threads[tid]
            if not threads:
                del _inside[key]
            return mine
    return None


_spans = [0]
MAX_SPANS = 20000  # per process: the timeline needs the shape, not every token of a long run


def _span(state: TraceState, obj: Any, entry: list[Any] | None) -> None:
    if entry is None or _spans[0] >= MAX_SPANS:
        return
    _spans[0] += 1
    state.emit("llama_span", instance=id(obj), method=entry[1], site=entry[2], t0=round(entry[4], 6))


def _guard_generator(state: TraceState, obj: Any, method: str, gen: Generator) -> Generator:
    # the full generator protocol (llama's `generate` receives values through send())
    value: Any = None
    exc: BaseException | None = None
    while True:
        _enter(state, obj, method)
        try:
            item = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        finally:
            _leave(obj)
        try:
            value, exc = (yield item), None
        except GeneratorExit:
            gen.close()
            raise
        except BaseException as e:
            value, exc = None, e


def method_handler(state: TraceState, name: str) -> Callable[[Any, str, Any], None]:
    method = name.rsplit(".", 1)[-1]

    def handler(owner: Any, attr: str, fn: Any) -> None:
        if not isinstance(owner, type) or not isinstance(fn, types.FunctionType):
            raise TypeError(f"{name}: only plain methods of Python classes can be watched")

        @wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            _enter(state, self, method)
            try:
                result = fn(self, *args, **kwargs)
            finally:
                _span(state, self, _leave(self))
            if isinstance(result, types.GeneratorType):
                return _guard_generator(state, self, method, result)
            return result

        setattr(owner, attr, wrapper)

    return handler


def constructor_handler(state: TraceState, name: str) -> Callable[[Any, str, Any], None]:
    def handler(owner: Any, attr: str, cls: Any) -> None:
        if not isinstance(cls, type):
            return  # a factory (Llama.from_pretrained) constructs through the class's __init__
        init = cls.__init__

        @wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            tid = threading.get_ident()
            with _lock:
                mine = _constructing.get(tid)
                if mine is not None:
                    mine[0] += 1
                    others = []
                else:
                    user, _ = sites(0)
                    tname = threading.current_thread().name
                    _constructing[tid] = [1, name, user, tname]
                    others = [v for t, v in _constructing.items() if t != tid]
            for _, other_cls, other_site, other_name in others:
                pair = ("construct", tuple(sorted([_key(other_site), _key(user)])))
                if pair in _reported:
                    continue
                _reported.add(pair)
                state.emit(
                    "concurrent_construct", cls=name,
                    threads=[
                        {"name": other_name, "method": "__init__", "site": other_site},
                        {"name": tname, "method": "__init__", "site": user},
                    ],
                )
            try:
                init(self, *args, **kwargs)
            finally:
                with _lock:
                    mine = _constructing.get(tid)
                    if mine is not None:
                        mine[0] -= 1
                        if mine[0] <= 0:
                            del _constructing[tid]

        cls.__init__ = __init__

    return handler


def after_fork_in_child() -> None:
    # the other threads did not survive the fork; their "inside" marks must not either
    global _lock
    _lock = threading.Lock()
    _inside.clear()
    _constructing.clear()
