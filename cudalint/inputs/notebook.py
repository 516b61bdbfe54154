"""A Jupyter notebook as one Python module, in the order a user runs its cells (top to bottom).

`load` turns the notebook's code cells into one Python source that has exactly one line for every
line of every code cell, so a line of the source maps back to (cell, line in cell): IPython magics
become equivalent code (`%env X=1` is an environment write) or `pass`, shell lines (`!cmd`) become
`pass`. Cells are numbered from 1 counting every cell, markdown included, as Jupyter shows them.

The notebook format is JSON with a documented schema (nbformat 4: `cells[].cell_type`,
`cells[].source` as a string or a list of strings; nbformat 3: `worksheets[].cells[].input`); the
standard library's `json` reads it. nbformat itself would add jsonschema, traitlets and jupyter_core
to the dependencies for the two keys we need.
"""
from __future__ import annotations

import json
import re

from cudalint.core.findings import Finding, Step
from cudalint.core.record import record, replace
from cudalint.inputs.source import decode, problem, too_big

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Optional, Union

# cell magics whose body is Python (IPython runs it); any other cell magic's body is not Python
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# cell magics whose body runs in a shell: an `export` there dies with the shell too
SHELL_CELL_MAGICS = frozenset({"bash", "sh", "script", "system"})
# line magics followed by a Python statement that IPython runs (`%time f()`)
PYTHON_LINE_MAGICS = frozenset({"time", "timeit", "prun"})
ENV_MAGICS = frozenset({"env", "set_env"})

_MAGIC = re.compile(r"(?P<name>\w+)\s*(?P<rest>.*)$")
_ENV_ARGS = re.compile(r"(?P<var>[A-Za-z_]\w*)(?:\s*=\s*|\s+)(?P<value>.*?)\s*$")
_CAPTURE = re.compile(r"^(?P<lhs>\s*[\w.\[\], ]+?\s*=\s*)[!%]")
_HELP = re.compile(r"^\s*(\?\??[\w.]*|[\w.]+\?\??)\s*$")
_SHELL_ASSIGN = re.compile(r"(?:export\s+)?(?P<var>[A-Za-z_]\w*)=")
_ENV_MODULE = "_cudalint_os"


@record
class Notebook:
    path: str
    source: str  # the Python module cudalint analyzes
    original: str  # the cells' own lines, line for line (noqa comments and expectations live here)
    lines: tuple[tuple[int, int], ...]  # source line n -> (cell, line in cell) at index n - 1
    rewritten: frozenset[int]  # source lines that are not the cell's text (magics): columns do not map
    problems: tuple[Finding, ...]  # CUD900 for cells that do not parse, CUD009; in source lines

    def where(self, line: int) -> tuple[Optional[int], int]:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return None, line

    def map_finding(self, f: Finding) -> Finding:
        """A finding in source lines -> the same finding in (cell, line in cell)."""
        witness = tuple(self.map_step(s) for s in f.witness)
        if f.path != self.path or f.cell is not None:
            return replace(f, witness=witness, message=self.map_message(f.message))
        cell, line = self.where(f.line)
        end_cell, end_line = self.where(f.end_line)
        column, end_column = f.column, f.end_column
        if f.line in self.rewritten:
            text = self.original.splitlines()[f.line - 1]
            column, end_column = len(text) - len(text.lstrip()) + 1, len(text) + 1
        if end_cell != cell:
            end_line, end_column = line, end_column
        return replace(
            f, line=line, end_line=end_line, column=column, end_column=end_column, cell=cell, witness=witness,
            message=self.map_message(f.message),
        )

    def map_message(self, message: str) -> str:
        """Messages name places by source line ("(line 7)", "nb.ipynb:7"): name the cell instead."""

        def cell_line(m: re.Match) -> str:
            cell, line = self.where(int(m.group(1)))
            return m.group(0) if cell is None else f"(cell {cell}, line {line})"

        def path_line(m: re.Match) -> str:
            cell, line = self.where(int(m.group(1)))
            return m.group(0) if cell is None else f"{self.path}:cell {cell}:{line}"

        message = re.sub(r"\(line (\d+)\)", cell_line, message)
        return re.sub(re.escape(self.path) + r":(\d+)\b", path_line, message)

    def map_step(self, s: Step) -> Step:
        if s.path != self.path or s.cell is not None:
            return s
        cell, line = self.where(s.line)
        return replace(s, line=line, cell=cell)


def _cells(data: Any) -> Union[list[dict], str]:
    if not isinstance(data, dict):
        return "not a notebook: the JSON document is not an object"
    if "cells" in data:
        cells = data["cells"]
    elif isinstance(data.get("worksheets"), list):  # nbformat 3
        per_sheet = [ws.get("cells", []) for ws in data["worksheets"] if isinstance(ws, dict)]
        if not all(isinstance(c, list) for c in per_sheet):
            return "not a notebook: a worksheet's `cells` is not a list"
        cells = [c for sheet in per_sheet for c in sheet]
    else:
        return "not a notebook: no `cells` list"
    if not isinstance(cells, list):
        return "not a notebook: `cells` is not a list"
    for i, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            return f"not a notebook: cell {i} has no cell_type"
        key = "input" if "source" not in cell and "input" in cell else "source"
        if key not in cell:
            return f"not a notebook: cell {i} has no source"
        src = cell[key]
        if not (isinstance(src, str) or (isinstance(src, list) and all(isinstance(s, str) for s in src))):
            return f"not a notebook: the source of cell {i} is not text"
    return cells


def _cell_text(cell: dict) -> str:
    src = cell.get("source", cell.get("input", ""))
    return src if isinstance(src, str) else "".join(src)


def shell_exports(command: str) -> list[tuple[str, int]]:
    """Variables a shell command only exports (or assigns) and then drops: [(name, offset)].

    `export X=1 && python train.py` is fine: the export reaches the command after it.
    """
    parts = [p for p in re.split(r"&&|;|\|\|", command)]
    found = []
    offset = 0
    for part in parts:
        stripped = part.strip()
        start = offset + len(part) - len(part.lstrip())
        offset += len(part) + 2
        if not stripped or stripped.startswith("#"):
            continue
        m = _SHELL_ASSIGN.match(stripped)
        if m is None or (not stripped.startswith("export") and " " in stripped.split("=", 1)[1].strip()):
            return []  # another command runs in the same shell: the variable reaches it
        found.append((m.group("var"), start))
    return found


def _shell_finding(path: str, line: int, column: int, end_column: int, var: str) -> Finding:
    return Finding.at(
        "CUD009",
        path,
        (line, column, line, end_column),
        message=(
            f"`export {var}=...` runs in a subshell that exits at once; the kernel's environment (and CUDA in it) "
            f"does not change. Use `%env {var}=...` or os.environ[{var!r}] before anything initializes CUDA"
        ),
        severity="error",
    )


class _Builder:
    def __init__(self, path: str):
        self.path = path
        self.out: list[str] = []
        self.orig: list[str] = []
        self.lines: list[tuple[int, int]] = []
        self.rewritten: set[int] = set()
        self.problems: list[Finding] = []

    def add(self, cell: int, n: int, original: str, code: Optional[str] = None) -> None:
        self.out.append(original if code is None else code)
        self.orig.append(original)
        self.lines.append((cell, n))
        if code is not None and code != original:
            self.rewritten.add(len(self.out))

    def shell(self, command: str, original: str, column0: int) -> None:
        line = len(self.out) + 1  # the line about to be added
        for var, offset in shell_exports(command):
            self.problems.append(_shell_finding(self.path, line, column0 + offset + 1, len(original) + 1, var))

    def python_line(self, line: str) -> Optional[str]:
        """The Python for one line of a cell; None when it is Python already."""
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!"):
            self.shell(stripped[1:], line, len(indent) + 1)
            return indent + "pass"
        if stripped.startswith("%"):
            m = _MAGIC.match(stripped.lstrip("%"))
            if m is None:
                return indent + "pass"
            name, rest = m.group("name"), m.group("rest")
            if name in ENV_MAGICS:
                env = _ENV_ARGS.match(rest)
                if env is None:
                    return indent + "pass"  # `%env` lists, `%env X` reads
                value = env.group("value")
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]  # IPython passes the text as is; quotes are the usual intent
                return f"{indent}import os as {_ENV_MODULE}; {_ENV_MODULE}.environ[{env.group('var')!r}] = {value!r}"
            if name in ("system", "sx"):
                self.shell(rest, line, len(line) - len(rest))
                return indent + "pass"
            if name in PYTHON_LINE_MAGICS:
                stmt = re.sub(r"^(?:-\w+(?:\s+\d+)?\s+)*", "", rest)
                if stmt and _parses(stmt):
                    return indent + stmt
            return indent + "pass"
        m = _CAPTURE.match(line)
        if m is not None:
            return m.group("lhs") + "None"
        if _HELP.match(line):
            return indent + "pass"
        return None

    def cell(self, number: int, text: str) -> None:
        lines = text.splitlines() or [""]
        # the cell magic's line: the first, after the blank lines IPython drops (leading_empty_lines)
        # and the comments a front end reads before it (Colab's form lines, `#@title ...` above
        # `%%html`: oobabooga/text-generation-webui, Colab-TextGen-GPU.ipynb)
        at = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.strip().startswith("#")), 0)
        first = lines[at].strip()
        if first.startswith("%%"):
            name = (first[2:].split() or [""])[0]
            if name in PYTHON_CELL_MAGICS:
                for n in range(1, at + 1):
                    self.add(number, n, lines[n - 1])
                self.add(number, at + 1, lines[at], "")
                self.python_block(number, lines[at + 1 :], start=at + 2)
                return
            is_shell = name in SHELL_CELL_MAGICS
            body = [ln for ln in lines[at + 1 :] if ln.strip() and not ln.strip().startswith("#")]
            exports = shell_exports(";".join(body)) if is_shell and body else []
            for n, line in enumerate(lines, 1):
                if exports and n > at + 1 and line.strip() and not line.strip().startswith("#"):
                    for var, _ in shell_exports(line):
                        col = len(line) - len(line.lstrip()) + 1
                        self.problems.append(_shell_finding(self.path, len(self.out) + 1, col, len(line) + 1, var))
                self.add(number, n, line, "")
            return
        self.python_block(number, lines, start=1)

    def python_block(self, number: int, lines: list[str], start: int) -> None:
        text = "\n".join(lines) + "\n"
        if _parses_module(text):
            for n, line in enumerate(lines, start):
                self.add(number, n, line)
            return
        mark = len(self.out)
        mark_problems = len(self.problems)
        converted = []
        continued = False
        for line in lines:
            if continued:
                # `!cmd \` and `%magic \` go on over the next lines: still not Python
                code = ""
            else:
                code = self.python_line(line)
            continued = (continued or code is not None) and line.rstrip().endswith("\\")
            converted.append(line if code is None else code)
            self.add(number, start + len(converted) - 1, line, code)
        error = _syntax_error("\n".join(converted) + "\n")
        if error is not None:
            # a cell that is not Python even after the magics: report it, analyze the rest
            del self.problems[mark_problems:]
            message, line, column = error
            for i in range(mark, len(self.out)):
                self.out[i] = ""
                self.rewritten.discard(i + 1)
            self.problems.append(problem(self.path, message, line=mark + line, column=column))  # (the place names the cell)


def _parses(stmt: str) -> bool:
    return _syntax_error(stmt + "\n") is None


def _parses_module(text: str) -> bool:
    return _syntax_error(text) is None


# CPython's parser, as for .py files (a fifth of libcst's time, a fraction of its memory: a 2 MB
# cell took 4.4 GB in libcst), accepting the top-level `await` IPython runs
_FLAGS = 0x400 | 0x2000  # ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def _syntax_error(text: str) -> Optional[tuple[str, int, int]]:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<cell>", "exec", flags=_FLAGS, dont_inherit=True)
        return None
    except SyntaxError as exc:
        return f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1
    except (RecursionError, MemoryError):
        return "cannot parse: nested too deeply", 1, 1
    except ValueError as exc:
        return f"cannot parse: {exc}", 1, 1


def parse(path: str, data: bytes) -> Union[Notebook, Finding]:
    src = decode(path, data)
    if isinstance(src, Finding):
        return src
    try:
        doc = json.loads(src.text)
    except json.JSONDecodeError as exc:
        return problem(path, f"not a notebook: invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)
    except RecursionError:
        return problem(path, "not a notebook: JSON nested too deeply")
    except ValueError as exc:  # an integer of more than 4,300 digits (CPython's advice after ";" is for programmers)
        return problem(path, f"not a notebook: invalid JSON: {str(exc).split(';')[0]}")
    cells = _cells(doc)
    if isinstance(cells, str):
        return problem(path, cells)
    code = "\n".join(_cell_text(c) for c in cells if c.get("cell_type") == "code")
    big = too_big(path, code.encode("utf-8", "surrogatepass"))  # (before any cell is parsed)
    if big is not None:
        return big
    b = _Builder(path)
    for number, cell in enumerate(cells, 1):
        if cell.get("cell_type") == "code":
            b.cell(number, _cell_text(cell))
    return Notebook(
        path=path,
        source="\n".join(b.out) + "\n",
        original="\n".join(b.orig) + "\n",
        lines=tuple(b.lines),
        rewritten=frozenset(b.rewritten),
        problems=tuple(b.problems),
    )


def read(path: str) -> Union[Notebook, Finding]:
    from cudalint.inputs.source import read_bytes  # (regular files only, and no more than .py files may hold)

    data = read_bytes(path)
    return data if isinstance(data, Finding) else parse(path, data)
