"""CPython's `ast` for the few files the scan must parse: the tree, its nodes, the names a module's
top level binds.
"""
from __future__ import annotations

import ast
import warnings
from typing import Iterable, Optional

from cudalint.core.walk import nodes as _nodes


def _ast(data: bytes) -> Optional[ast.Module]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(data, "<cudalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _names(node: object, uses: bool = False) -> Iterable[bytes]:
    """The names and attribute names in the code; `uses`: only the names used otherwise than as the
    object of an attribute (`Pipeline(...)`, `x = Pipeline`, not `Pipeline.push_to_hub`)."""
    nodes = _nodes(node)
    if uses:
        owners = {id(sub.value) for sub in nodes if type(sub) is ast.Attribute}
        for sub in nodes:
            if type(sub) is ast.Name and id(sub) not in owners:
                yield sub.id.encode()
        return
    for sub in nodes:
        t = type(sub)
        if t is ast.Name:
            yield sub.id.encode()
        elif t is ast.Attribute:
            yield sub.attr.encode()


def _names_in(defs: list) -> tuple[frozenset, frozenset]:
    """The names and attribute names the bodies of these definitions mention, and the names they
    use otherwise than as the object of an attribute (cudalint.scan.nodes._names)."""
    found: set[str] = set()
    owners: set[int] = set()
    names: list[ast.Name] = []
    for fn in defs:
        for sub in _nodes(getattr(fn, "body", [])):
            t = type(sub)
            if t is ast.Name:
                found.add(sub.id)
                names.append(sub)
            elif t is ast.Attribute:
                found.add(sub.attr)
                owners.add(id(sub.value))
    return frozenset(w.encode() for w in found), frozenset(n.id.encode() for n in names if id(n) not in owners)


def _annotation_names(node: Optional[ast.AST], uses: bool) -> Iterable[bytes]:
    """An annotation is evaluated but not called (`config: PreTrainedConfig` constructs nothing:
    in transformers every module naming one in a signature reached all its methods); a call in it
    still runs."""
    if node is None:
        return
    for sub in _nodes(node):
        if type(sub) is ast.Call:
            yield from _names(sub, uses)


def _top_names(stmts: list, uses: bool = False) -> Iterable[bytes]:
    """The names the code that runs on import uses: not function bodies, not imports."""
    for st in stmts:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = st.args
            for n in (*st.decorator_list, *a.defaults, *a.kw_defaults):
                if n is not None:
                    yield from _names(n, uses)
            for n in (st.returns, *(x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None)):
                yield from _annotation_names(n, uses)
        elif isinstance(st, ast.AnnAssign):
            yield from _annotation_names(st.annotation, uses)
            for n in (st.target, st.value):
                if n is not None:
                    yield from _names(n, uses)
        elif isinstance(st, ast.ClassDef):
            # (its bases are reached when the class is: cudalint.scan.layout._Layout.reach)
            for n in (*st.decorator_list, *(k.value for k in st.keywords)):
                yield from _names(n, uses)
            yield from _top_names(st.body, uses)
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            continue
        else:
            for _name, value in ast.iter_fields(st):
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, ast.stmt):
                        yield from _top_names([item], uses)
                    elif isinstance(item, (ast.excepthandler, ast.match_case)):
                        for part in (getattr(item, "type", None), getattr(item, "pattern", None), getattr(item, "guard", None)):
                            if part is not None:
                                yield from _names(part, uses)
                        yield from _top_names(item.body, uses)
                    elif isinstance(item, ast.AST):
                        yield from _names(item, uses)


_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
