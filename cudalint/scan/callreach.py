"""Which functions a call may reach, across modules, from the scans alone (no syntax tree): the
call graph of each file's functions and classes (cudalint.scan.layout) joined through the
project's imports and star imports, with the questions cudalint.scan.select asks of it (may these
calls reach an event of a kind, may this function never return, what else must be summarized).
Every answer is memoized for the one selection it serves."""
from __future__ import annotations

import os
from typing import Hashable, Iterable, Iterator, Mapping, Optional, TypeVar

_Node = TypeVar("_Node", bound=Hashable)


class _Calls:
    """Whether calling names of other modules may reach kinds of events: the functions reached from
    each name (cudalint.scan.layout._Layout.reach), across modules, read on demand."""

    def __init__(self, index, scans, modules, kinds, importers, precise: bool):
        self.index = index
        self.scans = scans
        self.modules = modules
        self.kinds = kinds  # each file's kinds after CUD004's and the thread rules' gating
        self.importers = importers
        self.precise = precise
        self.nodes: dict[tuple[str, bytes], Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {}
        self.below: dict[Optional[frozenset], set[str]] = {}
        self.stops: dict[tuple[str, str], bool] = {}
        self.imatter: Optional[set[str]] = None
        self.resolved: dict[tuple[str, str], list[tuple[str, Optional[bytes]]]] = {}
        self.unreached: dict[Optional[frozenset], set[tuple[str, bytes]]] = {}  # nodes known not to reach a goal
        self.reached: dict[Optional[frozenset], set[tuple[str, bytes]]] = {}  # nodes known to reach one
        self.exports: dict[str, Optional[frozenset]] = {}  # cudalint.scan.callreach._Calls._exports
        self.star_sources: dict[str, tuple[dict[str, list[str]], tuple[str, ...]]] = {}  # _Calls._star_sources
        self.callee_keys: dict[tuple[Optional[frozenset], tuple[str, bytes]], tuple[tuple[str, bytes], ...]] = {}  # _Calls._callee_keys
        self.called: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, bytes], ...]] = {}  # _Calls._called

    def gated(self, path: str, kinds: Iterable[str]) -> set[str]:
        return self.kinds[path].intersection(kinds)

    def _below(self, goal: Optional[set[str]]) -> set[str]:
        """Files with such an event (None: any event, or a way to end a path) in them or below them."""
        key = frozenset(goal) if goal is not None else None
        below = self.below.get(key)
        if below is None:
            if goal is None:
                seeds = (p for p, ks in self.kinds.items() if ks or self.scans[p].may_stop)
            else:
                seeds = (p for p, ks in self.kinds.items() if goal & ks)
            below = self.below[key] = _up_closure(seeds, self.importers)
        return below

    def _matters(self, key: tuple[str, bytes], node: Optional[tuple], goal: Optional[set[str]]) -> bool:
        target = key[0]
        if node is None:
            return True
        if goal is None:
            return bool(self.gated(target, node[0])) or self.never_returns(target, key[1])
        return bool(goal & self.gated(target, node[0]))

    def never_returns(self, path: str, name: Optional[bytes]) -> bool:
        """May calling `name` of `path` (None: importing it) end every path? Across modules; a
        question already being asked (recursion) is answered yes."""
        return self._stops(path, "" if name is None else name.decode())

    def _stops(self, path: str, key: str) -> bool:
        hit = self.stops.get((path, key))
        if hit is not None:
            return hit
        scan = self.scans[path]
        if not scan.syntax_ok:
            return True
        entry = scan.stops.get(key)
        if entry is None or entry == 1:
            result = entry == 1
        else:
            self.stops[(path, key)] = True
            chains, keys = entry  # type: ignore[misc]
            below = self._below(None)
            result = any(n is not None and t in below and self.never_returns(t, n) for c in chains for t, n in self._resolve(path, c))
            result = result or any(self._stops(path, k) for k in keys)
        self.stops[(path, key)] = result
        return result

    def dependencies(self, code: set[str], top: set[str], own_top: set[str], edges: Mapping[str, set[str]]) -> set[str]:
        """What a full analysis of the relevant files uses besides them: below the `top` ones, the
        modules whose top level may establish a fact or end a path (and those on the way to them);
        the modules of the functions that `code` and `top` may call, and the top level of `own_top`,
        that may (or call one that does)."""
        scans = self.scans
        out = self._imported(top, edges)
        starts = [(p, c) for p in code | top for c in scans[p].code_targets]
        starts += [(p, c) for p in out for c in scans[p].top_targets]
        imports = {(p, m) for p in code | top for m in scans[p].func_imports}
        # CUD003's walk of a top level does not run imports, not even inside the functions it calls
        own = [(p, c) for p in own_top for c in scans[p].top_targets]
        return out | self._called_modules(starts, imports, edges) | self._called_modules(own, set(), edges, imports_run=False)

    def _import_matter(self) -> set[str]:
        if self.imatter is None:
            scans = self.scans
            on_import = {
                p for p in self._below(None) if self.gated(p, scans[p].top_kinds) or self.never_returns(p, None) or self.reaches(p, scans[p].top_targets, None)
            }
            self.imatter = _up_closure(on_import, self.importers)
        return self.imatter

    def _imported(self, start: Iterable[str], edges: Mapping[str, set[str]]) -> set[str]:
        imatter = self._import_matter()
        out: set[str] = set()
        todo = list(start)
        seen = set(todo)
        while todo:
            for t in edges.get(todo.pop(), ()):
                if t in imatter and t not in seen:
                    seen.add(t)
                    out.add(t)
                    todo.append(t)
        return out

    def _called_modules(self, starts: list[tuple[str, str]], imports: set[tuple[str, str]], edges: Mapping[str, set[str]], imports_run: bool = True) -> set[str]:
        """The modules of the functions reached from `starts` that matter: they may establish a fact
        or end a path, or call one that does (their summaries then carry it to the caller); and what
        the modules they name may import (an import inside a function runs a top level)."""
        below = self._below(None)
        imatter = self._import_matter()
        modules: set[str] = set()
        callers: dict[tuple[str, bytes], set[tuple[str, bytes]]] = {}
        selfish: dict[tuple[str, bytes], bool] = {}
        todo: list[tuple[Optional[tuple[str, bytes]], tuple[str, bytes]]] = [
            (None, (target, name)) for o, c in starts for target, name in self._resolve(o, c) if name is not None and target in below
        ]
        while todo:
            parent, key = todo.pop()
            if parent is not None:
                callers.setdefault(key, set()).add(parent)
            if key in selfish:
                continue
            target = key[0]
            node = self._node(*key)
            # a function that imports a module runs its top level
            runs = {t for m in (node[2] if node is not None and imports_run else ()) for t in self.index.targets(target, [m])} & imatter
            modules |= runs
            selfish[key] = bool(runs) or self._matters(key, node, None)
            if node is not None:
                todo.extend((key, callee) for callee in self._callee_keys(key, node))
        # a function that calls one that matters matters: up the call edges from those that do
        matters = _up_closure((k for k, v in selfish.items() if v), callers)
        for origin, name in imports:
            modules |= self.index.targets(origin, [name]) & imatter
        return {k[0] for k in matters} | modules | self._imported(modules, edges)

    def reaches(self, path: str, chains: Iterable[str], goal: Optional[set[str]]) -> bool:
        below = self._below(goal)
        key = frozenset(goal) if goal is not None else None
        unreached = self.unreached.setdefault(key, set())
        reached = self.reached.setdefault(key, set())
        seen: set[tuple[str, bytes]] = set()
        # depth first: when a node reaches the goal, so does every node on the way to it, and a
        # later question stops there (on transformers 11,458 questions followed 3 million calls)
        stack = [self._callees(path, chains, below)]
        way: list[tuple[str, bytes]] = []  # the nodes being followed: stack[i + 1] is way[i]'s callees
        while stack:
            for callee in stack[-1]:
                if not self.precise or callee in reached:
                    reached.update(way)
                    return True
                if callee in seen or callee in unreached:
                    continue
                seen.add(callee)
                node = self._node(*callee)
                if self._matters(callee, node, goal):
                    reached.add(callee)
                    reached.update(way)
                    return True
                way.append(callee)
                stack.append(iter(self._callee_keys(callee, node, key)))  # type: ignore[arg-type]
                break
            else:
                stack.pop()
                if way:
                    way.pop()
        unreached |= seen  # every node seen was followed to its end without reaching the goal
        return False

    def _callee_keys(self, key: tuple[str, bytes], node: tuple, goal: Optional[frozenset] = None) -> tuple[tuple[str, bytes], ...]:
        """The functions node `key` may call, each once, in the modules with an event of the `goal`
        kinds in or below them (`_callees`); made once per node and goal: on transformers the walks
        resolved 2.5 million call edges one by one, most of them many times over."""
        memo = (goal, key)
        hit = self.callee_keys.get(memo)
        if hit is None:
            below = self._below(goal)
            hit = self.callee_keys[memo] = tuple(c for c in self._called(key[0], node[1]) if c[0] in below)
        return hit

    def _callees(self, origin: str, chains: Iterable[str], below: set[str]) -> Iterator[tuple[str, bytes]]:
        """The functions these dotted names of `origin` may call that have something of the kind in
        or below their module (not the module itself: importing it is not a call into it)."""
        return (c for c in self._called(origin, chains) if c[0] in below)

    def _called(self, origin: str, chains: Iterable[str]) -> tuple[tuple[str, bytes], ...]:
        """Every function these dotted names of `origin` may call, each once, in order, whatever the
        goal: resolved once per list of names, then filtered per goal (resolving them per goal was
        2.8 million lookups on transformers)."""
        memo = (origin, chains if type(chains) is tuple else tuple(chains))
        hit = self.called.get(memo)
        if hit is None:
            resolve = self._resolve
            hit = self.called[memo] = tuple(dict.fromkeys(c for chain in memo[1] for c in resolve(origin, chain) if c[1] is not None))
        return hit

    def _resolve(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        key = (origin, chain)
        hit = self.resolved.get(key)
        if hit is None:
            hit = self.resolved[key] = self._resolve_uncached(origin, chain)
        return hit

    def _resolve_uncached(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        if not self.index.may_name(origin, chain):
            return []  # (most names: `torch.nn.functional`, `self.proj`)
        parts = chain.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            hit = self.index.targets(origin, [prefix])
            # the module's own name (`from adv.p36 import m43 as other` inside m43): its own function,
            # not the package's attribute: that fallback asked every module of a star-import cycle
            # for the name (4,081 nodes of one name on 4,000 generated modules)
            if hit or self.index.is_itself(origin, prefix):
                # (one attribute more: `Cls.method`, `obj.method` run that method, not all of Cls)
                name = ".".join(parts[i : i + 2]).encode() if i < len(parts) else None
                if not hit:
                    return [(origin, name)] if name is not None else []
                return [(h, name) for h in sorted(hit)]
        return []

    def _providers(self, importer: str, name: str) -> Iterable[str]:
        """The modules of `importer`'s star imports (`from module import *`) that may bring `name`.
        Only there can the name's node reach anything (a name a module neither defines nor imports
        reaches nothing of its own)."""
        by_name, anything = self._star_sources(importer)
        return (*by_name.get(name, ()), *anything)

    def _star_sources(self, importer: str) -> tuple[dict[str, list[str]], tuple[str, ...]]:
        """Which star-imported module each name may come from, and the star-imported modules that
        may bring any name (their exports are unknown). Made once per importer: asked per name and
        star module, transformers' `models/__init__` (546 star imports) cost 1.1 million questions."""
        hit = self.star_sources.get(importer)
        if hit is None:
            by_name: dict[str, list[str]] = {}
            anything: list[str] = []
            for module in dict.fromkeys(self.scans[importer].stars):
                for target in sorted(self.index.targets(importer, [module])):
                    names = self._exports(target)
                    if names is None:
                        anything.append(module)
                        break
                    for name in names:
                        seen = by_name.setdefault(name, [])
                        if not seen or seen[-1] != module:
                            seen.append(module)
            hit = self.star_sources[importer] = (by_name, tuple(anything))
        return hit

    def _exports(self, path: str) -> Optional[frozenset]:
        """The names a module defines or imports by name, through its star imports too; None when
        unknown (a file that does not parse, a cycle of star imports): it may have any name."""
        if path in self.exports:
            return self.exports[path]
        self.exports[path] = None  # (in progress: a cycle through it stays unknown)
        scan = self.scans[path]
        names: Optional[set] = set(scan.defs) | set(scan.names) if scan.syntax_ok else None
        for star in scan.stars if names is not None else ():
            for target in self.index.targets(path, [star]):
                more = self._exports(target)
                if more is None:
                    names = None
                    break
                names |= more  # type: ignore[operator]
            if names is None:
                break
        result = self.exports[path] = frozenset(names) if names is not None else None
        return result

    def _node(self, path: str, name: bytes) -> Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        """(the kinds, the dotted names of other modules, the imports) that calling `name` of `path`
        may reach in that file (cudalint.scan.layout._Layout.reach, from the scan's stored graph)."""
        key = (path, name)
        if key not in self.nodes:
            scan = self.scans[path]
            if not scan.syntax_ok:
                self.nodes[key] = None
                return None
            start = name.decode()
            kinds: set[str] = set()
            imports: set[str] = set()
            targets = set(scan.stars)
            head, _, attr = start.partition(".")
            if attr:
                # `Cls.attr` / `obj.attr` (cudalint.scan.callreach._Calls._resolve): the attribute runs,
                # not the whole class (`TrainingArguments.__doc__` constructs nothing); an imported
                # name's attribute lives where the name comes from
                if head in scan.names:
                    first = scan.names[head][:1]  # (its own target: cudalint.scan.imports._imports)
                    targets.update(f"{scan.table[i]}.{attr}" for i in first)
                    start = ""
                elif head not in scan.defs and attr not in scan.defs:
                    targets.update(f"{m}.{head}.{attr}" for m in self._providers(path, head))
                    start = ""
                else:
                    start = attr
            refs: set[int] = set(scan.names.get(start, ()))
            if not start:
                pass
            elif start in scan.defs:
                seen, todo = {start}, [start]
                while todo:
                    own, imp, mentions, rs = scan.defs[todo.pop()]
                    kinds.update(own)
                    imports.update(imp)
                    refs.update(rs)
                    for d in mentions:
                        if d not in seen:
                            seen.add(d)
                            todo.append(d)
            elif start not in scan.names:
                # a name this module does not define or import by name: from a star import, if any,
                # of a module that has it (transformers' `models/__init__` star-imports 546 packages,
                # each of which star-imports its modules: looking a name up in all of them made 2.9
                # million nodes and 4.5 GB)
                targets.update(f"{m}.{start}" for m in self._providers(path, start))
            targets.update(scan.table[i] for i in refs)
            self.nodes[key] = (tuple(sorted(kinds)), tuple(sorted(targets)), tuple(sorted(imports)))
        return self.nodes[key]


def _down_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    """The modules the seeds import, transitively."""
    seeds = set(seeds)
    if not seeds:
        return set()
    imports: dict[str, list[str]] = {}
    for target, by in importers.items():
        for imp in by:
            imports.setdefault(imp, []).append(target)
    return _up_closure(seeds, imports)  # (the same walk, along the edges the other way)


def _up_closure(seeds: Iterable[_Node], edges: Mapping[_Node, Iterable[_Node]]) -> set[_Node]:
    """The seeds and everything reached from them along `edges` (importers: up the import graph;
    callers: up the call graph)."""
    out = set(seeds)
    todo = list(out)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in out:
                out.add(nxt)
                todo.append(nxt)
    return out


class _Index:
    """Module resolution as cudalint.core.project does it, over paths instead of summaries."""

    def __init__(self, modules: Mapping[str, str]):
        self.by_path = {os.path.normpath(p): p for p in modules}
        self.by_name: dict[str, list[str]] = {}
        for path, name in modules.items():
            if name:
                self.by_name.setdefault(name, []).append(path)
        self._dirs: dict[str, str] = {}
        self._memo: dict[tuple[str, str], frozenset] = {}
        # what the first part of a name must be to find a module: a module's top name, or a file or
        # folder of the project in the importer's folder
        self._tops = {name.split(".", 1)[0] for name in self.by_name}
        self._entries: dict[str, set[str]] = {}  # folder -> its files' stems and its subfolders
        for path in self.by_path:
            folder, entry = os.path.split(path)
            entry = entry[:-3] if entry.endswith(".py") else entry
            while entry not in self._entries.setdefault(folder, set()):
                self._entries[folder].add(entry)
                if not folder:
                    break
                folder, entry = os.path.split(folder)

    def may_name(self, importer: str, name: str) -> bool:
        """Whether any prefix of dotted `name` may be a module `importer` finds (`targets`), from
        its first part alone: most names a function calls through are not (`torch.nn.functional`,
        `self.proj`), and each of their prefixes was two paths built and looked up."""
        first = name.split(".", 1)[0]
        if first in self._tops:
            return True
        return first in self._entries.get(self._folder(importer), ())

    def _folder(self, importer: str) -> str:
        base = self._dirs.get(importer)
        if base is None:
            base = self._dirs[importer] = os.path.dirname(os.path.normpath(importer))
        return base

    def _one(self, base: str, name: str) -> frozenset:
        key = (base, name)
        hit = self._memo.get(key)
        if hit is None:
            rel = name.replace(".", "/")
            out = set(self.by_name.get(name, ()))
            for cand in (f"{base}/{rel}.py" if base else f"{rel}.py", f"{base}/{rel}/__init__.py" if base else f"{rel}/__init__.py"):
                found = self.by_path.get(cand)
                if found is not None:
                    out.add(found)
            hit = self._memo[key] = frozenset(out)
        return hit

    def is_itself(self, importer: str, name: str) -> bool:
        """Whether dotted `name` finds the importer itself (which `targets` leaves out)."""
        return importer in self._one(self._folder(importer), name)

    def targets(self, importer: str, names: Iterable[str]) -> set[str]:
        base = self._folder(importer)
        out: set[str] = set()
        for name in names:
            out |= self._one(base, name)
        out.discard(importer)
        return out
