"""What a run knows of a file before reading it, as handed to the workers (cudalint.engine.tasks).

A module of its own: pass 0 (cudalint.engine.indexed) makes these on runs the cache answers whole,
which import nothing of the workers' side.
"""
from __future__ import annotations

from cudalint.core.record import record

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional


@record
class FileInfo:
    path: str
    module: str
    is_package: bool
    text: Optional[bytes] = None  # given contents (flake8's lines, --fix's overlay) instead of the file's
    cached: bool = True  # False: neither read from nor written to the cache (an overlay)
