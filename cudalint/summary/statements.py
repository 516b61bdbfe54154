"""The summarizer's statements: structured flow (if, loops, try, with, match), assignments and
bindings, imports, function and class definitions (mixed into `_Summarizer`).
"""
from __future__ import annotations

import ast
from typing import Iterable, Optional, Union

from cudalint.summary import child_env, container_refs, import_state, labels, shell_env
from cudalint.summary import static_guards
from cudalint.core.ir import Block, Branch, ClassInfo, Function, Loop, MainGuard, Node, Try
from cudalint.core.positions import span
from cudalint.summary.syntax import _Scope, _is_main_guard, _targets, dotted, literal


class _Statements:
    """The summarizer's statements: structured flow (if, loops, try, with, match), assignments and
    bindings, imports, function and class definitions (mixed into `_Summarizer`)."""

    # ---------- statements -----------------------------------------------------------------
    def block(self, stmts: Iterable[ast.stmt], scope: _Scope) -> Block:
        out: list[Node] = []
        for stmt in stmts:
            self.stmt(stmt, scope, out)
        return tuple(out)

    def if_(self, stmt: ast.If, scope: _Scope, out: list[Node]) -> None:
        if scope.qualname == "" and scope.cls is None and _is_main_guard(stmt.test):
            orelse = self.block(stmt.orelse, scope)
            out.append(MainGuard(body=self.block(stmt.body, scope), orelse=orelse))
            return
        self.expr(stmt.test, scope, out)
        truth = self.static_truth(stmt.test)
        if truth is not None:
            # `if TYPE_CHECKING:`, a feature flag the module sets once: only one arm ever runs
            out.extend(self.block(stmt.body if truth else stmt.orelse, scope))
            return
        at_import = import_state.truth(self, stmt.test, scope)
        reads = self.env_reads(stmt.test, scope)
        self._env_guards.append(reads)
        try:
            before = dict(scope.labels)
            body = self.block(stmt.body, scope)
            if not stmt.orelse:
                out.append(Branch(arms=(body,), exhaustive=False, at_import=at_import))
            else:
                # value labels: either arm's assignment may be the one that ran (`best = argmax(free)`
                # in one arm, `best = 0` in the other): the union, not the last one written
                in_body = dict(scope.labels)
                scope.labels.clear()
                scope.labels.update(before)
                orelse = self.block(stmt.orelse, scope)
                for name, found in in_body.items():
                    if found is not before.get(name):
                        scope.labels[name] = scope.labels.get(name, frozenset()) | found
                out.append(Branch(arms=(body, orelse), exhaustive=True, at_import=at_import))
        finally:
            self._env_guards.pop()

    def static_truth(self, test: ast.expr) -> Optional[bool]:
        if self._consts is None:
            self._consts = static_guards.module_constants(self._tree) if self._tree is not None else {}
        return static_guards.static_truth(test, self._consts, self.imports)

    def for_(self, stmt: Union[ast.For, ast.AsyncFor], scope: _Scope, out: list[Node]) -> None:
        self.drive(stmt.iter)
        self.expr(stmt.iter, scope, out)
        self.stream_iteration(stmt.iter, scope, out)
        self.bind(stmt.target, None, scope)
        labels.on_for(self, stmt.target, stmt.iter, scope)
        container_refs.for_bind(self, stmt.target, stmt.iter, scope, out)
        out.append(Loop(body=self.block(stmt.body, scope), orelse=self.block(stmt.orelse, scope), loc=self.lines.loc(stmt)))

    def while_(self, stmt: ast.While, scope: _Scope, out: list[Node]) -> None:
        test: list[Node] = []
        self.expr(stmt.test, scope, test)
        value = literal(stmt.test)
        infinite = value is True or (type(stmt.test) is ast.Constant and type(value) is int and value != 0)
        out.extend(test)
        body = tuple(self.block(stmt.body, scope)) + tuple(test)
        out.append(Loop(body=body, orelse=self.block(stmt.orelse, scope), loc=self.lines.loc(stmt), infinite=infinite))

    def try_(self, stmt: ast.Try, scope: _Scope, out: list[Node]) -> None:
        handlers = tuple(self.block(h.body, scope) for h in stmt.handlers)
        out.append(
            Try(
                body=self.block(stmt.body, scope),
                handlers=handlers,
                orelse=self.block(stmt.orelse, scope),
                final=self.block(stmt.finalbody, scope),
            )
        )

    def with_(self, stmt: Union[ast.With, ast.AsyncWith], scope: _Scope, out: list[Node]) -> None:
        held = []
        for item in stmt.items:
            ctx = item.context_expr
            self.drive(ctx)  # a `@contextmanager` function's body runs to its `yield` here
            self.expr(ctx, scope, out)
            if type(ctx) is ast.Call:
                typ = self.type_of_call(ctx, scope)
                if typ and not typ.startswith(":"):
                    for api in self.cat.calls_named(typ + ".__enter__"):
                        if api.name == "*":
                            break  # the catch-all is about calls given a CUDA device, not `with` blocks
                        self.api_effects(api, ctx, out)
                        break
            if item.optional_vars is not None:
                origin = self.origin(ctx, scope)
                self.bind(item.optional_vars, ctx, scope)
                self.bind_event(item.optional_vars, origin, span(ctx, item.optional_vars), scope, out)
            lock = self.lock_ref(ctx, scope)
            if lock:
                out.append(self.event("lock_enter", ctx, (lock,)))
                held.append((lock, ctx))
        out.extend(self.block(stmt.body, scope))
        for lock, node in reversed(held):
            out.append(self.event("lock_exit", node, (lock,)))

    def match_(self, stmt: ast.AST, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.subject, scope, out)  # type: ignore[attr-defined]
        cases = stmt.cases  # type: ignore[attr-defined]
        arms = tuple(self.block(case.body, scope) for case in cases)
        exhaustive = any(type(c.pattern) is ast.MatchAs and c.pattern.pattern is None and c.guard is None for c in cases)
        out.append(Branch(arms=arms, exhaustive=exhaustive))

    def expr_stmt(self, stmt: ast.Expr, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.value, scope, out)

    def assign(self, stmt: ast.Assign, scope: _Scope, out: list[Node]) -> None:
        start = len(out)
        self.expr(stmt.value, scope, out)
        self.stream_binding(stmt.value, stmt.targets, scope, out)
        for target in stmt.targets:
            self.assign_target(target, stmt.value, stmt, scope, out)
        self.note_cuda_object(stmt, out, start, scope)

    def ann_assign(self, stmt: ast.AnnAssign, scope: _Scope, out: list[Node]) -> None:
        if stmt.value is not None:
            self.expr(stmt.value, scope, out)
            self.assign_target(stmt.target, stmt.value, stmt, scope, out)

    def aug_assign(self, stmt: ast.AugAssign, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.value, scope, out)
        if type(stmt.op) is ast.BitOr and self.is_env(stmt.target, scope):
            if type(stmt.value) is ast.Dict:
                self.dict_env_events(stmt.value, scope, out)
            else:
                out.append(self.env_event(stmt, "", self.text(stmt.value)))
        else:
            if type(stmt.op) is ast.BitOr:
                child_env.on_union_update(self, stmt.target, stmt.value, scope, out)
            elif type(stmt.op) is ast.Add:
                shell_env.on_add(self, stmt.target, stmt.value, scope)
            self.assign_target(stmt.target, None, stmt, scope, out, bind=False)

    def delete(self, stmt: ast.Delete, scope: _Scope, out: list[Node]) -> None:
        for written in stmt.targets:
            for target in _targets(written):
                if type(target) is ast.Subscript and self.is_env(target.value, scope):
                    out.append(self.env_event(stmt, self.subscript_key(target, scope), ""))

    def return_(self, stmt: ast.Return, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.value, scope, out)
        labels.on_return(self, stmt.value, scope)
        out.append(self.event("return", stmt, self.return_data(stmt.value, scope)))

    def raise_(self, stmt: ast.Raise, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.exc, scope, out)
        out.append(self.event("raise", stmt, ()))

    def break_(self, stmt: ast.Break, scope: _Scope, out: list[Node]) -> None:
        out.append(self.event("break", stmt, ()))

    def continue_(self, stmt: ast.Continue, scope: _Scope, out: list[Node]) -> None:
        out.append(self.event("continue", stmt, ()))

    def import_(self, stmt: ast.Import, scope: _Scope, out: list[Node]) -> None:
        for alias in stmt.names:
            name = alias.name
            if alias.asname is not None:
                self.imports[alias.asname] = name
                if not scope.qualname:
                    self.reexports[alias.asname] = name
            else:
                root = name.split(".")[0]
                self.imports.setdefault(root, root)
            self.import_effects(stmt, [name], out)

    def import_from(self, stmt: ast.ImportFrom, scope: _Scope, out: list[Node]) -> None:
        base = self.resolve_relative(stmt)
        if base is None:
            return
        if stmt.names[0].name == "*":
            self.star_imports.append(base)
            self.import_effects(stmt, [base], out, relative=bool(stmt.level))
            return
        targets = []
        for alias in stmt.names:
            name = alias.name
            qualified = f"{base}.{name}" if base else name
            self.imports[alias.asname or name] = qualified
            if not scope.qualname:
                self.reexports[alias.asname or name] = qualified
            targets.append(qualified)
        self.import_effects(stmt, [base], out, submodules=targets, relative=bool(stmt.level))

    def assert_(self, stmt: ast.Assert, scope: _Scope, out: list[Node]) -> None:
        self.expr(stmt.test, scope, out)

    def global_(self, stmt: ast.Global, scope: _Scope, out: list[Node]) -> None:
        scope.globals_.update(stmt.names)

    def nothing(self, stmt: ast.stmt, scope: _Scope, out: list[Node]) -> None:
        pass

    def subscript_key(self, target: ast.Subscript, scope: _Scope) -> str:
        if type(target.slice) in (ast.Tuple, ast.Slice):
            return ""
        return self.key_of(target.slice, scope)

    def assign_target(
        self,
        target: ast.expr,
        value: Optional[ast.expr],
        stmt: ast.stmt,
        scope: _Scope,
        out: list[Node],
        bind: bool = True,
    ) -> None:
        kind = type(target)
        if kind is ast.Subscript:
            self.expr(target.value, scope, out)  # type: ignore[attr-defined]
            if self.is_env(target.value, scope):  # type: ignore[attr-defined]
                out.append(self.env_event(stmt, self.subscript_key(target, scope), self.text(value), value))  # type: ignore[arg-type]
            elif not child_env.on_store(self, target, value, stmt, scope, out):  # type: ignore[arg-type]
                labels.on_store(self, target, value, scope)  # type: ignore[arg-type]
                if bind and type(value) is ast.Call:
                    self.bind_event(target, self.origin(value, scope), stmt, scope, out)  # `self.models[k] = Llama()`
            return
        if kind is ast.Attribute:
            self.expr(target.value, scope, out)  # type: ignore[attr-defined]
            self.monkeypatch_event(self.qualify(target, scope), stmt, out)
            parts = dotted(target)
            if bind and value is not None:
                self.bind_event(target, self.origin(value, scope), stmt, scope, out)
            if bind and value is not None and parts and parts[0] in ("self", "cls") and len(parts) == 2 and scope.cls:
                if self.serial_pool(value, scope):
                    self.serial_attrs.add((scope.cls, parts[1]))
                typ = self.type_of_value(value, scope)
                if typ:
                    self.attr_types.setdefault((scope.cls, parts[1]), typ)
            return
        if bind:
            origin = self.origin(value, scope) if value is not None and kind is ast.Name else None
            self.bind(target, value, scope)
            self.bind_event(target, origin, stmt, scope, out)
            if value is not None and kind is ast.Name:
                container_refs.composition_binds(self, target, value, stmt, scope, out)

    def type_of_value(self, value: ast.expr, scope: _Scope) -> Optional[str]:
        if type(value) is ast.Call:
            return self.type_of_call(value, scope)  # type: ignore[arg-type]
        if type(value) is ast.Await:
            return self.type_of_value(value.value, scope)  # type: ignore[attr-defined]
        return None

    def bind(self, target: ast.expr, value: Optional[ast.expr], scope: _Scope) -> None:
        self._bind(target, value, scope)
        labels.on_bind(self, target, value, scope)

    def _bind(self, target: ast.expr, value: Optional[ast.expr], scope: _Scope) -> None:
        kind = type(target)
        if kind is ast.Tuple or kind is ast.List:
            elts = target.elts  # type: ignore[attr-defined]
            # `b1, b2 = gr.Button(), gr.Button()`: each name gets its own value (and so its type)
            # (calls only: `a, b = b, a` swaps, which binding one after the other would not)
            pairs = type(value) in (ast.Tuple, ast.List) and len(value.elts) == len(elts) and all(type(e) is ast.Call for e in value.elts) and not any(type(e) is ast.Starred for e in elts)  # type: ignore[union-attr]
            for i, el in enumerate(elts):
                self.bind(el.value if type(el) is ast.Starred else el, value.elts[i] if pairs else None, scope)  # type: ignore[union-attr]
            return
        if kind is not ast.Name:
            return
        name = target.id  # type: ignore[attr-defined]
        scope.bound.add(name)
        child_env.on_bind(self, name, value, scope)
        shell_env.on_bind(self, name, value, scope)
        import_state.on_bind(self, name, value, scope)
        read = self.env_reads(value, scope) if value is not None else ()
        if read:
            scope.env_values[name] = frozenset(read)  # `old = os.environ.get(V)`: a later `os.environ[V] = old` restores
        else:
            scope.env_values.pop(name, None)
        self.note_pool(name, value, scope)
        scope.cuda_objs.pop(name, None)
        scope.argv.pop(name, None)
        scope.types.pop(name, None)
        scope.env_aliases.discard(name)
        scope.consts.pop(name, None)
        if value is None:
            return
        if self.is_env(value, scope):
            scope.env_aliases.add(name)
            return
        val = literal(value, scope.all_consts())
        if isinstance(val, (str, int)) and not isinstance(val, bool):
            scope.consts[name] = val
            return
        words = self.command_words(value, scope)  # type: ignore[arg-type]
        if words is not None:
            scope.argv[name] = words
            return
        typ = self.type_of_value(value, scope)
        if typ:
            scope.types[name] = typ
        elif type(value) in (ast.Name, ast.Attribute):
            q = self.qualify(value, scope)
            if q and q in self.env_mappings:
                scope.env_aliases.add(name)

    def funcdef(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], scope: _Scope, out: list[Node]) -> None:
        for dec in node.decorator_list:
            self.expr(dec, scope, out)
        args = node.args
        for default in args.defaults:
            self.expr(default, scope, out)
        for default in args.kw_defaults:
            self.expr(default, scope, out)
        name = node.name
        if scope.cls is not None and scope.qualname == scope.cls:
            qualname = f"{scope.cls}.{name}"
            cls = scope.cls
        else:
            qualname = f"{scope.qualname}.{name}" if scope.qualname else name
            cls = None
            scope.defs[name] = qualname
        if cls is not None:
            # a method sees the module's names, not the class body's
            inner = _Scope(qualname=qualname, cls=cls, parent=scope.parent)
        else:
            inner = _Scope(qualname=qualname, cls=scope.cls, parent=scope)
        named = args.posonlyargs + args.args + args.kwonlyargs
        params = tuple(p.arg for p in named)
        inner.bound.update(params)
        labels.on_params(self, named, inner)
        binds = self.param_binds(node, qualname, scope)
        self._yields.append(False)
        body = tuple(binds) + self.block(node.body, inner)
        is_generator = self._yields.pop()
        self._scope = scope
        self.functions[qualname] = Function(
            qualname=qualname,
            loc=self.lines.loc(self.lines.def_name(node)),
            body=body,
            is_async=type(node) is ast.AsyncFunctionDef,
            decorators=self.decorator_names(node, scope),
            params=params,
            is_generator=is_generator,
            returns=labels.freeze(labels.in_order(self.return_labels.get(qualname, ())), self._frozen),
        )

    def classdef(self, node: ast.ClassDef, scope: _Scope, out: list[Node]) -> None:
        for dec in node.decorator_list:
            self.expr(dec, scope, out)
        bases = []
        for base in node.bases:
            self.expr(base, scope, out)
            q = self.qualify(base, scope)
            if q:
                bases.append(q)
        name = node.name
        if any(api.get("llama_context") for b in bases if not b.startswith(":") for api in self.cat.calls_named(b)):
            self.makes_llama = True  # `class LlamaCPP(Llama)`: its instances own a context (cudalint.analysis.thread_objects)
        if scope.qualname == "":
            scope.defs[name] = name
            self.classes[name] = ClassInfo(name=name, bases=tuple(bases))
            inner = _Scope(qualname=name, cls=name, parent=scope)
            out.extend(self.block(node.body, inner))
        else:
            # nested classes: their bodies still run here; methods are not tracked by name
            inner = _Scope(qualname=f"{scope.qualname}.{name}", parent=scope)
            out.extend(self.block(node.body, inner))
        self._scope = scope
