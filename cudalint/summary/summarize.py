"""Summarize one parsed module into IR: its effects in evaluation order, inside structured flow.

One traversal per module over CPython's `ast` (libcst is the fixer's: a fifth of its parse time and
no code generation to find positions and text). Names are resolved from the module's own imports
and assignments; positions and text come from the nodes that become effects.
"""
from __future__ import annotations

import ast
import re
import sys
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from cudalint.summary import child_env, concurrent_calls, label_effects, labels
from cudalint.core.callargs import first_arg, positional
from cudalint.core.catalogue import Api, Catalogue
from cudalint.core.ir import Branch, ClassInfo, Event, Function, Loop, ModuleIR, Node
from cudalint.core.positions import Lines, Located
from cudalint.core.record import record
from cudalint.summary.thread_events import ThreadEvents
from cudalint.summary.thread_free import strip
from cudalint.summary.call_events import _CallEvents
from cudalint.summary.statements import _Statements
from cudalint.summary.driven import driven_calls
from cudalint.summary.syntax import (
    _BUILTINS, _COMPREHENSIONS, _SILENT, _Scope, _UNKNOWN, _children, _fnmatch, dotted, literal,
)


NOQA_RE = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


# one object per equal event text and position across the summaries a process makes: a worker's
# chunk pickles each once (cudalint.engine.tasks._run_chunk). Bounded: the language server and the
# API summarize in one long-lived process, and sharing is only an economy
_SHARED: dict = {}
SHARED_MAX = 1 << 17


@record
class _Tables:
    """What the summarizer asks of the catalogue in every file, made once per catalogue: made per
    file it was a third of summarizing a small module (2,000 generated modules: 2.7 of 7.8 s)."""

    env_mappings: frozenset
    env_mapping_attrs: frozenset  # their last parts (`environ`: cudalint.summary.call_events.is_env)
    # a module whose text holds none of these never names the environment (`env_possible`), unless
    # `env_anywhere`: a catalogued call returns an environment mapping, so a name's type may be one
    env_words: frozenset
    env_anywhere: bool
    lib_roots: frozenset
    touch_names: frozenset  # (cudalint.summary.thread_events)
    always_streams: frozenset
    concurrent_specs: Mapping


_TABLES: dict[int, tuple[Catalogue, _Tables]] = {}


def _tables(catalogue: Catalogue) -> _Tables:
    # keyed by identity, the catalogue kept with its tables (an id names no other while it is held)
    hit = _TABLES.get(id(catalogue))
    if hit is None or hit[0] is not catalogue:
        env_mappings = frozenset(a.name for a in catalogue.apis if a.get("env_mapping"))
        env_mapping_attrs = frozenset(name.rsplit(".", 1)[-1] for name in env_mappings)
        made = _Tables(
            env_mappings=env_mappings,
            env_mapping_attrs=env_mapping_attrs,
            env_words=env_mapping_attrs | {"getenv"},
            env_anywhere=any(a.get("returns") in env_mappings for a in catalogue.apis) or any(q in env_mappings for q in _BUILTINS.values()),
            lib_roots=frozenset(r for lib in catalogue.libraries for r in lib.import_roots),
            touch_names=frozenset(a.name.rsplit(".", 1)[1] for a in catalogue.apis if a.get("touches_context") and "." in a.name),
            always_streams=frozenset(a.name.rsplit(".", 1)[1] for a in catalogue.apis if a.get("streams") == "*"),
            concurrent_specs=MappingProxyType(concurrent_calls.specs(catalogue)),
        )
        hit = _TABLES[id(catalogue)] = (catalogue, made)
    return hit[1]


class _Summarizer(_Statements, _CallEvents, ThreadEvents):
    def __init__(self, source: str, path: str, modname: str, catalogue: Catalogue, is_package: bool, lean: bool = False):
        self.lines = Lines(source)
        # skip the work whose only product is the thread model's events (cudalint.summary.thread_free)
        self.lean = lean
        self.path = path
        self.modname = modname
        self.package = modname if is_package else modname.rpartition(".")[0]
        self.cat = catalogue
        self.imports: dict[str, str] = {}
        self.reexports: dict[str, str] = {}  # the top level's import bindings (ModuleIR.reexports)
        self.star_imports: list[str] = []
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.attr_types: dict[tuple[str, str], str] = {}  # (class, attribute) -> type
        self.cuda_attrs: dict[tuple[str, str], tuple] = {}  # (class, attribute) -> what a CUDA-initializing call built (cudalint.summary.cuda_attrs)
        self.tables = tables = _tables(catalogue)
        self.env_mappings = tables.env_mappings
        # whether any expression here can be the process environment (`is_env`): what `qualify`
        # names comes from this text (its imports, its dotted names) or from the catalogue; most
        # modules never touch the environment, and each call and assignment asked
        self.env_possible = tables.env_anywhere or any(word in source for word in tables.env_words)
        self.lib_roots = tables.lib_roots
        self.view = labels.view(catalogue)
        self.init_thread_events()
        self.return_labels: dict[str, set] = {}  # function qualname -> labels of its returned values
        self._tree: Optional[ast.Module] = None
        self._consts: Optional[dict] = None  # static_guards.module_constants, computed when an `if` asks
        self._restored: Optional[frozenset] = None  # static_guards.restored_attributes of the module
        self._env_guards: list[set] = []  # variables the enclosing `if` tests read (cudalint.summary.static_guards)
        self._driven: set[int] = set()  # ids of the calls whose generator runs where they are (summary.driven)
        self.output_files: dict[str, object] = {}  # file name -> the label of the tool output redirected to it (cudalint.summary.labels)
        self._frozen: dict = {}  # labels.freeze's memo: one summary's labels recur in many events

    def drive(self, expr: ast.AST) -> None:
        """`expr`'s value is iterated or entered where it is: a generator call in it runs its body."""
        self._driven.update(id(c) for c in driven_calls(expr))

    # ---------- events -------------------------------------------------------------------
    def event(self, kind: str, node: Located, data: tuple = (), text: Optional[str] = None) -> Event:
        if text is None:
            text = self.lines.text(node)
        loc = self.lines.loc(node)
        return Event(kind=kind, loc=_SHARED.setdefault(loc, loc), text=_SHARED.setdefault(text, text), data=labels.freeze(data, self._frozen))

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
        """The qualified name an expression refers to, through imports, aliases and known types.
        Of an attribute `a.b.f` it is None or a name ending in `.f` (every branch below keeps the
        attribute last): `is_env` and `child_env.is_copy` answer from `f` alone before asking."""
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
        if head == "cls" and not rest and scope.cls and "cls" in scope.bound:
            return f":{scope.cls}"  # `return cls(...)` in a classmethod builds the class
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
            # a factory of this module (`create(path)`, `Session.create(path)`) that returns
            # instances of one class of this module
            made = self.return_types.get(name, ())
            if len(made) == 1:
                return next(iter(made))
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
        if type(expr) is ast.Call:
            # a command line kept as one string and split where it is run (SnakeOnex/ml_projects utils.py:
            # `command = "nvidia-smi --query-gpu=..."; check_output(command.split())`, also `cmd.split(" ")`,
            # `shlex.split(cmd)`): the words are the string's
            func = expr.func  # type: ignore[attr-defined]
            if type(func) is not ast.Attribute or func.attr != "split" or len(expr.args) > 1 or expr.keywords:  # type: ignore[attr-defined]
                return None
            if self.qualify(func, scope) == "shlex.split":
                text = literal(expr.args[0], scope.all_consts()) if expr.args else None  # type: ignore[attr-defined]
                return text if isinstance(text, str) else None
            sep = literal(expr.args[0]) if expr.args else None  # type: ignore[attr-defined]
            text = literal(func.value, scope.all_consts())
            if isinstance(text, str) and (sep is None or (isinstance(sep, str) and sep.isspace())):
                return text
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
        if kind in _SILENT:
            return  # a lambda's body is not executed here
        if kind is ast.Yield or kind is ast.YieldFrom:
            if self._yields:
                self._yields[-1] = True
            if kind is ast.YieldFrom:
                self.drive(expr.value)  # type: ignore[attr-defined]
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
            for gen in expr.generators:  # type: ignore[attr-defined]
                self.drive(gen.iter)
            for child in _children(expr):
                self.expr(child, scope, inner)
            if inner:
                out.append(Loop(body=tuple(inner), orelse=(), loc=self.lines.loc(expr)))
            return
        elif kind is ast.Subscript:
            child_env.on_subscript(self, expr, scope, out)  # type: ignore[arg-type]
            label_effects.subscript_sink(self, expr, scope, out)  # type: ignore[arg-type]
        elif kind is ast.Compare:
            child_env.on_compare(self, expr, scope, out)  # type: ignore[arg-type]
        elif kind is ast.Dict:
            child_env.on_dict(self, expr, scope, out)  # type: ignore[arg-type]
        elif kind is ast.BinOp:
            child_env.on_union(self, expr, scope, out)  # type: ignore[arg-type]
        for child in _children(expr):
            if type(child) not in _SILENT:  # (names and constants: a third of the calls on ultralytics, for nothing)
                self.expr(child, scope, out)

    def stmt(self, stmt: ast.stmt, scope: _Scope, out: list[Node]) -> None:
        self._scope = scope
        kind = type(stmt)
        handler = _STATEMENTS.get(kind)
        if handler is not None:
            handler(self, stmt, scope, out)
        else:
            for child in _children(stmt):
                self.expr(child, scope, out)


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


def summarize(tree: ast.Module, source: str, path: str, modname: str, catalogue: Catalogue, is_package: bool = False, lean: bool = False) -> ModuleIR:
    """`lean`: the summary `thread_free.strip` makes of the whole one, made without the work only the
    thread model's events need."""
    if len(_SHARED) > SHARED_MAX:
        _SHARED.clear()
    s = _Summarizer(source, path, modname, catalogue, is_package, lean)
    s._tree = tree
    top_scope = _Scope(qualname="")
    s._scope = top_scope
    top = s.block(tree.body, top_scope)
    made = ModuleIR(
        path=path,
        module=modname,
        top=top,
        functions=dict(s.functions),
        classes=dict(s.classes),
        noqa=noqa_lines(source),
        makes_llama=s.makes_llama,
        reexports=tuple(sorted(s.reexports.items())),
    )
    return strip(made) if lean else made
