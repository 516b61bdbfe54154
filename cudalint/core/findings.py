"""What a check reports: a finding at one place, with the witness path that makes it a bug."""
from __future__ import annotations

from cudalint.core.record import record

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any


@record(order=True, not_compared=("cell",))
class Step:
    """One step of a witness: a place and what happens there."""

    path: str
    line: int
    note: str
    cell: int | None = None  # (not compared) notebooks: 1-based cell; `line` is then within it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "note": self.note}
        if self.cell is not None:
            out["cell"] = self.cell
        return out

    @classmethod
    def from_json(cls, data: object) -> "Step":
        """The step `to_json` gave; ValueError for anything else (cudalint.engine.cache's run results)."""
        if type(data) is not dict or not _keys(data, _STEP, "cell"):
            raise ValueError("not a witness step")
        return cls(data["path"], data["line"], data["note"], data.get("cell"))


@record
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
    cell: int | None = None  # notebooks: 1-based cell; `line` is then within the cell

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

    @classmethod
    def from_json(cls, data: object) -> "Finding":
        """The finding `to_json` gave, every field of the type it declares; ValueError for anything
        else. The cache keeps a run's findings in this form (cudalint.engine.cache.Cache.get_run):
        a run the cache answers whole reads them without the generic decoder (cudalint.engine.serialize)
        and the typing module it needs."""
        if type(data) is not dict or not _keys(data, _FINDING, "cell") or type(data["witness"]) is not list:
            raise ValueError("not a finding")
        witness = tuple(Step.from_json(s) for s in data["witness"])
        return cls(
            data["code"], data["path"], data["line"], data["column"], data["end_line"], data["end_column"],
            data["message"], witness, data["severity"], data.get("cell"),
        )


# the fields `to_json` writes and their types (bool is not an int here), and the optional one
_STEP = {"path": str, "line": int, "note": str}
_FINDING = {
    "code": str, "path": str, "line": int, "column": int, "end_line": int, "end_column": int,
    "message": str, "witness": list, "severity": str,
}


def _keys(data: dict, types: dict, optional: str) -> bool:
    """Whether `data` has exactly the keys of `types` (and maybe `optional`, an int), of those types."""
    if len(data) != len(types) + (optional in data):
        return False
    extra = data.get(optional)
    if optional in data and type(extra) is not int:
        return False
    return all(type(data.get(k)) is want for k, want in types.items())
