"""Wrap the catalogue's entry points as their modules are imported.

A `sys.meta_path` finder answers only for the handful of module names that a catalogue entry can
live in (every dotted prefix of the entry's name); for any other import it returns None after one
dict lookup, so untouched code is not slowed. For a watched module it takes the spec the other
finders would return and chains its loader: once the module body has run, the pending entries of
that module are resolved through `__dict__` (never `getattr`, which could run a module
`__getattr__` and import more) and wrapped in place. Modules imported before the hooks were
installed are handled at installation.

Initializing entries (`init = driver|context`) record their first matching call per process;
`touches_context` methods and `llama_context` constructors go to `concurrency.py`.
"""
from __future__ import annotations

import sys
import threading
from sys import _getframe

from cudalint.trace import children, concurrency
from cudalint.trace.args import applies, env_applies, short_call
from cudalint.trace.location import sites, user_stack
from cudalint.trace.wrap import wraps
from cudalint.trace.state import TraceState

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any, Callable

    # handler(owner, attr, obj) for one catalogue name; resolved at most once
    Handler = Callable[[Any, str, Any], None]


class Installer:
    def __init__(self, state: TraceState) -> None:
        self.state = state
        self.pending: dict[str, list[tuple[str, tuple[str, ...], list[Handler]]]] = {}
        self.resolved: set[str] = set()
        self.handlers: dict[str, list[Handler]] = {}
        self.on_import_start: dict[str, list[Callable[[], None]]] = {}
        self.lock = threading.RLock()
        # the same object under two catalogue names (llama_cpp.Llama, llama_cpp.llama.Llama) is
        # wrapped once per role
        self.wrapped: set[tuple[int, str]] = set()

    # -- registration -------------------------------------------------------------------------
    def add(self, name: str, handler: Handler, role: str) -> None:
        def once(owner: Any, attr: str, obj: Any) -> None:
            key = (id(getattr(obj, "__func__", obj)), role)
            if key in self.wrapped:
                return
            self.wrapped.add(key)
            handler(owner, attr, obj)

        self.handlers.setdefault(name, []).append(once)

    def add_import_start(self, module: str, callback: Callable[[], None]) -> None:
        self.on_import_start.setdefault(module, []).append(callback)

    def finish(self) -> "Finder":
        for name, handlers in self.handlers.items():
            parts = name.split(".")
            for i in range(1, len(parts)):
                module, rest = ".".join(parts[:i]), tuple(parts[i:])
                self.pending.setdefault(module, []).append((name, rest, handlers))
        finder = Finder(self, frozenset(self.pending) | frozenset(self.on_import_start))
        sys.meta_path.insert(0, finder)
        for module in list(self.pending):
            if module in sys.modules:
                self.loaded(module, sys.modules[module])
        return finder

    # -- resolution ---------------------------------------------------------------------------
    def loaded(self, module_name: str, module: Any) -> None:
        with self.lock:
            entries = self.pending.pop(module_name, ())
            for name, rest, handlers in entries:
                if name in self.resolved:
                    continue
                found = _resolve(module, rest)
                if found is None:
                    continue  # maybe in a submodule not imported yet: a longer prefix is pending
                self.resolved.add(name)
                owner, attr, obj = found
                for handler in handlers:
                    try:
                        handler(owner, attr, obj)
                    except Exception as exc:  # never break the import of the user's library
                        self.state.emit("hook_failed", api=name, error=f"{type(exc).__name__}: {exc}")


def _lookup(obj: Any, attr: str) -> Any:
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if attr in klass.__dict__:
                return klass.__dict__[attr]
        return None
    d = getattr(obj, "__dict__", None)
    return d.get(attr) if isinstance(d, dict) else None


def _resolve(module: Any, rest: tuple[str, ...]) -> tuple[Any, str, Any] | None:
    owner = module
    for part in rest[:-1]:
        owner = _lookup(owner, part)
        if owner is None:
            return None
    obj = _lookup(owner, rest[-1])
    if obj is None:
        return None
    return owner, rest[-1], obj


class _ChainedLoader:
    """Runs the real loader between the installer's callbacks. The real loader is put back on the
    module and its spec before the module body runs, so code that inspects `__loader__` sees the
    usual one. `before` runs here rather than in find_spec because `importlib.util.find_spec`
    (availability checks) asks the finders too, without importing anything."""

    def __init__(self, loader: Any, before: Callable[[], None], after: Callable[[Any], None]) -> None:
        self._loader = loader
        self._before = before
        self._after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        try:
            module.__loader__ = self._loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self._loader
        except (AttributeError, TypeError):
            pass
        self._before()
        self._loader.exec_module(module)
        self._after(sys.modules.get(module.__name__, module))


class Finder:
    def __init__(self, installer: Installer, watched: frozenset[str]) -> None:
        self.installer = installer
        self.watched = watched
        self._busy = threading.local()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.watched or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.on = False
        if spec is None:
            return None
        loader = spec.loader
        if loader is not None and hasattr(loader, "exec_module"):
            inst = self.installer

            def before() -> None:
                for callback in inst.on_import_start.get(name, ()):
                    callback()

            spec.loader = _ChainedLoader(loader, before, lambda m: inst.loaded(name, m))
        return spec


# -- wrapping -----------------------------------------------------------------------------------
def _replace(owner: Any, attr: str, old: Any, new: Any) -> None:
    setattr(owner, attr, new)
    # `from .llama_cpp import *` re-exports: patch the defining module's binding of the same object
    home = sys.modules.get(getattr(old, "__module__", None) or "")
    if home is not None and home is not owner and home.__dict__.get(attr) is old:
        setattr(home, attr, new)


def init_handler(state: TraceState, entry: dict[str, Any]) -> Handler:
    """Record the first call (matching the entry's argument conditions) of an initializing API."""
    name = entry["name"]
    match = [(tuple(s), p) for s, p in entry.get("match", ())]
    unless = [(tuple(s), p) for s, p in entry.get("unless", ())]
    env_conds = bool(entry.get("unless_env") or entry.get("when_env"))

    def record(args: tuple, kwargs: dict) -> None:
        user, caller = sites(0)
        state.done.add(name)
        state.record_init({
            "api": name,
            "init": entry.get("init"),
            "library": entry.get("library", ""),
            "note": entry.get("note", ""),
            "call": short_call(name, args, kwargs),
            "site": user,
            "caller": caller,
            "stack": user_stack(1),
        })

    def wrap(fn: Callable[..., Any], skip_self: bool) -> Callable[..., Any]:
        @wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            local = state.local
            depth = getattr(local, "depth", 0)
            if depth:
                return fn(*args, **kwargs)
            # the first call per calling line is recorded: a finding's witness names a line, and
            # "that line never ran" must not be said of a line that ran second
            f = _getframe(1)
            key = (name, f.f_code, f.f_lineno)
            if key in state.seen_sites:
                return fn(*args, **kwargs)  # the fast path
            a = args[1:] if skip_self else args
            if (match or unless) and not applies(match, unless, a, kwargs):
                return fn(*args, **kwargs)
            if env_conds and not env_applies(entry):
                return fn(*args, **kwargs)
            state.seen_sites.add(key)
            record(a, kwargs)  # before the call: a crash inside it still leaves the evidence
            local.depth = 1
            try:
                return fn(*args, **kwargs)
            finally:
                local.depth = 0

        return wrapper

    def handler(owner: Any, attr: str, obj: Any) -> None:
        if isinstance(obj, type):
            # a constructor: patch __init__ (replacing the class would break isinstance)
            init = _lookup(obj, "__init__")
            if init is object.__init__ or not callable(init):
                raise TypeError(f"{name} has no Python __init__ to wrap")
            setattr(obj, "__init__", wrap(init, skip_self=True))
        elif isinstance(owner, type):
            if isinstance(obj, (staticmethod, classmethod)):
                setattr(owner, attr, type(obj)(wrap(obj.__func__, skip_self=isinstance(obj, classmethod))))
            else:
                setattr(owner, attr, wrap(obj, skip_self=True))
        elif callable(obj):
            _replace(owner, attr, obj, wrap(obj, skip_self=False))
        else:
            raise TypeError(f"{name} is not callable")

    return handler


def import_init_callback(state: TraceState, entry: dict[str, Any]) -> Callable[[], None]:
    """`kind = "import"` (pycuda.autoinit): the import statement itself initializes."""
    name = entry["name"]

    def callback() -> None:
        if name in state.done or not env_applies(entry):
            return
        user, caller = sites(0)
        state.done.add(name)
        state.record_init({
            "api": name, "init": entry.get("init"), "library": entry.get("library", ""),
            "note": entry.get("note", ""), "call": f"import {name}", "site": user, "caller": caller,
            "stack": user_stack(1),
        })

    return callback


def import_event_callback(state: TraceState, module: str) -> Callable[[], None]:
    """A module whose import freezes an environment variable (`frozen_by = "import:torch"`)."""
    seen = []

    def callback() -> None:
        if seen:
            return
        seen.append(1)
        user, caller = sites(0)
        state.emit("import", module=module, site=user, caller=caller, stack=user_stack(1))

    return callback


def install(state: TraceState, plan: dict[str, Any]) -> Installer:
    inst = Installer(state)
    for entry in plan.get("init", ()):
        if entry["kind"] == "import":
            inst.add_import_start(entry["name"], import_init_callback(state, entry))
        else:
            role = "init:" + repr(sorted((k, repr(v)) for k, v in entry.items() if k != "name"))
            inst.add(entry["name"], init_handler(state, entry), role)
    for name in plan.get("touch", ()):
        inst.add(name, concurrency.method_handler(state, name), "touch")
    for name in plan.get("construct", ()):
        inst.add(name, concurrency.constructor_handler(state, name), "construct")
    # processes this one starts carry the tracer (children.py)
    inst.add("subprocess.Popen.__init__", children.popen_handler(state), "spawn")
    inst.add("multiprocessing.util.spawnv_passfds", children.spawnv_handler(state), "spawn")
    for module in plan.get("frozen_imports", ()):
        if module in sys.modules:
            state.emit("import", module=module, site=None, caller=None, preloaded=True)
        else:
            inst.add_import_start(module, import_event_callback(state, module))
    inst.finish()
    return inst
