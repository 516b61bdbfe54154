"""Which functions may never return (raise, loop forever, exit): stop formulas over a module's
functions, evaluated once for the module (a caller's path ends there).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from cudalint.scan.nodes import _dotted, _nodes

if TYPE_CHECKING:
    from cudalint.scan.layout import _Layout


# ---------- may a function never return normally (cudalint.analysis.flow: Summary.out is None) -------------
# A formula over the calls that could end a path: True, False, ("call", dotted name), ("or", ...),
# ("and", ...). Only the calls of functions that never return cut a caller's path short; a raise
# inside an `if` does not (the flow engine joins the branches), nor one a handler catches.
def _or(terms: list) -> object:
    out = []
    for t in terms:
        if t is True:
            return True
        if t is not False:
            out.append(t)
    return ("or", tuple(out)) if len(out) > 1 else (out[0] if out else False)


def _and(terms: list) -> object:
    out = []
    for t in terms:
        if t is False:
            return False
        if t is not True:
            out.append(t)
    return ("and", tuple(out)) if len(out) > 1 else (out[0] if out else True)


def _calls_in(node: Optional[ast.AST]) -> object:
    if node is None:
        return False
    terms = []
    for sub in _nodes(node):
        if type(sub) is ast.Call:
            name = _dotted(sub.func)
            terms.append(("call", name) if name else False)
    return _or(terms)


def _has_break(stmts: list) -> bool:
    for st in stmts:
        for sub in _nodes(st):
            if type(sub) is ast.Break:
                return True  # (also a nested loop's: errs towards "may end")
    return False


def _block_stops(stmts: list) -> object:
    terms = []
    for st in stmts:
        if isinstance(st, ast.Return):
            terms.append(_calls_in(st.value))
            return _or(terms)  # a normal return: what follows does not run
        t = _stmt_stops(st)
        terms.append(t)
        if t is True:
            break
    return _or(terms)


def _stmt_stops(st: ast.stmt) -> object:
    if isinstance(st, ast.Raise):
        return True
    if isinstance(st, ast.If):
        return _or([_calls_in(st.test), _and([_block_stops(st.body), _block_stops(st.orelse)])])
    if isinstance(st, (ast.While,)):
        test = st.test
        forever = isinstance(test, ast.Constant) and bool(test.value)
        if forever and not _has_break(st.body):
            return True
        return _calls_in(test)
    if isinstance(st, (ast.For, ast.AsyncFor)):
        return _calls_in(st.iter)
    if isinstance(st, (ast.With, ast.AsyncWith)):
        return _or([_calls_in(item.context_expr) for item in st.items] + [_block_stops(st.body)])
    if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
        body = _or([_block_stops(st.body), _block_stops(st.orelse)])
        handled = _and([_block_stops(h.body) for h in st.handlers] + [body]) if st.handlers else body
        return _or([handled, _block_stops(st.finalbody)])
    if type(st).__name__ == "Match":
        cases = st.cases  # type: ignore[attr-defined]
        total = any(isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None and c.guard is None for c in cases)
        return _or([_calls_in(st.subject), _and([_block_stops(c.body) for c in cases]) if total else False])  # type: ignore[attr-defined]
    if isinstance(st, ast.Assert):
        test = st.test
        if isinstance(test, ast.Constant) and not test.value:
            return True
        return _calls_in(test)
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = st.args
        return _or([_calls_in(n) for n in (*st.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None))])
    if isinstance(st, ast.ClassDef):
        return _or([_calls_in(n) for n in (*st.decorator_list, *st.bases, *(k.value for k in st.keywords))] + [_block_stops(st.body)])
    if isinstance(st, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return _calls_in(st)
    return False


# Why the names asked suffice: evaluated with every other module's function returning, a formula
# (and/or over calls, no negation) that comes out "returns" still does so as long as every name
# asked returns. An `or` asks all its terms; an `and` that failed is decided by its first failing
# term, whose own names are then enough. So if the real answer is "never returns", one of the names
# asked never returns, and answering yes when any does errs only towards parsing more.
def _any(results: list) -> tuple[bool, frozenset, frozenset]:
    """Or of (value, dotted names asked, keys asked): stops at the first yes (then certain)."""
    asked: set = set()
    keys: set = set()
    for v, a, k in results:
        if v:
            return True, a, k
        asked |= a
        keys |= k
    return False, frozenset(asked), frozenset(keys)


def _all(results: list) -> tuple[bool, frozenset, frozenset]:
    for v, a, k in results:
        if not v:
            return False, a, k  # this one alone decides: it must turn before the whole can
    return True, frozenset(), frozenset()


_INITS = (b"__init__", b"__new__", b"__post_init__")
_NONE: frozenset = frozenset()


class _Stops:
    """One evaluation of every stop formula of a module (cudalint.scan.layout._Layout.stops): with
    every function of another module returning (`outside` False) or none of them. (A class, not
    closures: mutually recursive closures form a cycle that would keep the syntax tree alive until
    the cycle collector runs.)"""

    def __init__(self, layout: "_Layout", exits: frozenset, formulas: dict[int, object], outside: bool):
        self.layout = layout
        self.exits = exits
        self.formulas = formulas  # id of a definition -> its formula (shared by both evaluations)
        self.outside = outside
        self.memo: dict[str, tuple[bool, frozenset, frozenset]] = {}  # key -> (value, dotted names asked, keys asked)

    def run(self) -> dict[str, tuple[bool, frozenset, frozenset]]:
        lay = self.layout
        self.memo[""] = self.value(self.formula(lay.tree), None)
        for cls, funcs in lay.owned.items():
            for name in funcs:
                self.defined(cls, name)
            if cls is not None:
                self.memo[cls.decode()] = self.construct(cls)
        return self.memo

    def formula(self, d: ast.AST) -> object:
        f = self.formulas.get(id(d))
        if f is None:
            f = self.formulas[id(d)] = _block_stops(d.body)  # type: ignore[attr-defined]
        return f

    def method(self, cls: bytes, name: bytes, seen: frozenset = frozenset()) -> Optional[tuple[bool, frozenset, frozenset]]:
        """`name` of class `cls` or of its bases (None: not found here)."""
        lay = self.layout
        if name in lay.owned.get(cls, {}):
            return self.defined(cls, name)
        asked: set[str] = set()
        for base in lay.base_chains.get(cls, ()):
            b = base.encode()
            if b in lay.owned and b not in seen:
                hit = self.method(b, name, seen | {cls})
                if hit is not None:
                    return hit
            elif base.split(".", 1)[0].encode() in lay.chains:
                head, _, rest = base.partition(".")
                chain = lay.chains[head.encode()][0] + ("." + rest if rest else "") + "." + name.decode()
                if self.outside:
                    return True, frozenset({chain}), _NONE
                asked.add(chain)
        return (False, frozenset(asked), _NONE) if asked else None

    def defined(self, cls: Optional[bytes], name: bytes) -> tuple[bool, frozenset, frozenset]:
        key = name.decode() if cls is None else f"{cls.decode()}.{name.decode()}"
        hit = self.memo.get(key)
        if hit is None:
            self.memo[key] = (True, _NONE, _NONE)  # in progress: a recursion may never return
            out = _any([self.value(self.formula(d), cls) for d in self.layout.owned.get(cls, {}).get(name, ())])
            hit = self.memo[key] = out
        return hit[0], _NONE, frozenset({key})

    def construct(self, cls: bytes) -> tuple[bool, frozenset, frozenset]:
        return _any([hit for hit in (self.method(cls, m) for m in _INITS) if hit is not None])

    def value(self, f: object, cls: Optional[bytes]) -> tuple[bool, frozenset, frozenset]:
        if f is True or f is False:
            return f, _NONE, _NONE  # type: ignore[return-value]
        op, arg = f  # type: ignore[misc]
        if op == "or":
            return _any([self.value(x, cls) for x in arg])
        if op == "and":
            return _all([self.value(x, cls) for x in arg])
        lay = self.layout
        head, _, rest = arg.partition(".")
        last = arg.rsplit(".", 1)[-1].encode()
        if last in self.exits:
            return True, _NONE, _NONE
        if head in ("self", "cls"):
            hit = self.method(cls, last) if cls is not None and "." not in rest else None
            return hit if hit is not None else (False, _NONE, _NONE)
        h = head.encode()
        if h in lay.owned:  # a class: `C(...)` or `C.method(...)`
            if not rest:
                return self.construct(h)
            hit = self.method(h, last) if "." not in rest else None
            return hit if hit is not None else (False, _NONE, _NONE)
        if h in lay.owned.get(None, {}):
            return self.defined(None, h) if not rest else (False, _NONE, _NONE)
        if h in lay.chains:
            return self.outside, frozenset({lay.chains[h][0] + ("." + rest if rest else "")}), _NONE
        if lay.stars:
            return self.outside, frozenset(f"{m}.{arg}" for m in lay.stars), _NONE
        return False, _NONE, _NONE
