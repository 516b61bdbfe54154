"""CUD003: a project module whose own top level initializes CUDA, imported by other modules.

This is a project-level check, not an event check: it asks, for every module some other module
imports at its top level, whether running that module's top level (class bodies included, its
`if __name__ == "__main__":` block excluded) may initialize CUDA by itself, directly or through
calls. Initialization that only comes from importing yet another project module is reported at
that other module, once.
"""
from __future__ import annotations

import os
from typing import Optional

from cudalint.core.findings import Finding, Step
from cudalint.analysis.flow import EMPTY, Analyzer, Summary
from cudalint.core.ir import Branch, Event, ModuleIR, iter_events

_MAX_IMPORTERS_IN_WITNESS = 5


class _OwnTopLevel(Analyzer):
    """Walks a module's top level without following imports of other project modules."""

    def module_summary(self, mod: ModuleIR) -> Summary:
        return EMPTY

    def node(self, node, state, w):
        # a test a runtime-state predicate decides (`if dist.is_initialized():`, cudalint.summary.import_state)
        # has its import-time value here: only the arm that runs during the import is walked
        if isinstance(node, Branch) and node.at_import is not None:
            if node.at_import:
                return self.block(node.arms[0], state, w)
            return self.block(node.arms[1], state, w) if len(node.arms) > 1 else state
        return super().node(node, state, w)


def _statement_at(mod: ModuleIR, line: int) -> Optional[Event]:
    for ev in iter_events(mod.top):
        if ev.loc[0] == line and ev.kind in ("init", "call", "import", "import_lib"):
            return ev
    return None


def _chooses_gpus_first(mod: ModuleIR, line: int) -> bool:
    """The module sets CUDA_VISIBLE_DEVICES before it initializes: it is the project's device setup,
    and the GPU choice is made (CUD001 judges whether in time)."""
    return any(ev.kind == "env_write" and ev.data[:1] == ("CUDA_VISIBLE_DEVICES",) and ev.loc[0] < line for ev in iter_events(mod.top))


def _package_env(own: _OwnTopLevel, mod: ModuleIR, seen: dict) -> dict:
    """The environment the packages above `mod` set before its top level runs: importing
    `deepspeed.ops.op_builder.all_ops` runs deepspeed/__init__.py first, which opts into the NVML-based
    availability check (deepspeed 0.19.8 L14), so the submodule's `torch.cuda.is_available()` initializes
    nothing. Only environment facts carry over; an initialization there is that package's finding."""
    parts = mod.module.split(".") if mod.module else []
    state: dict = {}
    base = os.path.dirname(os.path.normpath(mod.path))
    if os.path.basename(mod.path) == "__init__.py":
        base = os.path.dirname(base)  # a package's own __init__.py: its parents start one folder up
    for _ in range(len(parts) - 1):
        init = os.path.join(base, "__init__.py")
        base = os.path.dirname(base)
        pkg = own.project.by_path.get(init)
        if pkg is None:
            continue
        if pkg.path not in seen:
            out = own.walk_root(pkg, pkg.top, include_main=False).out or {}
            seen[pkg.path] = {k: v for k, v in out.items() if k.startswith("env_")}
        state = {**seen[pkg.path], **state}  # the nearer package runs later: its value wins
    return state


def check(analyzer: Analyzer) -> list[Finding]:
    importers = analyzer.project.importers()
    if not importers:
        return []
    own = _OwnTopLevel(analyzer.project, {}, analyzer.init_keys, derive=analyzer.derive, imports=analyzer.imports, cancelled=analyzer.cancelled)
    findings = []
    parents: dict = {}
    for mod in sorted(analyzer.project.modules, key=lambda m: m.path):
        users = [(m, line) for m, line in importers.get(os.path.normpath(mod.path), ()) if m is not mod]
        if not users:
            continue
        out = own.walk_root(mod, mod.top, include_main=False, start=_package_env(own, mod, parents)).out
        fact = (out or {}).get("init:driver")
        if fact is None:
            continue
        top = fact.steps[-1]  # outermost step: the statement of this module's top level
        if top.path != mod.path or _chooses_gpus_first(mod, top.line):
            continue
        ev = _statement_at(mod, top.line)
        loc = ev.loc if ev is not None else (top.line, 1, top.line, 1)
        users = sorted(users, key=lambda u: (u[0].path, u[1]))
        named = ", ".join(f"{m.path}:{line}" for m, line in users[:_MAX_IMPORTERS_IN_WITNESS])
        if len(users) > _MAX_IMPORTERS_IN_WITNESS:
            named += f" and {len(users) - _MAX_IMPORTERS_IN_WITNESS} more"
        text, path, line = fact.cause
        where = f"line {line}" if path == mod.path else f"{path}:{line}"
        what = text if ev is None or (path, line) == (mod.path, top.line) else f"{ev.text} (through {text} at {where})"
        message = (
            f"{what} initializes CUDA when this module is imported (imported by {named}); "
            "every importer then loses the chance to set CUDA_VISIBLE_DEVICES or to fork safely"
        )
        witness = fact.steps + tuple(
            Step(m.path, line, f"importing {mod.path} here initializes CUDA")
            for m, line in users[:_MAX_IMPORTERS_IN_WITNESS]
        )
        findings.append(
            Finding(
                code="CUD003",
                path=mod.path,
                line=loc[0],
                column=loc[1],
                end_line=loc[2],
                end_column=loc[3],
                message=message,
                witness=witness,
                severity="warning",
            )
        )
    return findings
