"""A file's import statements, found in its bytes without parsing it.
"""
from __future__ import annotations

import re
from typing import Optional


# `from .x import (a, b)` / `import a.b as c, d`: over-approximate (strings and comments count too)
_FROM = re.compile(rb"\bfrom[ \t]+(\.*)[ \t]*([A-Za-z_][\w.]*|)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)")
_IMPORT = re.compile(rb"import[ \t]+([^\n;#]*)")
_CHAIN_TAIL = re.compile(rb"((?:[ \t]*\.[ \t]*[A-Za-z_]\w*)+)")
_NAME_OR_DOT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_ALIAS = re.compile(rb"([A-Za-z_][\w.]*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?")
_BLANKS = re.compile(rb"\s")


def _imports(data: bytes, modname: str, is_package: bool) -> tuple[tuple[str, ...], dict[bytes, tuple[str, ...]], tuple[str, ...]]:
    """(module names the file may import or reach, local name -> the names it may stand for,
    modules star-imported)."""
    if b"import" not in data:
        return (), {}, ()
    package = modname if is_package else modname.rpartition(".")[0]
    locals_: dict[bytes, str] = {}  # local name -> module (or module.attribute) it stands for
    names: set[str] = set()
    stars: set[str] = set()
    for m in _FROM.finditer(data):
        dots, mod, what = m.group(1), m.group(2).decode(), m.group(3)
        base = _relative(package, len(dots), mod) if dots else mod
        if base is None:
            continue
        if base:
            names.add(base)
            if what.strip() == b"*":
                stars.add(base)
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
    chains: dict[bytes, set[str]] = {local: {target} for local, target in locals_.items()}
    if locals_:
        # `import pkg` then `pkg.mod.f()` reaches pkg.mod without importing it by name
        for local, target in locals_.items():
            pos = data.find(local)
            size = len(local)
            while pos >= 0:
                end = pos + size
                # not the end of a longer name or an attribute of something else (asked first: a
                # short alias such as `F` or `np` is mostly found inside other words)
                if pos == 0 or data[pos - 1] not in _NAME_OR_DOT:
                    m = _CHAIN_TAIL.match(data, end)
                    if m is not None:
                        full = target + _BLANKS.sub(b"", m.group(1)).decode()
                        names.add(full)
                        chains[local].add(full)
                pos = data.find(local, end)
    out: set[str] = set()
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    # each local name's own target first (cudalint.scan.text._qualified_calls qualifies with it)
    return tuple(sorted(out)), {k: (locals_[k],) + tuple(sorted(v - {locals_[k]})) for k, v in chains.items()}, tuple(sorted(stars))


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
