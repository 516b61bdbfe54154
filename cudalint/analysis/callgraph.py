"""Questions about the whole project's IR that a single walk cannot answer.

- which function's walk a judgment happens in, and whether anything in the project calls that
  function (a judgment made without the callers' state is then superseded by theirs);
- whether a function a child process runs may use CUDA, and the path to that use;
- where a function is called with labelled arguments (CUD004's parameter flow).

One `ProjectIndex` per run; everything is computed lazily and memoized.
"""
from __future__ import annotations

from typing import Iterable, Optional

from cudalint.core.findings import Step
from cudalint.core.ir import Block, Event, ModuleIR, iter_events
from cudalint.core.project import Project


class ProjectIndex:
    def __init__(self, project: Project):
        self.project = project
        self._owners: dict[str, dict[int, str]] = {}  # path -> line -> qualname, built per module asked about
        self._called: Optional[set[tuple[str, str]]] = None
        self._by_kind: dict[tuple[str, str], list[Event]] = {}
        self._uses: dict[tuple[str, str], Optional[tuple[Step, ...]]] = {}
        self._arg_sites: Optional[dict[tuple[str, str], list[tuple[ModuleIR, Event]]]] = None
        # checks' own tables for this run, by name (cudalint.checks.gpu_index.numberings): they go
        # with the index, so a later run (the language server's) never reads an earlier one's
        self.memos: dict[str, dict] = {}

    def module(self, path: str) -> Optional[ModuleIR]:
        import os

        return self.project.by_path.get(os.path.normpath(path))

    def bodies(self, mod: ModuleIR) -> Iterable[tuple[str, Block]]:
        yield "", mod.top
        for qualname, fn in mod.functions.items():
            yield qualname, fn.body

    def owner(self, path: str, line: int) -> Optional[str]:
        """The function (qualname, "" for the module top) whose body has an event on that line."""
        owners = self._owners.get(path)
        if owners is None:
            # (for every module at once: 196,000 entries on vllm, where a few dozen modules are asked about)
            owners = self._owners[path] = {}
            mod = self.module(path)
            for qualname, body in self.bodies(mod) if mod is not None else ():
                for ev in iter_events(body):
                    owners.setdefault(ev.loc[0], qualname)
        return owners.get(line)

    def is_called(self, path: str, qualname: str) -> bool:
        if self._called is None:
            self._called = set()
            for mod in self.project.modules:
                for _, body in self.bodies(mod):
                    for ev in iter_events(body):
                        if ev.kind != "call":
                            continue
                        found = self.resolve(mod, ev.data[0])
                        if found is not None:
                            self._called.add((found[0].path, found[1]))
        return (path, qualname) in self._called

    def resolve(self, mod: ModuleIR, symbol: str) -> Optional[tuple[ModuleIR, str]]:
        target = self.project.resolve_symbol(symbol, mod)
        if target is None:
            return None
        found = self.project.function(*target)
        if found is None:
            return None
        return found[0], found[1].qualname

    def arg_sites(self, path: str, qualname: str) -> list[tuple[ModuleIR, Event]]:
        """The "call_args" events (cudalint.summary.labels.call_args) whose callee is that function."""
        if self._arg_sites is None:
            self._arg_sites = {}
            for mod in self.project.modules:
                for ev in self.events(mod, "call_args"):
                    found = self.resolve(mod, ev.data[0])
                    if found is not None:
                        self._arg_sites.setdefault((found[0].path, found[1]), []).append((mod, ev))
        return self._arg_sites.get((path, qualname), [])

    def events(self, mod: ModuleIR, kind: str) -> list[Event]:
        key = (mod.path, kind)
        if key not in self._by_kind:
            self._by_kind[key] = [ev for _, body in self.bodies(mod) for ev in iter_events(body) if ev.kind == kind]
        return self._by_kind[key]

    def cuda_use(self, mod: ModuleIR, symbol: str) -> Optional[tuple[Step, ...]]:
        """Steps from the start of `symbol` (run in a child) to a call that initializes CUDA."""
        found = self.resolve(mod, symbol)
        if found is None:
            return None
        return self._use(*found)

    def _use(self, mod: ModuleIR, qualname: str) -> Optional[tuple[Step, ...]]:
        key = (mod.path, qualname)
        if key in self._uses:
            return self._uses[key]
        self._uses[key] = None  # recursion: the first activation decides
        result = self._scan(mod, mod.functions[qualname].body)
        self._uses[key] = result
        return result

    def _scan(self, mod: ModuleIR, body: Block) -> Optional[tuple[Step, ...]]:
        for ev in iter_events(body):
            if ev.kind == "init":
                return (Step(mod.path, ev.loc[0], f"{ev.text} uses CUDA in the child"),)
            if ev.kind == "call":
                found = self.resolve(mod, ev.data[0])
                if found is not None:
                    inner = self._use(*found)
                    if inner is not None:
                        return (Step(mod.path, ev.loc[0], f"{ev.text} calls {found[1]}()"),) + inner
            if ev.kind == "import":
                for name in ev.data:
                    target = self.project.resolve_module(name, mod)
                    if target is None or target is mod:
                        continue
                    key = (target.path, "")
                    if key not in self._uses:
                        self._uses[key] = None
                        self._uses[key] = self._scan(target, target.top)
                    inner = self._uses[key]
                    if inner is not None:
                        return (Step(mod.path, ev.loc[0], f"{ev.text} runs {target.path}'s top level"),) + inner
        return None
