"""What a module's top level binds, imports and computes, read with libcst: where a moved
statement may go.
"""
from __future__ import annotations

import sys
from collections import Counter
from typing import Optional
import libcst as cst


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_UNKNOWN_VALUE = object()


def literal(expr: cst.BaseExpression | None, consts: dict[str, object] | None = None) -> object:
    """The value of a literal expression, `_UNKNOWN_VALUE` when it is not one.

    f-strings keep their literal parts and turn each placeholder into `*`, so a glob such as
    "cuda*" matches f"cuda:{i}".
    """
    if expr is None:
        return None
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return _UNKNOWN_VALUE
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left, consts), literal(expr.right, consts)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return _UNKNOWN_VALUE
    if isinstance(expr, cst.FormattedString):
        out = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(part.value)
            else:
                val = literal(part.expression, consts)
                out.append(str(val) if isinstance(val, (str, int)) and not isinstance(val, bool) else "*")
        return "".join(out)
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value, 0)
        except ValueError:
            return _UNKNOWN_VALUE
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        val = literal(expr.expression, consts)
        return -val if isinstance(val, int) and not isinstance(val, bool) else _UNKNOWN_VALUE
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if consts is not None and expr.value in consts:
            return consts[expr.value]
    return _UNKNOWN_VALUE


# ---------- names, as the module binds them --------------------------------------------------
def _module_bindings(module: cst.Module) -> Counter:
    """How often each name is bound in module scope (conservatively: `global` counts too)."""
    counts: Counter = Counter()

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0  # inside a def/class/lambda/comprehension body: another scope

        def _scoped(self, node) -> bool:
            self.depth += 1
            return True

        def _unscoped(self, node) -> None:
            self.depth -= 1

        visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scoped
        leave_Lambda = leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _unscoped

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if self.depth == 0:
                counts[node.name.value] += 1
            self.depth += 1
            return True

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.depth -= 1

        visit_ClassDef = visit_FunctionDef  # a top-level class binds its name the same way
        leave_ClassDef = leave_FunctionDef

        def visit_Global(self, node: cst.Global) -> None:
            for item in node.names:
                counts[item.name.value] += 2  # bound from a function: never a constant

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] += 2

        def _target(self, target: cst.BaseExpression, weight: int = 1) -> None:
            """weight 2: a binding that never makes a constant (augmented, loop, with/except/import as, del)."""
            if self.depth:
                return
            if isinstance(target, cst.Name):
                counts[target.value] += weight
            elif isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    self._target(el.value, weight)
            elif isinstance(target, cst.StarredElement):
                self._target(target.value, weight)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target, 2)

        def visit_For(self, node: cst.For) -> None:
            self._target(node.target, 2)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._target(node.name, 2)  # with ... as x, except E as x, import a as x

        def visit_Del(self, node: cst.Del) -> None:
            self._target(node.target, 2)

        def visit_Import(self, node: cst.Import) -> None:
            if self.depth:
                return
            for alias in node.names:
                if alias.asname is None:
                    root = alias.name
                    while isinstance(root, cst.Attribute):
                        root = root.value
                    if isinstance(root, cst.Name):
                        counts[root.value] += 1

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if self.depth:
                return
            if isinstance(node.names, cst.ImportStar):
                counts["*"] += 1
                return
            for alias in node.names:
                if alias.asname is None and isinstance(alias.name, cst.Name):
                    counts[alias.name.value] += 1

    module.visit(Visitor())
    return counts


def _import_modules(stmt: cst.CSTNode) -> Optional[list[str]]:
    """The modules a top-level `import`/`from … import` line names, None for other statements."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    mods: list[str] = []
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                mods.append(cst.Module([]).code_for_node(alias.name))
        elif isinstance(small, cst.ImportFrom):
            if small.relative or small.module is None:
                return ["."]
            mods.append(cst.Module([]).code_for_node(small.module))
        else:
            return None
    return mods


def _is_stdlib_import(stmt: cst.CSTNode) -> bool:
    mods = _import_modules(stmt)
    return bool(mods) and all(m.split(".")[0] in _STDLIB and m != "__future__" for m in mods)


def _is_future_import(stmt: cst.CSTNode) -> bool:
    return _import_modules(stmt) == ["__future__"]


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    """Does this top-level import line bind `name` (`import os`, `from os import environ`)?"""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else cst.Module([]).code_for_node(alias.name).split(".")[0]
                if bound == name:
                    return True
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else cst.Module([]).code_for_node(alias.name)
                if bound == name:
                    return True
    return False


def _constant_stmt(stmt: cst.CSTNode) -> Optional[tuple[str, object]]:
    """`NAME = "literal"` on a line of its own: (name, value)."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    value = literal(assign.value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return assign.targets[0].target.value, value
    return None


class _Module:
    """What the fixes need to know about one module's top level."""

    def __init__(self, module: cst.Module):
        self.module = module
        self.body = list(module.body)
        self.bindings = _module_bindings(module)
        self.binder: dict[str, int] = {}  # name -> index of the top-level statement binding it
        self.consts: dict[str, object] = {}
        for i, stmt in enumerate(self.body):
            const = _constant_stmt(stmt)
            if const is not None:
                self.binder.setdefault(const[0], i)
                self.consts.setdefault(const[0], const[1])
            elif _import_modules(stmt) is not None:
                for name in list(self.bindings):
                    if name not in self.binder and _binds(stmt, name):
                        self.binder[name] = i
        self.insert_index = self._insert_index()

    def _insert_index(self) -> int:
        i = 0
        if self.body and _is_docstring(self.body[0]):
            i = 1
        while i < len(self.body) and (_is_future_import(self.body[i]) or _is_stdlib_import(self.body[i])):
            i += 1
        return i

    def single(self, name: str) -> bool:
        return self.bindings.get(name, 0) == 1 and self.bindings.get("*", 0) == 0

    def constant(self, expr: cst.BaseExpression) -> object:
        """The value of a literal or of a module constant (a name bound once, to a literal)."""
        if isinstance(expr, cst.Name) and expr.value not in ("True", "False", "None"):
            if expr.value in self.consts and self.single(expr.value):
                return self.consts[expr.value]
            return _UNKNOWN_VALUE
        value = literal(expr)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
        return _UNKNOWN_VALUE

    def env_root(self, expr: cst.BaseExpression) -> Optional[str]:
        """`os.environ` (os bound by `import os`) or `environ` (from `from os import environ`): the root name."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.attr.value == "environ":
            name = expr.value.value
            i = self.binder.get(name)
            if i is not None and self.single(name) and _is_import_of(self.body[i], name, "os"):
                return name
        if isinstance(expr, cst.Name):
            i = self.binder.get(expr.value)
            if i is not None and self.single(expr.value) and _is_import_of(self.body[i], expr.value, "os.environ"):
                return expr.value
        return None


def _is_import_of(stmt: cst.CSTNode, name: str, target: str) -> bool:
    """Does `stmt` bind `name` to `target` ("os" or "os.environ")?"""
    code = cst.Module([]).code_for_node
    for small in stmt.body:  # type: ignore[attr-defined]
        if isinstance(small, cst.Import):
            for alias in small.names:
                full = code(alias.name)
                bound = alias.asname.name.value if alias.asname else full.split(".")[0]
                if bound == name and (full if alias.asname else full.split(".")[0]) == target:
                    return True
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname else code(alias.name)
                if bound == name and f"{code(small.module)}.{code(alias.name)}" == target:
                    return True
    return False
