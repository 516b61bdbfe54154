"""A parsed module's layout as the selection needs it: what its top level runs, which functions
may stop, which names it binds and imports.
"""
from __future__ import annotations

import ast
import bisect
import re
from typing import TYPE_CHECKING, Mapping, Optional

from cudalint.scan.imports import _relative
from cudalint.scan.nodes import _COMPOUND_FIELDS, _dotted, _names, _names_in, _nodes, _top_names
from cudalint.scan.stops import _Stops
from cudalint.scan.text import _INT_ASSIGNED, _QualifiedCalls, _Strings, _WORD, _qualified_calls

if TYPE_CHECKING:
    from cudalint.scan.triggers import _Triggers


_ENV_ALIAS = re.compile(rb"(?:=|:=|\bas)\s*(?:[\w.]*\.)?environ\b(?!\s*[.\[(])|environ\s+as\b")


class _Layout:
    """Where a module's code runs: its top level, and the bodies of its module- and class-level functions.

    The top level is every line outside those bodies: decorators, default values and class bodies
    run on import. Words are bytes-level (strings and comments count), so reaching errs towards more."""

    def __init__(
        self,
        tree: ast.Module,
        data: bytes,
        words: frozenset,
        chains: Mapping[bytes, tuple[str, ...]],
        stars: tuple[str, ...],
        package: str = "",
        imported: Optional[frozenset] = None,
    ):
        self.data = data
        self.imported = imported  # the modules the file imports (cudalint.scan.imports._imports)
        self.package = package
        self.func_imports: set[str] = set()  # modules imported inside functions (calling them imports)
        self.imports_of: dict[bytes, set[str]] = {}  # function name -> the modules it imports
        self.words = words
        self.chains = chains
        self.stars = stars
        self.bodies: dict[bytes, list[tuple[int, int]]] = {}  # function name -> line ranges of its bodies
        self.nodes: dict[bytes, list[ast.AST]] = {}  # function name -> its definitions
        self.methods: dict[bytes, list[bytes]] = {}  # class name -> its functions (nested classes' too)
        self.bases: dict[bytes, list[bytes]] = {}  # class name -> the names in its bases
        self.base_chains: dict[bytes, list[str]] = {}  # class name -> its bases as dotted names
        self.owned: dict[Optional[bytes], dict[bytes, list[ast.AST]]] = {None: {}}  # class (None: module) -> function -> definitions
        self.excluded: list[tuple[int, int]] = []
        self.headers: list[tuple[int, int]] = []  # def lines: decorators, parameters and their defaults
        self.imports: list[tuple[int, int]] = []
        self.tree = tree
        self.docs: list[tuple[int, int]] = []  # docstrings: prose, whatever calls it mentions
        self._top: Optional[bytes] = None
        self._consts: Optional[bytes] = None
        self._consts_of: Optional[_Strings] = None
        self._doc_starts: Optional[list[int]] = None
        self._bodies: dict[bytes, bytes] = {}
        self._qc: dict[int, dict[str, bool]] = {}
        self._names: dict[bytes, frozenset] = {}
        self._top_int_names: Optional[set] = None
        self._kinds: dict[Optional[bytes], tuple[str, ...]] = {}
        self._import_words: Optional[frozenset] = None
        self.env_writes: Optional[bool] = None
        starts = [0]
        pos = data.find(b"\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = data.find(b"\n", pos + 1)
        starts.append(len(data) + 1)
        self.starts = starts
        self._doc(tree.body)
        self._walk(tree.body, ())

    def _doc(self, body: list) -> None:
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            self.docs.append((first.lineno, first.end_lineno or first.lineno))

    def _walk(self, stmts: list, classes: tuple[bytes, ...]) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._doc(st.body)
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = st.args
                head = [*st.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None), st.returns]
                head += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None]
                last = max((n.end_lineno or n.lineno for n in head if n is not None), default=st.lineno)
                start, end = max(st.body[0].lineno, last + 1), st.end_lineno or st.lineno
                name = st.name.encode()
                first = min([st.lineno] + [d.lineno for d in st.decorator_list])
                self.headers.append((first, start - 1))
                self.nodes.setdefault(name, []).append(st)
                mine = self.imports_of.setdefault(name, set())
                s0, s1 = self.starts[st.lineno - 1], self.starts[end] - 1
                for sub in _nodes(st) if b"import" in self.data[s0:s1] else ():
                    if isinstance(sub, ast.Import):
                        mine.update(a.name for a in sub.names)
                    elif isinstance(sub, ast.ImportFrom):
                        base = _relative(self.package, sub.level, sub.module or "") if sub.level else sub.module
                        if base:
                            mine.add(base)
                            mine.update(f"{base}.{a.name}" for a in sub.names)
                self.func_imports |= mine
                self.owned.setdefault(classes[-1] if classes else None, {}).setdefault(name, []).append(st)
                if start <= end:
                    self.bodies.setdefault(name, []).append((start, end))
                    self.excluded.append((start, end))
                for cls in classes:
                    self.methods.setdefault(cls, []).append(name)
            elif isinstance(st, ast.ClassDef):
                self.bases.setdefault(st.name.encode(), []).extend(w for b in st.bases for w in _names(b))
                self.owned.setdefault(st.name.encode(), {})
                self.base_chains.setdefault(st.name.encode(), []).extend(d for d in map(_dotted, st.bases) if d)
                self._walk(st.body, classes + (st.name.encode(),))
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                self.imports.append((st.lineno, st.end_lineno or st.lineno))
            else:
                for part in _COMPOUND_FIELDS:  # if/try/with/for/match at the top level
                    for sub in getattr(st, part, None) or ():
                        self._walk([sub] if isinstance(sub, ast.stmt) else sub.body, classes)

    def stops(self, exits: frozenset) -> dict[str, object]:
        """Which of the top level (key ""), the module's functions ("f"), classes ("C": calling it
        runs `__init__`/`__new__`/`__post_init__`) and methods ("C.m") may end every path
        abnormally: 1 yes; [dotted names, keys] yes if a function of another module named there, or
        one of the keys, never returns; absent: no. The `__main__` block does not run on import.

        Two evaluations of each formula: with every function of another module returning (a "yes"
        then is certain), and with none returning (a "no" then is certain). Only what is neither
        depends on other modules. Recursion counts as never returning."""
        formulas: dict[int, object] = {}  # id of a definition -> its formula (both evaluations read it)
        sure = _Stops(self, exits, formulas, outside=False).run()  # other modules' functions all return
        maybe = _Stops(self, exits, formulas, outside=True).run()  # none of them does
        out: dict[str, object] = {}
        for key, (yes, asked, keys) in sure.items():
            if yes:
                out[key] = 1
            elif maybe.get(key, (True,))[0]:
                out[key] = [sorted(asked), sorted(keys)]
        for key, entry in out.items():  # a key that surely returns needs no asking
            if isinstance(entry, list):
                entry[1] = [k for k in entry[1] if k in out]
        return out

    def _names_of(self, name: bytes) -> tuple[frozenset, frozenset]:
        hit = self._names.get(name)
        if hit is None:
            hit = self._names[name] = _names_in(self.nodes[name])
        return hit

    def _direct_kinds(self, key: Optional[bytes], trig: "_Triggers", own_root: str) -> tuple[str, ...]:
        """The kinds the top level's own text (None) or a function's body may produce. The words of
        the import lines count (an alias spells the rest of a name); string and int values may come
        from the top level (a constant); an environment write through an alias may be anywhere.""" 
        hit = self._kinds.get(key)
        if hit is None:
            text = self.top_text() if key is None else self.body_text(key)
            text = text.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
            bases = None if self.stars else self.chains
            found = set(
                trig.kinds(
                    frozenset(_WORD.findall(text)) | self.import_words(),
                    text,
                    own_root,
                    root_words=self.words,
                    heads=None if self.stars else frozenset(self.chains),
                    bases=bases,
                    imported=self.imported,
                    qcalls=(lambda: self._calls_of(text, bases)) if bases is not None else None,
                    strings=_Strings(text, None if key is None else self._const_strings()),
                )
            )
            if self.env_writes is None:
                # `env = os.environ` at the top, `env[k] = v` in a function: the function's own text
                # does not say environ
                self.env_writes = b"environ" in self.words and _ENV_ALIAS.search(self.data) is not None
            if self.env_writes:
                found.add("*")
            hit = self._kinds[key] = tuple(sorted(found))
        return hit

    @property
    def _top_ints(self) -> set:
        if self._top_int_names is None:
            self._top_int_names = {m.group(1) for m in _INT_ASSIGNED.finditer(self.const_text())}
        return self._top_int_names

    def import_words(self) -> frozenset:
        if self._import_words is None:
            self._import_words = frozenset(_WORD.findall(self.text(self.imports)))
        return self._import_words

    def _const_strings(self) -> _Strings:
        if self._consts_of is None:
            self._consts_of = _Strings(self.const_text())
        return self._consts_of

    def const_text(self) -> bytes:
        """The top level without the def lines: where the module's constants are (a parameter's
        default is not one)."""
        if self._consts is None:
            self._consts = self.text(self.outside(self.excluded + self.headers))
        return self._consts

    def top_text(self) -> bytes:
        if self._top is None:
            self._top = self.text(self.outside(self.excluded))
        return self._top

    def body_text(self, name: bytes) -> bytes:
        hit = self._bodies.get(name)
        if hit is None:
            hit = self._bodies[name] = self.text(self.bodies[name])
        return hit

    def _calls_of(self, text: bytes, bases: Mapping[bytes, tuple[str, ...]]) -> _QualifiedCalls:
        # (an int constant: of the module, or of the function; found only if a clause asks)
        ints = {b"": lambda: self._top_ints | {m.group(1) for m in _INT_ASSIGNED.finditer(text)}}
        return _qualified_calls(text, bases, ints)

    def text(self, ranges: list[tuple[int, int]]) -> bytes:
        s = self.starts
        if self.docs:
            ranges = [r for a, b in ranges for r in self._minus_docs(a, b)]
        return b"\n".join(self.data[s[a - 1] : s[b] - 1] for a, b in ranges)

    def _minus_docs(self, a: int, b: int) -> list[tuple[int, int]]:
        out = []
        if self._doc_starts is None:
            self.docs.sort()
            self._doc_starts = [d[0] for d in self.docs]
        # docstrings do not overlap: those starting before `a` can only reach into it if the last does
        first = max(bisect.bisect_left(self._doc_starts, a) - 1, 0)
        last = bisect.bisect_right(self._doc_starts, b)
        for da, db in self.docs[first:last]:
            if db < a or da > b or not self._alone(da, db):
                continue
            if da > a:
                out.append((a, da - 1))
            a = max(a, db + 1)
        if a <= b:
            out.append((a, b))
        return out

    def _alone(self, da: int, db: int) -> bool:
        """A docstring that has its lines to itself (no code before or after it on them)."""
        s = self.starts
        first = self.data[s[da - 1] : s[da] - 1].strip()
        last = self.data[s[db - 1] : s[db] - 1].strip()
        return first[:1] in b"\"'rRbBuUfF" and last[-1:] in b"\"'"

    def outside(self, cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out, line = [], 1
        for a, b in sorted(cut):
            if a > line:
                out.append((line, a - 1))
            line = max(line, b + 1)
        if line <= len(self.starts) - 2:
            out.append((line, len(self.starts) - 2))
        return out

    def reach(self, trig: "_Triggers", own_root: str, any_kinds: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the kinds the top level and the local functions it reaches may produce by themselves,
        the names of other modules they may call). Each function whose name reached code mentions
        is reached too; a class's name reaches its special methods and bases. Calls into other modules are
        followed by cudalint.scan.callreach._Calls over `graph`."""
        # names, not words: the keys of a registry dict are strings, not calls of functions
        mention = set(_top_names(self.tree.body))
        used = set(_top_names(self.tree.body, uses=True))  # (the classes whose special methods may run)
        todo = list(mention)
        done: set[bytes] = set()
        special: set[tuple[bytes, bytes]] = set()  # (class, special method) reached through the class

        def reach_names(names: frozenset, uses: frozenset) -> None:
            for w in names:
                if w not in mention or (w in uses and w not in used):
                    mention.add(w)
                    if w in uses:
                        used.add(w)
                    todo.append(w)

        while todo:
            word = todo.pop()
            if word in used:
                bases = frozenset(self.bases.get(word, ()))  # constructing a class may run its bases' methods
                reach_names(bases, bases)
            else:
                reach_names(frozenset(self.bases.get(word, ())), frozenset())
            if word in self.nodes and word not in done:
                done.add(word)
                reach_names(*self._names_of(word))
            # a class used (called, passed, subclassed) runs only its own special methods by itself
            # (construction, `with`, operators); another method runs when its name is mentioned
            # (`p.run()`), and `Pipeline.push_to_hub = ...` runs none (transformers' pipelines/base.py)
            if word in used:
                for name, defs in self.owned.get(word, {}).items():
                    if name.startswith(b"__") and name.endswith(b"__") and (word, name) not in special:
                        special.add((word, name))
                        reach_names(*_names_in(defs))
        kinds: set[str] = set()
        if any_kinds:
            # each function's own kinds, computed once: the union over what is reached
            for key in [None] + sorted((done | {m for _c, m in special}) & set(self.bodies)):
                kinds.update(self._direct_kinds(key, trig, own_root))
        targets = set(self.stars)
        for word in mention:
            # an imported name only ever the object of an attribute (`TrainingArguments.__doc__`,
            # `torch.cuda.init`) reaches its attributes' chains, not itself (its own target is first)
            chains = self.chains.get(word, ())
            targets.update(chains if word in used else chains[1:])
        return tuple(sorted(kinds)), tuple(sorted(targets))

    def graph(self, trig: "_Triggers", own_root: str, any_kinds: bool) -> tuple[tuple[str, ...], dict[str, list], dict[str, list]]:
        """What `reach` needs from this file's text, as plain data: (the dotted names of other
        modules its code may call, the imported names -> indices of those, the defined names ->
        [own kinds, own imports, the defined names it mentions, indices of the dotted names]).
        cudalint.scan.callreach._Calls walks it from any name without a tree."""
        table = sorted({t for ts in self.chains.values() for t in ts})
        at = {t: i for i, t in enumerate(table)}
        names = {k.decode(): [at[t] for t in ts] for k, ts in self.chains.items()}
        defined = set(self.nodes) | set(self.bases)
        defs: dict[str, list] = {}
        for word in sorted(defined):
            mention = set(self.bases.get(word, ()))
            done = [m for m in [word] + self.methods.get(word, []) if m in self.nodes]
            for m in done:
                mention |= self._names_of(m)[0]
            kinds: set[str] = set()
            if any_kinds:
                for m in done:
                    if m in self.bodies:
                        kinds.update(self._direct_kinds(m, trig, own_root))
            imports = sorted({i for m in done for i in self.imports_of.get(m, ())})
            refs = sorted({at[t] for w in mention for t in self.chains.get(w, ())})
            defs[word.decode()] = [sorted(kinds), imports, sorted(w.decode() for w in mention & defined if w != word), refs]
        return tuple(table), names, defs
