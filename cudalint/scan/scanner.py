"""The scan of one file: its event kinds, imports and layout, from its bytes (and its tree only when
the bytes cannot tell).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

from cudalint.core.catalogue import Catalogue
from cudalint.scan.imports import _imports
from cudalint.scan.layout import _Layout
from cudalint.scan.nodes import _ast
from cudalint.scan.text import _WORD, _has_word
from cudalint.scan.triggers import _triggers


SCAN_FIELDS = 13
_EMPTY: Mapping = MappingProxyType({})  # immutable: a dataclass default


@dataclass(frozen=True)
class Scan:
    """What the scan learned about one file (plain data: cached with the summary)."""

    kinds: tuple[str, ...]  # event kinds its catalogue effects may produce ("*": judged; CUD004 roles); () = none
    may_stop: bool  # may contain a path that never returns (raise, while, an exiting call)
    imports: tuple[str, ...]  # absolute module names it may import or reach by attribute
    top_kinds: tuple[str, ...] = ("*",)  # the kinds its top level (and the local functions it calls) may produce
    top_targets: tuple[str, ...] = ()  # names of other modules its top level may call
    code_targets: tuple[str, ...] = ()  # names of other modules any of its code may call
    func_imports: tuple[str, ...] = ()  # modules its functions import
    # the call graph of its functions and classes, for cudalint.scan.callreach._Calls (no tree needed there):
    table: tuple[str, ...] = ()  # dotted names of other modules its code may call; the ints below index it
    names: Mapping[str, list] = field(default_factory=dict)  # imported local name -> the dotted names it may stand for
    stars: tuple[str, ...] = ()  # modules it star-imports
    defs: Mapping[str, list] = field(default_factory=dict)  # function or class name -> [its own kinds, imports, local names it mentions, dotted names]
    stops: Mapping[str, object] = field(default_factory=dict)  # "" (top level), "f", "C", "C.m" -> 1 never returns; [dotted names, keys] if one of them never returns; absent: returns
    syntax_ok: bool = True  # CPython's parser accepts it (a skipped file then needs nothing more)


def _lines(data: bytes) -> bytes:
    """Every line ending as `\n`, so that ast's line numbers index the lines (`\r` ends one too)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def scan(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> Scan:
    return scan_tree(data, catalogue, modname, is_package)[0]


def _first_look(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> tuple:
    """What the bytes alone say: the words, the imports, the kinds of the file's own effects."""
    original = data = _lines(data)
    if b"\\\n" in data:
        data = data.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    words = frozenset(_WORD.findall(data))
    trig = _triggers(catalogue)
    own_root = modname.split(".", 1)[0]
    imports, chains, stars = _imports(data, modname, is_package)
    heads = None if stars else frozenset(chains)
    kinds = trig.kinds(words, data, own_root, heads=heads, bases=None if stars else chains, imported=frozenset(imports))
    return original, data, words, trig, own_root, imports, chains, stars, kinds


def file_kinds(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> tuple[str, ...]:
    """A scan's `kinds`, without parsing the file."""
    return _first_look(data, catalogue, modname, is_package)[-1]


def scan_tree(
    data: bytes, catalogue: Catalogue, modname: str, is_package: bool, calls: bool = True, stops: bool = True
) -> tuple[Scan, Optional[ast.Module]]:
    """The scan, and CPython's syntax tree of the file (None: it does not parse).

    `calls=False` leaves out what the code may call and reach (`top_kinds`, `top_targets`,
    `code_targets` and the call graph), `stops=False` which functions may never return: two
    processes can make the two halves of one big file's scan (cudalint.engine.runner._Pool.map_scans)."""
    original, data, words, trig, own_root, imports, chains, stars, kinds = _first_look(data, catalogue, modname, is_package)
    may_stop = not trig.stops.isdisjoint(words)
    tree = _ast(original)
    if tree is None:
        return Scan(kinds=kinds, may_stop=may_stop, imports=imports, syntax_ok=False), None
    if not (imports or kinds or may_stop):
        return Scan(kinds=kinds, may_stop=may_stop, imports=imports, top_kinds=(), code_targets=stars), tree
    layout = _Layout(tree, original, words, chains, stars, modname if is_package else modname.rpartition(".")[0], frozenset(imports))
    top_kinds: tuple[str, ...] = ("*",)
    targets: tuple[str, ...] = ()
    code: set[str] = set(stars)
    table: tuple[str, ...] = ()
    names: dict[str, list] = {}
    defs: dict[str, list] = {}
    if calls:
        top_kinds, targets = layout.reach(trig, own_root, bool(kinds))
        # any code: every word outside the import statements that names an import (each imported
        # name looked for, not every word listed: a tenth of the scan's own time on transformers)
        outside = layout.text(layout.outside(layout.imports))
        for local, names_of in chains.items():
            if _has_word(outside, local):
                code.update(names_of)
        table, names, defs = layout.graph(trig, own_root, bool(kinds))
    return Scan(
        kinds=kinds,
        may_stop=may_stop,
        imports=imports,
        top_kinds=top_kinds,
        top_targets=targets,
        code_targets=tuple(sorted(code)),
        func_imports=tuple(sorted(layout.func_imports)),
        table=table,
        names=names,
        stars=stars,
        defs=defs,
        stops=layout.stops(trig.exits) if stops and (may_stop or stars or chains) else _EMPTY,
    ), tree
