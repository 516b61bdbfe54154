"""Where a notebook cell's line is in the `.ipynb` file itself (for GitHub annotations and SARIF).

Findings in notebooks are given as (cell, line in cell); a tool that shows the `.ipynb` file (a
pull request's diff, code scanning) needs the line of the JSON document. nbformat writes a cell's
`source` as a list of strings, one per line, each on a line of its own; a cell line is mapped to
the file line of the string where it starts. A `source` given as one string maps every cell line to
that string's line. Only the JSON's structure is walked (strings by `json`'s own scanner).
"""
from __future__ import annotations

import bisect
import re
from functools import lru_cache
from json.decoder import scanstring

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Optional

_WS = re.compile(r"[ \t\n\r]*")
_ATOM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


class _Walker:
    def __init__(self, text: str):
        self.text = text
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1

    def ws(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def value(self, pos: int) -> tuple[Any, int]:
        """(node, end): a node is ("s", text, pos), ("a", [nodes], pos), ("o", {key: node}, pos) or ("x", None, pos)."""
        pos = self.ws(pos)
        ch = self.text[pos : pos + 1]
        if ch == '"':
            s, end = scanstring(self.text, pos + 1)
            return ("s", s, pos), end
        if ch == "[":
            items = []
            pos = self.ws(pos + 1)
            if self.text[pos : pos + 1] == "]":
                return ("a", items, pos), pos + 1
            while True:
                node, pos = self.value(pos)
                items.append(node)
                pos = self.ws(pos)
                if self.text[pos : pos + 1] == ",":
                    pos += 1
                    continue
                if self.text[pos : pos + 1] == "]":
                    return ("a", items, pos), pos + 1
                raise ValueError(pos)
        if ch == "{":
            members: dict[str, Any] = {}
            start = pos
            pos = self.ws(pos + 1)
            if self.text[pos : pos + 1] == "}":
                return ("o", members, start), pos + 1
            while True:
                pos = self.ws(pos)
                if self.text[pos : pos + 1] != '"':
                    raise ValueError(pos)
                name, pos = scanstring(self.text, pos + 1)
                pos = self.ws(pos)
                if self.text[pos : pos + 1] != ":":
                    raise ValueError(pos)
                members[name], pos = self.value(pos + 1)
                pos = self.ws(pos)
                if self.text[pos : pos + 1] == ",":
                    pos += 1
                    continue
                if self.text[pos : pos + 1] == "}":
                    return ("o", members, start), pos + 1
                raise ValueError(pos)
        m = _ATOM.match(self.text, pos)
        if m is None:
            raise ValueError(pos)
        return ("x", None, pos), m.end()


def _cells(doc: Any) -> list:
    if doc[0] != "o":
        return []
    members = doc[1]
    if "cells" in members and members["cells"][0] == "a":
        return members["cells"][1]
    out = []
    ws = members.get("worksheets")
    if ws and ws[0] == "a":  # nbformat 3
        for sheet in ws[1]:
            if sheet[0] == "o" and "cells" in sheet[1] and sheet[1]["cells"][0] == "a":
                out.extend(sheet[1]["cells"][1])
    return out


@lru_cache(maxsize=64)
def cell_lines(text: str) -> tuple[tuple[int, ...], ...]:
    """Per cell (0-based index): the file line of each of its lines (1-based), as far as known."""
    walker = _Walker(text)
    try:
        doc, _ = walker.value(0)
    except (ValueError, IndexError, RecursionError):
        return ()
    out = []
    for cell in _cells(doc):
        lines: list[int] = []
        src = cell[1].get("source") or cell[1].get("input") if cell[0] == "o" else None
        if src is None:
            pass
        elif src[0] == "s":
            lines = [walker.line(src[2])] * (src[1].count("\n") + 1)
        elif src[0] == "a":
            at_start = True
            for piece in src[1]:
                if piece[0] != "s":
                    continue
                where = walker.line(piece[2])
                if at_start:
                    lines.append(where)
                # a piece holding several lines (it is one JSON line): they all map to it
                lines.extend([where] * piece[1][:-1].count("\n") if piece[1].endswith("\n") else [where] * piece[1].count("\n"))
                at_start = piece[1].endswith("\n")
        out.append(tuple(lines))
    return tuple(out)


def file_line(path: str, cell: int, line: int) -> Optional[int]:
    """The line of the `.ipynb` file where line `line` of cell `cell` (both 1-based) is written."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    cells = cell_lines(text)
    if not 1 <= cell <= len(cells):
        return None
    lines = cells[cell - 1]
    if not lines:
        return None
    return lines[min(max(line, 1), len(lines)) - 1]
