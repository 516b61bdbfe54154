"""Summarize one parsed module into IR: its effects in evaluation order, inside structured flow.

One traversal per module over CPython's `ast` (libcst is the fixer's: a fifth of its parse time and
no code generation to find positions and text). Names are resolved from the module's own imports
and assignments; positions and text come from the nodes that become effects.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

from cudalint import child_env, container_refs, cuda_attrs, labels
from cudalint.callargs import arg_expr, args_of, first_arg, positional
from cudalint.catalogue import Api, Catalogue, env_fact
from cudalint.ir import Block, Branch, ClassInfo, Event, Function, Loop, MainGuard, ModuleIR, Node, Try
from cudalint.positions import Lines, Located, span
from cudalint import static_guards
from cudalint.thread_events import ThreadEvents
from cudalint.values import value_info

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
_BUILTINS = {"exit": "builtins.exit", "quit": "builtins.quit"}
NOQA_RE = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

_UNKNOWN = object()
_LITERALS = (str, bytes, int, bool, type(None))  # the constants `literal` knows (a float is not a device or a key)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LEAVES = (ast.Name, ast.Constant)


def literal(expr: Optional[ast.AST], consts: Optional[Mapping[str, object]] = None) -> object:
    """The value of a literal expression, `_UNKNOWN` when it is not one.

    f-strings keep their literal parts and turn each placeholder into `*`, so a glob such as
    "cuda*" matches f"cuda:{i}".
    """
    if expr is None:
        return None
    kind = type(expr)
    if kind is ast.Constant:
        value = expr.value  # type: ignore[attr-defined]
        return value if type(value) in _LITERALS else _UNKNOWN
    if kind is ast.JoinedStr:
        out = []
        for part in expr.values:  # type: ignore[attr-defined]
            if type(part) is ast.Constant:
                out.append(str(part.value))
            else:
                val = literal(getattr(part, "value", None), consts)
                out.append(str(val) if isinstance(val, (str, int)) and not isinstance(val, bool) else "*")
        return "".join(out)
    if kind is ast.UnaryOp and type(expr.op) is ast.USub:  # type: ignore[attr-defined]
        val = literal(expr.operand, consts)  # type: ignore[attr-defined]
        return -val if isinstance(val, int) and not isinstance(val, bool) else _UNKNOWN
    if kind is ast.Name and consts is not None and expr.id in consts:  # type: ignore[attr-defined]
        return consts[expr.id]  # type: ignore[attr-defined]
    return _UNKNOWN


def dotted(expr: ast.AST) -> Optional[list[str]]:
    parts: list[str] = []
    while type(expr) is ast.Attribute:
        parts.append(expr.attr)  # type: ignore[attr-defined]
        expr = expr.value  # type: ignore[attr-defined]
    if type(expr) is ast.Name:
        parts.append(expr.id)  # type: ignore[attr-defined]
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
    if isinstance(value, (str, int)):
        # an int by its digits, as the tracer does (`unless = { device = "-1" }`)
        return fnmatch.fnmatchcase(value if isinstance(value, str) else str(value), pattern)
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
    env_copies: set[str] = field(default_factory=set)  # names bound to a copy of the environment (cudalint.child_env)
    env_dicts: dict = field(default_factory=dict)  # names bound to a new mapping that sets CUDA_VISIBLE_DEVICES (cudalint.child_env)
    argv: dict[str, str] = field(default_factory=dict)  # names bound to a command line (a list of strings), its words joined
    serial_pools: set[str] = field(default_factory=set)  # names bound to a one-worker thread pool (cudalint.thread_events)
    cuda_objs: dict[str, tuple] = field(default_factory=dict)  # names bound to what a CUDA-initializing call built: (line, text, library)

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

    def all_consts(self) -> "_Consts":
        """The constants visible here, inner scopes first (a view: most expressions name none)."""
        return _Consts(self)


class _Consts:
    """`name in consts`, `consts[name]` over a scope and the ones around it."""

    __slots__ = ("scope",)

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope

    def __contains__(self, name: object) -> bool:
        return any(name in scope.consts for scope in self.scope.chain())

    def __getitem__(self, name: str) -> object:
        return self.scope.lookup_const(name)


class _Summarizer(ThreadEvents):
    def __init__(self, source: str, path: str, modname: str, catalogue: Catalogue, is_package: bool):
        self.lines = Lines(source)
        self.path = path
        self.modname = modname
        self.package = modname if is_package else modname.rpartition(".")[0]
        self.cat = catalogue
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.attr_types: dict[tuple[str, str], str] = {}  # (class, attribute) -> type
        self.cuda_attrs: dict[tuple[str, str], tuple] = {}  # (class, attribute) -> what a CUDA-initializing call built (cudalint.cuda_attrs)
        self.env_mappings = {a.name for a in catalogue.apis if a.get("env_mapping")}
        self.lib_roots = {r for lib in catalogue.libraries for r in lib.import_roots}
        self.view = labels.view(catalogue)
        self.init_thread_events()
        self.return_labels: dict[str, set] = {}  # function qualname -> labels of its returned values
        self._tree: Optional[ast.Module] = None
        self._consts: Optional[dict] = None  # static_guards.module_constants, computed when an `if` asks
        self._restored: Optional[frozenset] = None  # static_guards.restored_attributes of the module
        self._env_guards: list[set] = []  # variables the enclosing `if` tests read (cudalint.static_guards)
        self.output_files: dict[str, object] = {}  # file name -> the label of the tool output redirected to it (cudalint.labels)

    # ---------- events -------------------------------------------------------------------
    def event(self, kind: str, node: Located, data: tuple = (), text: Optional[str] = None) -> Event:
        if text is None:
            text = self.lines.text(node)
        return Event(kind=kind, loc=self.lines.loc(node), text=text, data=labels.freeze(data))

    def text(self, node: Optional[Located]) -> str:
        return self.lines.text(node)

    # ---------- names --------------------------------------------------------------------
    def resolve_relative(self, node: ast.ImportFrom) -> Optional[str]:
        level = node.level or 0
        mod = node.module or ""
        if level == 0:
            return mod
        base = self.package.split(".") if self.package else []
        if level - 1 > len(base):
            return None
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join([p for p in base + ([mod] if mod else []) if p])

    def qualify(self, expr: ast.AST, scope: _Scope) -> Optional[str]:
        """The qualified name an expression refers to, through imports, aliases and known types."""
        if type(expr) is ast.Call:
            return self.type_of_call(expr, scope)  # type: ignore[arg-type]
        parts = dotted(expr)
        if parts is None:
            if type(expr) is ast.Attribute:
                base = self.qualify(expr.value, scope) if type(expr.value) is ast.Call else None  # type: ignore[attr-defined]
                if base:
                    return f"{base}.{expr.attr}"  # type: ignore[attr-defined]
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

    def type_of_call(self, call: ast.Call, scope: _Scope) -> Optional[str]:
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
    def arg_value(self, call: ast.Call, slots: Sequence[str], scope: _Scope) -> object:
        pos: Optional[list] = None
        for slot in slots:
            if slot.isdigit():
                if pos is None:
                    pos = positional(call)
                idx = int(slot)
                if idx < len(pos):
                    return self.value_of(pos[idx], scope)
            else:
                for k in call.keywords:
                    if k.arg == slot:
                        return self.value_of(k.value, scope)
        if any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
            return _UNKNOWN
        return None

    def value_of(self, expr: ast.expr, scope: _Scope) -> object:
        val = literal(expr, scope.all_consts())
        if val is not _UNKNOWN:
            return val
        # a command line given as a list of strings stands for the words joined by spaces (also
        # through a name: `cmd = ["nvidia-smi", ...]; check_output(cmd)`)
        words = self.command_words(expr, scope)
        if words is not None:
            return words
        if type(expr) is ast.Name:
            for sc in scope.chain():
                if expr.id in sc.argv:  # type: ignore[attr-defined]
                    return sc.argv[expr.id]  # type: ignore[attr-defined]
                if expr.id in sc.bound:  # type: ignore[attr-defined]
                    break
        # torch.device("cuda:1") stands for its string
        if type(expr) is ast.Call:
            first = first_arg(expr)  # type: ignore[arg-type]
            if first is not None and self.qualify(expr.func, scope) == "torch.device":  # type: ignore[attr-defined]
                return literal(first, scope.all_consts())
        return _UNKNOWN

    def command_words(self, expr: ast.expr, scope: _Scope) -> Optional[str]:
        if type(expr) in (ast.List, ast.Tuple) and expr.elts:  # type: ignore[attr-defined]
            words = [literal(el, scope.all_consts()) for el in expr.elts if type(el) is not ast.Starred]  # type: ignore[attr-defined]
            if words and all(isinstance(w, str) for w in words):
                return " ".join(words)  # type: ignore[arg-type]
        return None

    def applies(self, api: Api, call: ast.Call, scope: _Scope) -> bool:
        for slots, pattern in api.match:
            if not _fnmatch(self.arg_value(call, slots, scope), pattern):
                return False
        for slots, pattern in api.unless:
            if _fnmatch(self.arg_value(call, slots, scope), pattern):
                return False
        return True

    # ---------- expressions ----------------------------------------------------------------
    def expr(self, expr: Optional[ast.AST], scope: _Scope, out: list[Node]) -> None:
        if expr is None:
            return
        kind = type(expr)
        if kind is ast.Call:
            self.call(expr, scope, out)  # type: ignore[arg-type]
            return
        if kind in _LEAVES or kind is ast.Lambda:
            return  # a lambda's body is not executed here
        if kind is ast.Yield or kind is ast.YieldFrom:
            if self._yields:
                self._yields[-1] = True
            if kind is ast.YieldFrom:
                self.expr(expr.value, scope, out)  # type: ignore[attr-defined]
                self.stream_iteration(expr.value, scope, out)  # type: ignore[attr-defined]
                return
        elif kind is ast.BoolOp:
            values = expr.values  # type: ignore[attr-defined]
            self.expr(values[0], scope, out)
            stop = type(expr.op) is ast.Or  # type: ignore[attr-defined]
            for before, value in zip(values, values[1:]):
                if self.static_truth(before) is stop:
                    break  # `FLAG and ...` with FLAG off: the rest never runs
                right: list[Node] = []
                self.expr(value, scope, right)
                if right:
                    out.append(Branch(arms=(tuple(right),), exhaustive=False))
            return
        elif kind is ast.IfExp:
            self.expr(expr.test, scope, out)  # type: ignore[attr-defined]
            body: list[Node] = []
            orelse: list[Node] = []
            self.expr(expr.body, scope, body)  # type: ignore[attr-defined]
            self.expr(expr.orelse, scope, orelse)  # type: ignore[attr-defined]
            if body or orelse:
                out.append(Branch(arms=(tuple(body), tuple(orelse)), exhaustive=True))
            return
        elif kind in _COMPREHENSIONS:
            # a comprehension's element runs once per item: a loop (threads started in it are several)
            inner: list[Node] = []
            for child in _children(expr):
                self.expr(child, scope, inner)
            if inner:
                out.append(Loop(body=tuple(inner), orelse=(), loc=self.lines.loc(expr)))
            return
        elif kind is ast.Subscript:
            child_env.on_subscript(self, expr, scope, out)  # type: ignore[arg-type]
        elif kind is ast.Compare:
            child_env.on_compare(self, expr, scope, out)  # type: ignore[arg-type]
        elif kind is ast.Dict:
            child_env.on_dict(self, expr, scope, out)  # type: ignore[arg-type]
        for child in _children(expr):
            self.expr(child, scope, out)

    def call(self, call: ast.Call, scope: _Scope, out: list[Node]) -> None:
        func = call.func
        # the callee expression is evaluated first (x.y(...) evaluates x), then the arguments
        if type(func) is ast.Attribute:
            self.expr(func.value, scope, out)
        elif type(func) is not ast.Name:
            self.expr(func, scope, out)
        args = args_of(call)
        for arg in args:
            self.expr(arg.value, scope, out)
        q = self.callee(call, scope)
        if type(func) is ast.Name and func.id == "setattr" and q is None and len(args) >= 3:
            owner = self.qualify(args[0].value, scope)
            attr = literal(args[1].value)
            if owner and isinstance(attr, str):
                self.monkeypatch_event(f"{owner}.{attr}", call, out)
        labels.method_call(self, call, q, scope, out)
        child_env.on_call(self, call, q, scope, out)
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
            out.append(self.event("call", call, (q,)))
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
        labels.api_effects(self, api, call, self._scope, out)

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
        # data: (variable, value source text, value type, exact str value, labels); see cudalint.values
        # and cudalint.labels (CUD004 sees NVML indices written to CUDA_VISIBLE_DEVICES)
        vtype, vlit = value_info(value_expr, self._scope, self.imports) if value_expr is not None else ("", "")
        found = labels.for_event(self, value_expr, self._scope) if value_expr is not None else ()
        # "guarded": the write depends on a read of the same variable (an enclosing `if` tests it,
        # or the value is computed from it): once the variable holds a value, it changes nothing
        guarded = bool(var) and (
            guarded or any(var in reads for reads in self._env_guards) or var in self.env_reads(value_expr, self._scope)
        )
        return self.event("env_write", node, (var, value, vtype, vlit, found, "guarded" if guarded else ""))

    def env_reads(self, expr: Optional[ast.AST], scope: _Scope) -> set[str]:
        if expr is None:
            return set()
        return static_guards.env_reads(expr, lambda e: self.is_env(e, scope), lambda e: self.key_of(e, scope))

    def dict_env_events(self, value: ast.Dict, scope: _Scope, out: list[Node]) -> None:
        for key, val in zip(value.keys, value.values):
            if key is not None:  # `**other` inside the dict: nothing known
                out.append(self.env_event(span(key, val), self.key_of(key, scope), self.text(val), val))

    def is_env(self, expr: ast.AST, scope: _Scope) -> bool:
        if type(expr) is ast.Name and scope.is_env_alias(expr.id):  # type: ignore[attr-defined]
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

    # ---------- statements -----------------------------------------------------------------
    def block(self, stmts: Iterable[ast.stmt], scope: _Scope) -> Block:
        out: list[Node] = []
        for stmt in stmts:
            self.stmt(stmt, scope, out)
        return tuple(out)

    def stmt(self, stmt: ast.stmt, scope: _Scope, out: list[Node]) -> None:
        self._scope = scope
        kind = type(stmt)
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            handler(self, stmt, scope, out)
        else:
            for child in _children(stmt):
                self.expr(child, scope, out)

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
        reads = self.env_reads(stmt.test, scope)
        self._env_guards.append(reads)
        try:
            before = dict(scope.labels)
            body = self.block(stmt.body, scope)
            if not stmt.orelse:
                out.append(Branch(arms=(body,), exhaustive=False))
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
                out.append(Branch(arms=(body, orelse), exhaustive=True))
        finally:
            self._env_guards.pop()

    def static_truth(self, test: ast.expr) -> Optional[bool]:
        if self._consts is None:
            self._consts = static_guards.module_constants(self._tree) if self._tree is not None else {}
        return static_guards.static_truth(test, self._consts, self.imports)

    def for_(self, stmt: Union[ast.For, ast.AsyncFor], scope: _Scope, out: list[Node]) -> None:
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

    def _cuda_names(self, scope: _Scope) -> bool:
        return any(sc.cuda_objs for sc in scope.chain())

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
            for el in target.elts:  # type: ignore[attr-defined]
                self.bind(el.value if type(el) is ast.Starred else el, None, scope)
            return
        if kind is not ast.Name:
            return
        name = target.id  # type: ignore[attr-defined]
        scope.bound.add(name)
        child_env.on_bind(self, name, value, scope)
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
                    continue  # e.g. `streamlit` (reruns_script): read by cudalint.threads from import_lib
                # the module name last: when the project holds that module, its own code is analyzed instead
                out.append(self.event("init", node, (api.name, api.library, api.init, api.note, _env_conditions(api), name)))
        if lib:
            out.append(self.event("import_lib", node, tuple(lib)))
        project = tuple(n for n in seen if n.split(".")[0] not in self.lib_roots and n.split(".")[0] not in _STDLIB)
        if project:
            out.append(self.event("import", node, project))

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
            returns=labels.freeze(tuple(self.return_labels.get(qualname, ()))),
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


_STATEMENTS = {
    ast.Expr: _Summarizer.expr_stmt,
    ast.Assign: _Summarizer.assign,
    ast.AnnAssign: _Summarizer.ann_assign,
    ast.AugAssign: _Summarizer.aug_assign,
    ast.Delete: _Summarizer.delete,
    ast.Return: _Summarizer.return_,
    ast.Raise: _Summarizer.raise_,
    ast.Break: _Summarizer.break_,
    ast.Continue: _Summarizer.continue_,
    ast.Import: _Summarizer.import_,
    ast.ImportFrom: _Summarizer.import_from,
    ast.Assert: _Summarizer.assert_,
    ast.Global: _Summarizer.global_,
    ast.Nonlocal: _Summarizer.nothing,
    ast.Pass: _Summarizer.nothing,
    ast.If: _Summarizer.if_,
    ast.For: _Summarizer.for_,
    ast.AsyncFor: _Summarizer.for_,
    ast.While: _Summarizer.while_,
    ast.Try: _Summarizer.try_,
    ast.With: _Summarizer.with_,
    ast.AsyncWith: _Summarizer.with_,
    ast.FunctionDef: _Summarizer.funcdef,
    ast.AsyncFunctionDef: _Summarizer.funcdef,
    ast.ClassDef: _Summarizer.classdef,
    ast.Match: _Summarizer.match_,
}
if sys.version_info >= (3, 11):
    _STATEMENTS[ast.TryStar] = _Summarizer.try_

# the fields of each node type that may hold expressions, in source order ("ctx" and operators never do)
_SKIP = {"ctx", "op", "ops"}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: () if cls is ast.Constant else tuple(f for f in cls._fields if f not in _SKIP)
    for cls in (getattr(ast, n) for n in dir(ast))
    if isinstance(cls, type) and issubclass(cls, ast.AST)
}


def _children(node: ast.AST) -> list[ast.AST]:
    """A node's child nodes in source order (a dict's keys and values interleaved, as written)."""
    if type(node) is ast.Dict:
        out: list[ast.AST] = []
        for key, value in zip(node.keys, node.values):  # type: ignore[attr-defined]
            if key is not None:
                out.append(key)
            out.append(value)
        return out
    out = []
    for name in _FIELDS.get(type(node), ()):
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def _targets(target: ast.expr) -> list[ast.expr]:
    if type(target) in (ast.Tuple, ast.List):
        return [el.value if type(el) is ast.Starred else el for el in target.elts]  # type: ignore[attr-defined]
    return [target]


def _is_main_guard(test: ast.expr) -> bool:
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if type(s) is ast.Name and s.id == "__name__"]
    strings = [s for s in sides if literal(s) == "__main__"]
    return len(names) == 1 and len(strings) == 1


def _env_conditions(api: Api) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(facts that switch the init off, facts it needs), as the flow engine's env fact keys."""
    return (
        tuple(env_fact(var, value) for var, value in api.get("unless_env") or ()),
        tuple(env_fact(var, value) for var, value in api.get("when_env") or ()),
    )


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


def summarize(tree: ast.Module, source: str, path: str, modname: str, catalogue: Catalogue, is_package: bool = False) -> ModuleIR:
    s = _Summarizer(source, path, modname, catalogue, is_package)
    s._tree = tree
    top_scope = _Scope(qualname="")
    s._scope = top_scope
    top = s.block(tree.body, top_scope)
    return ModuleIR(
        path=path,
        module=modname,
        top=top,
        functions=dict(s.functions),
        classes=dict(s.classes),
        noqa=noqa_lines(source),
        makes_llama=s.makes_llama,
    )
