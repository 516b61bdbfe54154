"""Where a node of CPython's `ast` is, in the columns users see, and its source text.

`ast` gives each node a line and a column counted in UTF-8 bytes. Editors, flake8 and SARIF count
characters, so a column on a line with non-ASCII text is converted (only such lines pay for it).
A few places the rules point at have no node of their own (a function's name, `x as y` in a `with`,
`"K": v` in a dict); `Span` stands in for them.
"""
from __future__ import annotations

import ast
import re
from typing import Optional, Union

from cudalint.core.ir import Loc
from cudalint.core.record import record

_LINE_ENDS = re.compile(r"\r\n|\r|\n")  # Python's line ends only (str.splitlines also splits at \f, \v, ...)
_DEF_NAME = re.compile(r"(?:async\s+)?def\s+(\w+)")
_TEXT_LIMIT = 72


@record(eq=False)
class Span:
    """A stretch of source with the attributes of an ast node's position (byte columns)."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


Located = Union[ast.AST, Span]


def span(first: Located, last: Located) -> Span:
    """From the start of `first` to the end of `last`."""
    return Span(first.lineno, first.col_offset, last.end_lineno, last.end_col_offset)  # type: ignore[union-attr]


class Lines:
    """The module's lines, for columns and source text."""

    def __init__(self, text: str) -> None:
        # (str.split when there is no `\r`, as in most files: the regex split was 1 % of a worker's time)
        self.lines = _LINE_ENDS.split(text) if "\r" in text else text.split("\n")
        # an ASCII file's byte columns are its character columns: no line is looked at for them
        self.ascii = text.isascii()

    def _line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def column(self, line: int, offset: int) -> int:
        """The 0-based character column of a byte offset."""
        text = self._line(line)
        if text.isascii():
            return offset
        return len(text.encode("utf-8")[:offset].decode("utf-8", "replace"))

    def loc(self, node: Located) -> Loc:
        """(line, column, end line, end column), columns 1-based."""
        line, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[union-attr]
        if self.ascii:
            stop = node.end_col_offset  # type: ignore[union-attr]
            return (line, node.col_offset + 1, end, (stop if stop is not None else node.col_offset) + 1)  # type: ignore[union-attr]
        return (
            line,
            self.column(line, node.col_offset) + 1,  # type: ignore[union-attr]
            end,
            self.column(end, node.end_col_offset if node.end_col_offset is not None else node.col_offset) + 1,  # type: ignore[union-attr]
        )

    def segment(self, node: Located) -> str:
        line, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[union-attr]
        start, stop = node.col_offset, node.end_col_offset  # type: ignore[union-attr]
        if stop is None:
            return ""
        if line == end:
            text = self._line(line)
            if self.ascii or text.isascii():
                return text[start:stop]
            return text.encode("utf-8")[start:stop].decode("utf-8", "replace")
        first = self._line(line).encode("utf-8")[start:].decode("utf-8", "replace")
        last = self._line(end).encode("utf-8")[:stop].decode("utf-8", "replace")
        return "\n".join([first, *(self._line(n) for n in range(line + 1, end)), last])

    def text(self, node: Optional[Located]) -> str:
        """The node's code on one line, whitespace squeezed, shortened for messages."""
        if node is None:
            return ""
        code = " ".join(self.segment(node).split())
        if len(code) > _TEXT_LIMIT:
            code = code[: _TEXT_LIMIT - 3] + "..."
        return code

    def def_name(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> Located:
        """Where a function's name is written: `ast` records only where `def` (or `async`) starts."""
        text = self._line(node.lineno)
        raw = text.encode("utf-8") if not text.isascii() else None
        start = len(raw[: node.col_offset].decode("utf-8", "replace")) if raw is not None else node.col_offset
        m = _DEF_NAME.match(text, start)
        if m is None or m.group(1) != node.name:  # `def \` continued on the next line: point at `def`
            return Span(node.lineno, node.col_offset, node.lineno, node.col_offset)
        begin, stop = m.start(1), m.end(1)
        if raw is not None:
            begin, stop = len(text[:begin].encode("utf-8")), len(text[:stop].encode("utf-8"))
        return Span(node.lineno, begin, node.lineno, stop)
