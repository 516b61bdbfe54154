"""How far an edit of one module reaches into the analysis: the measure an incremental analysis
(the language server's next step, issue 16's closing note) would be judged against.

    python benchmarks/edit_reach.py DIR [MODULE_PATH_SUFFIX ...]

Lints DIR once (worker processes, no cache) while recording, for every walk of the flow engine
(cudalint.analysis.flow: a function's or a module's summary, and each module's judged top level),
the summaries it applies. A module's edit reaches its own walks and every walk that applies one of
them, transitively. Prints the quartiles over the modules, and the reach of the modules named.
Name resolution, the call-graph index and the order-dependent parts of the engine are further
dependencies this does not count (the closing note lists them).
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cudalint.analysis.flow as flow  # noqa: E402
from cudalint.api import lint_paths  # noqa: E402

_applied: dict = collections.defaultdict(set)  # walk -> the walks whose summaries it applied
_stack: list = []
_roots: list = []


def _recorded(method, key_of):
    def wrapper(self, mod, *args):
        key = key_of(mod, *args)
        if _stack:
            _applied[_stack[-1]].add(key)
        if key in self.summaries or key in self.in_progress:
            return method(self, mod, *args)
        _stack.append(key)
        try:
            return method(self, mod, *args)
        finally:
            _stack.pop()

    return wrapper


def _run(self):
    for mod in sorted(self.project.modules, key=lambda m: m.path):
        root = ("ROOT", mod.path)
        _roots.append(root)
        _applied[root].add((mod.path, "<top>"))
        _stack.append(root)
        try:
            self.walk_root(mod, mod.top, include_main=True, exposes=False)
        finally:
            _stack.pop()
        for qualname in mod.functions:
            self.function_summary(mod, qualname)
    return list(self.findings.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("modules", nargs="*", help="paths (or their ends) of modules to report on")
    opts = ap.parse_args()
    flow.Analyzer.function_summary = _recorded(flow.Analyzer.function_summary, lambda mod, q: (mod.path, q))
    flow.Analyzer.module_summary = _recorded(flow.Analyzer.module_summary, lambda mod: (mod.path, ""))
    flow.Analyzer.run = _run
    started = time.perf_counter()
    lint_paths([str(opts.root)])
    print(f"{opts.root}: linted in {time.perf_counter() - started:.1f} s")
    walks = set(_applied) | {k for keys in _applied.values() for k in keys}
    applied_by = collections.defaultdict(set)
    for walk, keys in _applied.items():
        for key in keys:
            applied_by[key].add(walk)
    by_module = collections.defaultdict(set)
    for walk in walks:
        by_module[walk[1] if walk[0] == "ROOT" else walk[0]].add(walk)
    reach = []
    for module, own in by_module.items():
        seen, todo = set(own), list(own)
        while todo:
            for walk in applied_by[todo.pop()]:
                if walk not in seen:
                    seen.add(walk)
                    todo.append(walk)
        reach.append((len(seen), sum(1 for w in seen if w[0] == "ROOT"), module))
    reach.sort()
    print(f"{len(reach)} modules, {len(walks)} walks ({len(_roots)} judged top levels)")
    for q in (0.25, 0.5, 0.75, 0.9, 0.99):
        n, roots, _ = reach[min(len(reach) - 1, int(q * len(reach)))]
        print(f"  p{int(q * 100)}: an edit reaches {n} walks ({100 * n / len(walks):.1f} %), {roots} top levels")
    print(f"  most: {reach[-1][2]}, {reach[-1][0]} walks")
    for want in opts.modules:
        for n, roots, module in reach:
            if module.endswith(want):
                print(f"  {module}: {n} walks ({100 * n / len(walks):.1f} %), {roots} top levels")


if __name__ == "__main__":
    main()
