"""Which files need a syntax tree at all: a byte-level scan, then a closure over the import graph.

Most files of a large repository mention nothing the catalogue cares about. Such a file's summary
holds only structure (imports, calls of project functions, raise/return/loops), which matters to
other modules in just two ways, and the selection keeps exactly those files:

- upward: a module whose imports reach (transitively) a module with effects runs those effects in
  its own state, so it can produce findings (at the effect's line, with its own witness). It is
  parsed.
- downward: a function that may never return (it raises, loops forever, exits) cuts the caller's
  path short. A module that is imported (transitively) by a parsed one and mentions `raise`,
  `while` or an exiting call, or imports such a module, is parsed too.

Every other file is represented by an empty module (`stub`): it resolves like the real one, runs no
effects and returns normally, which is what its real summary would say. So prefiltered findings
equal the findings of a full analysis (tests/test_prefilter.py checks this on the fixtures and on
generated programs).

What makes a file a source of findings is narrower than "mentions the catalogue":
- a catalogue entry counts only when its call could match: a string glob in `match` ("cuda*",
  "*nvidia-smi*") needs its literal text in the file (or escapes/adjacent literals that could
  spell it); `os.environ` counts only with a write form (item assignment, update, setdefault, pop,
  clear, `|=`, del, an alias); an API counts as monkeypatched only next to an assignment or setattr;
- CUD004's sinks (`.to`, `torch.device`, `set_device`) count only when a source of the other
  numbering is in the file or below it in the import graph: labels flow from callees to callers;
- CUDA initialization counts for CUD003 only when the module's top level (class bodies, decorators,
  default values, and the local functions they call) reaches it, or calls into a module below
  which something initializes. This is found with CPython's `ast` (about a tenth of libcst's parse),
  which is also the syntax check of every file the selection skips.

The scan is deliberately coarse (a word in a comment counts), so it can only parse too much. What
it assumes about the summarizer: an effect comes from a catalogue entry whose last name (for
`X.__call__`/`X.__enter__`, the class name) appears as a word in the file, together with the
entry's top-level package, the file's own package (relative imports) or the package of a type some
present entry `returns`; a method entry (`x.cuda()`) needs `.name` in the text. A new kind of
event that does not come from the catalogue must be added to `_Triggers` (CUD010's reads and child
environments: the text `CUDA_VISIBLE_DEVICES`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Mapping, Optional


if TYPE_CHECKING:
    from cudalint.scan.scanner import Scan


PRECISE_MAX_FILES = 20_000  # past this many files, module by module (bounds the walk's memo tables; torch's 2,285 files: 2 s, 90 MB)


def _call_word(name: bytes, data: bytes, seen: dict) -> bool:
    key = b"(" + name
    hit = seen.get(key)
    if hit is None:
        hit = seen[key] = re.search(rb"(?<![\w])" + re.escape(name) + rb"\s*\(", data) is not None
    return hit  # type: ignore[return-value]


def select(scans: Mapping[str, Scan], modules: Mapping[str, str], judged: Iterable[str] = ("env_write",), precise: bool = True) -> set[str]:
    """The files (of `scans`, by path) that need a summary; `modules` maps each path to its module name.

    `judged`: the event kinds the enabled checks judge (plus "init" when CUD003 looks at modules
    that initialize CUDA when imported). A file whose effects may produce one is a source of findings.
    `precise`: follow the functions a top level calls into other modules (the scans' call graphs);
    False: every module below with an event of the kind counts.
    """
    if len(scans) > PRECISE_MAX_FILES:
        precise = False
    index = _Index(modules)
    edges = {path: index.targets(path, scan.imports) for path, scan in scans.items()}
    importers: dict[str, list[str]] = {}
    for path, targets in edges.items():
        for t in targets:
            importers.setdefault(t, []).append(path)
    judged = set(judged)
    kinds = _effective_kinds(scans, importers)
    want = _wanted(judged)
    calls = _Calls(index, scans, modules, kinds, importers, precise)
    # a judged event is reached from the code of its own module, of the modules whose code calls
    # (through any chain of functions) into it, and, when a module's top level reaches it, from
    # every module that imports that one (importing runs the top level)
    code: set[str] = set()  # whose functions may reach a judged event
    top: set[str] = set()  # whose top level may: it runs after the modules it imports
    own_top: set[str] = set()  # CUD003's: a module's own top level, without the modules it imports
    named: set[str] = set()  # importers CUD003 names: their summaries' import lines, nothing below
    for goal in [want] + ([{"init"}] if "init" in judged else []):
        has = {p for p, ks in kinds.items() if goal & ks}
        callers = _up_closure(has, importers)  # only an importer (at any distance) can call in
        reach = {p for p in callers if p in has or calls.reaches(p, scans[p].code_targets, goal)}
        on_import = {p for p in reach if goal & calls.gated(p, scans[p].top_kinds) or calls.reaches(p, scans[p].top_targets, goal)}
        if goal == {"init"}:
            # CUD003 judges a module someone imports by its own top level (cudalint.checks.import_time)
            for path in on_import:
                if path in importers:
                    own_top.add(path)
                    named.update(importers[path])
        else:
            code |= reach
            top |= _up_closure(on_import, importers)
    # the thread rules follow objects through modules with no catalogue word of their own (a setter
    # `def init_llm(m): global coach; coach = m`, a wrapper class) that thread or llama modules import
    relay = {t for p, ks in kinds.items() if ks & {"llama", "thread"} for t in edges.get(p, ())}
    if not calls.precise:
        return _select_coarse(scans, kinds, edges, importers, code | top | own_top) | named | relay
    return code | top | own_top | named | relay | calls.dependencies(code, top, own_top, edges)


def _wanted(judged: set[str]) -> set[str]:
    """The kinds that make a file a source of findings."""
    want = (judged - {"init"}) | {"*", "llama", "thread"}  # (the last two: CUD101/CUD102)
    if "gpu_index" in judged:
        want |= {"cuda_sink", "nvml_sink"}
    return want


# the kinds `_effective_kinds` keeps or drops after looking at the whole project
_PROJECT_WIDE = frozenset({"cuda_sink", "nvml_sink", "cuda_source", "thread"})


def surely_selected(kinds: Iterable[str], judged: Iterable[str]) -> bool:
    """Whether `select` chooses a file with these (its scan's) kinds whatever the other files hold:
    its own effects are judged. Known during the file's scan, so its summary can be made from the
    same syntax tree."""
    return not (set(kinds) - _PROJECT_WIDE).isdisjoint(_wanted(set(judged)))


def likely_selected(kinds: Iterable[str], imports: Iterable[str], modname: str) -> bool:
    """Whether `select` will probably choose a file whose scan found these kinds and imports: it
    has effects of some kind, or imports a module of its own package (which may have some, or
    import one that does). Summarizing such a file from the scan's syntax tree saves parsing it
    again, and one that is not chosen after all costs a summary nobody reads. Measured on the
    fetched trees (selection at 2955f37, CPU of one process): timm 151 files chosen of 249 guessed,
    1.14 s of parsing saved against 0.62 s of summaries made in vain; transformers 2,802 of 2,809;
    vllm 130 of 170 (1.10 s against 0.30 s); diffusers, deepspeed, lightning, ultralytics,
    accelerate, peft at most 3 in vain each; of the files chosen, at most 5 not guessed per tree."""
    if kinds:
        return True
    root = modname.partition(".")[0]
    return bool(root) and any(name == root or name.startswith(root + ".") for name in imports)


def _select_coarse(scans: Mapping[str, Scan], kinds: Mapping[str, set[str]], edges, importers, relevant: set[str]) -> set[str]:
    """Every module below a relevant one that may establish a fact or end a path, and the modules
    on the way to it (without the files' text to follow calls)."""
    matter = _up_closure((p for p, s in scans.items() if kinds[p] or s.may_stop), importers)
    out = set(relevant)
    todo = list(relevant)
    while todo:
        path = todo.pop()
        for t in edges.get(path, ()):
            if t in matter and t not in out:
                out.add(t)
                todo.append(t)
    return out


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
        self.exports: dict[str, Optional[frozenset]] = {}  # cudalint.scan.select._Calls._exports

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
        todo: list[tuple[Optional[tuple[str, bytes]], str, str]] = [(None, o, c) for o, c in starts]
        while todo:
            parent, origin, chain = todo.pop()
            for target, name in self._resolve(origin, chain):
                if target not in below:
                    continue
                if name is None:
                    continue  # the module itself: not a call
                key = (target, name)
                if parent is not None:
                    callers.setdefault(key, set()).add(parent)
                if key in selfish:
                    continue
                node = self._node(target, name)
                # a function that imports a module runs its top level
                runs = {t for m in (node[2] if node is not None and imports_run else ()) for t in self.index.targets(target, [m])} & imatter
                modules |= runs
                selfish[key] = bool(runs) or self._matters(key, node, None)
                if node is not None:
                    todo.extend((key, target, c) for c in node[1])
        # a function that calls one that matters matters: up the call edges from those that do
        matters = {k for k, v in selfish.items() if v}
        todo_up = list(matters)
        while todo_up:
            for parent in callers.get(todo_up.pop(), ()):
                if parent not in matters:
                    matters.add(parent)
                    todo_up.append(parent)
        for origin, name in imports:
            modules |= self.index.targets(origin, [name]) & imatter
        return {k[0] for k in matters} | modules | self._imported(modules, edges)

    def reaches(self, path: str, chains: Iterable[str], goal: Optional[set[str]]) -> bool:
        below = self._below(goal)
        unreached = self.unreached.setdefault(frozenset(goal) if goal is not None else None, set())
        seen: set[tuple[str, bytes]] = set()
        todo = [(path, c) for c in chains]
        while todo:
            origin, chain = todo.pop()
            for target, name in self._resolve(origin, chain):
                if target not in below or name is None:
                    continue  # nothing of the kind there; or the module itself, not a call into it
                if not self.precise:
                    return True
                if (target, name) in seen or (target, name) in unreached:
                    continue
                seen.add((target, name))
                node = self._node(target, name)
                if self._matters((target, name), node, goal):
                    return True
                todo.extend((target, c) for c in node[1])  # type: ignore[index]
        unreached |= seen  # every node seen was followed to its end without reaching the goal
        return False

    def _resolve(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        key = (origin, chain)
        hit = self.resolved.get(key)
        if hit is None:
            hit = self.resolved[key] = self._resolve_uncached(origin, chain)
        return hit

    def _resolve_uncached(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        parts = chain.split(".")
        for i in range(len(parts), 0, -1):
            hit = self.index.targets(origin, [".".join(parts[:i])])
            if hit:
                # (one attribute more: `Cls.method`, `obj.method` run that method, not all of Cls)
                name = ".".join(parts[i : i + 2]).encode() if i < len(parts) else None
                return [(h, name) for h in sorted(hit)]
        return []

    def _provides(self, importer: str, module: str, name: str) -> bool:
        """May `from module import *` in `importer` bring `name`? Only then can the name's node there
        reach anything (a name a module neither defines nor imports reaches nothing of its own)."""
        for target in self.index.targets(importer, [module]):
            names = self._exports(target)
            if names is None or name in names:
                return True
        return False

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
                # `Cls.attr` / `obj.attr` (cudalint.scan.select._Calls._resolve): the attribute runs,
                # not the whole class (`TrainingArguments.__doc__` constructs nothing); an imported
                # name's attribute lives where the name comes from
                if head in scan.names:
                    first = scan.names[head][:1]  # (its own target: cudalint.scan.imports._imports)
                    targets.update(f"{scan.table[i]}.{attr}" for i in first)
                    start = ""
                elif head not in scan.defs and attr not in scan.defs:
                    targets.update(f"{m}.{head}.{attr}" for m in scan.stars if self._provides(path, m, head))
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
                targets.update(f"{m}.{start}" for m in scan.stars if self._provides(path, m, start))
            targets.update(scan.table[i] for i in refs)
            self.nodes[key] = (tuple(sorted(kinds)), tuple(sorted(targets)), tuple(sorted(imports)))
        return self.nodes[key]


def _effective_kinds(scans: Mapping[str, Scan], importers: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """Each file's kinds, with CUD004's roles kept only where they can meet: a sink needs a source of
    the other numbering in its file or below it (a callee's return value); CUDA-ordinal sources
    (`.index`, `local_rank`) matter only when the project has an NVML sink at all; thread starts,
    locks and endpoints only when it has a llama.cpp context."""
    has = {role: {p for p, s in scans.items() if role in s.kinds} for role in ("nvml_source", "cuda_source", "nvml_sink")}
    # a value reaches a sink from a callee (its return value: the sink's module imports the source's)
    # or from a caller (an argument: the source's module imports the sink's)
    nvml_below = _up_closure(has["nvml_source"], importers) | _down_closure(has["nvml_source"], importers)
    cuda_sources = has["cuda_source"] if has["nvml_sink"] else set()
    cuda_below = _up_closure(cuda_sources, importers) | _down_closure(cuda_sources, importers)
    llama = any("llama" in s.kinds for s in scans.values())
    out: dict[str, set[str]] = {}
    for path, scan in scans.items():
        ks = set(scan.kinds)
        if "cuda_sink" in ks and path not in nvml_below:
            ks.discard("cuda_sink")
        if "nvml_sink" in ks and path not in cuda_below:
            ks.discard("nvml_sink")
        if not cuda_sources:
            ks.discard("cuda_source")
        if not llama:
            ks.discard("thread")
        out[path] = ks
    return out


def _down_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    """The modules the seeds import, transitively."""
    seeds = set(seeds)
    if not seeds:
        return set()
    imports: dict[str, list[str]] = {}
    for target, by in importers.items():
        for imp in by:
            imports.setdefault(imp, []).append(target)
    out = set(seeds)
    todo = list(out)
    while todo:
        for t in imports.get(todo.pop(), ()):
            if t not in out:
                out.add(t)
                todo.append(t)
    return out


def _up_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    out = set(seeds)
    todo = list(out)
    while todo:
        for imp in importers.get(todo.pop(), ()):
            if imp not in out:
                out.add(imp)
                todo.append(imp)
    return out


class _Index:
    """Module resolution as cudalint.core.project does it, over paths instead of summaries."""

    def __init__(self, modules: Mapping[str, str]):
        import os

        self.by_path = {os.path.normpath(p): p for p in modules}
        self.by_name: dict[str, list[str]] = {}
        for path, name in modules.items():
            if name:
                self.by_name.setdefault(name, []).append(path)
        self._dirs: dict[str, str] = {}
        self._memo: dict[tuple[str, str], frozenset] = {}

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

    def targets(self, importer: str, names: Iterable[str]) -> set[str]:
        import os

        base = self._dirs.get(importer)
        if base is None:
            base = self._dirs[importer] = os.path.dirname(os.path.normpath(importer))
        out: set[str] = set()
        for name in names:
            out |= self._one(base, name)
        out.discard(importer)
        return out
