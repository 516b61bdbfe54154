"""Writing to stdout and stderr as click.echo does, without importing click.

Importing click costs a warm run on lightning a fifth of its 60 ms (cudalint.quick_args), so the
lint command writes through this instead, in both of its paths, and prints the same bytes either way.
"""
from __future__ import annotations

import re
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional

# click 8.5's own pattern (click._compat._ansi_re): the style codes click.echo strips off a stream
# that is not a terminal, unless told to keep them
_ANSI = re.compile(r"\033\[[0-?]*[ -/]*[@-~]")


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except Exception:  # (a closed or odd stream: click's isatty answers False too)
        return False


def echo(message: str, err: bool = False, nl: bool = True, colour: Optional[bool] = None) -> None:
    """`colour`: True keeps the style codes, False strips them, None keeps them only on a terminal."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no standard stream attached (pythonw)
        return
    out = message + "\n" if nl else message
    if out and (colour is False or (colour is None and not _isatty(stream))):
        out = _ANSI.sub("", out)
    try:
        stream.write(out)
    except UnicodeEncodeError:  # a file name that is not UTF-8 (PEP 383 surrogates): its own bytes
        stream.flush()
        stream.buffer.write(out.encode(stream.encoding or "utf-8", "surrogateescape"))
    stream.flush()
