"""A hash of cudalint's own source, which every cache key includes.
"""
from __future__ import annotations

import os

from cudalint.digest import hasher


def code_fingerprint() -> str:
    """A hash of cudalint's own source: a summary made by other code is never reused.

    The version alone is not enough between releases (and in a checkout), when the IR changes.
    Each file counts by its name, size and modification time, the test CPython itself trusts to
    decide that a module's compiled code is current (reading every file's bytes took a warm run of
    lightning 2 of its 65 ms).
    """
    h = hasher()
    package = os.path.dirname(os.path.realpath(__file__))
    for rel, size, mtime in sorted(_sources(package, "")):
        h.update(f"{rel}\0{size}\0{mtime}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def _sources(folder: str, prefix: str) -> list[tuple[str, int, int]]:
    """The .py files under `folder` ('/'-joined paths relative to the package), with their size and mtime."""
    out: list[tuple[str, int, int]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                out.extend(_sources(entry.path, prefix + entry.name + "/"))
            elif entry.name.endswith(".py"):
                st = entry.stat()
                out.append((prefix + entry.name, st.st_size, st.st_mtime_ns))
        except OSError:
            continue
    return out
