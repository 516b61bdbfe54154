"""The summarizer's events for the thread rules (CUD101/CUD102), as a mixin of `_Summarizer`.

They are syntactic: where an object is stored or read (a `ref`), which calls may use a llama
context, what is handed to another thread, which `with`/`acquire` may be a lock. Whether a ref
really holds a `Llama` or a lock is decided later, across modules, by `cudalint.threads`.
"""
from __future__ import annotations

import builtins
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

import libcst as cst

from cudalint.callargs import arg_expr

from cudalint.catalogue import Api
from cudalint.ir import Function, Node

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summarize import _Scope

_BUILTIN_NAMES = frozenset(dir(builtins))


def _literal(expr):
    from cudalint.summarize import literal

    return literal(expr)


def _dotted(expr):
    from cudalint.summarize import dotted

    return dotted(expr)


class ThreadEvents:
    """Mixed into `cudalint.summarize._Summarizer`; uses its `qualify`, `event`, `cat`, `imports`."""

    def init_thread_events(self) -> None:
        self.touch_names = frozenset(name.rsplit(".", 1)[1] for name in _touching(self.cat))
        self.always_streams = frozenset(a.name.rsplit(".", 1)[1] for a in self.cat.apis if a.get("streams") == "*")
        self._lambdas = 0
        self._yields: list[bool] = []

    # ---------- where an object lives ----------------------------------------------------------
    def ref(self, expr: cst.BaseExpression, scope: "_Scope") -> Optional[str]:
        if isinstance(expr, cst.Await):
            return self.ref(expr.expression, scope)
        if isinstance(expr, cst.Name):
            name = expr.value
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
        if isinstance(expr, cst.Attribute):
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
        if isinstance(expr, cst.Call):
            q = self.qualify(expr.func, scope)
            if q and (q.startswith(":") or self.maybe_project(q)):
                return "c:" + q
        return None

    def _bound(self, name: str, scope: "_Scope") -> bool:
        s = scope
        while s is not None:
            if name in s.bound:
                return True
            s = s.parent
        return False

    def origin(self, value: cst.BaseExpression, scope: "_Scope") -> Optional[str]:
        if isinstance(value, cst.Await):
            return self.origin(value.expression, scope)
        if isinstance(value, cst.Call):
            q = self.callee(value, scope)
            if q and not q.startswith(":"):
                for api in self.cat.calls_named(q):
                    if not self.applies(api, value, scope):
                        continue
                    if api.get("llama_context"):
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
            return r
        if isinstance(value, (cst.Name, cst.Attribute)):
            r = self.ref(value, scope)
            return "ref:" + r if r else None
        return None

    def _lock_serializes(self, api: Api, call: cst.Call, scope: "_Scope") -> int:
        slots = api.get("lock_count")
        if not slots:
            return 1
        expr = arg_expr(call, slots)
        return 1 if expr is None or _literal(expr) == 1 else 0

    def callee(self, call: cst.Call, scope: "_Scope") -> Optional[str]:
        """The qualified name a call runs; calling an instance (`llm(...)`) runs `Type.__call__`."""
        q = self.qualify(call.func, scope)
        func = call.func
        if q and isinstance(func, cst.Name) and scope.lookup_type(func.value) is not None and scope.lookup_def(func.value) is None:
            return q + ".__call__"
        return q

    # ---------- calls that may use a llama context -----------------------------------------------
    def llama_receiver(self, call: cst.Call, scope: "_Scope") -> Optional[tuple[str, str]]:
        """(method, receiver ref) when the call may be a context-touching call on an object."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.touch_names:
            r = self.ref(func.value, scope)
            return (func.attr.value, r) if r else None
        if isinstance(func, cst.Name):
            if func.value in self.imports or scope.lookup_def(func.value) is not None:
                return None  # a function; calls of imported objects are `call` events
            r = self.ref(func, scope)
            return ("__call__", r) if r else None
        if isinstance(func, cst.Attribute):
            parts = _dotted(func)
            if parts and len(parts) == 2 and (parts[0] in ("self", "cls") or (scope.lookup_type(parts[0]) or "").startswith(":")):
                r = self.ref(func, scope)
                return ("__call__", r) if r else None
        return None

    def _stream_flag(self, call: cst.Call, method: str) -> str:
        if method in self.always_streams:
            return "1"
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "stream":
                val = _literal(a.value)
                return "1" if val is True else ("" if val in (False, None) else "?")
        return ""

    def llama_call_events(self, call: cst.Call, scope: "_Scope", out: list[Node]) -> None:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("acquire", "release"):
            r = self.ref(func.value, scope)
            if r:
                kind = "lock_enter" if func.attr.value == "acquire" else "lock_exit"
                out.append(self.event(kind, call, (r,)))
            return
        use = self.llama_receiver(call, scope)
        if use is not None:
            out.append(self.event("llama_use", call, (use[0], use[1], self._stream_flag(call, use[0]))))

    def mark_stream(self, out: list[Node], node: cst.CSTNode, flag: str) -> None:
        for i in range(len(out) - 1, -1, -1):
            ev = out[i]
            if getattr(ev, "kind", None) == "llama_use" and ev.loc is node and ev.data[2] == "1":
                out[i] = replace(ev, data=(ev.data[0], ev.data[1], flag))
                return

    def stream_binding(self, value: cst.BaseExpression, targets: list, scope: "_Scope", out: list[Node]) -> None:
        """`s = llm(p, stream=True)`: the context is used where `s` is iterated, not here."""
        if not isinstance(value, cst.Call) or len(targets) != 1 or not isinstance(targets[0], cst.Name):
            return
        use = self.llama_receiver(value, scope)
        if use is None or self._stream_flag(value, use[0]) != "1":
            return
        name = targets[0].value
        self.mark_stream(out, value, f"bound:{name}")
        scope.streams[name] = use[1]

    def stream_iteration(self, it: cst.BaseExpression, scope: "_Scope", out: list[Node]) -> None:
        """`for x in <stream>` / `yield from <stream>`: the iteration uses the context."""
        if isinstance(it, cst.Call):
            self.mark_stream(out, it, "iter")
        elif isinstance(it, cst.Name):
            s = scope
            while s is not None:
                if it.value in s.streams:
                    out.append(self.event("llama_iter", it, (s.streams[it.value], it.value)))
                    return
                if it.value in s.bound:
                    return
                s = s.parent

    # ---------- assignments, returns, locks ---------------------------------------------------------
    def bind_event(self, target: cst.BaseExpression, origin: Optional[str], stmt: cst.CSTNode, scope: "_Scope", out: list[Node]) -> None:
        if origin is None or not isinstance(target, (cst.Name, cst.Attribute)):
            return
        r = self.ref(target, scope)
        if r and not r.startswith("c:"):
            out.append(self.event("bind", stmt, (r, origin)))

    def return_data(self, value: Optional[cst.BaseExpression], scope: "_Scope") -> tuple:
        if value is None:
            return ()
        o = self.origin(value, scope)
        return (o,) if o else ()

    def lock_ref(self, expr: cst.BaseExpression, scope: "_Scope") -> Optional[str]:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self.ref(expr, scope)
        if isinstance(expr, cst.Call):
            q = self.qualify(expr.func, scope)
            if q and any(api.get("lock") for api in self.cat.calls_named(q)):
                return f"new:{q}"  # a fresh lock each time: it protects nothing
        return None

    # ---------- effects of catalogued calls -------------------------------------------------------
    def thread_api_effects(self, api: Api, call: cst.Call, scope: "_Scope", out: list[Node]) -> None:
        if api.get("llama_context"):
            out.append(self.event("llama_new", call, (api.name,)))
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
        expr = arg_expr(call, slots)
        if expr is None:
            return
        target, recv, obj = self.thread_target(expr, scope, out)
        if not target and not obj:
            return
        many = "1" if api.get("thread_many") or conc_val == "many" else ""
        waits = "1" if api.get("thread_waits") else ""
        args = tuple(self.ref(a, scope) or "" for a in self._thread_args(call, expr))
        out.append(self.event("thread_start", call, (api.name, target, recv, obj, many, waits, args, conc_val)))

    def _thread_args(self, call: cst.Call, target: cst.BaseExpression) -> list:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "args" and isinstance(a.value, (cst.Tuple, cst.List)):
                return [el.value for el in a.value.elements]
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if target in positional:
            return positional[positional.index(target) + 1 :]
        return []

    def thread_target(self, expr: cst.BaseExpression, scope: "_Scope", out: list[Node]) -> tuple[str, str, str]:
        """(function symbol, receiver ref, "method|object ref") of what runs on the other thread."""
        if isinstance(expr, cst.Lambda):
            return (":" + self.lambda_function(expr, scope), "", "")
        if isinstance(expr, cst.Call):
            q = self.qualify(expr.func, scope)
            if q == "functools.partial" and expr.args:
                return self.thread_target(expr.args[0].value, scope, out)
            use = self.llama_receiver(expr, scope)
            if use is not None and self._stream_flag(expr, use[0]) == "1":
                self.mark_stream(out, expr, "handed")  # iterated over there, not here
                return ("", "", f"iter|{use[1]}")
            if q and (q.startswith(":") or self.maybe_project(q)):
                return (q, "", "")  # a generator function: its body runs where it is iterated
            return ("", "", "")
        if isinstance(expr, cst.Attribute) and expr.attr.value in self.touch_names:
            r = self.ref(expr.value, scope)
            return ("", "", f"{expr.attr.value}|{r}" if r else "")
        if isinstance(expr, (cst.Name, cst.Attribute)):
            q = self.qualify(expr, scope)
            target = q if q and (q.startswith(":") or self.maybe_project(q)) else ""
            recv = (self.ref(expr.value, scope) or "") if isinstance(expr, cst.Attribute) else ""
            obj = None if isinstance(expr, cst.Name) and scope.lookup_def(expr.value) is not None else self.ref(expr, scope)
            if obj and obj.startswith("m:") and target:
                obj = None  # an imported function
            return (target, recv, f"__call__|{obj}" if obj else "")
        return ("", "", "")

    def lambda_function(self, node: cst.Lambda, scope: "_Scope") -> str:
        from cudalint.summarize import _Scope

        self._lambdas += 1
        qualname = f"{scope.qualname or '<module>'}.<lambda{self._lambdas}>"
        inner = _Scope(qualname=qualname, cls=scope.cls, parent=scope)
        params = tuple(p.name.value for p in _all_params(node.params))
        inner.bound.update(params)
        body: list[Node] = []
        self.expr(node.body, inner, body)
        self.functions[qualname] = Function(qualname=qualname, loc=self.loc_node(node), body=tuple(body), params=params)
        return qualname

    # ---------- functions ---------------------------------------------------------------------------
    def decorator_names(self, node: cst.FunctionDef, scope: "_Scope") -> tuple[str, ...]:
        return tuple(self.qualify(dec.decorator, scope) or "" for dec in node.decorators)

    def param_binds(self, node: cst.FunctionDef, qualname: str, scope: "_Scope") -> list[Node]:
        """`llm = Depends(get_llm)`: the parameter is what the dependency returns."""
        out: list[Node] = []
        for param in _all_params(node.params):
            default = param.default
            if not isinstance(default, cst.Call) or not default.args:
                continue
            q = self.qualify(default.func, scope)
            if not q or not q.rsplit(".", 1)[-1] == "Depends":
                continue
            dep = self.qualify(default.args[0].value, scope)
            if dep and (dep.startswith(":") or self.maybe_project(dep)):
                out.append(self.event("bind", param, (f"v:{qualname}:{param.name.value}", f"c:{dep}")))
        return out


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def _touching(cat) -> list[str]:
    return [a.name for a in cat.apis if a.get("touches_context") and "." in a.name]
