"""What a check reports: a finding at one place, with the witness path that makes it a bug."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Step:
    """One step of a witness: a place and what happens there."""

    path: str
    line: int
    note: str
    cell: int | None = field(default=None, compare=False)  # notebooks: 1-based cell; `line` is then within it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "note": self.note}
        if self.cell is not None:
            out["cell"] = self.cell
        return out


@dataclass(frozen=True)
class Finding:
    code: str
    path: str
    line: int
    column: int  # 1-based, like every column cudalint prints
    end_line: int
    end_column: int
    message: str
    witness: tuple[Step, ...] = ()
    severity: str = "error"
    cell: int | None = field(default=None)  # notebooks: 1-based cell; `line` is then within the cell

    @classmethod
    def at(
        cls,
        code: str,
        path: str,
        loc: tuple[int, int, int, int],
        message: str,
        witness: tuple[Step, ...] = (),
        severity: str = "error",
    ) -> "Finding":
        """A finding spanning an IR location (line, column, end_line, end_column)."""
        line, column, end_line, end_column = loc
        return cls(code, path, line, column, end_line, end_column, message, witness, severity)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "witness": [s.to_json() for s in self.witness],
            "severity": self.severity,
        }
        if self.cell is not None:
            out["cell"] = self.cell
        return out
