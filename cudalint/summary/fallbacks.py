"""A value mapped wherever a mapping exists, and left as it is where none does.

`map_id(v) if callable(map_id) else v`, `f(v) if f is not None else v`, `obj.m(v) if hasattr(obj, "m")
else v`: the test asks whether the mapping exists and the other arm is the value unchanged. The
unchanged arm is the fallback for objects that offer no mapping, because they need none (DeepSpeed
0.19.8 compile/profilers/graph_profile.py L169-172: `_get_nvml_gpu_id`, which only its CUDA
accelerator defines, maps a CUDA ordinal to NVML's numbering; other accelerators' ordinals are
passed as they are). The code maps wherever mapping applies, so the value is the mapped one.
"""
from __future__ import annotations

import ast
from typing import Optional


def _tested_names(test: ast.expr) -> set[str]:
    """What a test asks exists: `callable(f)`, `f`, `f is not None`, `hasattr(obj, "m")` (as `obj.m`)."""
    out: set[str] = set()
    for node in ast.walk(test):
        if type(node) is ast.Call and type(node.func) is ast.Name and node.args:
            if node.func.id == "callable":
                out.add(ast.unparse(node.args[0]))
            elif node.func.id == "hasattr" and len(node.args) == 2 and type(node.args[1]) is ast.Constant and type(node.args[1].value) is str:
                out.add(f"{ast.unparse(node.args[0])}.{node.args[1].value}")
        elif type(node) in (ast.Name, ast.Attribute):
            out.add(ast.unparse(node))
    return out


def mapped_when_possible(expr: ast.IfExp) -> Optional[ast.expr]:
    """The arm that maps the value, when `expr` is such a fallback; None otherwise."""
    if type(expr.body) is not ast.Call and type(expr.orelse) is not ast.Call:
        return None  # (most `a if c else b`: no arm is a call, and the test need not be unparsed)
    tested = _tested_names(expr.test)
    for call, other in ((expr.body, expr.orelse), (expr.orelse, expr.body)):
        if type(call) is not ast.Call or ast.unparse(call.func) not in tested:
            continue
        given = {ast.dump(a) for a in call.args} | {ast.dump(k.value) for k in call.keywords}
        if ast.dump(other) in given:
            return call
    return None
