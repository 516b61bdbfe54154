"""The labels a call adds: a catalogued call's effects on values, and the methods that store into
containers or start threads and processes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional
import ast

from cudalint.summary import child_args
from cudalint.core.callargs import arg_expr
from cudalint.summary.labels import (
    _ADDERS, _add_to, _label, _method_literal, _method_spec, _redirected, _slots, _subclass_start,
    _work_symbols, keep, labels_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.core.catalogue import Api
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer


def api_effects(s: "_Summarizer", api: "Api", call: ast.Call, scope: "_Scope", out: list) -> None:
    """Events for a catalogued call: device-index sinks, process starts, the start method."""
    if api.get("output_file") and api.get("nvml_index_source"):
        _redirected(s, call, api.get("output_file"), _label(s, "nvml", call, api=api.name), scope)
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
    if how == "exec":
        # a new program (subprocess, os.system): it inherits the environment as it is now (CUD001
        # asks whether a late write was meant for it); no start method, no Python work in it
        out.append(s.event("process", call, (api.name, "exec", (), "exec")))
    elif how and not api.get("starts_on"):
        # the children start now (os.fork(), Pool(...), torch.multiprocessing.spawn(...))
        spec = _method_spec(s, api, call, scope)
        works = _work_symbols(s, call, api.get("child_work", ""), scope)
        out.append(s.event("process", call, (api.name, spec, works, "fork" if api.get("forks") else "pool")))
    if how and how != "exec":
        child_args.emit(s, api, call, _work_symbols(s, call, api.get("child_work", ""), scope), scope, out)


def method_call(s: "_Summarizer", call: ast.Call, q: Optional[str], scope: "_Scope", out: list) -> None:
    """`p.start()`, `ex.submit(f)`, `pool.map(f, xs)` on a process-like value; `W().start()` of a
    project subclass of a catalogued process class; `gpus.append(i)`."""
    func = call.func
    if type(func) is not ast.Attribute:
        return
    method = func.attr
    if method in _ADDERS and call.args:
        _add_to(s, func.value, call.args[-1], scope)
    for lb in labels_of(s, func.value, scope):
        if lb.kind != "process":
            continue
        work_api = next(iter(s.cat.calls_named(f"{lb.rtype}.{method}")), None) if lb.rtype else None
        works = _work_symbols(s, call, work_api.get("child_work", "") if work_api else "", scope)
        child_args.emit(s, work_api, call, works, scope, out)
        if method in lb.starts_on:
            out.append(s.event("process", call, (lb.api, lb.detail, lb.works + works, "start")))
        elif not lb.starts_on and works:
            out.append(s.event("child_work", call, (lb.origin, works)))
    if q and q.startswith(":") and method:
        _subclass_start(s, call, q, method, out)


def subscript_sink(s: "_Summarizer", node: ast.Subscript, scope: "_Scope", out: list) -> None:
    """`rows[torch.cuda.current_device()]`, `gpus[local_rank]`: a per-GPU list in NVML / nvidia-smi order
    (its rows, GPUtil's GPUs) taken at a CUDA ordinal, which counts only the visible GPUs in CUDA's
    order (huggingface/accelerate utils/environment.py check_cuda_fp8_capability reads nvidia-smi's
    compute capabilities). A "gpu_index" event of an NVML sink, judged by CUD004 like
    `nvmlDeviceGetHandleByIndex(i)`. Both labels must be the expressions' own (not a project
    function's result or a parameter's callers): a constant subscript (`rows[0]`) is no ordinal."""
    if type(node.ctx) is not ast.Load or type(node.slice) in (ast.Slice, ast.Constant, ast.Tuple):
        return
    index = [lb for lb in labels_of(s, node.slice, scope) if lb.kind == "cuda"]
    rows = [lb for lb in labels_of(s, node.value, scope) if lb.kind == "nvml"] if index else []
    if rows:
        out.append(s.event("gpu_index", node, ("nvml", "[]", keep(s, index), s.text(node.slice), s.text(node.value), keep(s, rows))))
