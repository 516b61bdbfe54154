"""Objects that travel in containers, for the thread model (CUD101): a container whose elements are
all one object stands for that object, and an element taken out of a container is "an element of
that container".

- `[llm] * 4`, `[llm, llm]`, `[llm for _ in range(4)]`, `itertools.repeat(llm, 4)`: every element is
  `llm` (`repeated`); handed to `pool.map(fn, [llm] * 4)` or iterated (`for m in llms:`), each
  worker gets the same instance;
- `models[k]`, `self.models[name]`, `models.get(k)`: ref "e:<container ref>" (`element_of`); `for m in
  models.values()` / `for k, m in models.items()` bind `m` to each element; what the container was
  filled with (`self.models[name] = Llama(...)`) is its elements. Two request threads that look up
  the same key share one instance; threads started in a loop may each take their own element
  (`cudalint.analysis.threads.concurrent` does not pair those), which, like a list of distinct instances, is
  CUD103's business;
- `prompt | llm | parser`: a LangChain (LCEL) composition holds each of its parts, and running it
  (`chain.invoke(x)`, `chain.batch(xs)`) runs each part's method of that name (langchain-core 1.8.2
  runnables/base.py RunnableSequence.invoke/batch call every step's invoke/batch in turn): `composed`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import ast

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer

ELEMENT = "e:"


def element_of(container: Optional[str]) -> Optional[str]:
    if not container or container.startswith(("c:", ELEMENT)):
        return None
    return ELEMENT + container


def _plain(s: "_Summarizer", expr: ast.AST, scope: "_Scope", bound: frozenset = frozenset()) -> Optional[str]:
    if type(expr) is ast.Name and expr.id in bound:  # type: ignore[attr-defined]
        return None
    if type(expr) not in (ast.Name, ast.Attribute):
        return None
    r = s.ref(expr, scope)
    return r if r and not r.startswith("c:") else None


def _targets(gens: list) -> frozenset:
    return frozenset(n.id for g in gens for n in ast.walk(g.target) if type(n) is ast.Name)


def repeated(s: "_Summarizer", expr: Optional[ast.AST], scope: "_Scope") -> Optional[str]:
    """The ref of the one object every element of this container display is, or None."""
    kind = type(expr)
    if kind is ast.BinOp and type(expr.op) is ast.Mult:  # type: ignore[attr-defined]
        for side in (expr.left, expr.right):  # type: ignore[attr-defined]
            if type(side) in (ast.List, ast.Tuple) and len(side.elts) == 1:
                return _plain(s, side.elts[0], scope)
        return None
    if kind in (ast.List, ast.Tuple) and expr.elts:  # type: ignore[attr-defined]
        refs = {_plain(s, el, scope) for el in expr.elts}  # type: ignore[attr-defined]
        return refs.pop() if len(refs) == 1 and None not in refs else None
    if kind in (ast.ListComp, ast.GeneratorExp):
        return _plain(s, expr.elt, scope, _targets(expr.generators))  # type: ignore[attr-defined]
    if kind is ast.Call and expr.args and s.qualify(expr.func, scope) == "itertools.repeat":  # type: ignore[attr-defined]
        return _plain(s, expr.args[0], scope)  # type: ignore[attr-defined]
    return None


def lookup_of(call: ast.AST) -> Optional[ast.expr]:
    """`models.get(k)` / `models.get(k, default)`: the container an element is taken from."""
    if type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "get" and 1 <= len(call.args) <= 2 and not call.keywords:  # type: ignore[attr-defined]
        return call.func.value  # type: ignore[attr-defined]
    return None


def _mapping_view(iterable: ast.expr, target: ast.expr) -> tuple[Optional[ast.expr], Optional[ast.expr]]:
    """(container, the target its elements go to) for `for m in d.values()` and `for k, m in d.items()`."""
    if type(iterable) is not ast.Call or type(iterable.func) is not ast.Attribute or iterable.args or iterable.keywords:  # type: ignore[attr-defined]
        return None, None
    view = iterable.func.attr  # type: ignore[attr-defined]
    if view == "values":
        return iterable.func.value, target  # type: ignore[attr-defined]
    if view == "items" and type(target) is ast.Tuple and len(target.elts) == 2:  # type: ignore[attr-defined]
        return iterable.func.value, target.elts[1]  # type: ignore[attr-defined]
    return None, None


def for_bind(s: "_Summarizer", target: ast.expr, iterable: ast.expr, scope: "_Scope", out: list) -> None:
    """`for m in [llm] * 4:` binds m to llm; `for m in llms:` to what llms repeats ("each:" origin:
    only a container of one repeated object gives its elements an identity here)."""
    if s.lean:
        return  # (only "bind" events: cudalint.summary.thread_free)
    container, element = _mapping_view(iterable, target)
    if container is not None and type(element) is ast.Name:
        r = _plain(s, container, scope)
        if r:
            s.bind_event(element, "each:" + r, element, scope, out)
        return
    if type(target) is not ast.Name:
        return
    one = repeated(s, iterable, scope)
    if one:
        origin = "ref:" + one
    elif type(iterable) in (ast.Name, ast.Attribute):
        r = s.ref(iterable, scope)
        origin = "each:" + r if r and not r.startswith("c:") else None
    else:
        origin = None
    s.bind_event(target, origin, target, scope, out)


def composed(expr: ast.AST) -> list:
    """The parts of `a | b | c` (nested `|`), when there are at least two; [] for anything else."""
    if type(expr) is not ast.BinOp or type(expr.op) is not ast.BitOr:  # type: ignore[attr-defined]
        return []
    out: list = []
    todo = [expr]
    while todo:
        node = todo.pop()
        if type(node) is ast.BinOp and type(node.op) is ast.BitOr:  # type: ignore[attr-defined]
            todo += [node.right, node.left]  # type: ignore[attr-defined]
        else:
            out.append(node)
    return out


def part_refs(s: "_Summarizer", expr: ast.AST, scope: "_Scope") -> list[str]:
    """The refs of the named parts of a composition."""
    return [r for r in (_plain(s, part, scope) for part in composed(expr)) if r]


def composition_binds(s: "_Summarizer", target: ast.expr, value: ast.AST, stmt, scope: "_Scope", out: list) -> None:
    """`chain = prompt | llm`: the name refers to each part (cudalint.analysis.threads unions binds)."""
    if s.lean:
        return
    for r in part_refs(s, value, scope):
        s.bind_event(target, "ref:" + r, stmt, scope, out)
