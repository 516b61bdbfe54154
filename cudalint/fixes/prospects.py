"""Which findings may get a fix at all, known from CPython's parse of their file: fixes_for plans
(with libcst, a summary and a re-lint of the project) only the files where one may.
"""
from __future__ import annotations

import ast
from typing import Collection, Optional, Sequence

from cudalint.core.findings import Finding

ADD_DEVICE_ORDER_CODE = "CUD004"  # NVML/nvidia-smi indices used as CUDA numbering


def parse_quietly(text: str) -> Optional[ast.Module]:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # (the plan reads the file its own way)


def _top_statement(tree: ast.Module, line: int) -> Optional[ast.stmt]:
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        if first <= line <= (stmt.end_lineno or stmt.lineno):
            return stmt
    return None


def written_variable(tree: Optional[ast.Module], line: int) -> Optional[str]:
    """The variable a top-level `<mapping>["NAME"] = value` on `line` writes (a CUD001 finding there
    is an environment write), else None."""
    return _variable_of(_top_statement(tree, line) if tree is not None else None)


def _variable_of(stmt: Optional[ast.stmt]) -> Optional[str]:
    if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Subscript:
        key = stmt.targets[0].slice
        if type(key) is ast.Constant and type(key.value) is str:
            return key.value
    return None


def may_fix(findings: Sequence[Finding], text: str, tree: Optional[ast.Module] = None, crowded: Collection[str] = ()) -> bool:
    """False when no fix can be planned for any of a file's `findings`, known from CPython's parse
    alone (no libcst tree, no summary): a CUD001 write inside a function, class or block can be
    neither moved (`_plan_move`: only a top-level statement moves) nor guarded (`_plan_guard`: only
    where the file's own `X.is_available()` call initialized CUDA). A necessary condition: what passes is
    planned as before. A write whose witness enters its file only at the write itself was made too
    late by whoever imported the module (CUDA was initialized before its top level began): no move
    within the file comes first (generated import cycles: 11 such proofs, a fifth of the run).
    `crowded`: variables the run's CUD001 findings show written in two places or more, which
    `_plan_move` never moves (the project's writes of it are not one); `tree`: `text` parsed."""
    lines = []
    guardable = "is_available" in text  # (`_plan_guard` rewrites an `X.is_available()` call of the file's own)
    for f in findings:
        if f.code != "CUD001" or (f.witness and f.witness[0].path == f.path and guardable):
            return True
        if f.witness and f.witness[-1].path == f.path and not any(step.path == f.path for step in f.witness[:-1]):
            continue
        lines.append(f.line)
    if not lines:
        return False
    tree = tree or parse_quietly(text)
    if tree is None:
        return True
    for line in lines:
        stmt = _top_statement(tree, line)
        if stmt is None or not isinstance(stmt, _COMPOUND) and _variable_of(stmt) not in crowded:
            return True
    return False


_COMPOUND = tuple(
    getattr(ast, name)
    for name in ("FunctionDef", "AsyncFunctionDef", "ClassDef", "If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match")
    if hasattr(ast, name)  # (TryStar: Python 3.11)
)
