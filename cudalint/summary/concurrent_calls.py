"""Calls that are concurrent by themselves (catalogue `concurrent_use`): one call that runs the
receiver's context on several threads at once, such as LangChain's `Runnable.batch()` (a thread pool
running `invoke()` for each input) on a `ChatLlamaCpp`.

The summarizer emits a "concurrent_use" event (method, receiver ref) next to the "llama_use" of
such a call, unless its arguments make it serial; `cudalint.analysis.threads` turns it into a use on a
context of its own that overlaps itself (CUD101 without any thread start in the code).

Serial by the arguments (the catalogue says where to look):
- `concurrent_use = "1|config"`: the argument that limits the concurrency; with
  `concurrent_limit = "max_concurrency"` it is a mapping (a dict display, `dict(...)` or any call
  given that keyword, e.g. `RunnableConfig(max_concurrency=1)`) and the limit is under that key;
  a literal 1 is serial;
- `concurrent_inputs = "0|inputs"`: a literal list or tuple of fewer than two inputs runs on one thread.
"""
from __future__ import annotations

import ast
from typing import Optional

from cudalint.core.callargs import arg_expr
from cudalint.core.findings import Step
from cudalint.core.record import record


@record
class Spec:
    limit_slots: str
    limit_key: str
    input_slots: str


def specs(cat) -> dict[str, tuple[Spec, ...]]:
    """Method name -> how each catalogued concurrent call of that name can be made serial."""
    out: dict[str, list[Spec]] = {}
    for api in cat.apis:
        slots = api.get("concurrent_use")
        if slots and "." in api.name:
            spec = Spec(str(slots), api.get("concurrent_limit") or "", api.get("concurrent_inputs") or "")
            out.setdefault(api.name.rsplit(".", 1)[1], []).append(spec)
    return {name: tuple(found) for name, found in out.items()}


def _literal(expr: Optional[ast.AST]):
    from cudalint.summary.syntax import literal

    return literal(expr) if expr is not None else None


def _limit(expr: Optional[ast.AST], key: str):
    if expr is None:
        return None
    if not key:
        return _literal(expr)
    if type(expr) is ast.Dict:
        for k, v in zip(expr.keys, expr.values):  # type: ignore[attr-defined]
            if k is not None and _literal(k) == key:
                return _literal(v)
        return None
    if type(expr) is ast.Call:
        for kw in expr.keywords:  # type: ignore[attr-defined]
            if kw.arg == key:
                return _literal(kw.value)
    return None


def _is_serial(call: ast.Call, spec: Spec) -> bool:
    limit = _limit(arg_expr(call, spec.limit_slots), spec.limit_key)
    if limit == 1 and not isinstance(limit, bool):
        return True
    inputs = arg_expr(call, spec.input_slots) if spec.input_slots else None
    return type(inputs) in (ast.List, ast.Tuple) and len(inputs.elts) < 2 and not any(type(e) is ast.Starred for e in inputs.elts)  # type: ignore[union-attr]


def concurrent(call: ast.Call, method: str, known: dict[str, tuple[Spec, ...]]) -> bool:
    """The call may run its receiver on several threads at once: a concurrent method, and no
    entry of that name would run this call serially."""
    found = known.get(method)
    return bool(found) and not all(_is_serial(call, spec) for spec in found)


def context_of(ctx, ev, method: str, fn_key):
    """The threads one such call runs its work on: several at once, started by this very call."""
    from dataclasses import replace

    step = Step(fn_key[0], ev.loc[0], f"{ev.text} runs .{method}()'s work on a thread pool of its own, several inputs at once")
    return replace(
        ctx,
        id=f"concurrent:{fn_key[0]}:{ev.loc[0]}:{ev.loc[1]}",
        many=True,
        locks=frozenset(),  # a lock the caller holds does not keep the call's own threads apart
        steps=ctx.steps + (step,),
        how=f"the worker threads .{method}() starts for its inputs",
        parent=fn_key,
        spawn_many=True,
        own_instance=None,
    )


def work_exprs(call: ast.Call, slots: str) -> tuple[list, bool]:
    """The arguments holding the work, and whether one call hands over several pieces at once.
    `"*"` (`asyncio.gather(a(), b())`, `gather(*(f(x) for x in xs))`): every positional argument,
    a starred one or a comprehension standing for many."""
    if slots != "*":
        expr = arg_expr(call, slots)
        return ([expr] if expr is not None else []), False
    out = []
    several = len(call.args) > 1
    for expr in call.args:
        if type(expr) is ast.Starred:
            expr, several = expr.value, True  # type: ignore[attr-defined]
        if type(expr) in (ast.GeneratorExp, ast.ListComp, ast.SetComp):
            expr, several = expr.elt, True  # type: ignore[attr-defined]
        out.append(expr)
    return out, several
