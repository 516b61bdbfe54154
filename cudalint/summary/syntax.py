"""The summarizer's small readers of syntax: a literal's value, a dotted name, the scopes names
resolve in, a node's children.
"""
from __future__ import annotations

import ast
import sys
from typing import Iterator, Mapping, Optional

from cudalint.core.catalogue import Api, env_fact
from cudalint.core.walk import node_fields


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}
_BUILTINS = {"exit": "builtins.exit", "quit": "builtins.quit"}

_UNKNOWN = object()
NO_LABELS: frozenset = frozenset()  # what a name without labels has (cudalint.summary.labels.EMPTY)
_LITERALS = (str, bytes, int, bool, type(None))  # the constants `literal` knows (a float is not a device or a key)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LEAVES = (ast.Name, ast.Constant)
# the expressions the summarizer has nothing to do for (`_Summarizer.expr`)
_SILENT = frozenset({*_LEAVES, ast.Lambda})


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


class _Scope:
    """What is known inside one function body (or the module top level). A plain class (it was a
    mutable dataclass, whose module the summarizer's import path no longer loads: cudalint.core.record)."""

    def __init__(self, qualname: str, cls: Optional[str] = None, parent: Optional["_Scope"] = None) -> None:
        self.qualname = qualname  # "" for the module, "f", "C.m"
        self.cls = cls  # enclosing class for methods
        self.parent = parent
        self.defs: dict[str, str] = {}  # local def name -> function qualname
        self.types: dict[str, str] = {}  # variable -> qualified type or ":C"
        self.consts: dict[str, object] = {}
        self.env_aliases: set[str] = set()
        self.labels: dict[str, frozenset] = {}  # variable -> value labels (cudalint.summary.labels)
        self.bound: set[str] = set()  # names assigned here (thread events' refs)
        self.globals_: set[str] = set()  # `global` declarations
        self.streams: dict[str, str] = {}  # local -> ref of the Llama it streams from
        self.env_copies: set[str] = set()  # names bound to a copy of the environment (cudalint.summary.child_env)
        self.env_dicts: dict = {}  # names bound to a new mapping that sets CUDA_VISIBLE_DEVICES (cudalint.summary.child_env)
        self.argv: dict[str, str] = {}  # names bound to a command line (a list of strings), its words joined
        self.commands: dict = {}  # names bound to a command text that sets CUDA_VISIBLE_DEVICES (cudalint.summary.shell_env)
        self.serial_pools: set[str] = set()  # names bound to a one-worker thread pool (cudalint.summary.thread_events)
        self.cuda_objs: dict[str, tuple] = {}  # names bound to what a CUDA-initializing call built: (line, text, library)
        self.import_false: set[str] = set()  # names bound to a test that is false at import (summary/import_state)
        self.env_values: dict[str, frozenset] = {}  # names bound to a value read from these variables (`old = os.environ.get(V)`)

    def chain(self) -> Iterator["_Scope"]:
        """This scope, then the enclosing ones out to the module."""
        scope: Optional[_Scope] = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def lookup_labels(self, name: str) -> frozenset:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.labels:
                return scope.labels[name]
            if name in scope.types or name in scope.consts or name in scope.env_aliases:
                return NO_LABELS  # rebound here without labels
            scope = scope.parent
        return NO_LABELS

    def any_scope(self, attr: str) -> bool:
        """Whether this scope or one around it holds something in the field `attr` (most hold
        nothing: asked of every call)."""
        scope: Optional[_Scope] = self
        while scope is not None:
            if getattr(scope, attr):
                return True
            scope = scope.parent
        return False

    def binds_in(self, attr: str, name: str) -> bool:
        """Whether `name` is in the field `attr` of this scope or of one around it."""
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in getattr(scope, attr):
                return True
            scope = scope.parent
        return False

    # (loops, not `chain()`: these run for every name the summarizer qualifies)
    def lookup_def(self, name: str) -> Optional[str]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.defs:
                return scope.defs[name]
            scope = scope.parent
        return None

    def lookup_type(self, name: str) -> Optional[str]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.types:
                return scope.types[name]
            scope = scope.parent
        return None

    def lookup_const(self, name: str) -> object:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.consts:
                return scope.consts[name]
            scope = scope.parent
        return _UNKNOWN

    def env_value_of(self, name: str) -> frozenset:
        """The variables whose value `name` holds (read from the environment here or in an enclosing scope)."""
        for scope in self.chain():
            if name in scope.env_values:
                return scope.env_values[name]
            if name in scope.bound:
                return frozenset()
        return frozenset()

    def is_env_alias(self, name: str) -> bool:
        return self.binds_in("env_aliases", name)

    def all_consts(self) -> "_Consts":
        """The constants visible here, inner scopes first (a view: most expressions name none)."""
        return _Consts(self)


class _Consts:
    """`name in consts`, `consts[name]` over a scope and the ones around it."""

    __slots__ = ("scope",)

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope

    def __contains__(self, name: object) -> bool:
        return self.scope.binds_in("consts", name)  # type: ignore[arg-type]

    def __getitem__(self, name: str) -> object:
        return self.scope.lookup_const(name)


# the fields of each node type that may hold expressions, in source order ("ctx" and operators never do)
_SKIP = {"ctx", "op", "ops"}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f for f in node_fields(cls) if f not in _SKIP)  # (names and numbers: never nodes)
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
            out += [v for v in value if isinstance(v, ast.AST)]
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
