"""Static findings for the tracer tests.

STATIC-STUB: the analyzer (`cudalint.api.lint_paths`) is being written in parallel. Until it is
merged, these tests hand the tracer hand-made findings through `--findings FILE` (the JSON that
`cudalint --format json` writes). When the analyzer lands, set USE_STUB_FINDINGS = False (or delete
the stubs) so the tests run the real analyzer on the same programs and assert the same verdicts.
"""
from __future__ import annotations

import json
import os

from cudalint.findings import Finding, Step

USE_STUB_FINDINGS = True  # STATIC-STUB: switch to False once cudalint.api is merged


def finding(code: str, path: str, line: int, message: str, witness: tuple[tuple[int, str], ...] = ()) -> Finding:
    return Finding(code=code, path=path, line=line, column=1, end_line=line, end_column=1, message=message,
                   witness=tuple(Step(path, ln, note) for ln, note in witness))


def write_findings(directory: str, findings: list[Finding]) -> str:
    path = os.path.join(directory, "static-findings.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"findings": [f.to_json() for f in findings]}, fh)
    return path
