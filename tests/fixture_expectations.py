"""Read the expectations written inline in fixtures, flake8-bugbear style.

A line ending in `# CUD001` expects that finding on that line; `# CUD001 witness: 6, 7` also fixes
the witness steps (lines in the same file, or `path:line` for multi-module fixtures).
"""
from __future__ import annotations

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
    witness: tuple[tuple[str, int], ...] | None


def expectations(root: Path, files: list[Path]) -> list[Expected]:
    out = []
    for file in files:
        rel = file.relative_to(root).as_posix() if root.is_dir() else file.name
        lines = file.read_text(encoding="utf-8").splitlines() if file.suffix == ".py" else []
        for lineno, text in enumerate(lines, 1):
            m = EXPECT_RE.search(text)
            if not m:
                continue
            witness = None
            if m.group("witness"):
                steps = []
                for item in m.group("witness").split(","):
                    item = item.strip()
                    if ":" in item:
                        path, line = item.rsplit(":", 1)
                        steps.append((path, int(line)))
                    else:
                        steps.append((rel, int(item)))
                witness = tuple(steps)
            out.append(Expected(rel, lineno, m.group("code"), witness))
    return out


def fixture_cases() -> list[Path]:
    """Every single-file fixture and every multi-module fixture directory."""
    cases = []
    for rule_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for entry in sorted(rule_dir.iterdir()):
            if entry.is_dir() or entry.suffix in (".py", ".ipynb"):
                cases.append(entry)
    return cases


def case_files(case: Path) -> list[Path]:
    if case.is_dir():
        return sorted(p for p in case.rglob("*") if p.suffix in (".py", ".ipynb"))
    return [case]


def case_id(case: Path) -> str:
    return case.relative_to(FIXTURES).as_posix()
