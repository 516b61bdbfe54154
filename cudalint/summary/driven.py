"""Which calls have their result run where they are made, when that result is a generator.

Calling a generator function runs none of its body: the body runs as the generator is iterated
(`for`, a comprehension, `yield from`, `list(...)`, `next(...)`) or, for a `@contextlib.contextmanager`
function, as a `with` enters and leaves it. A generator call anywhere else (`@ctx()` as a decorator,
a generator kept for later) only builds the object (Tongjilibo/bert4torch,
bert4torch/generation/core.py: `@EmptyCacheDecorators.empty_cuda_cache()` on a method). The call
event of a driven call says so (cudalint.core.ir: data `(symbol, DRIVES)`); the flow engine applies
a generator function's body only there (cudalint.analysis.flow).
"""
from __future__ import annotations

import ast

DRIVES = "drives"

# builtins that iterate an argument to its end, or at least once, before they return; and the
# wrappers whose own result is iterated where it is made (counted as driving: their caller iterates)
_CONSUMERS = frozenset(
    {"list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any", "all", "next",
     "enumerate", "zip", "map", "filter", "reversed", "iter"}
)


def driven_calls(expr: ast.AST) -> list[ast.Call]:
    """The calls in `expr` whose result is iterated (or entered) where `expr` is: `expr` itself, and
    through the wrappers above their arguments (`for i, x in enumerate(gen())`)."""
    out: list[ast.Call] = []
    todo = [expr]
    while todo:
        node = todo.pop()
        if type(node) is ast.Await:
            node = node.value
        if type(node) is not ast.Call:
            continue
        out.append(node)
        if type(node.func) is ast.Name and node.func.id in _CONSUMERS:
            todo.extend(a.value if type(a) is ast.Starred else a for a in node.args)
    return out


def consumed_args(call: ast.Call) -> list[ast.Call]:
    """`list(gen())`, `next(gen())`: the generator calls a consuming builtin runs."""
    if type(call.func) is ast.Name and call.func.id in _CONSUMERS:
        out: list[ast.Call] = []
        for a in call.args:
            out.extend(driven_calls(a.value if type(a) is ast.Starred else a))
        return out
    return []
