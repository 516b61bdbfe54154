"""`run`: trace one program (a script or `-m module`) and report; the library's entry point.
"""
from __future__ import annotations

TYPE_CHECKING = False  # importing typing here would cost the traced program's start-up

if TYPE_CHECKING:
    from typing import Sequence, TextIO


def run(argv: list[str], *, module: bool, fmt: str = "text", out: "TextIO | None" = None,
        output: "str | None" = None, html: "str | None" = None, findings: "list | None" = None,
        findings_file: "str | None" = None, catalogue: "Sequence[str]" = (), events_file: "str | None" = None) -> int:
    """Run `argv` (`[script, *args]`, or `[module, *args]` with module=True) under the tracer and
    write the report to `out` (default: the file `output`, else stderr; the program's stdout stays
    its own). Returns 1 when a finding is confirmed; else the program's failure status (128+N for
    signal N) or 0; 2 when the program could not be started."""
    from cudalint.trace.runner import run as _run

    if findings is None and findings_file:
        from cudalint.trace.options import load_findings

        findings = load_findings(findings_file)
    return _run(argv, module=module, fmt=fmt, out=out, output=output, html=html, findings=findings,
                catalogue=catalogue, events_file=events_file)
