"""What a child process's work is given: the arguments a process start passes to its target are its
parameters, as for an ordinary call ("call_args" events, cudalint.summary.labels.call_args), so a GPU index
chosen in the parent is followed into the child (`Process(target=work, args=(gpu,))`, then
`os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)` or `torch.cuda.set_device(gpu)` in `work`).

Catalogue field `child_args` (with `child_work`), one or more specs separated by ";":
- "tuple:3|args": a tuple or list display at that slot holds the positional arguments; "tuple@1:1|args"
  holds them from the work's second parameter on (`torch.multiprocessing.spawn(fn, args=(...))` calls
  `fn(i, *args)`, the process index first);
- "rest:1": the positional arguments from that position on (`executor.submit(fn, *args)`);
- "each:1|iterable": each element of that iterable is the first argument (`pool.map(fn, gpus)`);
- "zip:1|iterable": each element is a tuple of the arguments (`pool.starmap(fn, zip(gpus, jobs))`):
  read through a `zip(...)` or a list of tuple displays; anything else is not followed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import ast

from cudalint.core.callargs import arg_expr, positional

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.core.catalogue import Api
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer


def _given(s: "_Summarizer", spec: str, call: ast.Call, scope: "_Scope") -> list[tuple[str, ast.expr]]:
    how, _, slots = spec.partition(":")
    if how == "rest":
        return [(str(i), e) for i, e in enumerate(positional(call)[int(slots):]) if type(e) is not ast.Starred]
    expr = arg_expr(call, slots)
    if expr is None:
        return []
    if how.partition("@")[0] == "tuple":
        first = int(how.partition("@")[2] or 0)
        if type(expr) in (ast.Tuple, ast.List):
            return [(str(first + i), e) for i, e in enumerate(expr.elts) if type(e) is not ast.Starred]  # type: ignore[attr-defined]
        return []
    if how == "each":
        return [("0", expr)]  # labels_of(iterable) is what its elements may hold
    if how == "zip":
        if type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id == "zip" and scope.lookup_def("zip") is None:  # type: ignore[attr-defined]
            return [(str(i), e) for i, e in enumerate(expr.args) if type(e) is not ast.Starred]  # type: ignore[attr-defined]
        if type(expr) in (ast.List, ast.Tuple):
            out = []
            for el in expr.elts:  # type: ignore[attr-defined]
                if type(el) is ast.Tuple:
                    out += [(str(i), e) for i, e in enumerate(el.elts) if type(e) is not ast.Starred]
            return out
    return []


def emit(s: "_Summarizer", api: "Api", call: ast.Call, works: tuple, scope: "_Scope", out: list) -> None:
    """A "call_args" event per work symbol, with the labels of what the start hands it."""
    spec = api.get("child_args") if api is not None else None
    if not spec or not works:
        return
    from cudalint.summary.labels import keep, labels_of

    given: dict[str, frozenset] = {}
    for part in str(spec).split(";"):
        for slot, expr in _given(s, part.strip(), call, scope):
            found = keep(s, labels_of(s, expr, scope))
            if found:
                given[slot] = given.get(slot, frozenset()) | frozenset(found)
    if not given:
        return
    data = tuple((slot, keep(s, found)) for slot, found in sorted(given.items()))
    for work in works:
        out.append(s.event("call_args", call, (work, data, "child")))  # "child": a process start, not a call
