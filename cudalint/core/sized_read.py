"""Reading a file whose size fstat gave, up to a limit: source files and cache entries alike."""
from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import BinaryIO


def read_upto(fh: BinaryIO, size: int, limit: int) -> bytes:
    """At most `limit + 1` bytes of `fh`, whose size was `size` (<= `limit`) when it was opened.

    `read(n)` makes an n-byte buffer first: asked for the limit, every small source file cost a
    10 MB buffer (more than half the time of reading lightning's 266 files) and every cache entry a
    512 MB one. So the size is read, and on only when there is more: a file that grew meanwhile, or
    one of /proc, whose size is 0. More than `limit` bytes back means the caller skips it."""
    data = fh.read(size + 1)
    if len(data) > size:
        data += fh.read(limit + 1 - len(data))
    return data
