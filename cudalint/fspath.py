"""Paths as strings, spelled as pathlib spells them, for the modules every run goes through.

Importing pathlib costs 2.6 ms (it imports urllib.parse, which imports ipaddress): a sixteenth of
a run the cache answers on lightning, and what kept a run with one file touched above a tenth of a
cold one. Settings, discovery, the cache and the catalogue's files use these instead; a spelling a
user can see (a settings file's folder, which anchors its `per-file-ignores` patterns) stays the
one `Path` gave.
"""
from __future__ import annotations

import os
TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterator, Union

    # a path as callers hold it: a string here, a Path in the language server and the flake8 plugin
    # (a name for annotations only: import it under TYPE_CHECKING too)
    PathLike = Union[str, "os.PathLike[str]"]


def clean(path: PathLike) -> str:
    """`str(PurePath(path))`: doubled and trailing separators and `.` parts dropped, `..` kept (a
    link's `..` is the file system's to resolve)."""
    drive, rest = os.path.splitdrive(os.fspath(path))
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    root = os.sep if rest.startswith(os.sep) else ""
    if root and rest.startswith(os.sep * 2) and not rest.startswith(os.sep * 3) and os.sep == "/":
        root = "//"  # (POSIX leaves a leading `//` implementation-defined: pathlib keeps it)
    parts = [p for p in rest.split(os.sep) if p and p != "."]
    return (drive + root + os.sep.join(parts)) or "."


def absolute(path: PathLike) -> str:
    """`str(Path(path).absolute())`: below the current folder unless absolute, not resolved."""
    path = os.fspath(path)
    return clean(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))


def join(base: PathLike, *names: str) -> str:
    """`str(Path(base, *names))`."""
    return clean(os.path.join(os.fspath(base), *names))


def parent(path: str) -> str:
    """`str(Path(path).parent)` of a clean path ("/" is its own parent, "." that of a bare name)."""
    return os.path.dirname(path) or ("." if path else path)


def folders_up(start: PathLike) -> Iterator[str]:
    """The folder `start` is (or the one holding it), then every folder above it to the root:
    where settings, a project's markers and a package's top are looked for."""
    cur = absolute(start)
    if not os.path.isdir(cur):
        cur = parent(cur)
    while True:
        yield cur
        up = parent(cur)
        if up == cur:
            return
        cur = up
