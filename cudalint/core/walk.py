"""Every node of a CPython syntax tree, fast: the scan and the summarizer walk the same subtrees
many times, and `ast.walk`'s generators and `iter_child_nodes` were a tenth of both.
"""
from __future__ import annotations

import ast

_DEPRECATED = frozenset({"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite", "AugLoad", "AugStore", "Param"})
# node type -> the fields that may hold nodes (a constant's value never does; ctx is Load/Store)
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: () if cls is ast.Constant else tuple(f for f in cls._fields if f != "ctx")
    for cls in (getattr(ast, n) for n in dir(ast) if n not in _DEPRECATED)
    if isinstance(cls, type) and issubclass(cls, ast.AST)
}


def nodes(root: object) -> list:
    """Every node under `root` (itself included), in no particular order: what `ast.walk` yields
    except the Load/Store/Del contexts, without its generators."""
    out: list = []
    stack = list(root) if type(root) is list else [root]  # (a list: of statements)
    pop, push, extend, append = stack.pop, stack.append, stack.extend, out.append
    fields_of = _FIELDS
    while stack:
        n = pop()
        fields = fields_of.get(type(n))
        if fields is None:
            continue  # a name in a list of names, a None in a list of defaults
        append(n)
        for f in fields:
            v = getattr(n, f, None)
            if type(v) is list:
                extend(v)
            elif v is not None:
                push(v)
    return out
