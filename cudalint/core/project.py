"""The linted project: which module a dotted name or an import refers to.

Resolution follows what Python would do when the program runs: a script's own directory comes
first on sys.path (`import utils` next to `train.py`), then packages found by walking up the
`__init__.py` files.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from cudalint.core.ir import Function, ModuleIR, iter_events


@dataclass
class Project:
    modules: list[ModuleIR]
    by_name: dict[str, list[ModuleIR]] = field(default_factory=dict)
    by_path: dict[str, ModuleIR] = field(default_factory=dict)
    _resolved: dict = field(default_factory=dict, repr=False)  # (importer's path, name) -> module
    _bindings: dict = field(default_factory=dict, repr=False)  # module path -> its reexports as a dict
    _folders: dict = field(default_factory=dict, repr=False)  # module path -> its folder
    _in_folder: dict = field(default_factory=dict, repr=False)  # (folder, name) -> module
    _symbols: dict = field(default_factory=dict, repr=False)  # (importer's path, symbol) -> resolve_symbol's answer
    _functions: dict = field(default_factory=dict, repr=False)  # (module path, qualname) -> function's answer
    _stem_set: Optional[frozenset] = field(default=None, repr=False)  # (`_stems`)
    _above: dict = field(default_factory=dict, repr=False)  # (folder, a/b) -> the module a/b in the nearest folder above it that is on sys.path

    def __post_init__(self) -> None:
        for mod in self.modules:
            self.by_path[_norm(mod.path)] = mod
            if mod.module:
                self.by_name.setdefault(mod.module, []).append(mod)

    def resolve_module(self, name: str, importer: ModuleIR) -> Optional[ModuleIR]:
        key = (importer.path, name)
        if key in self._resolved:
            return self._resolved[key]
        base = self._folders.get(importer.path)
        if base is None:
            base = self._folders[importer.path] = os.path.dirname(_norm(importer.path))
        # (the answer depends on the importer's folder only: its modules share it, and on vllm
        # 320,000 questions asked per importer were 40,000 per folder)
        found = self._in_folder.get((base, name), self)
        if found is self:
            rel = name.replace(".", "/")
            found = self._at(base, rel)
            if found is None:
                mods = self.by_name.get(name)
                found = mods[0] if mods else None
            if found is None and rel in self._stems():
                found = self._from_ancestor(base, rel)
            self._in_folder[(base, name)] = found
        self._resolved[key] = found
        return found  # type: ignore[return-value]

    def _from_ancestor(self, base: str, rel: str) -> Optional[ModuleIR]:
        """A folder without `__init__.py` above the importer (a namespace package, PEP 420:
        `from core.llm import get_llm` in routers/chat.py, run from the project root that holds
        core/ and routers/): the nearest ancestor folder that has it. Only a folder that is no
        package itself can be on sys.path: inside a package, `import bitsandbytes` never means the
        sibling subpackage diffusers/quantizers/bitsandbytes/ (no implicit relative imports)."""
        if not base:
            return None
        key = (base, rel)
        if key in self._above:
            return self._above[key]
        parent = os.path.dirname(base)
        if parent == base:
            found = None  # the root ("/"): nothing above it
        elif (f"{parent}/__init__.py" if parent else "__init__.py") in self.by_path:
            found = self._from_ancestor(parent, rel)
        else:
            found = self._at(parent, rel)
            if found is None:
                found = self._from_ancestor(parent, rel)
        # (remembered per folder: a project's folders share their ancestors; on lightning 1,801
        # searches walked 12,968 folders)
        self._above[key] = found
        return found

    def _stems(self) -> frozenset:
        """Every a/b that names a module of the project from some folder (a/b.py, a/b/__init__.py, at
        any depth): an import named otherwise (torch, typing: most of them) is in no folder above
        any importer, and is not searched for."""
        if self._stem_set is None:
            stems: set[str] = set()
            for path in self.by_path:
                stem = path[: -len("/__init__.py")] if path.endswith("/__init__.py") else path[:-3] if path.endswith(".py") else ""
                parts = stem.split("/")
                stems.update("/".join(parts[i:]) for i in range(len(parts)))
            self._stem_set = frozenset(stems)
        return self._stem_set

    def _at(self, base: str, rel: str) -> Optional[ModuleIR]:
        """The module `rel` (a/b) in the folder `base`: a/b.py, else the package a/b/."""
        prefix = f"{base}/{rel}" if base else rel
        return self.by_path.get(f"{prefix}.py") or self.by_path.get(f"{prefix}/__init__.py")

    def resolve_symbol(self, symbol: str, importer: ModuleIR) -> Optional[tuple[ModuleIR, str]]:
        """A call symbol to (module, qualname) of a project function or class."""
        if symbol.startswith(":"):
            return importer, symbol[1:]
        # (asked again at every walk of the event that names it: on vllm 330,000 times)
        key = (importer.path, symbol)
        hit = self._symbols.get(key, self)
        if hit is not self:
            return hit  # type: ignore[return-value]
        found = None
        parts = symbol.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = self.resolve_module(".".join(parts[:cut]), importer)
            if mod is not None:
                found = mod, ".".join(parts[cut:])
                break
        self._symbols[key] = found
        return found

    def function(self, mod: ModuleIR, qualname: str, seen: Optional[set] = None) -> Optional[tuple[ModuleIR, Function]]:
        """Find `qualname` in `mod`: a function, a method (through base classes), or a class's __init__."""
        if seen is not None:  # (a search under way: the answer may depend on where it came from)
            return self._function(mod, qualname, seen)
        key = (mod.path, qualname)
        hit = self._functions.get(key, self)
        if hit is self:
            hit = self._functions[key] = self._function(mod, qualname, None)
        return hit  # type: ignore[return-value]

    def _function(self, mod: ModuleIR, qualname: str, seen: Optional[set]) -> Optional[tuple[ModuleIR, Function]]:
        if qualname in mod.functions:
            return mod, mod.functions[qualname]
        if qualname in mod.classes:
            return self.function(mod, f"{qualname}.__init__", seen)
        if mod.reexports:
            found = self._reexported(mod, qualname, seen)
            if found is not None:
                return found
        cls, _, method = qualname.rpartition(".")
        if cls and cls in mod.classes and method:
            seen = seen or set()
            if (mod.path, cls) in seen:
                return None
            seen.add((mod.path, cls))
            for base in mod.classes[cls].bases:
                target = self.resolve_symbol(base, mod) if not base.startswith(":") else (mod, base[1:])
                if target is None:
                    continue
                found = self.function(target[0], f"{target[1]}.{method}", seen)
                if found is not None:
                    return found
        return None

    def _reexported(self, mod: ModuleIR, qualname: str, seen: Optional[set]) -> Optional[tuple[ModuleIR, Function]]:
        """`qualname` bound in `mod` by an import (`from .real import init` in a package's
        `__init__.py`, a shim module's `from real import init as start`): where it really is."""
        head, dot, rest = qualname.partition(".")
        bound = self._bindings.get(mod.path)
        if bound is None:
            bound = self._bindings[mod.path] = dict(mod.reexports)  # once per module, not per lookup
        target = bound.get(head)
        if target is None:
            return None
        seen = seen if seen is not None else set()
        if (mod.path, qualname) in seen:
            return None  # re-exports in a cycle name nothing
        seen.add((mod.path, qualname))
        found = self.resolve_symbol(target + dot + rest, mod)
        if found is None or found[0] is mod:
            return None
        return self.function(found[0], found[1], seen)

    def importers(self) -> dict[str, list[tuple[ModuleIR, int]]]:
        """Which modules import each module (by path), with the importing line; for CUD003."""
        from cudalint.core.ir import Event

        out: dict[str, list[tuple[ModuleIR, int]]] = {}
        normed: dict[str, str] = {}
        for mod in self.modules:
            for ev in iter_events(mod.top):
                if isinstance(ev, Event) and ev.kind == "import":
                    for name in ev.data:
                        target = self.resolve_module(name, mod)
                        if target is not None and target is not mod:
                            path = normed.get(target.path) or normed.setdefault(target.path, _norm(target.path))
                            out.setdefault(path, []).append((mod, ev.loc[0]))
        return out


def _norm(path: str) -> str:
    import os

    return os.path.normpath(path)
