"""Turn findings into what a person or a machine reads."""
from __future__ import annotations

import json
from typing import Iterable, TextIO

from cudalint.findings import Finding


def location(f: Finding) -> str:
    if f.cell is not None:
        return f"{f.path}:cell {f.cell}:{f.line}:{f.column}"
    return f"{f.path}:{f.line}:{f.column}"


def text(findings: Iterable[Finding], out: TextIO, files: int) -> None:
    findings = list(findings)
    for f in findings:
        out.write(f"{location(f)}: {f.code} {f.message}\n")
        for step in f.witness:
            where = f"{step.path}:cell {step.cell}:{step.line}" if step.cell is not None else f"{step.path}:{step.line}"
            out.write(f"    {where}: {step.note}\n")
    paths = {f.path for f in findings}
    if findings:
        noun = "finding" if len(findings) == 1 else "findings"
        out.write(f"Found {len(findings)} {noun} in {len(paths)} file{'s' if len(paths) != 1 else ''} ({files} checked).\n")
    else:
        out.write(f"All checks passed ({files} file{'s' if files != 1 else ''} checked).\n")


def as_json(findings: Iterable[Finding], out: TextIO) -> None:
    json.dump([f.to_json() for f in findings], out, indent=2)
    out.write("\n")
