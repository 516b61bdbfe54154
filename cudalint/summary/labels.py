"""Value labels: what a variable may hold, for rules about values rather than call order.

The summarizer keeps, next to the types of its variables (`_Scope.types`), a set of labels per
variable, computed from the assigned expression in its one traversal:

- "nvml": a GPU index in NVML / nvidia-smi numbering (physical, PCI order; ignores
  CUDA_VISIBLE_DEVICES), or a collection of them (`range(pynvml.nvmlDeviceGetCount())`, the output
  of `nvidia-smi`, the GPU objects of `GPUtil.getGPUs()` whose `.id` is such an index).
- "cuda": a CUDA ordinal (numbered after CUDA_VISIBLE_DEVICES): `torch.cuda.current_device()`,
  `device.index`, a local rank.
- "ret": the value returned by a project function (`detail` = its call symbol), resolved by the
  checks once every module is summarized (the callee may be defined later or in another module);
  `inner` holds the labels of its arguments, which the result keeps when the symbol turns out not
  to be a project function (`np.argmax(free)`).
- "param": a parameter's value (`detail` = "function qualname|position|name"): the arguments given
  at the call sites ("call_args" events), resolved by the checks (cudalint.checks.param_flow).
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

from typing import TYPE_CHECKING, Iterable, Optional, Sequence

import builtins

import ast
import sys

from cudalint.core.callargs import arg_expr, args_of, first_arg, slotted
from cudalint.core.ir import Label
from cudalint.core.positions import Span
from cudalint.core.record import record, replace
from cudalint.summary import fallbacks
from cudalint.summary.syntax import NO_LABELS

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.core.catalogue import Api, Catalogue
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer


EMPTY = NO_LABELS
STDLIB_PARTIAL = "functools.partial"
# the labels that go into the IR: a numbering, or where one is decided later (a project function's
# return value, a parameter's arguments at the call sites)
FLOWING = ("nvml", "cuda", "ret", "param")


# ---------- catalogue views ----------------------------------------------------------------------
@record
class _View:
    index_attributes: frozenset[str]
    index_containers: frozenset[str]
    cuda_attributes: frozenset[str]
    cuda_env: frozenset[str]


_VIEWS: dict[int, tuple["Catalogue", _View]] = {}


def view(cat: "Catalogue") -> _View:
    """The catalogue's facts this module asks for, computed once per catalogue (kept by identity:
    hashing a catalogue hashes every entry, and this is asked once per function)."""
    got = _VIEWS.get(id(cat))
    if got is not None and got[0] is cat:
        return got[1]
    made = _View(
        index_attributes=frozenset(a.get("index_attribute") for a in cat.apis if a.get("index_attribute")),
        index_containers=frozenset(a.get("index_container") for a in cat.apis if a.get("index_container")),
        cuda_attributes=frozenset(a.name for a in cat.apis if a.kind == "attribute" and a.get("cuda_ordinal_source")),
        cuda_env=frozenset(a.name for a in cat.apis if a.kind == "env_read" and a.get("cuda_ordinal_source")),
    )
    _VIEWS[id(cat)] = (cat, made)
    return made


def _slots(spec: str) -> tuple[str, ...]:
    return tuple(p for p in spec.split("|") if p)


def _label(s: "_Summarizer", kind: str, node: ast.AST, **kw) -> Label:
    return Label(kind=kind, origin=node, text=s.text(node), **kw)


# A call's result keeps its arguments' labels inside its own (`inner`), and so on down a chain of
# calls: `x = self.a(x); x = self.b(x); ...` in a model's forward nested them one level per statement,
# and summarizing timm took 36 s and 680 MB instead of 7 s and 43 MB. Past this depth the inner
# labels are dropped: a numbering that passes through more than this many project calls in a row is
# not followed.
MAX_INNER_DEPTH = 3


def bounded(labels: tuple[Label, ...], depth: int = MAX_INNER_DEPTH) -> tuple[Label, ...]:
    """`labels` with their `inner` labels cut below `depth` levels."""
    if not any(lb.inner for lb in labels):
        return labels
    if depth <= 0:
        return tuple(_with_inner(lb, ()) if lb.inner else lb for lb in labels)
    return tuple(_with_inner(lb, bounded(lb.inner, depth - 1)) if lb.inner else lb for lb in labels)


def _with_inner(lb: Label, inner: tuple) -> Label:
    # (the constructor, not record.replace, as `freeze` does; no class derives from Label)
    return Label(lb.kind, lb.origin, lb.text, lb.detail, lb.api, lb.works, lb.starts_on, lb.rtype, inner)


def keep(s: "_Summarizer", labels: Iterable[Label]) -> tuple[Label, ...]:
    """Labels that go into the IR, in source order."""
    return in_order(lb for lb in labels if lb.kind in FLOWING)


def in_order(labels: Iterable[Label]) -> tuple[Label, ...]:
    """Labels come in sets, which order them by the address of their syntax node: the IR lists them
    by where they are in the source, so the same bytes always make the same summary (its encoding
    names the summary in cudalint.engine.run_keys, and the first label names a finding's cause)."""
    return tuple(sorted(labels, key=_place))


def _place(lb: Label) -> tuple:
    o = lb.origin
    line = o if type(o) is int else getattr(o, "lineno", 0)
    return (line, getattr(o, "col_offset", 0), lb.kind, lb.text, lb.detail, lb.api, lb.rtype, lb.works, lb.starts_on, len(lb.inner))


def for_event(s: "_Summarizer", expr: ast.expr, scope: "_Scope") -> tuple[Label, ...]:
    return keep(s, labels_of(s, expr, scope))


# ---------- labels of an expression ----------------------------------------------------------------
def labels_of(s: "_Summarizer", expr: Optional[ast.AST], scope: "_Scope") -> frozenset:
    if expr is None:
        return EMPTY
    kind = type(expr)
    if kind is ast.Name:
        return scope.lookup_labels(expr.id)  # type: ignore[attr-defined]
    if kind is ast.Call:
        return _call_labels(s, expr, scope)  # type: ignore[arg-type]
    if kind is ast.Attribute:
        base = labels_of(s, expr.value, scope)  # type: ignore[attr-defined]
        attr = expr.attr  # type: ignore[attr-defined]
        nvml = frozenset(lb for lb in base if lb.kind == "nvml")
        if nvml:
            # GPU objects (GPUtil's GPU) carry the index in one attribute; other values
            # (nvidia-smi's CompletedProcess, its text) carry it along, and so does the list of GPU
            # objects a collection holds (gpustat's `.gpus`)
            return frozenset(lb for lb in nvml if not lb.detail or lb.detail == attr or attr in s.view.index_containers)
        if attr in s.view.cuda_attributes:
            return frozenset({_label(s, "cuda", expr)})
        return EMPTY
    if kind is ast.Subscript:
        if s.is_env(expr.value, scope):  # type: ignore[attr-defined]
            return _env_read(s, expr, s.subscript_key(expr, scope))  # type: ignore[arg-type]
        # gpus[0] is one of gpus; visible[rank] is not in rank's numbering
        return labels_of(s, expr.value, scope)  # type: ignore[attr-defined]
    if kind is ast.Lambda or kind is ast.Constant:
        return EMPTY
    if kind is ast.IfExp:
        mapped = fallbacks.mapped_when_possible(expr)  # type: ignore[arg-type]
        if mapped is not None:
            return labels_of(s, mapped, scope)
    out: set = set()
    for child in _parts(expr):
        out |= labels_of(s, child, scope)
    return frozenset(out)


def _parts(expr: ast.AST) -> list:
    """The sub-expressions whose labels an expression carries along."""
    kind = type(expr)
    if kind is ast.Compare:
        return [expr.left]  # type: ignore[attr-defined]  # a comparison's result is a bool, its left side aside
    if kind is ast.Dict:
        out: list = []
        for key, value in zip(expr.keys, expr.values):  # type: ignore[attr-defined]
            if key is not None:  # `**other`: not followed
                out += [key, value]
        return out
    if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
        out = [expr.key, expr.value] if kind is ast.DictComp else [expr.elt]  # type: ignore[attr-defined]
        for gen in expr.generators:  # type: ignore[attr-defined]
            out += [gen.target, gen.iter]
        return out
    if kind is ast.FormattedValue:
        return [expr.value]  # type: ignore[attr-defined]
    if kind is ast.YieldFrom:
        return []
    from cudalint.summary.syntax import _children

    return _children(expr)


def _env_read(s: "_Summarizer", node: ast.AST, key: str) -> frozenset:
    if key and key in s.view.cuda_env:
        return frozenset({_label(s, "cuda", node)})
    return EMPTY


def _applicable(s: "_Summarizer", q: str, call: ast.Call, scope: "_Scope") -> list["Api"]:
    return [api for api in s.cat.calls_named(q) if s.applies(api, call, scope)]


def _call_labels(s: "_Summarizer", call: ast.Call, scope: "_Scope") -> frozenset:
    func = call.func
    q = s.qualify(func, scope)
    args = args_of(call)
    if type(func) is ast.Attribute and s.is_env(func.value, scope) and func.attr in ("get", "pop", "setdefault") and args:
        return _env_read(s, call, s.key_of(args[0].value, scope))
    if q == "os.getenv" and args:
        return _env_read(s, call, s.key_of(args[0].value, scope))
    if q is not None and not q.startswith(":"):
        apis = _applicable(s, q, call, scope)
        if apis:
            return _catalogued(s, apis, call, scope)
    if type(func) is ast.Attribute:
        receiver = labels_of(s, func.value, scope)
        if s.receiver_is_value(func.value, scope):
            for api in s.cat.methods.get(func.attr, ()):
                if api.get("ordinal_map") and s.applies(api, call, scope):
                    # visible.index(physical): a position in a list that carries no numbering, so
                    # mapped into the other one; a position in a per-GPU list built over one numbering
                    # (`free.index(max(free))`, free = [... for i in range(nvmlDeviceGetCount())]) is
                    # an index in that numbering
                    return frozenset(lb for lb in receiver if lb.kind in ("nvml", "cuda"))
    else:
        receiver = EMPTY
    if q is None and type(func) is ast.Name and func.id == "open" and s.output_files:
        return _read_back(s, call, scope)
    if q is None and type(func) is ast.Name and not hasattr(builtins, func.id):
        q = ":" + func.id  # a function of this module defined further down
    out = set(receiver)
    for arg in args:
        out |= labels_of(s, arg.value, scope)
    if q is not None and (q.startswith(":") or s.maybe_project(q)):
        # a project function: its return labels are known once every module is summarized; when
        # the name is not one (`np.argmax(free)`: a library the catalogue does not know), the
        # result keeps what it was given, as a builtin's does
        given = bounded(tuple(lb for lb in out if lb.kind in FLOWING))
        return frozenset({_label(s, "ret", call, detail=q, inner=given)})
    # a builtin or unknown callable (int(), str(), range(), sorted(), ",".join(...)) keeps the
    # numbering of what it is given; objects made from them (handles, contexts) are not passed on
    return frozenset(lb for lb in out if lb.kind in FLOWING)


def _catalogued(s: "_Summarizer", apis: list["Api"], call: ast.Call, scope: "_Scope") -> frozenset:
    out: set = set()
    for api in apis:
        if api.get("nvml_index_source"):
            made = _label(s, "nvml", call, api=api.name, detail=api.get("index_attribute", ""))
            out.add(made)
            if api.get("output_file"):
                _redirected(s, call, api.get("output_file"), made, scope)
        if api.get("cuda_ordinal_source"):
            out.add(_label(s, "cuda", call, api=api.name))
        if api.get("start_method_arg") and api.get("returns"):
            out.add(_label(s, "context", call, detail=_method_literal(s, call, api, scope), api=api.name))
        if api.get("starts_process") and api.get("returns"):
            out.add(_process_label(s, api, call, scope))
    return frozenset(out)


def _redirected(s: "_Summarizer", call: ast.Call, slots: str, made: Label, scope: "_Scope") -> None:
    """`os.system("nvidia-smi ... > tmp")`: the file `tmp` now holds the tool's output."""
    command = s.arg_value(call, _slots(slots), scope)
    if isinstance(command, str) and ">" in command:
        name = command.rsplit(">", 1)[1].strip().split(" ")[0].strip("'\"")
        if name and "*" not in name:
            s.output_files[name] = made


def _read_back(s: "_Summarizer", call: ast.Call, scope: "_Scope") -> frozenset:
    """`open("tmp")` of a file a tool's output was redirected to: the lines carry its label."""
    first = first_arg(call)
    name = s.key_of(first, scope) if first is not None else ""
    made = s.output_files.get(name) if name else None
    return frozenset({made}) if made is not None else EMPTY


def _method_literal(s: "_Summarizer", call: ast.Call, api: "Api", scope: "_Scope") -> str:
    val = s.arg_value(call, _slots(api.get("start_method_arg")), scope)
    if val is None:
        return ""
    return val if isinstance(val, str) else "?"


def _process_label(s: "_Summarizer", api: "Api", call: ast.Call, scope: "_Scope") -> Label:
    spec = _method_spec(s, api, call, scope)
    works = _work_symbols(s, call, api.get("child_work", ""), scope)
    starts_on = _slots(api.get("starts_on", ""))
    return _label(s, "process", call, detail=spec, api=api.name, works=works, starts_on=starts_on, rtype=api.get("returns", ""))


def _method_spec(s: "_Summarizer", api: "Api", call: ast.Call, scope: "_Scope") -> str:
    """fork | spawn | forkserver | exec | default | ? (a method we cannot read)."""
    how = api.get("starts_process") or ("fork" if api.get("forks") else "")
    if how != "context":
        return how
    # a context's method: the receiver (ctx.Process), or an mp_context= argument
    func = call.func
    sources: list[frozenset] = []
    if type(func) is ast.Attribute:
        sources.append(labels_of(s, func.value, scope))
    if api.get("start_method_arg"):
        sources.append(labels_of(s, arg_expr(call, api.get("start_method_arg")), scope))
    for labels in sources:
        for lb in labels:
            if lb.kind == "context":
                return lb.detail or "default"
    return "default"


def _work_symbols(s: "_Summarizer", call: ast.Call, spec: str, scope: "_Scope") -> tuple[str, ...]:
    if not spec:
        return ()
    expr = arg_expr(call, spec)
    sym = work_symbol(s, expr, scope)
    return (sym,) if sym else ()


def work_symbol(s: "_Summarizer", expr: Optional[ast.AST], scope: "_Scope") -> Optional[str]:
    """The project function a child will run: `f`, `mod.f`, `self.m`, `functools.partial(f, ...)`."""
    if expr is None:
        return None
    if type(expr) is ast.Call and s.qualify(expr.func, scope) == STDLIB_PARTIAL and first_arg(expr) is not None:  # type: ignore[attr-defined,arg-type]
        return work_symbol(s, first_arg(expr), scope)  # type: ignore[arg-type]
    q = s.qualify(expr, scope)
    if q is not None:
        return q
    if type(expr) is ast.Name:
        return ":" + expr.id  # type: ignore[attr-defined]  # defined later in this module: resolved when the checks run
    return None


# ---------- hooks called by the summarizer ---------------------------------------------------------
def on_bind(s: "_Summarizer", target: ast.expr, value: Optional[ast.expr], scope: "_Scope") -> None:
    if value is None:
        if type(target) is ast.Name:
            scope.labels[target.id] = EMPTY  # type: ignore[attr-defined]
        return
    _assign(target, labels_of(s, value, scope), scope)


def _assign(target: ast.expr, labels: frozenset, scope: "_Scope") -> None:
    kind = type(target)
    if kind is ast.Name:
        scope.labels[target.id] = labels  # type: ignore[attr-defined]
    elif kind is ast.Tuple or kind is ast.List:
        # `idx, gpu = ...`, `for i, gpu in enumerate(gpus)`: each part may be in that numbering
        for el in target.elts:  # type: ignore[attr-defined]
            _assign(el.value if type(el) is ast.Starred else el, frozenset(lb for lb in labels if lb.kind != "process"), scope)


def on_for(s: "_Summarizer", target: ast.expr, iterable: ast.expr, scope: "_Scope") -> None:
    _assign(target, labels_of(s, iterable, scope), scope)


def on_return(s: "_Summarizer", value: Optional[ast.expr], scope: "_Scope") -> None:
    if value is None or not scope.qualname:
        return
    labels = keep(s, labels_of(s, value, scope))
    if labels:
        ret = Label(kind="return", origin=value, text=s.text(value), inner=labels)
        s.return_labels.setdefault(scope.qualname, set()).add(ret)


def on_params(s: "_Summarizer", params: Sequence[ast.arg], scope: "_Scope") -> None:
    # `args.local_rank` and a parameter `local_rank` mean the same; a parameter called `index`
    # (the `.index` of a torch.device) says nothing about its numbering
    names = s.view.cuda_attributes - {"index"}
    for i, param in enumerate(params):
        name = param.arg
        found = {_label(s, "param", param, detail=f"{scope.qualname}|{i}|{name}")}
        if name in names:
            found.add(_label(s, "cuda", param))
        scope.labels[name] = frozenset(found)


def call_args(s: "_Summarizer", call: ast.Call, q: str, scope: "_Scope", out: list) -> None:
    """A project function called with values of a numbering: ("call_args", (symbol, ((slot, labels), ...)))."""
    given = []
    for slot, arg in slotted(call):
        found = keep(s, labels_of(s, arg.value, scope))
        if found:
            given.append((slot, found))
    if given:
        out.append(s.event("call_args", call, (q, tuple(given))))


_ADDERS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft"})


def _add_to(s: "_Summarizer", container: ast.AST, value: Optional[ast.AST], scope: "_Scope") -> None:
    """`gpus.append(i)`, `free[i] = mem`: the container now also holds values of that numbering."""
    if type(container) is not ast.Name or value is None:
        return
    added = frozenset(lb for lb in labels_of(s, value, scope) if lb.kind in FLOWING)
    if added:
        name = container.id  # type: ignore[attr-defined]
        scope.labels[name] = scope.lookup_labels(name) | added


def on_store(s: "_Summarizer", target: ast.Subscript, value: Optional[ast.AST], scope: "_Scope") -> None:
    _add_to(s, target.value, value, scope)
    _add_to(s, target.value, target.slice, scope)  # free[i] = ...: the list is indexed by i's numbering


def _subclass_start(s: "_Summarizer", call: ast.Call, q: str, method: str, out: list) -> None:
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
def freeze(obj: object, memo: Optional[dict] = None) -> object:
    """Replace the syntax nodes in event data and labels by their line numbers. Strings are interned:
    the same names recur in thousands of events and labels (cudalint.engine.serialize.loads).
    `memo` (id -> (label, frozen label)): one summary's labels recur in many events; the label is
    kept beside its id, so the id is never reused for another object while the memo lives."""
    kind = type(obj)
    if kind is str:
        return sys.intern(obj)  # type: ignore[arg-type]
    if kind is Label:
        if memo is not None:
            hit = memo.get(id(obj))
            if hit is not None:
                return hit[1]
        lb: Label = obj  # type: ignore[assignment]
        origin = lb.origin
        if isinstance(origin, (ast.AST, Span)):
            origin = origin.lineno
        inner = freeze(in_order(lb.inner), memo) if lb.inner else lb.inner
        # (the constructor, not record.replace: a fifth of the cost, the same fields)
        out = Label(lb.kind, origin, sys.intern(lb.text), sys.intern(lb.detail), lb.api, lb.works, lb.starts_on, lb.rtype, inner)
        if memo is not None:
            memo[id(obj)] = (obj, out)
        return out
    if kind is tuple:
        out_items = None
        for i, x in enumerate(obj):  # type: ignore[arg-type]
            t = type(x)
            if t is int or x is None or t is bool:
                y = x
            elif t is str:
                y = sys.intern(x)
            else:
                y = freeze(x, memo)
            if out_items is None:
                if y is x:
                    continue
                out_items = list(obj[:i])  # type: ignore[index]
            out_items.append(y)
        return obj if out_items is None else tuple(out_items)
    if isinstance(obj, Label):  # (a subclass keeps its class)
        origin = obj.origin
        if isinstance(origin, (ast.AST, Span)):
            origin = origin.lineno
        inner = freeze(in_order(obj.inner), memo) if obj.inner else obj.inner
        return replace(obj, origin=origin, inner=inner, text=sys.intern(obj.text), detail=sys.intern(obj.detail))
    if isinstance(obj, (ast.AST, Span)):
        return obj.lineno  # type: ignore[union-attr]
    if isinstance(obj, str):
        return sys.intern(obj)
    if isinstance(obj, tuple):
        if not any(isinstance(x, (Label, ast.AST, Span, tuple, str)) for x in obj):
            return obj
        return tuple(freeze(x, memo) for x in obj)
    return obj


def iter_labels(labels: Iterable[Label]) -> Iterable[Label]:
    return labels
