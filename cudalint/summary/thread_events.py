"""The summarizer's events for the thread rules (CUD101/CUD102), as a mixin of `_Summarizer`.

They are syntactic: where an object is stored or read (a `ref`), which calls may use a llama
context, what is handed to another thread, which `with`/`acquire` may be a lock. Whether a ref
really holds a `Llama` or a lock is decided later, across modules, by `cudalint.analysis.threads`.
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Optional

import ast

from cudalint.summary import concurrent_calls, container_refs
from cudalint.core.callargs import arg_expr, first_arg, positional, slotted

from cudalint.core.catalogue import Api
from cudalint.core.ir import Function, Node
from cudalint.core.positions import Located, Span, span
from cudalint.core.record import replace
from cudalint.summary.syntax import dotted as _dotted, literal as _literal

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summary.syntax import _Scope

_BUILTIN_NAMES = frozenset(dir(builtins))


class ThreadEvents:
    """Mixed into `cudalint.summary.summarize._Summarizer`; uses its `qualify`, `event`, `cat`, `imports`."""

    def init_thread_events(self) -> None:
        tables = self.tables  # (cudalint.summary.summarize._tables: once per catalogue)
        self.touch_names = tables.touch_names
        self.always_streams = tables.always_streams
        self._lambdas = 0
        self._yields: list[bool] = []
        self.makes_llama = False  # cudalint.core.ir.ModuleIR.makes_llama
        self.serial_attrs: set[tuple[str, str]] = set()  # (class, attribute) holding a one-worker pool
        self.concurrent_specs = tables.concurrent_specs
        self.return_types: dict[str, set] = {}  # function -> the local classes its returns build
        self._awaits: Optional[set] = None  # ids of the calls directly awaited

    # ---------- where an object lives ----------------------------------------------------------
    def ref(self, expr: ast.AST, scope: "_Scope") -> Optional[str]:
        kind = type(expr)
        if kind is ast.Await:
            return self.ref(expr.value, scope)  # type: ignore[attr-defined]
        if kind is ast.Name:
            name = expr.id  # type: ignore[attr-defined]
            s = scope
            while s is not None:
                if name in s.globals_:
                    return f"v::{name}"
                if name in s.bound:
                    return f"v:{s.qualname}:{name}"
                s = s.parent
            if name in self.imports:
                return "m:" + self.imports[name]
            if scope.lookup_def(name) is not None or name in _BUILTIN_NAMES:
                return None
            return f"v::{name}"  # a free name is a module global, possibly assigned further down
        if kind is ast.Attribute:
            parts = _dotted(expr)
            if parts is None or len(parts) < 2:
                return None
            head, rest = parts[0], parts[1:]
            if head in ("self", "cls") and scope.cls:
                return f"a:{scope.cls}.{rest[0]}" if len(rest) == 1 else None
            typ = scope.lookup_type(head)
            if typ is not None:
                return f"a:{typ.lstrip(':')}.{rest[0]}" if len(rest) == 1 else None
            if head in self.imports and not self._bound(head, scope):
                return "m:" + ".".join([self.imports[head]] + rest)
            return None
        if kind is ast.Call:
            q = self.qualify(expr.func, scope)  # type: ignore[attr-defined]
            if q and (q.startswith(":") or self.maybe_project(q)):
                return "c:" + q
            looked_up = container_refs.lookup_of(expr)
            if looked_up is not None:
                return container_refs.element_of(self.ref(looked_up, scope))
        if kind is ast.Subscript and type(expr.ctx) is ast.Load:  # type: ignore[attr-defined]
            return container_refs.element_of(self.ref(expr.value, scope))  # type: ignore[attr-defined]
        return None

    def _bound(self, name: str, scope: "_Scope") -> bool:
        s = scope
        while s is not None:
            if name in s.bound:
                return True
            s = s.parent
        return False

    def origin(self, value: ast.AST, scope: "_Scope") -> Optional[str]:
        if self.lean:
            return None  # (a lean summary: cudalint.summary.thread_free)
        kind = type(value)
        if kind is ast.Await:
            return self.origin(value.value, scope)  # type: ignore[attr-defined]
        if kind is ast.Call:
            q = self.callee(value, scope)
            if q and not q.startswith(":"):
                for api in self.cat.calls_named(q):
                    if not self.applies(api, value, scope):
                        continue
                    if api.get("llama_context"):
                        self.makes_llama = True
                        return f"new:{api.name}"
                    if api.get("lock"):
                        return f"lock:{api.name}:{self._lock_serializes(api, value, scope)}"
                    break
            use = self.llama_receiver(value, scope)
            if use is not None and self._stream_flag(value, use[0]) not in ("", "?"):
                return "stream:" + use[1]
            r = self.ref(value, scope)
            if r is None and q and scope.qualname == "" and not q.startswith(":") and self.cat.library_of(q):
                return f"t:{q}"  # a module global made by a library (`app = Flask(...)`), for importers
            if r and r.startswith(container_refs.ELEMENT):
                return "ref:" + r  # `m = models.get(k)`: the element itself
            return r
        if kind is ast.Name or kind is ast.Attribute:
            r = self.ref(value, scope)
            return "ref:" + r if r else None
        one = container_refs.repeated(self, value, scope)
        return "ref:" + one if one else None

    def _lock_serializes(self, api: Api, call: ast.Call, scope: "_Scope") -> int:
        slots = api.get("lock_count")
        if not slots:
            return 1
        expr = arg_expr(call, slots)
        return 1 if expr is None or _literal(expr) == 1 else 0

    def callee(self, call: ast.Call, scope: "_Scope") -> Optional[str]:
        """The qualified name a call runs; calling an instance (`llm(...)`) runs `Type.__call__`."""
        q = self.qualify(call.func, scope)
        func = call.func
        if q and type(func) is ast.Name and scope.lookup_type(func.id) is not None and scope.lookup_def(func.id) is None:
            return q + ".__call__"
        return q

    # ---------- calls that may use a llama context -----------------------------------------------
    def llama_receiver(self, call: ast.Call, scope: "_Scope") -> Optional[tuple[str, str]]:
        """(method, receiver ref) when the call may be a context-touching call on an object."""
        func = call.func
        kind = type(func)
        if kind is ast.Attribute and func.attr in self.touch_names:  # type: ignore[attr-defined]
            r = self.ref(func.value, scope)  # type: ignore[attr-defined]
            return (func.attr, r) if r else None  # type: ignore[attr-defined]
        if kind is ast.Name:
            if func.id in self.imports or scope.lookup_def(func.id) is not None:  # type: ignore[attr-defined]
                return None  # a function; calls of imported objects are `call` events
            r = self.ref(func, scope)
            return ("__call__", r) if r else None
        if kind is ast.Attribute:
            parts = _dotted(func)
            if parts and len(parts) == 2 and (parts[0] in ("self", "cls") or (scope.lookup_type(parts[0]) or "").startswith(":")):
                r = self.ref(func, scope)
                return ("__call__", r) if r else None
        return None

    def _stream_flag(self, call: ast.Call, method: str) -> str:
        if method in self.always_streams:
            return "1"
        for a in call.keywords:
            if a.arg == "stream":
                val = _literal(a.value)
                return "1" if val is True else ("" if val in (False, None) else "?")
        return ""

    def llama_call_events(self, call: ast.Call, scope: "_Scope", out: list[Node]) -> None:
        if self.lean:
            return  # (a lean summary: cudalint.summary.thread_free)
        func = call.func
        if type(func) is ast.Attribute and func.attr in ("acquire", "release"):
            r = self.ref(func.value, scope)
            if r:
                kind = "lock_enter" if func.attr == "acquire" else "lock_exit"
                out.append(self.event(kind, call, (r,)))
            return
        uses = [self.llama_receiver(call, scope)]
        if type(func) is ast.Attribute and func.attr in self.touch_names:
            # `(prompt | llm).batch(xs)`: running a composition runs that method of each part
            uses += [(func.attr, r) for r in container_refs.part_refs(self, func.value, scope)]
        for use in uses:
            if use is None:
                continue
            out.append(self.event("llama_use", call, (use[0], use[1], self._stream_flag(call, use[0]))))
            if concurrent_calls.concurrent(call, use[0], self.concurrent_specs):
                out.append(self.event("concurrent_use", call, (use[0], use[1])))

    def mark_stream(self, out: list[Node], node: ast.AST, flag: str) -> None:
        loc = self.lines.loc(node)
        for i in range(len(out) - 1, -1, -1):
            ev = out[i]
            if getattr(ev, "kind", None) == "llama_use" and ev.loc == loc and ev.data[2] == "1":
                out[i] = replace(ev, data=(ev.data[0], ev.data[1], flag))
                return

    def stream_binding(self, value: ast.expr, targets: list, scope: "_Scope", out: list[Node]) -> None:
        """`s = llm(p, stream=True)`: the context is used where `s` is iterated, not here."""
        if self.lean:
            return  # (a lean summary: cudalint.summary.thread_free)
        if type(value) is not ast.Call or len(targets) != 1 or type(targets[0]) is not ast.Name:
            return
        use = self.llama_receiver(value, scope)
        if use is None or self._stream_flag(value, use[0]) != "1":
            return
        name = targets[0].id
        self.mark_stream(out, value, f"bound:{name}")
        scope.streams[name] = use[1]

    def stream_iteration(self, it: ast.expr, scope: "_Scope", out: list[Node]) -> None:
        """`for x in <stream>` / `yield from <stream>`: the iteration uses the context."""
        if self.lean:
            return  # (a lean summary: cudalint.summary.thread_free)
        if type(it) is ast.Call:
            self.mark_stream(out, it, "iter")
        elif type(it) is ast.Name:
            name = it.id  # type: ignore[attr-defined]
            s = scope
            while s is not None:
                if name in s.streams:
                    out.append(self.event("llama_iter", it, (s.streams[name], name)))
                    return
                if name in s.bound:
                    return
                s = s.parent

    # ---------- assignments, returns, locks ---------------------------------------------------------
    def bind_event(self, target: ast.expr, origin: Optional[str], stmt: Located, scope: "_Scope", out: list[Node]) -> None:
        if self.lean:
            return  # (a lean summary: cudalint.summary.thread_free)
        if type(target) is ast.Subscript:
            target = target.value  # type: ignore[attr-defined]  # `models[k] = Llama()`: the container holds it
        if origin is None or type(target) not in (ast.Name, ast.Attribute):
            return
        r = self.ref(target, scope)
        if r and not r.startswith("c:"):
            out.append(self.event("bind", stmt, (r, origin)))

    def return_data(self, value: Optional[ast.expr], scope: "_Scope") -> tuple:
        if scope.qualname:
            typ = self.type_of_value(value, scope) if value is not None else None
            made = typ if typ and typ.startswith(":") and typ[1:] in self.classes else None
            self.return_types.setdefault(scope.qualname, set()).add(made)
        if value is None:
            return ()
        o = self.origin(value, scope)
        return (o,) if o else ()

    def lock_ref(self, expr: ast.expr, scope: "_Scope") -> Optional[str]:
        if self.lean:
            return None  # (a lean summary: cudalint.summary.thread_free)
        if type(expr) in (ast.Name, ast.Attribute):
            return self.ref(expr, scope)
        if type(expr) is ast.Call:
            q = self.qualify(expr.func, scope)
            if q and any(api.get("lock") for api in self.cat.calls_named(q)):
                return f"new:{q}"  # a fresh lock each time: it protects nothing
        return None

    # ---------- one-worker pools ------------------------------------------------------------------
    def serial_pool(self, value: Optional[ast.AST], scope: "_Scope") -> bool:
        """`ThreadPoolExecutor(max_workers=1)`: a pool whose work never overlaps."""
        if self.lean:
            return False  # (a lean summary: cudalint.summary.thread_free)
        if type(value) is not ast.Call:
            return False
        q = self.qualify(value.func, scope)  # type: ignore[attr-defined]
        for api in self.cat.calls_named(q) if q else ():
            slots = api.get("workers")
            if slots and api.get("starts_thread"):
                expr = arg_expr(value, slots)  # type: ignore[arg-type]
                return expr is not None and _literal(expr) == 1
        return False

    def note_pool(self, name: str, value: Optional[ast.AST], scope: "_Scope") -> None:
        scope.serial_pools.discard(name)
        if self.serial_pool(value, scope):
            scope.serial_pools.add(name)

    def _serial_receiver(self, call: ast.Call, scope: "_Scope", api: Api) -> Optional[str]:
        """The ref of the one-worker pool this call hands work to, if it is one: the receiver
        (`pool.submit(f)`), or the argument the catalogue names (`loop.run_in_executor(pool, f)`)."""
        func = call.func
        slots = api.get("executor")
        if slots:
            recv = arg_expr(call, slots)
        elif type(func) is ast.Attribute:
            recv = func.value
        else:
            return None
        if recv is None:
            return None
        if type(recv) is ast.Name:
            for sc in scope.chain():
                if recv.id in sc.serial_pools:  # type: ignore[attr-defined]
                    return self.ref(recv, scope)
                if recv.id in sc.bound:  # type: ignore[attr-defined]
                    return None
            return None
        parts = _dotted(recv)
        if parts and len(parts) == 2 and parts[0] in ("self", "cls") and scope.cls and (scope.cls, parts[1]) in self.serial_attrs:
            return self.ref(recv, scope)
        return None

    # ---------- effects of catalogued calls -------------------------------------------------------
    def thread_api_effects(self, api: Api, call: ast.Call, scope: "_Scope", out: list[Node]) -> None:
        if api.get("llama_context"):
            self.makes_llama = True
            out.append(self.event("llama_new", call, (api.name, _offload(api, call))))
        conc = api.get("concurrency")
        conc_val = ""
        if conc:
            expr = arg_expr(call, conc)
            if expr is not None:
                val = _literal(expr)
                conc_val = "many" if (val is None or (isinstance(val, int) and not isinstance(val, bool) and val > 1)) else "one"
        slots = api.get("thread_target")
        if not slots:
            if conc:
                out.append(self.event("concurrency", call, (api.name, conc_val)))
            return
        exprs, several = concurrent_calls.work_exprs(call, slots)
        serial = self._serial_receiver(call, scope, api)
        for expr in exprs:
            target, recv, obj = self.thread_target(expr, scope, out)
            if not target and not obj:
                continue
            many = "1" if api.get("thread_many") or conc_val == "many" or several else ""
            conc = conc_val
            if serial:
                many, conc = "", f"serial:{serial}"  # one worker: the work runs one at a time
            waits = ("await" if self._awaited(call) else "1") if api.get("thread_waits") else ""
            args = tuple(self.ref(a, scope) or container_refs.repeated(self, a, scope) or "" for a in self._thread_args(call, expr))
            out.append(self.event("thread_start", call, (api.name, target, recv, obj, many, waits, args, conc)))

    def _awaited(self, call: ast.Call) -> bool:
        """`await asyncio.to_thread(...)` itself (not one of several handed to `gather`)."""
        if self._awaits is None:
            self._awaits = {id(n.value) for n in ast.walk(self._tree) if type(n) is ast.Await} if self._tree is not None else set()
        return id(call) in self._awaits

    def _thread_args(self, call: ast.Call, target: ast.expr) -> list:
        for k in call.keywords:
            if k.arg == "args" and type(k.value) in (ast.Tuple, ast.List):
                return [el.value if type(el) is ast.Starred else el for el in k.value.elts]  # type: ignore[attr-defined]
        given = positional(call)
        for i, arg in enumerate(given):
            if arg is target:
                return given[i + 1 :]
        return []

    def thread_target(self, expr: ast.expr, scope: "_Scope", out: list[Node]) -> tuple[str, str, str]:
        """(function symbol, receiver ref, "method|object ref") of what runs on the other thread."""
        kind = type(expr)
        if kind is ast.Lambda:
            return (":" + self.lambda_function(expr, scope), "", "")  # type: ignore[arg-type]
        if kind is ast.Call:
            q = self.qualify(expr.func, scope)  # type: ignore[attr-defined]
            first = first_arg(expr)  # type: ignore[arg-type]
            if q == "functools.partial" and first is not None:
                return self.thread_target(first, scope, out)
            use = self.llama_receiver(expr, scope)
            if use is not None and self._stream_flag(expr, use[0]) == "1":
                self.mark_stream(out, expr, "handed")  # iterated over there, not here
                return ("", "", f"iter|{use[1]}")
            if q and (q.startswith(":") or self.maybe_project(q)):
                return (q, "", "")  # a generator function: its body runs where it is iterated
            return ("", "", "")
        if kind is ast.Attribute and expr.attr in self.touch_names and not self._own_method(expr, scope):  # type: ignore[attr-defined]
            r = self.ref(expr.value, scope)  # type: ignore[attr-defined]
            return ("", "", f"{expr.attr}|{r}" if r else "")  # type: ignore[attr-defined]
        if kind is ast.Name or kind is ast.Attribute:
            q = self.qualify(expr, scope)
            target = q if q and (q.startswith(":") or self.maybe_project(q)) else ""
            recv = (self.ref(expr.value, scope) or "") if kind is ast.Attribute else ""  # type: ignore[attr-defined]
            obj = None if kind is ast.Name and scope.lookup_def(expr.id) is not None else self.ref(expr, scope)  # type: ignore[attr-defined]
            if obj and obj.startswith("m:") and target:
                obj = None  # an imported function
            return (target, recv, f"__call__|{obj}" if obj else "")
        return ("", "", "")

    def _own_method(self, expr: ast.Attribute, scope: "_Scope") -> bool:
        """`self.generate` in a project class that is not a llama class itself: its own method
        (which may share a name with a llama method), not the llama context's."""
        q = self.qualify(expr, scope)
        if not q or not q.startswith(":"):
            return False
        cls = q[1:].rpartition(".")[0]
        info = self.classes.get(cls)
        if info is None:
            return False
        return not any(api.get("llama_context") for base in info.bases for api in self.cat.calls_named(base))

    def call_refs(self, call: ast.Call, q: str, scope: "_Scope", out: list[Node]) -> None:
        """A project function (or class) given objects: ("call_refs", (symbol, ((slot, ref), ...))), so
        the thread model knows what its parameters hold (`Worker(llm)`, `use_it(llm, p)`)."""
        if self.lean:
            return  # (a lean summary: cudalint.summary.thread_free)
        refs = []
        for slot, arg in slotted(call):
            if type(arg.value) in (ast.Name, ast.Attribute):
                r = self.ref(arg.value, scope)
                if r:
                    refs.append((slot, r))
            elif type(arg.value) in (ast.Call, ast.Await):
                # `Session(Llama(...))`: the object made inline is held by a name of its own, as
                # if it had been assigned first (`llm = Llama(...); Session(llm)`)
                o = self.origin(arg.value, scope)
                if o and o.startswith(("new:", "c:")):
                    r = f"v:{scope.qualname}:<arg {arg.value.lineno}:{arg.value.col_offset}>"
                    out.append(self.event("bind", arg.value, (r, o)))
                    refs.append((slot, r))
        if refs:
            out.append(self.event("call_refs", call, (q, tuple(refs))))

    def lambda_function(self, node: ast.Lambda, scope: "_Scope") -> str:
        from cudalint.summary.syntax import _Scope

        self._lambdas += 1
        qualname = f"{scope.qualname or '<module>'}.<lambda{self._lambdas}>"
        inner = _Scope(qualname=qualname, cls=scope.cls, parent=scope)
        params = tuple(p.arg for p in all_params(node.args))
        inner.bound.update(params)
        body: list[Node] = []
        self.expr(node.body, inner, body)
        self.functions[qualname] = Function(qualname=qualname, loc=self.lines.loc(node), body=tuple(body), params=params)
        return qualname

    # ---------- functions ---------------------------------------------------------------------------
    def decorator_names(self, node: ast.AST, scope: "_Scope") -> tuple[str, ...]:
        return tuple(self.qualify(dec, scope) or "" for dec in node.decorator_list)  # type: ignore[attr-defined]

    def param_binds(self, node: ast.AST, qualname: str, scope: "_Scope") -> list[Node]:
        """`llm = Depends(get_llm)`: the parameter is what the dependency returns."""
        if self.lean:
            return []  # (a lean summary: cudalint.summary.thread_free)
        out: list[Node] = []
        for param, default in _defaults(node.args):  # type: ignore[attr-defined]
            if type(default) is not ast.Call:
                continue
            first = first_arg(default)  # type: ignore[arg-type]
            if first is None:
                continue
            q = self.qualify(default.func, scope)  # type: ignore[attr-defined]
            if not q or not q.rsplit(".", 1)[-1] == "Depends":
                continue
            dep = self.qualify(first, scope)
            if dep and (dep.startswith(":") or self.maybe_project(dep)):
                out.append(
                    self.event("bind", _name_of(param), (f"v:{qualname}:{param.arg}", f"c:{dep}"), text=self.text(span(param, default)))
                )
        return out


def all_params(args: ast.arguments) -> list[ast.arg]:
    out = args.posonlyargs + args.args + args.kwonlyargs
    if args.vararg is not None:
        out.append(args.vararg)
    if args.kwarg is not None:
        out.append(args.kwarg)
    return out


def _defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """(parameter, default value) pairs: `ast` aligns the defaults with the last positional parameters."""
    given = args.posonlyargs + args.args
    pairs = list(zip(given[len(given) - len(args.defaults) :], args.defaults))
    pairs += [(p, d) for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return pairs


def _name_of(param: ast.arg) -> Located:
    """Where a parameter's name is written (`ast.arg` spans its annotation too)."""
    return Span(param.lineno, param.col_offset, param.lineno, param.col_offset + len(param.arg.encode("utf-8")))


def _offload(api: Api, call: ast.Call) -> str:
    """"1" when the call offloads layers to the GPU (a literal other than 0, or a value we cannot
    read), "0" when it does not (absent: the libraries' default is 0), "" when the catalogue does not say."""
    slots = api.get("gpu_offload")
    if not slots:
        return ""
    expr = arg_expr(call, slots)
    if expr is None:
        return "1" if any(k.arg is None for k in call.keywords) else "0"  # `**params` may hold it
    value = _literal(expr)
    return "0" if value == 0 and not isinstance(value, bool) else "1"
