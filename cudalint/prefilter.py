"""Which files need a syntax tree at all: a byte-level scan, then a closure over the import graph.

Most files of a large repository mention nothing the catalogue cares about. Such a file's summary
holds only structure (imports, calls of project functions, raise/return/loops), which matters to
other modules in just two ways, and the selection keeps exactly those files:

- upward: a module whose imports reach (transitively) a module with effects runs those effects in
  its own state, so it can produce findings (at the effect's line, with its own witness). It is
  parsed.
- downward: a function that may never return (it raises, loops forever, exits) cuts the caller's
  path short. A module that is imported (transitively) by a parsed one and mentions `raise`,
  `while` or an exiting call, or imports such a module, is parsed too.

Every other file is represented by an empty module (`stub`): it resolves like the real one, runs no
effects and returns normally, which is what its real summary would say. So prefiltered findings
equal the findings of a full analysis (tests/test_prefilter.py checks this on the fixtures and on
generated programs).

The scan is deliberately coarse (a word in a comment counts), so it can only parse too much. What
it assumes about the summarizer: an effect comes from a catalogue entry whose last name (for
`X.__call__`/`X.__enter__`, the class name) appears as a word in the file, together with the
entry's top-level package, the file's own package (relative imports) or the package of a type some
present entry `returns`; a method entry (`x.cuda()`) needs `.name` in the text. A new kind of
event that does not come from the catalogue must be added to `_Triggers`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Iterable, Mapping, Optional

from cudalint.catalogue import Catalogue

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# `from .x import (a, b)` / `import a.b as c, d`: over-approximate (strings and comments count too)
_FROM = re.compile(rb"\bfrom[ \t]+(\.*)[ \t]*([A-Za-z_][\w.]*|)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)")
_IMPORT = re.compile(rb"import[ \t]+([^\n;#]*)")
_CHAIN_TAIL = re.compile(rb"((?:[ \t]*\.[ \t]*[A-Za-z_]\w*)+)")
_NAME_OR_DOT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_ALIAS = re.compile(rb"([A-Za-z_][\w.]*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?")
# an exiting call, `raise`, or `while True:` may end a path inside a function
_STOP_WORDS = frozenset({b"raise", b"while"})
_DUNDER = re.compile(r"^__\w+__$")


@dataclass(frozen=True)
class Scan:
    """What the byte scan learned about one file (plain data: cached with the summary)."""

    kinds: tuple[str, ...]  # event kinds its catalogue effects may produce ("*": any); () = none
    may_stop: bool  # may contain a path that never returns (raise, while, an exiting call)
    imports: tuple[str, ...]  # absolute module names it may import or reach by attribute


@dataclass(frozen=True)
class _Clause:
    kinds: tuple[str, ...]  # the event kinds a match may produce; "*" for effects not modelled here
    root: str  # "" when any file qualifies (builtins)
    words: tuple[bytes, ...]  # all must appear


class _Triggers:
    def __init__(self, catalogue: Catalogue):
        clauses: list[_Clause] = []
        stops: set[bytes] = set()
        methods: set[str] = set()
        method_kinds: set[str] = set()
        returns: dict[bytes, set[str]] = {}  # word of an entry with `returns` -> root of the type
        for api in catalogue.apis:
            if api.kind == "probe":
                continue
            effects = {k for k, _ in api.effects}
            if api.get("returns"):
                last = _word_of(api.name)
                if last:
                    returns.setdefault(last.encode(), set()).add(api.get("returns").split(".")[0])
            if api.get("exits"):
                stops.add(api.name.rsplit(".", 1)[-1].encode())
            kinds = set()
            if api.initializes:
                kinds.add("init")
            if api.init is not None and api.kind == "call" and not api.is_glob:
                kinds.add("monkeypatch")  # `torch.cuda.is_available = ...`
            if effects - {"returns", "exits"}:
                kinds.add("*")
            if not kinds:
                continue  # produces no event of its own
            if api.kind == "method":
                methods.add(api.name)
                method_kinds.update(kinds)
                continue
            parts = api.name.split(".")
            root = parts[0]
            words = [p for p in parts[1:] if not any(ch in p for ch in "*?[")] if api.is_glob else [_word_of(api.name)]
            for slots, _pattern in api.match:
                if api.is_glob:
                    words.extend(s for s in slots if not s.isdigit())
            clauses.append(_Clause(tuple(sorted(kinds)), "" if root == "builtins" else root, tuple(w.encode() for w in words if w)))
        for env in catalogue.env:
            if env.frozen_by.startswith("import:"):
                module = env.frozen_by.split(":", 1)[1]
                parts = module.split(".")
                clauses.append(_Clause(("import_lib",), parts[0], tuple(p.encode() for p in parts[1:])))
        self.clauses = tuple(clauses)
        self.method_kinds = tuple(sorted(method_kinds))
        self.stops = frozenset(stops | _STOP_WORDS)
        self.returns = {k: frozenset(v) for k, v in returns.items()}
        self.method_re = re.compile(rb"\.\s*(?:" + b"|".join(re.escape(m.encode()) for m in sorted(methods)) + rb")\b") if methods else None

    def kinds(self, words: frozenset, data: bytes, own_root: str) -> tuple[str, ...]:
        """The event kinds the file's catalogue effects may produce."""
        roots = {own_root.encode()} if own_root else set()
        for word, types in self.returns.items():
            if word in words:
                roots.update(t.encode() for t in types)
        kinds: set[str] = set()
        for clause in self.clauses:
            if clause.root and clause.root.encode() not in words and clause.root.encode() not in roots:
                continue
            if all(w in words for w in clause.words):
                kinds.update(clause.kinds)
        if self.method_re is not None and self.method_re.search(data):
            kinds.update(self.method_kinds)  # x.cuda(), x.to("cuda")
        return tuple(sorted(kinds))


def _word_of(name: str) -> str:
    parts = name.split(".")
    last = parts[-1]
    if _DUNDER.match(last) and len(parts) > 1:
        return parts[-2]  # X.__call__ / X.__enter__: the instance comes from a call of X(...)
    return last


_TRIGGERS: dict[int, tuple[Catalogue, _Triggers]] = {}


def _triggers(catalogue: Catalogue) -> _Triggers:
    # keyed by identity: hashing a whole catalogue per file would cost more than the scan
    hit = _TRIGGERS.get(id(catalogue))
    if hit is None or hit[0] is not catalogue:
        hit = _TRIGGERS[id(catalogue)] = (catalogue, _Triggers(catalogue))
    return hit[1]


def scan(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> Scan:
    if b"\\\n" in data:
        data = data.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    words = frozenset(_WORD.findall(data))
    trig = _triggers(catalogue)
    own_root = modname.split(".", 1)[0]
    kinds = trig.kinds(words, data, own_root)
    may_stop = not trig.stops.isdisjoint(words)
    return Scan(kinds=kinds, may_stop=may_stop, imports=_imports(data, modname, is_package))


def _imports(data: bytes, modname: str, is_package: bool) -> tuple[str, ...]:
    if b"import" not in data:
        return ()
    package = modname if is_package else modname.rpartition(".")[0]
    locals_: dict[bytes, str] = {}  # local name -> module (or module.attribute) it stands for
    names: set[str] = set()
    for m in _FROM.finditer(data):
        dots, mod, what = m.group(1), m.group(2).decode(), m.group(3)
        base = _relative(package, len(dots), mod) if dots else mod
        if base is None:
            continue
        if base:
            names.add(base)
        for alias in _ALIAS.finditer(what.strip(b"()")):
            name, asname = alias.group(1), alias.group(2)
            if name in (b"as", b"import"):
                continue
            full = f"{base}.{name.decode()}" if base else name.decode()
            names.add(full)
            locals_[asname or name] = full
    for m in _IMPORT.finditer(data):
        if not _statement_start(data, m.start()):
            continue
        for alias in _ALIAS.finditer(m.group(1)):
            name, asname = alias.group(1), alias.group(2)
            if name == b"as":
                continue
            full = name.decode().strip(".")
            if not full:
                continue
            names.add(full)
            if asname:
                locals_[asname] = full
            else:
                root = full.split(".", 1)[0]
                locals_[root.encode()] = root
    if locals_:
        # `import pkg` then `pkg.mod.f()` reaches pkg.mod without importing it by name
        for local, target in locals_.items():
            pos = data.find(local)
            while pos >= 0:
                end = pos + len(local)
                m = _CHAIN_TAIL.match(data, end)
                # not the end of a longer name or an attribute of something else
                if m is not None and (pos == 0 or data[pos - 1] not in _NAME_OR_DOT):
                    names.add(target + re.sub(rb"\s", b"", m.group(1)).decode())
                pos = data.find(local, end)
    out: set[str] = set()
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return tuple(sorted(out))


def _statement_start(data: bytes, pos: int) -> bool:
    """`import` at the start of a statement: after a line start, `;` or `:`, and blanks."""
    i = pos - 1
    while i >= 0 and data[i] in b" \t":
        i -= 1
    return i < 0 or data[i] in b"\n\r;:"


def _relative(package: str, level: int, mod: str) -> Optional[str]:
    base = package.split(".") if package else []
    if level - 1 > len(base):
        return None
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([p for p in base + ([mod] if mod else []) if p])


def select(scans: Mapping[str, Scan], modules: Mapping[str, str], judged: Iterable[str] = ("env_write",)) -> set[str]:
    """The files (of `scans`, by path) that need a summary; `modules` maps each path to its module name.

    `judged`: the event kinds the enabled checks judge (plus "init" when CUD003 looks at modules
    that initialize CUDA when imported). A file whose effects may produce one is a source of findings.
    """
    index = _Index(modules)
    edges = {path: index.targets(path, scan.imports) for path, scan in scans.items()}
    importers: dict[str, list[str]] = {}
    for path, targets in edges.items():
        for t in targets:
            importers.setdefault(t, []).append(path)
    judged = set(judged) | {"*"}
    # files whose walk may reach an event a check judges: those with such events and their importers
    relevant = _up_closure((p for p, s in scans.items() if judged.intersection(s.kinds)), importers)
    # files that may establish a fact or cut a path short, seen from an importer or caller
    matter = _up_closure((p for p, s in scans.items() if s.kinds or s.may_stop), importers)
    out = set(relevant)
    todo = list(relevant)
    while todo:
        path = todo.pop()
        for t in edges.get(path, ()):
            if t in matter and t not in out:
                out.add(t)
                todo.append(t)
    return out


def _up_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    out = set(seeds)
    todo = list(out)
    while todo:
        for imp in importers.get(todo.pop(), ()):
            if imp not in out:
                out.add(imp)
                todo.append(imp)
    return out


class _Index:
    """Module resolution as cudalint.project does it, over paths instead of summaries."""

    def __init__(self, modules: Mapping[str, str]):
        import os

        self.by_path = {os.path.normpath(p): p for p in modules}
        self.by_name: dict[str, list[str]] = {}
        for path, name in modules.items():
            if name:
                self.by_name.setdefault(name, []).append(path)

    def targets(self, importer: str, names: Iterable[str]) -> set[str]:
        import os

        base = PurePath(os.path.normpath(importer)).parent
        out: set[str] = set()
        for name in names:
            rel = name.replace(".", "/")
            for cand in (base / f"{rel}.py", base / rel / "__init__.py"):
                hit = self.by_path.get(str(cand))
                if hit is not None:
                    out.add(hit)
            out.update(self.by_name.get(name, ()))
        out.discard(importer)
        return out
