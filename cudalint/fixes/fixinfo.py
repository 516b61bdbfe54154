"""The fixes `--fix` can prove, per finding, as text edits (for `--format json` and the editor).

`cudalint.fixes.apply` plans and checks the fixes for a whole run; here each accepted fix is applied alone
to its file and the change is turned into edits (1-based rows and columns, end exclusive), the
shape ruff's JSON uses. Nothing is written.
"""
from __future__ import annotations

import difflib

from cudalint.core.findings import Finding
from cudalint.core.record import record

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional, Sequence


@record
class Edit:
    content: str
    row: int
    column: int
    end_row: int
    end_column: int

    def to_json(self) -> dict:
        return {
            "content": self.content,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
        }


@record
class FixInfo:
    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"  # proven by re-linting: --fix applies it

    def to_json(self) -> dict:
        return {"applicability": self.applicability, "message": self.message, "edits": [e.to_json() for e in self.edits]}


MESSAGES = {
    "move-env-write": "Move the write above the first import that can initialize CUDA",
    "guard-device-count": "Test `device_count() > 0` instead of `is_available()`",
    "add-device-order": 'Set CUDA_DEVICE_ORDER="PCI_BUS_ID" before the write',
}


def edits(old: str, new: str) -> tuple[Edit, ...]:
    """Whole-line edits turning `old` into `new`."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out.append(Edit("".join(b[j1:j2]), i1 + 1, 1, i2 + 1, 1))
    return tuple(out)


def key(f: Finding) -> tuple:
    return (f.path, f.line, f.column, f.code)


def fixes_for(
    findings: Sequence[Finding], files: Sequence[str], config, texts: Optional[dict[str, str]] = None, cache=None
) -> dict[tuple, FixInfo]:
    """(path, line, column, code) -> the proven fix of that finding, for the fixable ones.

    `cache`: the run's summary cache; the files a fix edits are analyzed fresh (lint_files' overlay)."""
    from cudalint.inputs import source
    from cudalint.fixes import prospects
    from cudalint.fixes import files as _files
    from cudalint.api import lint_files, load_module
    from cudalint.core.catalogue import load_catalogue
    from cudalint.core.ir import ModuleIR

    texts = dict(texts or {})
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if f.cell is None and f.path.endswith((".py", ".pyi")) and f.code in ("CUD001", prospects.ADD_DEVICE_ORDER_CODE):
            by_path.setdefault(f.path, []).append(f)
    if not by_path:
        return {}
    catalogue = None
    originals: dict[str, str] = {}
    plans = {}
    irs: dict[str, ModuleIR] = {}
    read: dict[str, tuple[str, Any]] = {}  # path -> its text, CPython's tree of it
    sites: dict[str, set[tuple[str, int]]] = {}  # variable -> the CUD001 findings' writes of it
    for path, found in by_path.items():
        if path in texts:
            text = texts[path]
        else:
            got = _files.load(path)
            if isinstance(got, str):
                continue
            text = got.text
        read[path] = (text, tree := prospects.parse_quietly(text))
        for f in found:
            variable = prospects.written_variable(tree, f.line) if f.code == "CUD001" else None
            if variable is not None:
                sites.setdefault(variable, set()).add((path, f.line))
    crowded = {variable for variable, where in sites.items() if len(where) > 1}
    for path, (text, tree) in read.items():
        if not prospects.may_fix(by_path[path], text, tree, crowded):
            continue  # (no libcst parse, no summary: vllm's two CUD001 findings cost 0.5 s)
        catalogue = catalogue or load_catalogue(config.extend_catalogue)
        module = source.parse_cst(source.Source(path, text))
        ir = load_module(path, catalogue, text)
        if isinstance(module, Finding) or not isinstance(ir, ModuleIR):
            continue
        originals[path], irs[path] = text, ir
    if catalogue is None:
        return {}  # (no file with a fix to plan: libcst is not even imported)
    import libcst as cst

    from cudalint.fixes import apply as fix, plan

    def load(path, catalogue_, text=None):
        return load_module(path, catalogue_, text, cache=cache if text is None else None)

    writes = plan.ProjectWrites(lambda: fix._project_irs(files, catalogue, irs, load))
    for path, fs in by_path.items():
        if path in originals:
            plans[path] = plan.plan_file(path, cst.parse_module(originals[path]), fs, irs[path], writes)

    def lint(files_, config_, catalogue_, extra=(), overlay=None):
        return lint_files(files_, config_, catalogue_, extra=extra, overlay={**texts, **(overlay or {})}, cache=cache)

    accepted = fix._validate(plans, list(files), config, catalogue, list(findings), (), lint)
    out: dict[tuple, FixInfo] = {}
    for path, chosen in accepted.items():
        for fx in chosen:
            new = fix.apply(plans[path], [fx])
            if new != originals[path]:
                out[key(fx.finding)] = FixInfo(MESSAGES.get(fx.kind, fx.kind), edits(originals[path], new))
    return out


def apply_edits(text: str, chosen: Iterable[Edit]) -> str:
    """`text` with non-overlapping edits applied (whole-line edits from `edits`)."""
    lines = text.splitlines(keepends=True)
    for e in sorted(chosen, key=lambda e: (e.row, e.column), reverse=True):
        lines[e.row - 1 : e.end_row - 1] = [e.content] if e.content else []
    return "".join(lines)
