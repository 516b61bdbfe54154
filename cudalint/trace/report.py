"""The trace report: text for people, JSON for machines."""
from __future__ import annotations

import json
from typing import Any, TextIO

from cudalint.trace.correlate import CONFIRMED, NOT_CHECKED, NOT_REACHED, REFUTED, TraceResult

ORDER = (CONFIRMED, REFUTED, NOT_REACHED, NOT_CHECKED)


def summary(result: TraceResult) -> dict[str, int]:
    counts = {status: 0 for status in ORDER}
    for v in result.verdicts:
        counts[v.status] += 1
    counts["runtime-only"] = len(result.runtime)
    return counts


def to_json(result: TraceResult, command: list[str], status: int | None = None) -> dict[str, Any]:
    p = result.program
    return {
        "program": {
            "command": command,
            "started": p.started,
            "returncode": p.returncode,
            "signal": p.signal,
            "uncaught": p.uncaught,
            "status": p.describe(),
        },
        "evidence": result.basis,
        "static": result.static_note or "ok",
        "findings": [{**v.finding.to_json(), "verdict": v.status, "evidence": v.evidence} for v in result.verdicts],
        "runtime_findings": [
            {"code": r.code, "path": r.path, "line": r.line, "message": r.message, "evidence": r.evidence}
            for r in result.runtime
        ],
        "gpu": None if result.gpu is None else {
            "expected": list(result.gpu.expected) if result.gpu.expected is not None else None,
            "used": list(result.gpu.used),
            "mismatch": result.gpu.mismatch,
            "message": result.gpu.message,
            "notes": list(result.gpu.notes),
        },
        "unhooked": list(result.skipped_hooks),
        "summary": summary(result),
        "exit_status": (1 if result.confirmed else 0) if status is None else status,
    }


def to_sarif(result: TraceResult, cwd: str = ".") -> dict[str, Any]:
    """The linter's SARIF document, each result carrying its verdict and evidence as properties
    (`cudalintVerdict`, `cudalintEvidence`); runtime-only findings are results too."""
    from cudalint.output import sarif
    from cudalint.core.findings import Finding

    findings = [v.finding for v in result.verdicts]
    runtime = [Finding(r.code, r.path, max(r.line, 1), 1, max(r.line, 1), 1, r.message) for r in result.runtime]
    doc = sarif.document([*findings, *runtime], cwd)
    run = doc["runs"][0]
    props = [(v.status, v.evidence) for v in result.verdicts] + [("confirmed, runtime only", r.evidence)
                                                                  for r in result.runtime]
    for res, (status, evidence) in zip(run["results"], props):
        res.setdefault("properties", {}).update(cudalintVerdict=status, cudalintEvidence=evidence)
    run["invocations"] = [{"executionSuccessful": True, "properties": {"program": result.program.describe()}}]
    return doc


def write(result: TraceResult, command: list[str], fmt: str, out: TextIO, status: int | None = None) -> None:
    if fmt == "json":
        out.write(json.dumps(to_json(result, command, status), indent=2) + "\n")
    elif fmt == "sarif":
        out.write(json.dumps(to_sarif(result), indent=2) + "\n")
    else:
        out.write(text(result, command))
    out.flush()


def text(result: TraceResult, command: list[str]) -> str:
    lines = [f"cudalint trace: `{' '.join(command)}` {result.program.describe()}"]
    if result.program.uncaught:
        lines[0] += f" (uncaught {result.program.uncaught})"
    lines.append(f"evidence: {result.basis}")
    if result.static_note:
        lines.append(f"static analysis: {result.static_note}")
    for v in result.verdicts:
        f = v.finding
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.code} [{v.status}] {f.message}")
        lines.append(f"    {v.evidence}")
    if result.runtime:
        lines.append("found at run time only (no static finding at that line):")
        for r in result.runtime:
            lines.append(f"{r.path}:{r.line}: {r.code} [confirmed, runtime only] {r.message}")
            lines.append(f"    {r.evidence}")
    if result.gpu is not None:
        tag = "[mismatch] " if result.gpu.mismatch else ""
        lines.append(f"GPUs: {tag}{result.gpu.message}")
        lines.extend(f"    note: {n}" for n in result.gpu.notes)
    counts = summary(result)
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no findings")
    return "\n".join(lines) + "\n"
