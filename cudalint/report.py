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


WITNESS_STEPS_SHOWN = 4


def folded_message(f: Finding) -> str:
    """The message with the witness folded in, for one-line outputs (flake8): `... [via a.py:3 -> b.py:4]`.

    The last witness step is the finding's own line, so it is left out; a long path keeps its first
    and last steps around an ellipsis. Steps in the finding's own file show only the line.
    """
    steps = list(f.witness)
    if steps and steps[-1].path == f.path and steps[-1].line == f.line:
        steps.pop()
    if not steps:
        return f.message
    shown = [f"line {s.line}" if s.path == f.path else f"{s.path}:{s.line}" for s in steps]
    if len(shown) > WITNESS_STEPS_SHOWN:
        keep = WITNESS_STEPS_SHOWN // 2
        shown = shown[:keep] + ["..."] + shown[-keep:]
    return f"{f.message} [via {' -> '.join(shown)}]"
