"""How the thread analysis resolves a name to a shared object, a singleton or a lock
(mixed into `ThreadAnalysis`).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Iterable, Optional

from cudalint.analysis.thread_model import Obj
from cudalint.core.catalogue import Api
from cudalint.core.findings import Step
from cudalint.core.ir import Function, ModuleIR

if TYPE_CHECKING:
    from cudalint.analysis.thread_model import Key


_LOCKISH = re.compile(r"lock|mutex|sem", re.IGNORECASE)


class _Resolve:
    """How the thread analysis resolves a name to a shared object, a singleton or a lock
    (mixed into `ThreadAnalysis`)."""

    def function(self, symbol: str, mod: ModuleIR) -> Optional[tuple[ModuleIR, Function]]:
        target = self.project.resolve_symbol(symbol, mod)
        if target is None:
            return None
        found = self.project.function(*target)
        if found is None and "." in target[1]:
            # `create(path).generate(p)`, `session = Session.create(path); session.generate(p)`: a
            # method of the class a project factory returns (the summarizer types a name by the
            # factory when the class is in another module)
            factory, _, method = target[1].rpartition(".")
            made = self.project.function(target[0], factory)
            if made is not None and not made[1].qualname.endswith(".__init__"):
                for origin, rmod, _fn, _line in self.returns.get((made[0].path, made[1].qualname), ()):
                    cls = self.project.resolve_symbol(origin[2:], rmod) if origin.startswith("c:") else None
                    if cls is not None and cls[1] in cls[0].classes:
                        return self.project.function(cls[0], f"{cls[1]}.{method}")
        return found

    def canon(self, ref: str, mod: ModuleIR, fn: str) -> Optional[Key]:
        kind, _, rest = ref.partition(":")
        if kind == "v":
            scope, _, name = rest.partition(":")
            return ("g", mod.path, name) if scope == "" else ("l", mod.path, scope, name)
        if kind == "a":
            cls, _, attr = rest.rpartition(".")
            if "." not in cls:
                return ("a", mod.path, cls, attr)
            target = self.project.resolve_symbol(cls, mod)
            return ("a", target[0].path, target[1], attr) if target else ("a", "?", cls, attr)
        if kind == "m":
            target = self.project.resolve_symbol(rest, mod)
            if target is None or "." in target[1]:
                return None
            return ("g", target[0].path, target[1])
        if kind == "c":
            return ("c", mod.path, rest)
        if kind == "e":
            inner = self.canon(rest, mod, fn)  # an element of a container (cudalint.summary.container_refs)
            return inner + ("elem",) if inner is not None and inner[0] != "c" else None
        return None

    def binds_of(self, key: Key) -> list:
        found = self.binds.get(key, [])
        if found or key[0] != "a":
            return found
        # an attribute set in a base class's __init__
        path, cls, attr = key[1], key[2], key[3]
        mod = self.project.by_path.get(path) if path != "?" else None
        seen = set()
        while mod is not None and cls in mod.classes and (path, cls) not in seen:
            seen.add((path, cls))
            for base in mod.classes[cls].bases:
                target = (mod, base[1:]) if base.startswith(":") else self.project.resolve_symbol(base, mod)
                if target is None:
                    continue
                found = self.binds.get(("a", target[0].path, target[1], attr), [])
                if found:
                    return found
                mod, cls, path = target[0], target[1], target[0].path
                break
            else:
                break
        return []

    def catalogued_base(self, mod: ModuleIR, cls: str, field: str, depth: int = 0) -> Optional[Api]:
        """The catalogue entry with `field` that a project class derives from, through project
        base classes (`class LlamaCPP(Llama)`, `class Bot(commands.Bot)`), or None."""
        info = mod.classes.get(cls)
        if info is None or depth > 8:
            return None
        for base in info.bases:
            target = (mod, base[1:]) if base.startswith(":") else self.project.resolve_symbol(base, mod)
            if target is not None and target[1] in target[0].classes:
                found = self.catalogued_base(target[0], target[1], field, depth + 1)
                if found is not None:
                    return found
                continue
            name = base[1:] if base.startswith(":") else base
            api = next((a for a in self.cat.calls_named(name) if a.get(field)), None)
            if api is not None:
                return api
        return None

    def handler_class(self, symbol: str, mod: ModuleIR, apis) -> Optional[tuple[ModuleIR, str, list]]:
        """The work is a project class whose methods the catalogue names (`thread_methods`): (its
        module, its name, the keys of those methods, its own and its project bases')."""
        patterns = next((str(a.get("thread_methods")).split() for a in apis if a.get("thread_methods")), None)
        target = self.project.resolve_symbol(symbol, mod) if patterns and symbol else None
        if target is None or target[1] not in target[0].classes:
            return None
        keys, todo, seen = [], [target], set()
        while todo:
            cmod, cls = todo.pop()
            if (cmod.path, cls) in seen or cls not in cmod.classes:
                continue
            seen.add((cmod.path, cls))
            for qual in cmod.functions:
                owner, _, method = qual.rpartition(".")
                if owner == cls and any(fnmatch.fnmatchcase(method, p) for p in patterns):
                    keys.append((cmod.path, qual))
            for base in cmod.classes[cls].bases:
                found = (cmod, base[1:]) if base.startswith(":") else self.project.resolve_symbol(base, cmod)
                if found is not None:
                    todo.append(found)
        return target[0], target[1], keys

    # ---------- what a ref holds ----------------------------------------------------------------
    def obj(self, key: Optional[Key], depth: int = 0) -> Optional[Obj]:
        if key is None or depth > 8:
            return None
        cache_key = key
        if cache_key in self._obj_cache:
            return self._obj_cache[cache_key]
        self._obj_cache[cache_key] = None  # cycles
        result = self._obj(key, depth)
        self._obj_cache[cache_key] = result
        return result

    def _obj(self, key: Key, depth: int) -> Optional[Obj]:
        found = self._held(key, depth)
        if found is not None and key[0] == "g" and found.identity[0] == "l":
            # a module global is one object for every thread, whoever made what it holds
            # (`def init_llm(m): global coach; coach = m`: the caller's local becomes everyone's)
            return replace(found, identity=key)
        return found

    def _held(self, key: Key, depth: int) -> Optional[Obj]:
        if key[-1] == "elem":
            whole = self.obj(key[:-1], depth + 1)
            return replace(whole, identity=key) if whole is not None and whole.identity[0] != "fresh" else None
        if key[0] == "c":
            mod = self.project.by_path.get(key[1])
            return self.call_result(key[2], mod, store=None, depth=depth) if mod else None
        for origin, mod, fn, line, _ in self.binds_of(key):
            found = self.from_origin(origin, mod, fn, line, key, depth)
            if found is not None:
                return found
        return None

    def from_origin(self, origin: str, mod: ModuleIR, fn: str, line: int, store: Optional[Key], depth: int) -> Optional[Obj]:
        kind, _, rest = origin.partition(":")
        if kind == "new":
            api = next((a for a in self.cat.calls_named(rest) if a.get("llama_context")), None)
            if api is None:
                return None
            cls = api.get("returns") or api.name
            short = cls.rsplit(".", 1)[-1]
            return Obj(identity=self.escaped(store) if store else ("fresh", mod.path, line), cls=cls, created=Step(mod.path, line, f"the {short} is created here"), api=rest)
        if kind == "ref":
            return self.obj(self.canon(rest, mod, fn), depth + 1)
        if kind == "c":
            return self.call_result(rest, mod, store, depth, line)
        if kind == "each":
            # iterating a container: its elements are one known object when it repeats one; a
            # mapping filled by key (`models[k] = Llama()`, iterated by `.values()`/`.items()`) holds
            # elements as `models[k]` does (cudalint.summary.container_refs)
            key = self.canon(rest, mod, fn)
            for inner, bmod, bfn, bline, _ in self.binds_of(key) if key else ():
                if inner.startswith("ref:"):
                    found = self.from_origin(inner, bmod, bfn, bline, None, depth + 1)
                    if found is not None:
                        return found
            return self.obj(key + ("elem",), depth + 1) if key is not None and key[0] != "c" else None
        return None

    def call_result(self, symbol: str, mod: ModuleIR, store: Optional[Key], depth: int, line: int = 0) -> Optional[Obj]:
        made = self.project.resolve_symbol(symbol, mod)
        if made is not None and made[1] in made[0].classes:
            # a project subclass of a llama class (`class LlamaCPP(Llama)`): its instances own a
            # context, and the inherited methods touch it
            api = self.catalogued_base(made[0], made[1], "llama_context")
            if api is not None:
                cls = api.get("returns") or api.name
                return Obj(identity=self.escaped(store) if store else ("fresh", mod.path, line), cls=cls, created=Step(mod.path, line, f"the {made[1]} (a {cls.rsplit('.', 1)[-1]}) is created here"), api=api.name)
        target = self.function(symbol, mod)
        if target is None:
            # an imported object (`from models import llm`) is not a call result
            return None
        tmod, tfn = target
        singleton = self.singleton(tfn)
        for origin, rmod, rfn, line in self.returns.get((tmod.path, tfn.qualname), []):
            found = self.from_origin(origin, rmod, rfn, line, None, depth + 1)
            if found is None:
                continue
            if singleton:
                return replace(found, identity=("r", tmod.path, tfn.qualname))
            if found.identity[0] == "fresh":
                return replace(found, identity=store or found.identity)
            return found
        return None

    def escaped(self, key: Key) -> Key:
        """A local that leaves its function inside what the function returns (`llm = Llama();
        return Session(model=llm)`, `return cls(model=Llama(...))`) is the object the callers keep:
        a module global or an attribute that stores the factory's result, when one does."""
        if key[0] != "l":
            return key
        fn, name = (key[1], key[2]), key[3]
        ref = f"v:{key[2]}:{name}"
        wrapped = set()
        for site in self.sites.get(fn, ()):
            ev = site.event
            if ev.kind == "call_refs" and any(r == ref for _slot, r in ev.data[1]):
                wrapped.add("c:" + ev.data[0])
        returned = {origin for origin, *_ in self.returns.get(fn, ())}
        local = f"ref:v:{key[2]}:"
        bound = set()  # `s = Session(llm); return s`: what the returned locals were made from
        for origin in returned:
            if origin.startswith(local):
                bound |= {o for o, *_ in self.binds.get(("l", key[1], key[2], origin[len(local):]), ())}
        if f"ref:{ref}" not in returned and not (wrapped & (returned | bound)):
            return key
        for store in self._result_stores().get(fn, ()):
            if store[0] in ("g", "a"):
                return store
        return key

    def _result_stores(self) -> dict:
        """Function -> the refs that keep its result (`session = create(...)`, `self.model = X.create()`)."""
        if self._stores is None:
            self._stores = {}
            for key, binds in self.binds.items():
                for origin, mod, _fn, _line, _loop in binds:
                    if origin.startswith("c:"):
                        target = self.function(origin[2:], mod)
                        if target is not None:
                            self._stores.setdefault((target[0].path, target[1].qualname), []).append(key)
        return self._stores

    def singleton(self, fn: Optional[Function]) -> Optional[str]:
        if fn is None:
            return None
        for dec in fn.decorators:
            for api in self.cat.calls_named(dec) if dec else ():
                if api.get("singleton"):
                    return api.get("singleton")
        return None

    def lock(self, ref: str, mod: ModuleIR, fn: str) -> Optional[Key]:
        """The identity of a lock that serializes, or None."""
        if ref.startswith("new:"):
            return None  # `with threading.Lock():` makes a new lock every time
        key = self.canon(ref, mod, fn)
        if key is None:
            return None
        seen = set()
        while key is not None and key not in seen:
            seen.add(key)
            binds = self.binds_of(key)
            if not binds:
                # a lock we cannot see being made (a parameter, another library): trust its name
                return key if _LOCKISH.search(str(key[-1])) else None
            origin, bmod, bfn = binds[0][0], binds[0][1], binds[0][2]
            kind, _, rest = origin.partition(":")
            if kind == "lock":
                return key if rest.endswith(":1") else None
            if kind == "ref":
                key = self.canon(rest, bmod, bfn)
                continue
            if kind == "c":
                return key if _LOCKISH.search(str(key[-1])) else None
            return None
        return None

    def effective_locks(self, held: Iterable[str], mod: ModuleIR, fn: str) -> frozenset:
        out = set()
        for ref in held:
            ident = self.lock(ref, mod, fn)
            if ident is None:
                continue
            if ident[0] == "l" and not (fn.startswith(ident[2] + ".") and fn != ident[2]):
                continue  # a lock made by this very call protects nothing against other calls
            out.add(ident)
        return frozenset(out)
