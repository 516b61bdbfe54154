"""Hand-made static findings for the tracer tests that drive correlation paths the analyzer does
not produce on their programs: a wrong finding that the run refutes, or none at all so that a bug
shows up as runtime-only. They reach the tracer through `--findings FILE` (the JSON that
`cudalint --format json` writes). Every other tracer test runs the real analyzer.
"""
from __future__ import annotations

import json
import os

from cudalint.core.findings import Finding, Step



def finding(code: str, path: str, line: int, message: str, witness: tuple[tuple[int, str], ...] = ()) -> Finding:
    return Finding(code=code, path=path, line=line, column=1, end_line=line, end_column=1, message=message,
                   witness=tuple(Step(path, ln, note) for ln, note in witness))


def write_findings(directory: str, findings: list[Finding]) -> str:
    path = os.path.join(directory, "static-findings.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"findings": [f.to_json() for f in findings]}, fh)
    return path
