"""`--show-source`: code frames under a finding and under each step of its witness, as ruff draws them.

```
train.py:7:1: CUD001 CUDA_VISIBLE_DEVICES is set after ...
  |
6 | # pick a GPU
7 | os.environ["CUDA_VISIBLE_DEVICES"] = "1"
  | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ CUD001
  |
    train.py:5: torch.cuda.is_available() initializes CUDA ...
  5 | if torch.cuda.is_available():
```
Notebook lines are read from the cell they are in.
"""
from __future__ import annotations

import re

from cudalint.core.findings import Finding, Step

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Mapping, Optional

_DIM = "\x1b[2m"
_RED = "\x1b[1;31m"
_BLUE = "\x1b[1;34m"
_RESET = "\x1b[0m"


def _paint(value: str, style: str, colour: bool) -> str:
    return f"{style}{value}{_RESET}" if colour and value else value


class Frames:
    def __init__(self, texts: Optional[Mapping[str, str]] = None):
        self.texts = dict(texts or {})
        self._lines: dict[str, list[str]] = {}
        self._cells: dict[str, dict[tuple[int, int], str]] = {}

    def _file_lines(self, path: str) -> list[str]:
        if path not in self._lines:
            text = self.texts.get(path)
            if text is None:
                from cudalint.inputs.source import read_bytes  # (never opens a FIFO; size limit)

                data = read_bytes(path)
                text = data.decode("utf-8", "replace") if isinstance(data, bytes) else ""
            self._lines[path] = re.split(r"\r\n|\r|\n", text)
        return self._lines[path]

    def line(self, path: str, line: int, cell: Optional[int] = None) -> Optional[str]:
        if cell is not None:
            if path not in self._cells:
                from cudalint.inputs import notebook

                nb = notebook.read(path)
                table: dict[tuple[int, int], str] = {}
                if not isinstance(nb, Finding):
                    for where, text in zip(nb.lines, nb.original.split("\n")):
                        table[where] = text
                self._cells[path] = table
            return self._cells[path].get((cell, line))
        lines = self._file_lines(path)
        return lines[line - 1] if 1 <= line <= len(lines) else None

    def finding(self, f: Finding, colour: bool = False) -> str:
        text = self.line(f.path, f.line, f.cell)
        if text is None:
            return ""
        before = self.line(f.path, f.line - 1, f.cell) if f.line > 1 else None
        width = len(str(f.line))
        gutter = _paint(" " * width + " |", _BLUE, colour)
        out = [gutter]
        if before is not None and before.strip():
            out.append(_paint(f"{f.line - 1:>{width}} |", _BLUE, colour) + f" {before.rstrip()}")
        out.append(_paint(f"{f.line:>{width}} |", _BLUE, colour) + f" {text.rstrip()}")
        start = max(f.column, 1)
        end = f.end_column if f.end_line == f.line and f.end_column > start else len(text.rstrip()) + 1
        carets = " " * (start - 1) + "^" * max(end - start, 1)
        out.append(gutter + " " + _paint(f"{carets} {f.code}", _RED, colour))
        out.append(gutter)
        return "\n".join(out) + "\n"

    def step(self, s: Step, colour: bool = False) -> str:
        text = self.line(s.path, s.line, s.cell)
        if text is None:
            return ""
        return "    " + _paint(f"{s.line} |", _BLUE, colour) + f" {text.strip()}\n"
