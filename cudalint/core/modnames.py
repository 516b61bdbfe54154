"""A file's dotted module name, from the `__init__.py` files above it (as Python finds packages).

Apart from cudalint.core.project, which needs the IR: a run the cache answers whole names its files
without importing either.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional
    from cudalint.fspath import PathLike


def module_name(path: PathLike, packages: Optional[dict[str, str]] = None) -> tuple[str, bool]:
    """Dotted module name from the `__init__.py` files above `path`, and whether it is a package.
    `packages`: what the directories asked before are (one run's, so a file added later counts)."""
    head, name = os.path.split(os.fspath(path))
    is_package = name == "__init__.py"
    package = _package_of(head, {} if packages is None else packages)
    stem = "" if is_package else (name[:-3] if name.endswith(".py") else os.path.splitext(name)[0])
    dotted = ".".join(p for p in (package, stem) if p)
    if not dotted.isascii() and not _encodable(dotted):
        return "", is_package  # a name that is not UTF-8 bytes: no import statement can name it
    return dotted, is_package


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _package_of(directory: str, known: dict[str, str]) -> str:
    """The dotted package a directory is ("" none), from the `__init__.py` files above it. A loop,
    not recursion: a tree may nest packages deeper than Python's recursion limit."""
    chain: list[tuple[str, str]] = []  # (directory, its name) from `directory` up, not yet known
    cur = directory
    while cur not in known:
        parent, name = os.path.split(cur)
        if not os.path.isfile(os.path.join(cur, "__init__.py")):
            known[cur] = ""
            break
        if parent == cur or not name:
            known[cur] = name
            break
        chain.append((cur, name))
        cur = parent
    above = known[cur]
    for folder, name in reversed(chain):
        above = known[folder] = f"{above}.{name}" if above else name
    return known[directory]
