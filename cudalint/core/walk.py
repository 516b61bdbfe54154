"""Every node of a CPython syntax tree, fast: the scan and the summarizer walk the same subtrees
many times, and `ast.walk`'s generators and `iter_child_nodes` were a tenth of both.
"""
from __future__ import annotations

import ast
import re

_DEPRECATED = frozenset({"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite", "AugLoad", "AugStore", "Param"})
# the ASDL types of fields that never hold a node (ctx is Load/Store/Del)
_SCALARS = frozenset({"identifier", "int", "string", "constant", "expr_context"})


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of `cls` that may hold nodes, from its ASDL signature, which CPython 3.10-3.14 put
    in the class's docstring (`Attribute(expr value, identifier attr, expr_context ctx)`): pushing
    every name, number and string on the stack only to pop it again was a sixth of the walk.
    A signature that does not read as one: every field but ctx."""
    if cls is ast.Constant:
        return ()
    first = (cls.__doc__ or "").strip().split("\n", 1)[0]
    m = re.fullmatch(r"\w+\((.*)\)", first)
    if m is not None:
        parts = [p.split() for p in m.group(1).split(", ")] if m.group(1) else []
        if all(len(p) == 2 for p in parts) and [p[1] for p in parts] == list(cls._fields):
            return tuple(name for typ, name in parts if typ.rstrip("?*") not in _SCALARS)
    return tuple(f for f in cls._fields if f != "ctx")


# node type -> the fields that may hold nodes
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: node_fields(cls) for cls in (getattr(ast, n) for n in dir(ast) if n not in _DEPRECATED) if isinstance(cls, type) and issubclass(cls, ast.AST)
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
