"""`cudalint --fix` / `--diff`: the few edits that are certain, made with libcst so comments and
formatting stay; everything else keeps its finding and gets a `help:` line instead.

Three fixes (TorchFix's layout: the checks find, this codemod edits):

- `move-env-write` (CUD001): a top-level `CUDA_VISIBLE_DEVICES` / `CUDA_DEVICE_ORDER` write whose key
  and value are literals or module constants moves to just after the module docstring, the
  `__future__` imports and the leading standard-library imports, i.e. before the first import that
  can initialize CUDA. The stdlib import that binds `os` and the constants it reads move with it.
- `guard-device-count` (CUD001): `X.is_available()` (X = torch.cuda) whose value is only tested by an
  `if`/`elif`/conditional expression, and is the call that initialized CUDA before the write,
  becomes `X.device_count() > 0`: same truth value (is_available is `device_count() > 0` on top of
  a CUDA runtime probe; knowledge.md §2), without `cuInit` when NVML works.
- `add-device-order` (CUD004 on a `CUDA_VISIBLE_DEVICES` write built from NVML indices, in a module
  that never sets `CUDA_DEVICE_ORDER`): `CUDA_DEVICE_ORDER="PCI_BUS_ID"` is written just before that
  write, so CUDA numbers the GPUs the way NVML and nvidia-smi do (knowledge.md §6).

Every fix is checked before it is kept: the edited file must parse, the finding must be gone when
the project is linted again, and no (file, code) may gain findings. Files are replaced atomically
(a temporary file in the same directory, then `os.replace`); a read-only or vanished file is
reported and left alone.
"""
from __future__ import annotations

import difflib
import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import libcst as cst

from cudalint.inputs import source
from cudalint.core.findings import Finding
from cudalint.core.ir import ModuleIR
from cudalint.fixes.files import load, write_atomic
from cudalint.fixes.plan import ADD_DEVICE_ORDER_CODE, ProjectWrites, plan_file

if TYPE_CHECKING:
    from cudalint.fixes.files import Loaded
    from cudalint.fixes.plan import FilePlan, Fix


# ---------- applying -------------------------------------------------------------------------
def _strip_blank(stmt: cst.CSTNode) -> cst.CSTNode:
    lines = [ll for ll in getattr(stmt, "leading_lines", ()) if ll.comment is not None]
    return stmt.with_changes(leading_lines=lines)  # type: ignore[attr-defined]


class _Apply(cst.CSTTransformer):
    def __init__(self, fixes: Sequence[Fix], insert_index: int, body: Sequence[cst.CSTNode]):
        super().__init__()
        self.moved = {id(n) for fx in fixes for n in fx.move}
        self.moved_nodes = [n for n in body if id(n) in self.moved]
        self.anchor = body[insert_index] if insert_index < len(body) else None
        self.before: dict[int, list[cst.BaseStatement]] = {}
        for fx in fixes:
            for anchor, new in fx.insert_before:
                self.before.setdefault(id(anchor), []).append(new)
        self.replace = {id(old): new for fx in fixes for old, new in fx.replace}
        self.originals: dict[int, cst.CSTNode] = {}

    def on_leave(self, original_node, updated_node):
        new = self.replace.get(id(original_node))
        if new is not None:
            return new
        return super().on_leave(original_node, updated_node)

    def _rebuild(self, original_body, updated_body, top: bool):
        out: list[cst.CSTNode] = []
        for orig, upd in zip(original_body, updated_body):
            if top and self.anchor is not None and orig is self.anchor and self.moved_nodes:
                out.extend(_strip_blank(n) for n in self.moved_nodes)
                if not getattr(upd, "leading_lines", True):  # keep the moved lines apart from the imports
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine()])
            if top and id(orig) in self.moved:
                continue
            added = self.before.get(id(orig), [])
            if added:
                # the comments above the write now sit above the added line
                out.append(added[0].with_changes(leading_lines=getattr(upd, "leading_lines", ())))
                out.extend(added[1:])
                upd = upd.with_changes(leading_lines=())
            out.append(upd)
        if top and self.anchor is None:
            out.extend(_strip_blank(n) for n in self.moved_nodes)
        return out

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._rebuild(original_node.body, updated_node.body, top=True))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._rebuild(original_node.body, updated_node.body, top=False))


def apply(plan: FilePlan, fixes: Sequence[Fix]) -> str:
    if not fixes:
        return plan.module.code
    return plan.module.visit(_Apply(fixes, plan.insert_index, plan.module.body)).code


# ---------- the run --------------------------------------------------------------------------
@dataclass
class FixOutcome:
    remaining: object  # LintResult after the fixes
    fixed: int
    changed: tuple[str, ...]
    diff: str
    problems: tuple[str, ...]
    hints: dict[tuple[str, int, str], str]


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    out = ""
    for line in lines:
        out += line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    return out


def _ok(before: Sequence[Finding], after: Sequence[Finding], fixed: Sequence[Finding]) -> bool:
    """Each fixed finding is gone and no (file, code) gained findings."""
    b = Counter((f.path, f.code) for f in before)
    a = Counter((f.path, f.code) for f in after)
    gone = Counter((f.path, f.code) for f in fixed)
    return all(a[key] <= b[key] - gone[key] for key in set(a) | set(gone))


def fix_paths(paths: Sequence[str], config, write: bool = True) -> FixOutcome:
    from cudalint.api import lint_files, load_module
    from cudalint.core.catalogue import load_catalogue
    from cudalint.inputs.discover import discover

    catalogue = load_catalogue(config.extend_catalogue)
    found = discover(paths, exclude=config.exclude + config.extend_exclude, respect_gitignore=config.respect_gitignore)
    files = found.files
    before = lint_files(files, config, catalogue, extra=found.problems)
    by_path: dict[str, list[Finding]] = {}
    for f in before.findings:
        if f.cell is None and f.path.endswith((".py", ".pyi")) and f.code in ("CUD001", ADD_DEVICE_ORDER_CODE):
            by_path.setdefault(f.path, []).append(f)

    problems: list[str] = []
    loaded: dict[str, Loaded] = {}
    plans: dict[str, FilePlan] = {}
    irs: dict[str, ModuleIR] = {}
    for path in by_path:
        got = load(path)
        if isinstance(got, str):
            problems.append(got)
            continue
        module = source.parse_cst(source.Source(path, got.text))
        ir = load_module(path, catalogue, got.text)
        if isinstance(module, Finding) or isinstance(ir, Finding):
            continue
        loaded[path], irs[path] = got, ir
    # the variables the project writes anywhere: moving a write is certain only if it is the only one
    writes = ProjectWrites(lambda: _project_irs(files, catalogue, irs, load_module))
    for path, fs in by_path.items():
        if path in loaded:
            plans[path] = plan_file(path, cst.parse_module(loaded[path].text), fs, irs[path], writes)

    accepted = _validate(plans, files, config, catalogue, before.findings, found.problems, lint_files)
    hints = {(f.path, f.line, f.code): h for plan in plans.values() for f, h in plan.hints.items()}
    new_texts = {p: apply(plans[p], fx) for p, fx in accepted.items() if fx}
    changed = tuple(p for p, t in new_texts.items() if t != loaded[p].text)
    fixed_findings = [fx.finding for p in changed for fx in accepted[p]]
    diff = "".join(_diff(p, loaded[p].text, new_texts[p]) for p in changed)
    written: list[str] = []
    roots = [os.path.realpath(p) for p in paths]
    if write:
        for p in changed:
            problem = write_atomic(loaded[p], new_texts[p], roots)
            if problem:
                problems.append(problem)
                fixed_findings = [f for f in fixed_findings if f.path != p]
            else:
                written.append(p)
        remaining = lint_files(files, config, catalogue, extra=found.problems) if written else before
    else:
        remaining = before
    for f in fixed_findings:
        hints.pop((f.path, f.line, f.code), None)
    for f in remaining.findings:
        if (f.path, f.line, f.code) not in hints and f.code not in ("CUD900",):
            hints.setdefault((f.path, f.line, f.code), f"see `cudalint --explain {f.code}`")
    return FixOutcome(
        remaining=remaining,
        fixed=len(fixed_findings) if write else 0,
        changed=tuple(written) if write else changed,
        diff=diff,
        problems=tuple(problems),
        hints=hints,
    )


def _project_irs(files, catalogue, known: dict[str, ModuleIR], load_module) -> list[ModuleIR]:
    """The IR of every file that mentions a CUDA variable or writes the environment blindly."""
    out = list(known.values())
    for path in files:
        if path in known or not path.endswith((".py", ".pyi")):
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"CUDA_" not in data and b"environ" not in data:
            continue
        ir = load_module(path, catalogue)
        if isinstance(ir, ModuleIR):
            out.append(ir)
    return out


def _validate(plans: dict[str, FilePlan], files, config, catalogue, before, extra, lint_files) -> dict[str, list[Fix]]:
    """Keep the fixes that pass the check: all at once if they can, else one at a time."""

    def check(selection: dict[str, list[Fix]]) -> bool:
        overlay = {}
        for p, fx in selection.items():
            if not fx:
                continue
            text = apply(plans[p], fx)
            try:
                cst.parse_module(text)
            except Exception:
                return False
            overlay[p] = text
        if not overlay:
            return True
        after = lint_files(files, config, catalogue, extra=extra, overlay=overlay).findings
        return _ok(before, after, [fx.finding for fs in selection.values() for fx in fs])

    everything = {p: [alts[0] for alts in plan.fixes] for p, plan in plans.items() if plan.fixes}
    if not everything or check(everything):
        return everything
    accepted: dict[str, list[Fix]] = {}
    for p, plan in plans.items():
        for alternatives in plan.fixes:
            for fx in alternatives:
                trial = {**accepted, p: accepted.get(p, []) + [fx]}
                if check(trial):
                    accepted = trial
                    break
    return accepted
