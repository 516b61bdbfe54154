"""Read the expectations written inline in fixtures, flake8-bugbear style.

A line ending in `# CUD001` expects that finding on that line; `# CUD001 witness: 6, 7` also fixes
the witness steps (lines in the same file, or `path:line` for multi-module fixtures).

Notebooks (.ipynb) carry the same comments inside their code cells; the finding is expected at that
cell (1-based, every cell counted) and line in the cell, and witness steps are written
`cell:line` (`# CUD001 witness: 3:2, 5:1`) or `path:line` for steps in other files.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

EXPECT_RE = re.compile(r"#\s*(?P<code>CUD\d{3})(?:\s+witness:\s*(?P<witness>[^#]*))?\s*$")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass(frozen=True)
class Expected:
    path: str
    line: int
    code: str
    witness: tuple[tuple[str, int | None, int], ...] | None  # (path, cell, line)
    cell: int | None = None


def _lines(file: Path) -> list[tuple[int | None, int, str]]:
    """(cell, line, text) of every line that can carry an expectation."""
    if file.suffix == ".py":
        return [(None, n, t) for n, t in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)]
    if file.suffix == ".ipynb":
        out = []
        for cell_no, cell in enumerate(json.loads(file.read_text(encoding="utf-8"))["cells"], 1):
            if cell["cell_type"] != "code":
                continue
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            out.extend((cell_no, n, t) for n, t in enumerate(src.splitlines(), 1))
        return out
    return []


def expectations(root: Path, files: list[Path]) -> list[Expected]:
    out = []
    for file in files:
        rel = file.relative_to(root).as_posix() if root.is_dir() else file.name
        for cell, lineno, text in _lines(file):
            m = EXPECT_RE.search(text)
            if not m:
                continue
            witness = None
            if m.group("witness"):
                steps = []
                for item in m.group("witness").split(","):
                    item = item.strip()
                    if ":" in item:
                        where, line = item.rsplit(":", 1)
                        if cell is not None and where.isdigit():
                            steps.append((rel, int(where), int(line)))
                        else:
                            steps.append((where, None, int(line)))
                    else:
                        steps.append((rel, None, int(item)))
                witness = tuple(steps)
            out.append(Expected(rel, lineno, m.group("code"), witness, cell))
    return out


def fixture_cases() -> list[Path]:
    """Every single-file fixture and every multi-module fixture directory."""
    cases = []
    for rule_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for entry in sorted(rule_dir.iterdir()):
            if entry.name.startswith("."):  # (a cache or an editor's folder: no fixture)
                continue
            if entry.is_dir() or entry.suffix in (".py", ".ipynb"):
                cases.append(entry)
    return cases


def case_files(case: Path) -> list[Path]:
    if case.is_dir():
        return sorted(p for p in case.rglob("*") if p.suffix in (".py", ".ipynb"))
    return [case]


def case_id(case: Path) -> str:
    return case.relative_to(FIXTURES).as_posix()
