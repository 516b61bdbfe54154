"""Summarize one parsed module into IR: its effects in evaluation order, inside structured flow.

One traversal per module. Names are resolved from the module's own imports and assignments (no
libcst metadata providers); positions are computed afterwards for the nodes that became effects.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Optional, Sequence

import libcst as cst

from cudalint import labels
from cudalint.callargs import arg_expr
from cudalint.catalogue import Api, Catalogue
from cudalint.ir import Block, Branch, ClassInfo, Event, Function, Loop, MainGuard, ModuleIR, Node, Try
from cudalint.positions import positions
from cudalint.thread_events import ThreadEvents
from cudalint.values import value_info

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
_BUILTINS = {"exit": "builtins.exit", "quit": "builtins.quit"}
NOQA_RE = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z][0-9]+(?:[,\s]+[A-Z][0-9]+)*))?", re.IGNORECASE)
_TEXT_LIMIT = 72

_UNKNOWN = object()


def literal(expr: cst.BaseExpression | None, consts: dict[str, object] | None = None) -> object:
    """The value of a literal expression, `_UNKNOWN` when it is not one.

    f-strings keep their literal parts and turn each placeholder into `*`, so a glob such as
    "cuda*" matches f"cuda:{i}".
    """
    if expr is None:
        return None
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return _UNKNOWN
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left, consts), literal(expr.right, consts)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return _UNKNOWN
    if isinstance(expr, cst.FormattedString):
        out = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(part.value)
            else:
                val = literal(part.expression, consts)
                out.append(str(val) if isinstance(val, (str, int)) and not isinstance(val, bool) else "*")
        return "".join(out)
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value, 0)
        except ValueError:
            return _UNKNOWN
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        val = literal(expr.expression, consts)
        return -val if isinstance(val, int) and not isinstance(val, bool) else _UNKNOWN
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if consts is not None and expr.value in consts:
            return consts[expr.value]
    return _UNKNOWN


def dotted(expr: cst.BaseExpression) -> Optional[list[str]]:
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        parts.reverse()
        return parts
    return None


def _fnmatch(value: object, pattern: str) -> bool:
    import fnmatch

    if pattern == "<int>":
        return isinstance(value, int) and not isinstance(value, bool)
    if pattern == "<none>":
        return value is None
    if isinstance(value, bool) or value is None:
        return pattern == str(value)
    if isinstance(value, str):
        return fnmatch.fnmatchcase(value, pattern)
    return False


@dataclass
class _Scope:
    """What is known inside one function body (or the module top level)."""

    qualname: str  # "" for the module, "f", "C.m"
    cls: Optional[str] = None  # enclosing class for methods
    defs: dict[str, str] = field(default_factory=dict)  # local def name -> function qualname
    types: dict[str, str] = field(default_factory=dict)  # variable -> qualified type or ":C"
    consts: dict[str, object] = field(default_factory=dict)
    env_aliases: set[str] = field(default_factory=set)
    labels: dict[str, frozenset] = field(default_factory=dict)  # variable -> value labels (cudalint.labels)
    parent: Optional["_Scope"] = None
    bound: set[str] = field(default_factory=set)  # names assigned here (thread events' refs)
    globals_: set[str] = field(default_factory=set)  # `global` declarations
    streams: dict[str, str] = field(default_factory=dict)  # local -> ref of the Llama it streams from

    def chain(self) -> Iterator["_Scope"]:
        """This scope, then the enclosing ones out to the module."""
        scope: Optional[_Scope] = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def lookup_labels(self, name: str) -> frozenset:
        for scope in self.chain():
            if name in scope.labels:
                return scope.labels[name]
            if name in scope.types or name in scope.consts or name in scope.env_aliases:
                return frozenset()  # rebound here without labels
        return frozenset()

    def lookup_def(self, name: str) -> Optional[str]:
        return next((scope.defs[name] for scope in self.chain() if name in scope.defs), None)

    def lookup_type(self, name: str) -> Optional[str]:
        return next((scope.types[name] for scope in self.chain() if name in scope.types), None)

    def lookup_const(self, name: str) -> object:
        return next((scope.consts[name] for scope in self.chain() if name in scope.consts), _UNKNOWN)

    def is_env_alias(self, name: str) -> bool:
        return any(name in scope.env_aliases for scope in self.chain())

    def all_consts(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for scope in reversed(list(self.chain())):
            out.update(scope.consts)
        return out


class _Summarizer(ThreadEvents):
    def __init__(self, module: cst.Module, path: str, modname: str, catalogue: Catalogue, is_package: bool):
        self.module = module
        self.path = path
        self.modname = modname
        self.package = modname if is_package else modname.rpartition(".")[0]
        self.cat = catalogue
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.attr_types: dict[tuple[str, str], str] = {}  # (class, attribute) -> type
        self.wanted: list[cst.CSTNode] = []
        self.env_mappings = {a.name for a in catalogue.apis if a.get("env_mapping")}
        self.lib_roots = {r for lib in catalogue.libraries for r in lib.import_roots}
        self.init_thread_events()
        self.return_labels: dict[str, set] = {}  # function qualname -> labels of its returned values

    # ---------- events -------------------------------------------------------------------
    def event(self, kind: str, node: cst.CSTNode, data: tuple = (), text: Optional[str] = None) -> Event:
        self.wanted.append(node)
        if text is None:
            text = self.text(node)
        return Event(kind=kind, loc=node, text=text, data=data)  # type: ignore[arg-type]

    def text(self, node: cst.CSTNode) -> str:
        try:
            code = self.module.code_for_node(node)
        except Exception:
            return ""
        code = " ".join(code.split())
        if len(code) > _TEXT_LIMIT:
            code = code[: _TEXT_LIMIT - 3] + "..."
        return code

    # ---------- names --------------------------------------------------------------------
    def resolve_relative(self, node: cst.ImportFrom) -> Optional[str]:
        level = len(node.relative)
        mod = self.text(node.module).replace(" ", "") if node.module is not None else ""
        if level == 0:
            return mod
        base = self.package.split(".") if self.package else []
        if level - 1 > len(base):
            return None
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join([p for p in base + ([mod] if mod else []) if p])

    def qualify(self, expr: cst.BaseExpression, scope: _Scope) -> Optional[str]:
        """The qualified name an expression refers to, through imports, aliases and known types."""
        if isinstance(expr, cst.Call):
            base = self.type_of_call(expr, scope)
            return base
        parts = dotted(expr)
        if parts is None:
            if isinstance(expr, cst.Attribute):
                base = self.qualify(expr.value, scope) if isinstance(expr.value, cst.Call) else None
                if base:
                    return f"{base}.{expr.attr.value}"
            return None
        head, rest = parts[0], parts[1:]
        if head in ("self", "cls") and scope.cls and len(rest) >= 1:
            attr_type = self.attr_types.get((scope.cls, rest[0]))
            if attr_type and len(rest) >= 2:
                return ".".join([attr_type] + rest[1:])
            if len(rest) == 1:
                return f":{scope.cls}.{rest[0]}"
            return None
        typ = scope.lookup_type(head)
        if typ is not None:
            return ".".join([typ] + rest)
        local = scope.lookup_def(head)
        if local is not None:
            return ".".join([":" + local] + rest)
        if head in self.imports:
            return ".".join([self.imports[head]] + rest)
        if head in _BUILTINS and not rest:
            return _BUILTINS[head]
        for star in self.star_imports:
            cand = ".".join([star, head] + rest)
            if self.cat.calls_named(cand):
                return cand
        return None

    def type_of_call(self, call: cst.Call, scope: _Scope) -> Optional[str]:
        """What a call returns, when we know: an instance of the class called."""
        q = self.qualify(call.func, scope)
        if q is None:
            return None
        if q.startswith(":"):
            name = q[1:]
            if name in self.classes:
                return q
            return None
        for api in self.cat.calls_named(q):
            if api.get("returns") and self.applies(api, call, scope):
                return api.get("returns")
        return q

    # ---------- argument matching ---------------------------------------------------------
    def arg_value(self, call: cst.Call, slots: Sequence[str], scope: _Scope) -> object:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for slot in slots:
            if slot.isdigit():
                idx = int(slot)
                if idx < len(positional):
                    return self.value_of(positional[idx].value, scope)
            else:
                for a in call.args:
                    if a.keyword is not None and a.keyword.value == slot:
                        return self.value_of(a.value, scope)
        if any(a.star for a in call.args):
            return _UNKNOWN
        return None

    def value_of(self, expr: cst.BaseExpression, scope: _Scope) -> object:
        val = literal(expr, scope.all_consts())
        if val is not _UNKNOWN:
            return val
        # a command line given as a list of strings stands for the words joined by spaces
        if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
            words = [literal(el.value, scope.all_consts()) for el in expr.elements if isinstance(el, cst.Element)]
            if words and all(isinstance(w, str) for w in words):
                return " ".join(words)  # type: ignore[arg-type]
        # torch.device("cuda:1") stands for its string
        if isinstance(expr, cst.Call) and expr.args:
            q = self.qualify(expr.func, scope)
            if q == "torch.device":
                return literal(expr.args[0].value, scope.all_consts())
        return _UNKNOWN

    def applies(self, api: Api, call: cst.Call, scope: _Scope) -> bool:
        for slots, pattern in api.match:
            if not _fnmatch(self.arg_value(call, slots, scope), pattern):
                return False
        for slots, pattern in api.unless:
            if _fnmatch(self.arg_value(call, slots, scope), pattern):
                return False
        return True

    # ---------- expressions ----------------------------------------------------------------
    def expr(self, expr: Optional[cst.CSTNode], scope: _Scope, out: list[Node]) -> None:
        if expr is None:
            return
        if isinstance(expr, cst.Call):
            self.call(expr, scope, out)
            return
        if isinstance(expr, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return  # not executed here
        if isinstance(expr, cst.Yield):
            if self._yields:
                self._yields[-1] = True
            if isinstance(expr.value, cst.From):
                self.expr(expr.value.item, scope, out)
                self.stream_iteration(expr.value.item, scope, out)
                return
        if isinstance(expr, cst.BooleanOperation):
            self.expr(expr.left, scope, out)
            right: list[Node] = []
            self.expr(expr.right, scope, right)
            if right:
                out.append(Branch(arms=(tuple(right),), exhaustive=False))
            return
        if isinstance(expr, cst.IfExp):
            self.expr(expr.test, scope, out)
            body: list[Node] = []
            orelse: list[Node] = []
            self.expr(expr.body, scope, body)
            self.expr(expr.orelse, scope, orelse)
            if body or orelse:
                out.append(Branch(arms=(tuple(body), tuple(orelse)), exhaustive=True))
            return
        if isinstance(expr, (cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)):
            return
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            # a comprehension's element runs once per item: a loop (threads started in it are several)
            inner: list[Node] = []
            for child in _children(expr):
                self.expr(child, scope, inner)
            if inner:
                out.append(Loop(body=tuple(inner), orelse=(), loc=self.loc_node(expr)))
            return
        for child in _children(expr):
            self.expr(child, scope, out)

    def call(self, call: cst.Call, scope: _Scope, out: list[Node]) -> None:
        func = call.func
        # the callee expression is evaluated first (x.y(...) evaluates x), then the arguments
        if isinstance(func, cst.Attribute):
            self.expr(func.value, scope, out)
        elif not isinstance(func, cst.Name):
            self.expr(func, scope, out)
        for arg in call.args:
            self.expr(arg.value, scope, out)
        q = self.callee(call, scope)
        if isinstance(func, cst.Name) and func.value == "setattr" and q is None and len(call.args) >= 3:
            owner = self.qualify(call.args[0].value, scope)
            attr = literal(call.args[1].value)
            if owner and isinstance(attr, str):
                self.monkeypatch_event(f"{owner}.{attr}", call, out)
        labels.method_call(self, call, q, scope, out)
        self.call_effects(call, q, scope, out)
        self.llama_call_events(call, scope, out)

    def call_effects(self, call: cst.Call, q: Optional[str], scope: _Scope, out: list[Node]) -> None:
        matched = False
        if q is not None and not q.startswith(":"):
            for api in self.cat.calls_named(q):
                if self.applies(api, call, scope):
                    matched = True
                    self.api_effects(api, call, out, scope)
                    break
            if not matched and self.env_call(call, q, scope, out):
                return
        if not matched and isinstance(call.func, cst.Attribute) and self.receiver_is_value(call.func.value, scope):
            for api in self.cat.methods.get(call.func.attr.value, ()):
                if self.applies(api, call, scope):
                    matched = True
                    self.api_effects(api, call, out, scope)
                    break
        if matched or q is None:
            return
        if q.startswith(":") or self.maybe_project(q):
            out.append(self.event("call", call, (q,)))

    def monkeypatch_event(self, q: Optional[str], node: cst.CSTNode, out: list[Node]) -> None:
        """`torch.cuda.is_available = ...`: a catalogued CUDA API replaced for the whole process (CUD008)."""
        if q is None or q.startswith(":"):
            return
        # a lazy API (torch.manual_seed) only queues work: wrapping it hides nothing
        apis = [a for a in self.cat.calls_named(q) if a.init not in (None, "lazy") and not a.is_glob]
        if apis:
            out.append(self.event("monkeypatch", node, (q, apis[0].init)))

    def receiver_is_value(self, receiver: cst.BaseExpression, scope: _Scope) -> bool:
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

    def api_effects(self, api: Api, call: cst.Call, out: list[Node], scope: Optional[_Scope] = None) -> None:
        self.thread_api_effects(api, call, scope or self._scope, out)
        if api.initializes:
            out.append(self.event("init", call, (api.name, api.library, api.init, api.note)))
        env_write = api.get("env_write")
        if env_write:
            spec = dict(env_write)
            value_expr = arg_expr(call, spec.get("value", "1"))
            out.append(self.env_event(call, self.arg_literal(call, spec.get("key", "0")), self.text(value_expr) if value_expr is not None else "", value_expr))
        device_arg = api.get("device_arg")
        if device_arg:
            value_expr = arg_expr(call, device_arg)
            if value_expr is not None:
                vtype, vlit = value_info(value_expr, self._scope, self.imports)
                out.append(self.event("device_arg", call, (api.name, vtype, vlit, self.text(value_expr))))
        if api.get("exits"):
            out.append(self.event("exit", call, (api.name,)))
        labels.api_effects(self, api, call, self._scope, out)

    def arg_literal(self, call: cst.Call, slots: str) -> str:
        val = self.arg_value(call, tuple(slots.split("|")), self._scope)
        return val if isinstance(val, str) else ""

    def arg_text(self, call: cst.Call, slots: str) -> str:
        expr = arg_expr(call, slots)
        return self.text(expr) if expr is not None else ""

    def env_event(self, node: cst.CSTNode, var: str, value: str, value_expr: Optional[cst.BaseExpression] = None) -> Event:
        # data: (variable, value source text, value type, exact str value, labels); see cudalint.values
        # and cudalint.labels (CUD004 sees NVML indices written to CUDA_VISIBLE_DEVICES)
        vtype, vlit = value_info(value_expr, self._scope, self.imports) if value_expr is not None else ("", "")
        found = labels.for_event(self, value_expr, self._scope) if value_expr is not None else ()
        return self.event("env_write", node, (var, value, vtype, vlit, found))

    def is_env(self, expr: cst.BaseExpression, scope: _Scope) -> bool:
        if isinstance(expr, cst.Name) and scope.is_env_alias(expr.value):
            return True
        q = self.qualify(expr, scope)
        return q is not None and q in self.env_mappings

    def key_of(self, expr: cst.BaseExpression, scope: _Scope) -> str:
        val = literal(expr, scope.all_consts())
        return val if isinstance(val, str) else ""

    def env_call(self, call: cst.Call, q: str, scope: _Scope, out: list[Node]) -> bool:
        """os.environ.update/setdefault/pop/clear: writes to the process environment."""
        func = call.func
        if not isinstance(func, cst.Attribute) or not self.is_env(func.value, scope):
            return False
        method = func.attr.value
        if method == "update":
            for arg in call.args:
                if arg.keyword is not None:
                    out.append(self.env_event(arg, arg.keyword.value, self.text(arg.value), arg.value))
                elif arg.star == "" and isinstance(arg.value, cst.Dict):
                    for el in arg.value.elements:
                        if isinstance(el, cst.DictElement):
                            out.append(self.env_event(el, self.key_of(el.key, scope), self.text(el.value), el.value))
                else:
                    out.append(self.env_event(call, "", self.text(arg.value)))
            return True
        if method == "setdefault" and call.args:
            value = self.text(call.args[1].value) if len(call.args) > 1 else ""
            value_expr = call.args[1].value if len(call.args) > 1 else None
            out.append(self.env_event(call, self.key_of(call.args[0].value, scope), value, value_expr))
            return True
        if method in ("pop", "__delitem__", "__setitem__") and call.args:
            out.append(self.env_event(call, self.key_of(call.args[0].value, scope), ""))
            return True
        if method == "clear":
            out.append(self.env_event(call, "*", ""))
            return True
        return method in ("get", "copy", "items", "keys", "values", "__getitem__", "__contains__")

    # ---------- statements -----------------------------------------------------------------
    def block(self, stmts: Iterable[cst.CSTNode], scope: _Scope) -> Block:
        out: list[Node] = []
        for stmt in stmts:
            self.stmt(stmt, scope, out)
        return tuple(out)

    def suite(self, body: cst.BaseSuite, scope: _Scope) -> Block:
        return self.block(body.body, scope)

    def stmt(self, stmt: cst.CSTNode, scope: _Scope, out: list[Node]) -> None:
        self._scope = scope
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.small(small, scope, out)
        elif isinstance(stmt, cst.SimpleStatementSuite):
            for small in stmt.body:
                self.small(small, scope, out)
        elif isinstance(stmt, cst.If):
            if scope.qualname == "" and scope.cls is None and _is_main_guard(stmt.test):
                orelse = self.orelse_block(stmt.orelse, scope)
                out.append(MainGuard(body=self.suite(stmt.body, scope), orelse=orelse))
                return
            self.expr(stmt.test, scope, out)
            body = self.suite(stmt.body, scope)
            if stmt.orelse is None:
                out.append(Branch(arms=(body,), exhaustive=False))
            else:
                out.append(Branch(arms=(body, self.orelse_block(stmt.orelse, scope)), exhaustive=True))
        elif isinstance(stmt, cst.For):
            self.expr(stmt.iter, scope, out)
            self.stream_iteration(stmt.iter, scope, out)
            self.bind(stmt.target, None, scope)
            labels.on_for(self, stmt.target, stmt.iter, scope)
            out.append(Loop(body=self.suite(stmt.body, scope), orelse=self.orelse_block(stmt.orelse, scope), loc=self.loc_node(stmt)))
        elif isinstance(stmt, cst.While):
            test: list[Node] = []
            self.expr(stmt.test, scope, test)
            infinite = literal(stmt.test) is True or (isinstance(stmt.test, cst.Integer) and literal(stmt.test) != 0)
            out.extend(test)
            body = tuple(self.suite(stmt.body, scope)) + tuple(test)
            out.append(Loop(body=body, orelse=self.orelse_block(stmt.orelse, scope), loc=self.loc_node(stmt), infinite=infinite))
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            handlers = tuple(self.suite(h.body, scope) for h in stmt.handlers)
            out.append(
                Try(
                    body=self.suite(stmt.body, scope),
                    handlers=handlers,
                    orelse=self.orelse_block(stmt.orelse, scope),
                    final=self.suite(stmt.finalbody.body, scope) if stmt.finalbody else (),
                )
            )
        elif isinstance(stmt, cst.With):
            held = []
            for item in stmt.items:
                self.expr(item.item, scope, out)
                if isinstance(item.item, cst.Call):
                    typ = self.type_of_call(item.item, scope)
                    if typ and not typ.startswith(":"):
                        for api in self.cat.calls_named(typ + ".__enter__"):
                            self.api_effects(api, item.item, out)
                            break
                if item.asname is not None:
                    origin = self.origin(item.item, scope)
                    self.bind(item.asname.name, item.item, scope)
                    self.bind_event(item.asname.name, origin, item, scope, out)
                lock = self.lock_ref(item.item, scope)
                if lock:
                    out.append(self.event("lock_enter", item.item, (lock,)))
                    held.append((lock, item.item))
            out.extend(self.suite(stmt.body, scope))
            for lock, node in reversed(held):
                out.append(self.event("lock_exit", node, (lock,)))
        elif isinstance(stmt, cst.FunctionDef):
            self.funcdef(stmt, scope, out)
        elif isinstance(stmt, cst.ClassDef):
            self.classdef(stmt, scope, out)
        elif isinstance(stmt, cst.Match):
            self.expr(stmt.subject, scope, out)
            arms = tuple(self.suite(case.body, scope) for case in stmt.cases)
            exhaustive = any(isinstance(c.pattern, cst.MatchAs) and c.pattern.pattern is None and c.guard is None for c in stmt.cases)
            out.append(Branch(arms=arms, exhaustive=exhaustive))
        else:
            for child in _children(stmt):
                self.expr(child, scope, out)

    def orelse_block(self, orelse: Optional[cst.CSTNode], scope: _Scope) -> Block:
        if orelse is None:
            return ()
        if isinstance(orelse, cst.If):
            out: list[Node] = []
            self.stmt(orelse, scope, out)
            return tuple(out)
        return self.suite(orelse.body, scope)  # type: ignore[attr-defined]

    def loc_node(self, node: cst.CSTNode) -> cst.CSTNode:
        self.wanted.append(node)
        return node

    def small(self, small: cst.CSTNode, scope: _Scope, out: list[Node]) -> None:
        if isinstance(small, cst.Expr):
            self.expr(small.value, scope, out)
        elif isinstance(small, cst.Assign):
            self.expr(small.value, scope, out)
            self.stream_binding(small.value, [t.target for t in small.targets], scope, out)
            for target in small.targets:
                self.assign_target(target.target, small.value, small, scope, out)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.expr(small.value, scope, out)
                self.assign_target(small.target, small.value, small, scope, out)
        elif isinstance(small, cst.AugAssign):
            self.expr(small.value, scope, out)
            if isinstance(small.operator, cst.BitOrAssign) and self.is_env(small.target, scope):
                if isinstance(small.value, cst.Dict):
                    for el in small.value.elements:
                        if isinstance(el, cst.DictElement):
                            out.append(self.env_event(el, self.key_of(el.key, scope), self.text(el.value), el.value))
                else:
                    out.append(self.env_event(small, "", self.text(small.value)))
            else:
                self.assign_target(small.target, None, small, scope, out, bind=False)
        elif isinstance(small, cst.Del):
            for target in _targets(small.target):
                if isinstance(target, cst.Subscript) and self.is_env(target.value, scope):
                    out.append(self.env_event(small, self.subscript_key(target, scope), ""))
        elif isinstance(small, cst.Return):
            self.expr(small.value, scope, out)
            labels.on_return(self, small.value, scope)
            out.append(self.event("return", small, self.return_data(small.value, scope)))
        elif isinstance(small, cst.Raise):
            self.expr(small.exc, scope, out)
            out.append(self.event("raise", small, ()))
        elif isinstance(small, cst.Break):
            out.append(self.event("break", small, ()))
        elif isinstance(small, cst.Continue):
            out.append(self.event("continue", small, ()))
        elif isinstance(small, cst.Import):
            for alias in small.names:
                name = self.text(alias.name).replace(" ", "")
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.imports[alias.asname.name.value] = name
                else:
                    root = name.split(".")[0]
                    self.imports.setdefault(root, root)
                self.import_effects(small, [name], out)
        elif isinstance(small, cst.ImportFrom):
            base = self.resolve_relative(small)
            if base is None:
                return
            if isinstance(small.names, cst.ImportStar):
                self.star_imports.append(base)
                self.import_effects(small, [base], out)
                return
            targets = []
            for alias in small.names:
                name = self.text(alias.name).replace(" ", "")
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                qualified = f"{base}.{name}" if base else name
                self.imports[local] = qualified
                targets.append(qualified)
            self.import_effects(small, [base], out, submodules=targets)
        elif isinstance(small, cst.Assert):
            self.expr(small.test, scope, out)
        elif isinstance(small, cst.Global):
            scope.globals_.update(n.name.value for n in small.names)
        elif isinstance(small, (cst.Pass, cst.Nonlocal)):
            pass
        else:
            for child in _children(small):
                self.expr(child, scope, out)

    def subscript_key(self, target: cst.Subscript, scope: _Scope) -> str:
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            return self.key_of(target.slice[0].slice.value, scope)
        return ""

    def assign_target(
        self,
        target: cst.BaseExpression,
        value: Optional[cst.BaseExpression],
        stmt: cst.CSTNode,
        scope: _Scope,
        out: list[Node],
        bind: bool = True,
    ) -> None:
        if isinstance(target, cst.Subscript):
            self.expr(target.value, scope, out)
            if self.is_env(target.value, scope):
                out.append(self.env_event(stmt, self.subscript_key(target, scope), self.text(value) if value is not None else "", value))
            return
        if isinstance(target, cst.Attribute):
            self.expr(target.value, scope, out)
            self.monkeypatch_event(self.qualify(target, scope), stmt, out)
            parts = dotted(target)
            if bind and value is not None:
                self.bind_event(target, self.origin(value, scope), stmt, scope, out)
            if bind and value is not None and parts and parts[0] in ("self", "cls") and len(parts) == 2 and scope.cls:
                typ = self.type_of_value(value, scope)
                if typ:
                    self.attr_types.setdefault((scope.cls, parts[1]), typ)
            return
        if bind:
            origin = self.origin(value, scope) if value is not None and isinstance(target, cst.Name) else None
            self.bind(target, value, scope)
            self.bind_event(target, origin, stmt, scope, out)

    def type_of_value(self, value: cst.BaseExpression, scope: _Scope) -> Optional[str]:
        if isinstance(value, cst.Call):
            return self.type_of_call(value, scope)
        if isinstance(value, cst.Await):
            return self.type_of_value(value.expression, scope)
        return None

    def bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], scope: _Scope) -> None:
        self._bind(target, value, scope)
        labels.on_bind(self, target, value, scope)

    def _bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], scope: _Scope) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.bind(el.value, None, scope)
            return
        if not isinstance(target, cst.Name):
            return
        name = target.value
        scope.bound.add(name)
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
        typ = self.type_of_value(value, scope)
        if typ:
            scope.types[name] = typ
        elif isinstance(value, (cst.Name, cst.Attribute)):
            q = self.qualify(value, scope)
            if q and q in self.env_mappings:
                scope.env_aliases.add(name)

    def import_effects(self, node: cst.CSTNode, modules: list[str], out: list[Node], submodules: Sequence[str] = ()) -> None:
        names: list[str] = []
        for mod in modules:
            parts = mod.split(".")
            names.extend(".".join(parts[: i + 1]) for i in range(len(parts)))
        names.extend(submodules)
        seen = list(dict.fromkeys(n for n in names if n))
        lib = [n for n in seen if n.split(".")[0] in self.lib_roots]
        for name in seen:
            for api in self.cat.imports.get(name, ()):
                if not api.initializes:
                    continue  # e.g. `streamlit` (reruns_script): read by cudalint.threads from import_lib
                out.append(self.event("init", node, (api.name, api.library, api.init, api.note)))
        if lib:
            out.append(self.event("import_lib", node, tuple(lib)))
        project = tuple(n for n in seen if n.split(".")[0] not in self.lib_roots and n.split(".")[0] not in _STDLIB)
        if project:
            out.append(self.event("import", node, project))

    def funcdef(self, node: cst.FunctionDef, scope: _Scope, out: list[Node]) -> None:
        for dec in node.decorators:
            self.expr(dec.decorator, scope, out)
        for param in _params(node.params):
            if param.default is not None:
                self.expr(param.default, scope, out)
        name = node.name.value
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
        params = tuple(p.name.value for p in _params(node.params))
        inner.bound.update(params)
        labels.on_params(self, _params(node.params), inner)
        binds = self.param_binds(node, qualname, scope)
        self._yields.append(False)
        body = tuple(binds) + self.suite(node.body, inner)
        is_generator = self._yields.pop()
        self._scope = scope
        self.functions[qualname] = Function(
            qualname=qualname,
            loc=self.loc_node(node.name),
            body=body,
            is_async=node.asynchronous is not None,
            decorators=self.decorator_names(node, scope),
            params=params,
            is_generator=is_generator,
            returns=tuple(self.return_labels.get(qualname, ())),
        )

    def classdef(self, node: cst.ClassDef, scope: _Scope, out: list[Node]) -> None:
        for dec in node.decorators:
            self.expr(dec.decorator, scope, out)
        bases = []
        for base in node.bases:
            self.expr(base.value, scope, out)
            q = self.qualify(base.value, scope)
            if q:
                bases.append(q)
        name = node.name.value
        if scope.qualname == "":
            scope.defs[name] = name
            self.classes[name] = ClassInfo(name=name, bases=tuple(bases))
            inner = _Scope(qualname=name, cls=name, parent=scope)
            out.extend(self.suite(node.body, inner))
        else:
            # nested classes: their bodies still run here; methods are not tracked by name
            inner = _Scope(qualname=f"{scope.qualname}.{name}", parent=scope)
            out.extend(self.suite(node.body, inner))
        self._scope = scope


_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's child nodes in source order, like `node.children` at a fraction of its cost.

    libcst computes `children` by running a visitor over the node (a third of the summarizer's
    time on torch's sources); the dataclass fields hold the same nodes in the same order.
    """
    names = _FIELDS.get(type(node))
    if names is None:
        import dataclasses

        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, cst.CSTNode))
    return out


def _params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    return out


def _targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [el.value for el in target.elements]
    return [target]


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comp = test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return False
    sides = [test.left, comp.comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if literal(s) == "__main__"]
    return len(names) == 1 and len(strings) == 1


def noqa_lines(source: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    if "noqa" not in source and "NOQA" not in source.upper():
        return ()
    out = []
    # Python's line ends only: str.splitlines() also splits at \f, \v, \x1c-\x1e, \x85, \u2028 ...
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", source), 1):
        if "#" not in line:
            continue
        m = NOQA_RE.search(line)
        if m:
            codes = m.group("codes")
            out.append((lineno, tuple(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else ()))
    return tuple(out)


def _finalize(node: Node, pos: dict[int, tuple[int, int, int, int]]) -> Node:
    if isinstance(node, Event):
        return replace(node, loc=pos.get(id(node.loc), (0, 0, 0, 0)), data=labels.freeze(node.data, pos))
    if isinstance(node, Branch):
        return Branch(arms=tuple(_finalize_block(a, pos) for a in node.arms), exhaustive=node.exhaustive)
    if isinstance(node, Loop):
        return Loop(body=_finalize_block(node.body, pos), orelse=_finalize_block(node.orelse, pos), loc=pos.get(id(node.loc), (0, 0, 0, 0)), infinite=node.infinite)
    if isinstance(node, Try):
        return Try(
            body=_finalize_block(node.body, pos),
            handlers=tuple(_finalize_block(h, pos) for h in node.handlers),
            orelse=_finalize_block(node.orelse, pos),
            final=_finalize_block(node.final, pos),
        )
    if isinstance(node, MainGuard):
        return MainGuard(body=_finalize_block(node.body, pos), orelse=_finalize_block(node.orelse, pos))
    return node


def _finalize_block(block: Block, pos: dict[int, tuple[int, int, int, int]]) -> Block:
    return tuple(_finalize(n, pos) for n in block)


def summarize(module: cst.Module, source: str, path: str, modname: str, catalogue: Catalogue, is_package: bool = False) -> ModuleIR:
    s = _Summarizer(module, path, modname, catalogue, is_package)
    top_scope = _Scope(qualname="")
    s._scope = top_scope
    top = s.block(module.body, top_scope)
    pos = positions(module, s.wanted)
    functions = {
        name: replace(
            f,
            loc=pos.get(id(f.loc), (0, 0, 0, 0)),
            body=_finalize_block(f.body, pos),
            returns=labels.freeze(f.returns, pos),
        )
        for name, f in s.functions.items()
    }
    return ModuleIR(
        path=path,
        module=modname,
        top=_finalize_block(top, pos),
        functions=functions,
        classes=dict(s.classes),
        noqa=noqa_lines(source),
    )
