"""A hash of cudalint's own source, which every cache key includes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def code_fingerprint() -> str:
    """A hash of cudalint's own source: a summary made by other code is never reused.

    The version alone is not enough between releases (and in a checkout), when the IR changes.
    """
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        try:
            h.update(path.relative_to(package).as_posix().encode())
            h.update(path.read_bytes())
        except OSError:
            continue
    return h.hexdigest()[:16]
