"""What the code itself says about which of its statements can run, and which writes are no-ops.

Four shapes real code uses (issue 17, part 4), answered from the syntax alone:

- `if TYPE_CHECKING:` (typing's constant, or a module's own `TYPE_CHECKING = False`): never runs.
- `if USE_GPU:` where the module binds `USE_GPU = False` once and never again: a feature flag that
  is off; `if not FLAG`, `FLAG and ...`, `MODE == "cuda"` are decided the same way.
- a write guarded by a read of the same variable (`if "CUDA_VISIBLE_DEVICES" not in os.environ:`,
  `os.environ.get(...) is None`, `setdefault`, a value computed from the variable itself): it does
  nothing once the variable holds a value, so it cannot repeat a write that already happened.
- `orig = torch.cuda.is_available; ...; torch.cuda.is_available = orig`: a restore, not a patch.

A constant that another module rebinds (`config.USE_GPU = True`) is not seen; such flags are rare
next to the ones a module sets for itself, and the cost is a missed finding, not a false one.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Mapping, Optional

from cudalint.core.walk import nodes

_TYPE_CHECKING = frozenset({"typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING"})
_CONSTANTS = (bool, int, str, type(None))


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Names the module binds exactly once, at its top level, to a literal, and never rebinds
    anywhere (no other assignment, loop target, import alias, `global` or `del` of that name)."""
    first: dict[str, object] = {}
    for stmt in tree.body:
        target, value = None, None
        if type(stmt) is ast.Assign and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif type(stmt) is ast.AnnAssign and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if type(target) is ast.Name and type(value) is ast.Constant and type(value.value) in _CONSTANTS:
            first.setdefault(target.id, value.value)
    if not first:
        return {}
    bindings: dict[str, int] = {}
    for node in nodes(tree):  # (ast.walk's generators here were 2 % of a worker's time on vllm)
        kind = type(node)
        if kind is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            bindings[node.id] = bindings.get(node.id, 0) + 1  # type: ignore[attr-defined]
        elif kind in (ast.Global, ast.Nonlocal):
            for name in node.names:  # type: ignore[attr-defined]
                bindings[name] = bindings.get(name, 0) + 2
        elif kind in (ast.Import, ast.ImportFrom):
            for alias in node.names:  # type: ignore[attr-defined]
                name = (alias.asname or alias.name).split(".")[0]
                bindings[name] = bindings.get(name, 0) + 2
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bindings[node.name] = bindings.get(node.name, 0) + 2  # type: ignore[attr-defined]
        elif kind is ast.arg:  # a parameter of that name is another variable in its function
            bindings[node.arg] = bindings.get(node.arg, 0) + 2  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            bindings[node.name] = bindings.get(node.name, 0) + 2  # type: ignore[attr-defined]
    return {name: value for name, value in first.items() if bindings.get(name, 0) == 1}


_UNKNOWN = object()


def _value(expr: ast.expr, consts: Mapping[str, object], imports: Mapping[str, str]) -> object:
    kind = type(expr)
    if kind is ast.Constant and type(expr.value) in _CONSTANTS:  # type: ignore[attr-defined]
        return expr.value  # type: ignore[attr-defined]
    if kind is ast.Name:
        name = expr.id  # type: ignore[attr-defined]
        if imports.get(name) in _TYPE_CHECKING:
            return False
        return consts.get(name, _UNKNOWN)
    if kind is ast.Attribute and type(expr.value) is ast.Name and expr.attr == "TYPE_CHECKING":  # type: ignore[attr-defined]
        if imports.get(expr.value.id) in ("typing", "typing_extensions"):  # type: ignore[attr-defined]
            return False
    return _UNKNOWN


def static_truth(test: ast.expr, consts: Mapping[str, object], imports: Mapping[str, str]) -> Optional[bool]:
    """True/False when the test's value is known from the module's own constants, else None."""
    kind = type(test)
    if kind is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[attr-defined]
        inner = static_truth(test.operand, consts, imports)  # type: ignore[attr-defined]
        return None if inner is None else not inner
    if kind is ast.BoolOp:
        parts = [static_truth(v, consts, imports) for v in test.values]  # type: ignore[attr-defined]
        if type(test.op) is ast.And:  # type: ignore[attr-defined]
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    if kind is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in (ast.Eq, ast.NotEq, ast.Is, ast.IsNot):  # type: ignore[attr-defined]
        left = _value(test.left, consts, imports)  # type: ignore[attr-defined]
        right = _value(test.comparators[0], consts, imports)  # type: ignore[attr-defined]
        if left is _UNKNOWN or right is _UNKNOWN:
            return None
        same = left == right and type(left) is type(right)
        return same if type(test.ops[0]) in (ast.Eq, ast.Is) else not same  # type: ignore[attr-defined]
    if kind in (ast.Name, ast.Attribute, ast.Constant):
        value = _value(test, consts, imports)
        if kind is ast.Constant:
            return None  # `while True`, `if 0:` are written on purpose and read as such elsewhere
        return None if value is _UNKNOWN else bool(value)
    return None


def env_reads(expr: Optional[ast.AST], is_env: Callable[[ast.AST], bool], key: Callable[[ast.AST], str]) -> set[str]:
    """Environment variables an expression reads: `os.environ[K]`, `.get(K)`, `K in os.environ`,
    `os.getenv(K)` (the caller's `is_env` says which names are the environment mapping)."""
    out: set[str] = set()
    if expr is None:
        return out
    for node in nodes(expr):
        kind = type(node)
        if kind is ast.Subscript and is_env(node.value):  # type: ignore[attr-defined]
            out.add(key(node.slice))  # type: ignore[attr-defined]
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            args = node.args  # type: ignore[attr-defined]
            if not args:
                continue
            if type(func) is ast.Attribute and func.attr in ("get", "__getitem__", "__contains__") and is_env(func.value):
                out.add(key(args[0]))
            elif type(func) is ast.Attribute and func.attr == "getenv" and type(func.value) is ast.Name and func.value.id == "os":
                out.add(key(args[0]))
        elif kind is ast.Compare:
            for op, right in zip(node.ops, node.comparators):  # type: ignore[attr-defined]
                if type(op) in (ast.In, ast.NotIn) and is_env(right):
                    out.add(key(node.left))  # type: ignore[attr-defined]
    out.discard("")
    return out


def restored_attributes(body: Iterable[ast.stmt]) -> frozenset[str]:
    """Dotted names a body saves and assigns back (`orig = a.b.f` ... `a.b.f = orig`): the body
    puts the original back (a `finally:` or a test's teardown), so patching it there is temporary."""
    saved: dict[str, str] = {}
    restored: set[str] = set()
    nodes = [n for stmt in body for n in ast.walk(stmt)]
    for node in nodes:
        if type(node) is ast.Assign and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if type(target) is ast.Name and type(value) is ast.Attribute:
                saved[target.id] = ast.unparse(value)
            elif type(target) is ast.Tuple and type(value) is ast.Tuple and len(target.elts) == len(value.elts):
                for t, v in zip(target.elts, value.elts):
                    if type(t) is ast.Name and type(v) is ast.Attribute:
                        saved[t.id] = ast.unparse(v)
    for node in nodes:
        if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Attribute:
            value = node.value
            if type(value) is ast.Name and saved.get(value.id) == ast.unparse(node.targets[0]):
                restored.add(saved[value.id])
    return frozenset(restored)
