"""Value labels: what a variable may hold, for rules about values rather than call order.

The summarizer keeps, next to the types of its variables (`_Scope.types`), a set of labels per
variable, computed from the assigned expression in its one traversal:

- "nvml": a GPU index in NVML / nvidia-smi numbering (physical, PCI order; ignores
  CUDA_VISIBLE_DEVICES), or a collection of them (`range(pynvml.nvmlDeviceGetCount())`, the output
  of `nvidia-smi`, the GPU objects of `GPUtil.getGPUs()` whose `.id` is such an index).
- "cuda": a CUDA ordinal (numbered after CUDA_VISIBLE_DEVICES): `torch.cuda.current_device()`,
  `device.index`, a local rank.
- "ret": the value returned by a project function (`detail` = its call symbol), resolved by the
  checks once every module is summarized (the callee may be defined later or in another module).
- "context": a multiprocessing context object; `detail` is its start method ("" = the default one).
- "process": a process, pool or executor object; `detail` is its start method spec, `works` the
  functions it will run, `starts_on` the methods that start the children ("" = started already).

Which calls produce or consume which labels is catalogue data (`nvml_index_source`,
`cuda_ordinal_source`, `cuda_ordinal_sink`, `nvml_index_sink`, `index_attribute`, `ordinal_map`,
`starts_process`, `child_work`, `starts_on`, `start_method_arg`); this module only moves labels
along assignments, loops, returns and expressions, and emits the events the checks judge.

Labels are flow-insensitive within a statement and follow assignment order within a body (a later
assignment replaces them, as for types); branches are not joined.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Optional, Sequence

import builtins

import libcst as cst

from cudalint.callargs import arg_expr
from cudalint.ir import Label

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.catalogue import Api, Catalogue
    from cudalint.summarize import _Scope, _Summarizer


EMPTY: frozenset = frozenset()
STDLIB_PARTIAL = "functools.partial"


# ---------- catalogue views ----------------------------------------------------------------------
@dataclass(frozen=True)
class _View:
    index_attributes: frozenset[str]
    cuda_attributes: frozenset[str]
    cuda_env: frozenset[str]


@lru_cache(maxsize=8)
def _view(cat: "Catalogue") -> _View:
    return _View(
        index_attributes=frozenset(a.get("index_attribute") for a in cat.apis if a.get("index_attribute")),
        cuda_attributes=frozenset(a.name for a in cat.apis if a.kind == "attribute" and a.get("cuda_ordinal_source")),
        cuda_env=frozenset(a.name for a in cat.apis if a.kind == "env_read" and a.get("cuda_ordinal_source")),
    )


def _slots(spec: str) -> tuple[str, ...]:
    return tuple(p for p in spec.split("|") if p)


def _label(s: "_Summarizer", kind: str, node: cst.CSTNode, **kw) -> Label:
    return Label(kind=kind, origin=node, text=s.text(node), **kw)


def keep(s: "_Summarizer", labels: Iterable[Label]) -> tuple[Label, ...]:
    """Labels that go into the IR: their origins need positions."""
    out = tuple(lb for lb in labels if lb.kind in ("nvml", "cuda", "ret"))
    for lb in out:
        s.wanted.append(lb.origin)  # type: ignore[arg-type]
    return out


def for_event(s: "_Summarizer", expr: cst.BaseExpression, scope: "_Scope") -> tuple[Label, ...]:
    return keep(s, labels_of(s, expr, scope))


# ---------- labels of an expression ----------------------------------------------------------------
def labels_of(s: "_Summarizer", expr: Optional[cst.BaseExpression], scope: "_Scope") -> frozenset:
    if expr is None:
        return EMPTY
    if isinstance(expr, cst.Name):
        return scope.lookup_labels(expr.value)
    if isinstance(expr, cst.Call):
        return _call_labels(s, expr, scope)
    if isinstance(expr, cst.Attribute):
        base = labels_of(s, expr.value, scope)
        attr = expr.attr.value
        view = _view(s.cat)
        nvml = frozenset(lb for lb in base if lb.kind == "nvml")
        if nvml:
            # GPU objects (GPUtil's GPU) carry the index in one attribute; other values
            # (nvidia-smi's CompletedProcess, its text) carry it along
            return frozenset(lb for lb in nvml if not lb.detail or lb.detail == attr)
        if attr in view.cuda_attributes:
            return frozenset({_label(s, "cuda", expr)})
        return EMPTY
    if isinstance(expr, cst.Subscript):
        if s.is_env(expr.value, scope):
            return _env_read(s, expr, s.subscript_key(expr, scope))
        # gpus[0] is one of gpus; visible[rank] is not in rank's numbering
        return labels_of(s, expr.value, scope)
    if isinstance(expr, cst.Lambda):
        return EMPTY
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)):
        return EMPTY
    out: set = set()
    for child in expr.children:
        if isinstance(child, cst.BaseExpression):
            out |= labels_of(s, child, scope)
        elif isinstance(child, (cst.FormattedStringExpression, cst.Element, cst.StarredElement, cst.DictElement, cst.CompFor, cst.Arg)):
            for sub in child.children:
                if isinstance(sub, cst.BaseExpression):
                    out |= labels_of(s, sub, scope)
                elif isinstance(sub, cst.CompFor):
                    out |= labels_of(s, sub.iter, scope)
    return frozenset(out)


def _env_read(s: "_Summarizer", node: cst.CSTNode, key: str) -> frozenset:
    if key and key in _view(s.cat).cuda_env:
        return frozenset({_label(s, "cuda", node)})
    return EMPTY


def _applicable(s: "_Summarizer", q: str, call: cst.Call, scope: "_Scope") -> list["Api"]:
    return [api for api in s.cat.calls_named(q) if s.applies(api, call, scope)]


def _call_labels(s: "_Summarizer", call: cst.Call, scope: "_Scope") -> frozenset:
    func = call.func
    q = s.qualify(func, scope)
    if isinstance(func, cst.Attribute) and s.is_env(func.value, scope) and func.attr.value in ("get", "pop", "setdefault") and call.args:
        return _env_read(s, call, s.key_of(call.args[0].value, scope))
    if q == "os.getenv" and call.args:
        return _env_read(s, call, s.key_of(call.args[0].value, scope))
    if q is not None and not q.startswith(":"):
        apis = _applicable(s, q, call, scope)
        if apis:
            return _catalogued(s, apis, call, scope)
    if isinstance(func, cst.Attribute):
        receiver = labels_of(s, func.value, scope)
        if s.receiver_is_value(func.value, scope):
            for api in s.cat.methods.get(func.attr.value, ()):
                if api.get("ordinal_map") and s.applies(api, call, scope):
                    return EMPTY  # visible.index(physical): mapped into the other numbering
    else:
        receiver = EMPTY
    if q is None and isinstance(func, cst.Name) and not hasattr(builtins, func.value):
        q = ":" + func.value  # a function of this module defined further down
    if q is not None and (q.startswith(":") or s.maybe_project(q)):
        # a project function: its return labels are known once every module is summarized
        return frozenset({_label(s, "ret", call, detail=q)})
    out = set(receiver)
    for arg in call.args:
        out |= labels_of(s, arg.value, scope)
    # a builtin or unknown callable (int(), str(), range(), sorted(), ",".join(...)) keeps the
    # numbering of what it is given; objects made from them (handles, contexts) are not passed on
    return frozenset(lb for lb in out if lb.kind in ("nvml", "cuda", "ret"))


def _catalogued(s: "_Summarizer", apis: list["Api"], call: cst.Call, scope: "_Scope") -> frozenset:
    out: set = set()
    for api in apis:
        if api.get("nvml_index_source"):
            out.add(_label(s, "nvml", call, api=api.name, detail=api.get("index_attribute", "")))
        if api.get("cuda_ordinal_source"):
            out.add(_label(s, "cuda", call, api=api.name))
        if api.get("start_method_arg") and api.get("returns"):
            out.add(_label(s, "context", call, detail=_method_literal(s, call, api, scope), api=api.name))
        if api.get("starts_process") and api.get("returns"):
            out.add(_process_label(s, api, call, scope))
    return frozenset(out)


def _method_literal(s: "_Summarizer", call: cst.Call, api: "Api", scope: "_Scope") -> str:
    val = s.arg_value(call, _slots(api.get("start_method_arg")), scope)
    if val is None:
        return ""
    return val if isinstance(val, str) else "?"


def _process_label(s: "_Summarizer", api: "Api", call: cst.Call, scope: "_Scope") -> Label:
    spec = _method_spec(s, api, call, scope)
    works = _work_symbols(s, call, api.get("child_work", ""), scope)
    starts_on = _slots(api.get("starts_on", ""))
    return _label(s, "process", call, detail=spec, api=api.name, works=works, starts_on=starts_on, rtype=api.get("returns", ""))


def _method_spec(s: "_Summarizer", api: "Api", call: cst.Call, scope: "_Scope") -> str:
    """fork | spawn | forkserver | exec | default | ? (a method we cannot read)."""
    how = api.get("starts_process") or ("fork" if api.get("forks") else "")
    if how != "context":
        return how
    # a context's method: the receiver (ctx.Process), or an mp_context= argument
    func = call.func
    sources: list[frozenset] = []
    if isinstance(func, cst.Attribute):
        sources.append(labels_of(s, func.value, scope))
    if api.get("start_method_arg"):
        sources.append(labels_of(s, arg_expr(call, api.get("start_method_arg")), scope))
    for labels in sources:
        for lb in labels:
            if lb.kind == "context":
                return lb.detail or "default"
    return "default"


def _work_symbols(s: "_Summarizer", call: cst.Call, spec: str, scope: "_Scope") -> tuple[str, ...]:
    if not spec:
        return ()
    expr = arg_expr(call, spec)
    sym = work_symbol(s, expr, scope)
    return (sym,) if sym else ()


def work_symbol(s: "_Summarizer", expr: Optional[cst.BaseExpression], scope: "_Scope") -> Optional[str]:
    """The project function a child will run: `f`, `mod.f`, `self.m`, `functools.partial(f, ...)`."""
    if expr is None:
        return None
    if isinstance(expr, cst.Call) and s.qualify(expr.func, scope) == STDLIB_PARTIAL and expr.args:
        return work_symbol(s, expr.args[0].value, scope)
    q = s.qualify(expr, scope)
    if q is not None:
        return q
    if isinstance(expr, cst.Name):
        return ":" + expr.value  # defined later in this module: resolved when the checks run
    return None


# ---------- hooks called by the summarizer ---------------------------------------------------------
def on_bind(s: "_Summarizer", target: cst.BaseExpression, value: Optional[cst.BaseExpression], scope: "_Scope") -> None:
    if value is None:
        if isinstance(target, cst.Name):
            scope.labels[target.value] = EMPTY
        return
    _assign(target, labels_of(s, value, scope), scope)


def _assign(target: cst.BaseExpression, labels: frozenset, scope: "_Scope") -> None:
    if isinstance(target, cst.Name):
        scope.labels[target.value] = labels
    elif isinstance(target, (cst.Tuple, cst.List)):
        # `idx, gpu = ...`, `for i, gpu in enumerate(gpus)`: each part may be in that numbering
        for el in target.elements:
            _assign(el.value, frozenset(lb for lb in labels if lb.kind != "process"), scope)


def on_for(s: "_Summarizer", target: cst.BaseExpression, iterable: cst.BaseExpression, scope: "_Scope") -> None:
    _assign(target, labels_of(s, iterable, scope), scope)


def on_return(s: "_Summarizer", value: Optional[cst.BaseExpression], scope: "_Scope") -> None:
    if value is None or not scope.qualname:
        return
    labels = keep(s, labels_of(s, value, scope))
    if labels:
        s.wanted.append(value)
        ret = Label(kind="return", origin=value, text=s.text(value), inner=labels)
        s.return_labels.setdefault(scope.qualname, set()).add(ret)


def on_params(s: "_Summarizer", params: Sequence[cst.Param], scope: "_Scope") -> None:
    # `args.local_rank` and a parameter `local_rank` mean the same; a parameter called `index`
    # (the `.index` of a torch.device) says nothing about its numbering
    names = _view(s.cat).cuda_attributes - {"index"}
    for param in params:
        name = param.name.value
        if name in names:
            scope.labels[name] = frozenset({_label(s, "cuda", param.name)})


def api_effects(s: "_Summarizer", api: "Api", call: cst.Call, scope: "_Scope", out: list) -> None:
    """Events for a catalogued call: device-index sinks, process starts, the start method."""
    for sink, field in (("cuda", "cuda_ordinal_sink"), ("nvml", "nvml_index_sink")):
        spec = api.get(field)
        if not spec:
            continue
        found: set = set()
        texts = []
        for slot in _slots(spec):
            expr = arg_expr(call, slot)
            if expr is not None:
                found |= labels_of(s, expr, scope)
                texts.append(s.text(expr))
        kept = keep(s, found)
        if kept:
            out.append(s.event("gpu_index", call, (sink, api.name, kept, ", ".join(texts))))
    if api.get("start_method_arg") and not api.get("returns"):
        out.append(s.event("start_method", call, (_method_literal(s, call, api, scope) or "default",)))
    how = api.get("starts_process") or ("fork" if api.get("forks") else "")
    if how and how != "exec" and not api.get("starts_on"):
        # the children start now (os.fork(), Pool(...), torch.multiprocessing.spawn(...))
        spec = _method_spec(s, api, call, scope)
        works = _work_symbols(s, call, api.get("child_work", ""), scope)
        out.append(s.event("process", call, (api.name, spec, works, "fork" if api.get("forks") else "pool")))


def method_call(s: "_Summarizer", call: cst.Call, q: Optional[str], scope: "_Scope", out: list) -> None:
    """`p.start()`, `ex.submit(f)`, `pool.map(f, xs)` on a process-like value; `W().start()` of a
    project subclass of a catalogued process class."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return
    method = func.attr.value
    for lb in labels_of(s, func.value, scope):
        if lb.kind != "process":
            continue
        work_api = next(iter(s.cat.calls_named(f"{lb.rtype}.{method}")), None) if lb.rtype else None
        works = _work_symbols(s, call, work_api.get("child_work", "") if work_api else "", scope)
        if method in lb.starts_on:
            out.append(s.event("process", call, (lb.api, lb.detail, lb.works + works, "start")))
        elif not lb.starts_on and works:
            s.wanted.append(lb.origin)  # type: ignore[arg-type]
            out.append(s.event("child_work", call, (lb.origin, works)))
    if q and q.startswith(":") and method:
        _subclass_start(s, call, q, method, out)


def _subclass_start(s: "_Summarizer", call: cst.Call, q: str, method: str, out: list) -> None:
    cls = q[1:].rpartition(".")[0]
    seen: set[str] = set()
    while cls in s.classes and cls not in seen:
        seen.add(cls)
        for base in s.classes[cls].bases:
            if base.startswith(":"):
                continue
            for api in s.cat.calls_named(base):
                if api.get("starts_process") and method in _slots(api.get("starts_on", "")):
                    # the child runs the subclass's run(); its __init__ ran in the parent
                    work = f":{q[1:].rpartition('.')[0]}.run"
                    out.append(s.event("process", call, (api.name, "default", (work,), "start")))
                    return
        nxt = [b[1:] for b in s.classes[cls].bases if b.startswith(":")]
        if not nxt:
            return
        cls = nxt[0]


# ---------- finalizing ---------------------------------------------------------------------------------
def freeze(obj: object, pos: dict) -> object:
    """Replace the cst nodes in event data and labels by their line numbers."""
    if isinstance(obj, Label):
        origin = obj.origin
        if isinstance(origin, cst.CSTNode):
            origin = pos.get(id(origin), (0,))[0]
        return replace(obj, origin=origin, inner=freeze(obj.inner, pos))
    if isinstance(obj, cst.CSTNode):
        return pos.get(id(obj), (0,))[0]
    if isinstance(obj, tuple):
        if not any(isinstance(x, (Label, cst.CSTNode, tuple)) for x in obj):
            return obj
        return tuple(freeze(x, pos) for x in obj)
    return obj


def iter_labels(labels: Iterable[Label]) -> Iterable[Label]:
    return labels
