"""The summarizer's events of a call: catalogue effects, environment reads and writes,
monkeypatches, CUDA objects (mixed into `_Summarizer`).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Sequence

from cudalint.summary import child_env, cuda_attrs, labels, shell_env
from cudalint.summary import label_effects
from cudalint.summary import static_guards
from cudalint.core.callargs import arg_expr, args_of
from cudalint.core.catalogue import Api
from cudalint.core.ir import Event, Node
from cudalint.core.positions import Located, span
from cudalint.summary.syntax import _STDLIB, _env_conditions, dotted, literal
from cudalint.core.values import value_info
from cudalint.core.walk import nodes
from cudalint.summary.driven import DRIVES, consumed_args

if TYPE_CHECKING:
    from cudalint.summary.syntax import _Scope


class _CallEvents:
    """The summarizer's events of a call: catalogue effects, environment reads and writes,
    monkeypatches, CUDA objects (mixed into `_Summarizer`)."""

    def call(self, call: ast.Call, scope: _Scope, out: list[Node]) -> None:
        func = call.func
        # the callee expression is evaluated first (x.y(...) evaluates x), then the arguments
        if type(func) is ast.Attribute:
            self.expr(func.value, scope, out)
        elif type(func) is not ast.Name:
            self.expr(func, scope, out)
        args = args_of(call)
        self._driven.update(id(c) for c in consumed_args(call))
        for arg in args:
            self.expr(arg.value, scope, out)
        q = self.callee(call, scope)
        if type(func) is ast.Name and func.id == "setattr" and q is None and len(args) >= 3:
            owner = self.qualify(args[0].value, scope)
            attr = literal(args[1].value)
            if owner and isinstance(attr, str):
                self.monkeypatch_event(f"{owner}.{attr}", call, out)
        label_effects.method_call(self, call, q, scope, out)
        child_env.on_call(self, call, q, scope, out, args)
        shell_env.on_call(self, call, q, scope, out)
        if scope.qualname and not cuda_attrs.use(self, call, scope, out) and self._cuda_names(scope):
            self.cuda_object_use(call, scope, out)
        self.call_effects(call, q, scope, out)
        self.llama_call_events(call, scope, out)

    def call_effects(self, call: ast.Call, q: Optional[str], scope: _Scope, out: list[Node]) -> None:
        matched = False
        if q is not None and not q.startswith(":"):
            for api in self.cat.calls_named(q):
                if self.applies(api, call, scope):
                    # the catch-all entry (`*` given device="cuda"): the call may still be a project
                    # function's, whose body is followed too
                    matched = api.name != "*"
                    self.api_effects(api, call, out, scope)
                    break
            if not matched and self.env_call(call, q, scope, out):
                return
        func = call.func
        if not matched and type(func) is ast.Attribute and self.receiver_is_value(func.value, scope):
            for api in self.cat.methods.get(func.attr, ()):
                if self.applies(api, call, scope):
                    matched = True
                    self.api_effects(api, call, out, scope)
                    break
        if matched or q is None:
            return
        if q.startswith(":") or self.maybe_project(q):
            out.append(self.event("call", call, (q, DRIVES) if id(call) in self._driven else (q,)))
            labels.call_args(self, call, q, scope, out)
            self.call_refs(call, q, scope, out)

    def monkeypatch_event(self, q: Optional[str], node: ast.AST, out: list[Node]) -> None:
        """`torch.cuda.is_available = ...`: a catalogued CUDA API replaced for the whole process (CUD008)."""
        if q is None or q.startswith(":"):
            return
        # only the APIs that answer whether / how many GPUs there are (`gpu_presence`): replacing a
        # Stream or Event class with a shim hides no GPU from anyone
        apis = [a for a in self.cat.calls_named(q) if a.get("gpu_presence") and not a.is_glob]
        if not apis:
            return
        if type(node) is ast.Assign and len(node.targets) == 1:
            if self._restored is None:
                self._restored = static_guards.restored_attributes(self._tree.body) if self._tree is not None else frozenset()
            target = node.targets[0]
            if ast.unparse(target) in self._restored:
                return  # saved and put back (a `finally:`, a teardown): a temporary patch, or the restore itself
        out.append(self.event("monkeypatch", node, (q, apis[0].init)))

    def receiver_is_value(self, receiver: ast.AST, scope: _Scope) -> bool:
        """`x.cuda()`, `f().to("cuda")`: a method of an object, not a function of an imported module."""
        parts = dotted(receiver)
        if parts is None:
            return True
        head = parts[0]
        if scope.lookup_type(head) is not None or head in ("self", "cls"):
            return True
        return head not in self.imports and scope.lookup_def(head) is None and head not in self.star_imports

    def maybe_project(self, q: str) -> bool:
        root = q.split(".", 1)[0]
        return root not in self.lib_roots and root not in _STDLIB

    def api_effects(self, api: Api, call: ast.Call, out: list[Node], scope: Optional[_Scope] = None) -> None:
        self.thread_api_effects(api, call, scope or self._scope, out)
        if api.initializes:
            out.append(self.event("init", call, (api.name, api.library, api.init, api.note, _env_conditions(api))))
        self.sets_env_events(api, call, out)
        env_write = api.get("env_write")
        if env_write:
            spec = dict(env_write)
            value_expr = arg_expr(call, spec.get("value", "1"))
            out.append(self.env_event(call, self.arg_literal(call, spec.get("key", "0")), self.text(value_expr), value_expr))
        device_arg = api.get("device_arg")
        if device_arg:
            value_expr = arg_expr(call, device_arg)
            if value_expr is not None:
                vtype, vlit = value_info(value_expr, self._scope, self.imports)
                out.append(self.event("device_arg", call, (api.name, vtype, vlit, self.text(value_expr))))
        if api.get("exits"):
            out.append(self.event("exit", call, (api.name,)))
        label_effects.api_effects(self, api, call, self._scope, out)

    def sets_env_events(self, api: Api, node: ast.AST, out: list[Node]) -> None:
        """`sets_env`: the library writes these variables itself (`import vllm` sets
        PYTORCH_NVML_BASED_CUDA_CHECK=1); they become writes here, with their literal values."""
        for var, value in api.get("sets_env") or ():
            out.append(self.event("env_write", node, (var, repr(value), "str", str(value), (), "")))

    def arg_literal(self, call: ast.Call, slots: str) -> str:
        val = self.arg_value(call, tuple(slots.split("|")), self._scope)
        return val if isinstance(val, str) else ""

    def arg_text(self, call: ast.Call, slots: str) -> str:
        return self.text(arg_expr(call, slots))

    def env_event(self, node: Located, var: str, value: str, value_expr: Optional[ast.expr] = None, guarded: bool = False) -> Event:
        # data: (variable, value source text, value type, exact str value, labels); see cudalint.core.values
        # and cudalint.summary.labels (CUD004 sees NVML indices written to CUDA_VISIBLE_DEVICES)
        vtype, vlit = value_info(value_expr, self._scope, self.imports) if value_expr is not None else ("", "")
        found = labels.for_event(self, value_expr, self._scope) if value_expr is not None else ()
        # "guarded": the write depends on a read of the same variable (an enclosing `if` tests it,
        # or the value is computed from it): once the variable holds a value, it changes nothing
        guarded = bool(var) and (
            guarded or any(var in reads for reads in self._env_guards) or var in self.env_reads(value_expr, self._scope)
        )
        return self.event("env_write", node, (var, value, vtype, vlit, found, "guarded" if guarded else ""))

    def env_reads(self, expr: Optional[ast.AST], scope: _Scope) -> set[str]:
        """The variables `expr` reads, directly or through a name bound to such a read (`old_value`
        in `if old_value is None: del os.environ[V]`, `os.environ[V] = old_value`: vllm's
        guard_cuda_initialization restores what it read)."""
        if expr is None or not self.env_possible:
            return set()
        found = static_guards.env_reads(expr, lambda e: self.is_env(e, scope), lambda e: self.key_of(e, scope))
        if scope.any_scope("env_values"):  # (else no name holds a read: most binds)
            for node in nodes(expr):
                if type(node) is ast.Name:
                    found |= scope.env_value_of(node.id)
        return found

    def dict_env_events(self, value: ast.Dict, scope: _Scope, out: list[Node]) -> None:
        for key, val in zip(value.keys, value.values):
            if key is not None:  # `**other` inside the dict: nothing known
                out.append(self.env_event(span(key, val), self.key_of(key, scope), self.text(val), val))

    def is_env(self, expr: ast.AST, scope: _Scope) -> bool:
        if not self.env_possible:
            return False
        kind = type(expr)
        if kind is ast.Attribute:
            # only an attribute named as an environment mapping's last part may be one (`qualify`
            # keeps the attribute last); a call's receiver is asked about, every call
            if expr.attr not in self.tables.env_mapping_attrs:  # type: ignore[attr-defined]
                return False
        elif kind is ast.Name and scope.is_env_alias(expr.id):  # type: ignore[attr-defined]
            return True
        q = self.qualify(expr, scope)
        return q is not None and q in self.env_mappings

    def key_of(self, expr: ast.AST, scope: _Scope) -> str:
        val = literal(expr, scope.all_consts())
        return val if isinstance(val, str) else ""

    def env_call(self, call: ast.Call, q: str, scope: _Scope, out: list[Node]) -> bool:
        """os.environ.update/setdefault/pop/clear: writes to the process environment."""
        func = call.func
        if type(func) is not ast.Attribute or not self.is_env(func.value, scope):
            return False
        method = func.attr
        args = args_of(call)
        if method == "update":
            for arg in args:
                if arg.keyword is not None:
                    out.append(self.env_event(arg.node, arg.keyword, self.text(arg.value), arg.value))
                elif arg.star == "" and type(arg.value) is ast.Dict:
                    self.dict_env_events(arg.value, scope, out)  # type: ignore[arg-type]
                else:
                    out.append(self.env_event(call, "", self.text(arg.value)))
            return True
        if method == "setdefault" and args:
            value_expr = args[1].value if len(args) > 1 else None
            out.append(self.env_event(call, self.key_of(args[0].value, scope), self.text(value_expr), value_expr, guarded=True))
            return True
        if method in ("pop", "__delitem__", "__setitem__") and args:
            out.append(self.env_event(call, self.key_of(args[0].value, scope), ""))
            return True
        if method == "clear":
            out.append(self.env_event(call, "*", ""))
            return True
        return method in ("get", "copy", "items", "keys", "values", "__getitem__", "__contains__")

    def _cuda_names(self, scope: _Scope) -> bool:
        return scope.any_scope("cuda_objs")

    def note_cuda_object(self, stmt: ast.Assign, out: list[Node], start: int, scope: _Scope) -> None:
        """`model = SentenceTransformer(..., device="cuda")`: what a CUDA-initializing call built. Its
        later uses are CUDA uses too (a forked child that calls `model.encode` needs CUDA: CUD005)."""
        if type(stmt.value) is not ast.Call:
            return
        loc = self.lines.loc(stmt.value)
        made = next((ev for ev in out[start:] if isinstance(ev, Event) and ev.kind == "init" and ev.loc == loc), None)
        if made is None:
            return
        for target in stmt.targets:
            if type(target) is ast.Name:
                scope.cuda_objs[target.id] = (loc[0], self.text(stmt.value), made.data[1])
            else:
                cuda_attrs.note(self, target, (loc[0], self.text(stmt.value), made.data[1]), scope)

    def cuda_object_use(self, call: ast.Call, scope: _Scope, out: list[Node]) -> None:
        """`model.encode(x)` / `llm(p)` on an object a CUDA-initializing call built."""
        func = call.func
        recv = func.value if type(func) is ast.Attribute else func
        if type(recv) is not ast.Name:
            return
        for sc in scope.chain():
            if recv.id in sc.cuda_objs:  # type: ignore[attr-defined]
                line, text, library = sc.cuda_objs[recv.id]  # type: ignore[attr-defined]
                note = f"uses {recv.id}, which {text} built on the GPU (line {line})"  # type: ignore[attr-defined]
                out.append(self.event("init", call, (self.text(func), library, "context", note)))
                return
            if recv.id in sc.bound:  # type: ignore[attr-defined]
                return

    def import_effects(
        self, node: ast.stmt, modules: list[str], out: list[Node], submodules: Sequence[str] = (), relative: bool = False
    ) -> None:
        names: list[str] = []
        for mod in modules:
            parts = mod.split(".")
            names.extend(".".join(parts[: i + 1]) for i in range(len(parts)))
        names.extend(submodules)
        seen = list(dict.fromkeys(n for n in names if n))
        lib = [n for n in seen if n.split(".")[0] in self.lib_roots]
        # a relative import is a library's own code (its package is already being imported): the
        # package's import-time effects are its own top level's, read where they are
        for name in () if relative else seen:
            for api in self.cat.imports.get(name, ()):
                self.sets_env_events(api, node, out)
                if not api.initializes:
                    continue  # e.g. `streamlit` (reruns_script): read by cudalint.analysis.threads from import_lib
                # the module name last: when the project holds that module, its own code is analyzed instead
                out.append(self.event("init", node, (api.name, api.library, api.init, api.note, _env_conditions(api), name)))
        if lib:
            out.append(self.event("import_lib", node, tuple(lib)))
        project = tuple(n for n in seen if n.split(".")[0] not in self.lib_roots and n.split(".")[0] not in _STDLIB)
        if project:
            out.append(self.event("import", node, project))
