"""The summarizer's events for CUD010: reads of this process's CUDA_VISIBLE_DEVICES, and the
CUDA_VISIBLE_DEVICES a child process is given.

- "env_read" (variable,): `os.environ["CUDA_VISIBLE_DEVICES"]`, `.get(...)`, `os.getenv(...)`,
  `"CUDA_VISIBLE_DEVICES" in os.environ`: the code looks at its own restriction here;
- "child_env" (variable, value text, labels): a copy of the environment meant for a child gets
  CUDA_VISIBLE_DEVICES: `dict(os.environ, CUDA_VISIBLE_DEVICES=v)`, `{**os.environ, "CUDA_VISIBLE_DEVICES": v}`,
  `env = os.environ.copy(); env["CUDA_VISIBLE_DEVICES"] = v` (also `env.update(...)`), `copy.copy(os.environ)`.
  The labels (cudalint.summary.labels) say which numbering `v` is in.
  Also a mapping built from scratch given to a process start as the child's environment (catalogue
  `env_arg`): `Popen(cmd, env={"CUDA_VISIBLE_DEVICES": str(g)})`, or a name bound to such a mapping.

Only this one variable is followed: it is the one whose read decides whether the enumeration may
ignore it. Writes to this process's own environment stay "env_write" events (cudalint.summary.summarize).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import ast

from cudalint.summary import labels
from cudalint.core.callargs import arg_expr, args_of

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer

CVD = "CUDA_VISIBLE_DEVICES"
_COPIERS = frozenset({"dict", "copy.copy", "copy.deepcopy"})
_COPIER_ATTRS = frozenset(name.rsplit(".", 1)[-1] for name in _COPIERS)


def _key(s: "_Summarizer", expr: Optional[ast.AST], scope: "_Scope") -> str:
    return s.key_of(expr, scope) if expr is not None else ""


def is_copy(s: "_Summarizer", value: Optional[ast.AST], scope: "_Scope") -> bool:
    """A new mapping made from the process environment: what a child will be given."""
    if value is None or not s.env_possible:
        return False  # (no expression of such a module is the environment: `is_env`)
    kind = type(value)
    if kind is ast.Call:
        func = value.func  # type: ignore[attr-defined]
        args = value.args  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr == "copy" and not args and s.is_env(func.value, scope):
            return True  # os.environ.copy()
        if not args or (type(func) is ast.Attribute and func.attr not in _COPIER_ATTRS):
            return False  # (`qualify` keeps an attribute last: `a.b.f` is no copier unless `f` is; asked of every call)
        q = s.qualify(func, scope)
        if q is None and type(func) is ast.Name and func.id == "dict" and scope.lookup_def("dict") is None:
            q = "dict"
        if q in _COPIERS and args and (s.is_env(args[0], scope) or is_copy_name(args[0], scope)):
            return True
        return False
    if kind is ast.Dict:
        return any(k is None and (s.is_env(v, scope) or is_copy_name(v, scope)) for k, v in zip(value.keys, value.values))  # type: ignore[attr-defined]
    if kind is ast.BinOp and type(value.op) is ast.BitOr:  # type: ignore[attr-defined]
        # `os.environ | {...}`, `{...} | os.environ` (3.9's dict union): a new mapping either way
        return any(_from_env(s, side, scope) for side in (value.left, value.right))  # type: ignore[attr-defined]
    return False


def _from_env(s: "_Summarizer", expr: ast.AST, scope: "_Scope") -> bool:
    return s.is_env(expr, scope) or is_copy_name(expr, scope) or is_copy(s, expr, scope)


def is_copy_name(expr: ast.AST, scope: "_Scope") -> bool:
    return type(expr) is ast.Name and scope.binds_in("env_copies", expr.id)  # type: ignore[attr-defined]


def on_bind(s: "_Summarizer", name: str, value: Optional[ast.AST], scope: "_Scope") -> None:
    scope.env_copies.discard(name)
    scope.env_dicts.pop(name, None)
    if is_copy(s, value, scope):
        scope.env_copies.add(name)
    elif value is not None:
        # `env = {"CUDA_VISIBLE_DEVICES": str(g)}`: a child's environment only once a process start
        # is given it (see `_env_arg`); its items keep the labels they have here
        items = _new_mapping_items(s, value, scope)
        if items:
            scope.env_dicts[name] = [(node, val, labels.for_event(s, val, scope)) for node, val in items]  # type: ignore[arg-type]


def _new_mapping_items(s: "_Summarizer", value: ast.AST, scope: "_Scope") -> list:
    """(node, value) of CUDA_VISIBLE_DEVICES in a mapping built from scratch: a dict display or
    `dict(CUDA_VISIBLE_DEVICES=...)` (copies of the environment are `is_copy`'s)."""
    if type(value) is ast.Dict:
        return [(k, v) for k, v in zip(value.keys, value.values) if k is not None and _key(s, k, scope) == CVD]  # type: ignore[attr-defined]
    if type(value) is ast.Call and type(value.func) is ast.Name and value.func.id == "dict" and scope.lookup_def("dict") is None:  # type: ignore[attr-defined]
        return [(arg.node, arg.value) for arg in args_of(value) if arg.keyword == CVD]  # type: ignore[arg-type]
    return []


def _env_arg(s: "_Summarizer", call: ast.Call, q: Optional[str], scope: "_Scope", out: list) -> None:
    """A process start given a mapping built from scratch as the child's whole environment
    (catalogue `env_arg`, e.g. `subprocess.Popen(cmd, env={"CUDA_VISIBLE_DEVICES": str(g)})`)."""
    if not q or q.startswith(":"):
        return
    slots = next((api.get("env_arg") for api in s.cat.calls_named(q) if api.get("env_arg")), None)
    expr = arg_expr(call, slots) if slots else None
    if expr is None or is_copy(s, expr, scope):
        return  # (a copy of os.environ reports its items where it is built)
    if type(expr) is ast.Name:
        for sc in scope.chain():
            if expr.id in sc.env_dicts:  # type: ignore[attr-defined]
                for node, val, found in sc.env_dicts[expr.id]:  # type: ignore[attr-defined]
                    out.append(s.event("child_env", node, (CVD, s.text(val), found)))
                return
            if expr.id in sc.bound:  # type: ignore[attr-defined]
                return
        return
    for node, val in _new_mapping_items(s, expr, scope):
        _child(s, node, val, scope, out)


def _child(s: "_Summarizer", node: ast.AST, value: ast.AST, scope: "_Scope", out: list) -> None:
    found = labels.for_event(s, value, scope)  # type: ignore[arg-type]
    out.append(s.event("child_env", node, (CVD, s.text(value), found)))


def _read(s: "_Summarizer", node: ast.AST, out: list) -> None:
    out.append(s.event("env_read", node, (CVD,)))


def on_call(s: "_Summarizer", call: ast.Call, q: Optional[str], scope: "_Scope", out: list, args: list) -> None:
    """`args`: the call's `args_of`."""
    if not s.env_possible:
        # no expression here is the environment (`is_env`), so none is a copy of it (`is_copy`,
        # `is_copy_name`), and no call is `os.getenv` (its name is among the words that make
        # `env_possible`): what is left is a process start given a mapping built from scratch. Asked
        # of every call; a copy's tests qualified the callee again (4 % of summarizing ultralytics)
        _env_arg(s, call, q, scope, out)
        return
    func = call.func
    if type(func) is ast.Attribute:
        method = func.attr
        if s.is_env(func.value, scope) and method in ("get", "__getitem__", "__contains__", "setdefault") and args:
            if _key(s, args[0].value, scope) == CVD:
                _read(s, call, out)
            return
        if is_copy_name(func.value, scope) and method in ("update", "__setitem__", "setdefault"):
            _copy_writes(s, call, method, args, scope, out)
            return
    if q == "os.getenv" and args and _key(s, args[0].value, scope) == CVD:
        _read(s, call, out)
        return
    _env_arg(s, call, q, scope, out)
    if is_copy(s, call, scope):
        for arg in args[1:]:
            if arg.keyword == CVD:
                _child(s, arg.node, arg.value, scope, out)
            elif arg.star == "**" and type(arg.value) is ast.Dict:
                _dict_items(s, arg.value, scope, out)  # type: ignore[arg-type]


def _copy_writes(s: "_Summarizer", call: ast.Call, method: str, args: list, scope: "_Scope", out: list) -> None:
    if method == "update":
        for arg in args:
            if arg.keyword == CVD:
                _child(s, arg.node, arg.value, scope, out)
            elif arg.keyword is None and type(arg.value) is ast.Dict:
                _dict_items(s, arg.value, scope, out)
    elif len(args) >= 2 and _key(s, args[0].value, scope) == CVD:
        _child(s, call, args[1].value, scope, out)


def _dict_items(s: "_Summarizer", value: ast.Dict, scope: "_Scope", out: list) -> None:
    for key, val in zip(value.keys, value.values):
        if key is not None and _key(s, key, scope) == CVD:
            _child(s, key, val, scope, out)


def on_union(s: "_Summarizer", node: ast.BinOp, scope: "_Scope", out: list) -> None:
    """`os.environ | {"CUDA_VISIBLE_DEVICES": v}`: the right side wins, so the child gets `v`. In
    `{"CUDA_VISIBLE_DEVICES": v} | os.environ` the parent's own value wins where it has one: `v` only
    fills in an unset variable, which is what the rule asks for (not an event)."""
    if type(node.op) is ast.BitOr and type(node.right) is ast.Dict and _from_env(s, node.left, scope):
        _dict_items(s, node.right, scope, out)


def on_union_update(s: "_Summarizer", target: ast.AST, value: ast.AST, scope: "_Scope", out: list) -> None:
    """`env |= {"CUDA_VISIBLE_DEVICES": v}` on a copy of the environment."""
    if type(value) is ast.Dict and is_copy_name(target, scope):
        _dict_items(s, value, scope, out)


def on_dict(s: "_Summarizer", value: ast.Dict, scope: "_Scope", out: list) -> None:
    """`{**os.environ, "CUDA_VISIBLE_DEVICES": v}`."""
    if is_copy(s, value, scope):
        _dict_items(s, value, scope, out)


def on_subscript(s: "_Summarizer", node: ast.Subscript, scope: "_Scope", out: list) -> None:
    """A read `os.environ["CUDA_VISIBLE_DEVICES"]` (loads only: stores are writes)."""
    if type(node.ctx) is ast.Load and s.is_env(node.value, scope) and s.subscript_key(node, scope) == CVD:
        _read(s, node, out)


def on_compare(s: "_Summarizer", node: ast.Compare, scope: "_Scope", out: list) -> None:
    """`"CUDA_VISIBLE_DEVICES" in os.environ` (or `not in`)."""
    if len(node.ops) == 1 and type(node.ops[0]) in (ast.In, ast.NotIn) and s.is_env(node.comparators[0], scope):
        if _key(s, node.left, scope) == CVD:
            _read(s, node, out)


def on_store(s: "_Summarizer", target: ast.Subscript, value: Optional[ast.AST], stmt: ast.AST, scope: "_Scope", out: list) -> bool:
    """`env["CUDA_VISIBLE_DEVICES"] = v` on a copy of the environment; True when it was one."""
    if not is_copy_name(target.value, scope):
        return False
    if value is not None and s.subscript_key(target, scope) == CVD:
        _child(s, stmt, value, scope, out)
    return True
