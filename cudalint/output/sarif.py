"""SARIF 2.1.0 output, for GitHub code scanning and IDEs.

Rule metadata comes from `cudalint.core.registry` and each rule's doc (`rules/CODE.md`): a new rule
needs nothing here. Paths are relative to the directory cudalint ran in (`%SRCROOT%`); the witness
becomes a `codeFlow` whose thread-flow locations are the witness steps, in order.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote

from cudalint import __version__
from cudalint.core.findings import Finding, Step
from cudalint.output import json_text
from cudalint.output.report import DOCS_URL, REPOSITORY_URL  # noqa: F401 (REPOSITORY_URL: SARIF's tool)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterable, Optional, TextIO

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "info": "note", "note": "note"}


def _first_paragraph(doc: str, section: str = "## What it does") -> str:
    start = doc.find(section + "\n")
    if start < 0:
        return ""
    body = doc[start + len(section) + 1 :]
    para: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            if para:
                break
            continue
        if line.startswith("#"):
            break
        para.append(line.strip())
    return " ".join(para)


def rule_descriptor(code: str) -> dict:
    from cudalint.core.registry import RULES, doc, doc_path

    rule = RULES[code]
    out: dict = {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "helpUri": DOCS_URL.format(code=code),
        "defaultConfiguration": {"level": _LEVELS.get(rule.severity, "warning")},
    }
    if os.path.isfile(doc_path(code)):
        text = doc(code)
        full = _first_paragraph(text)
        if full:
            out["fullDescription"] = {"text": re.sub(r"`([^`]*)`", r"\1", full), "markdown": full}
        out["help"] = {"text": f"See {out['helpUri']}", "markdown": text}
    return out


class _Paths:
    """Relative `%SRCROOT%` URIs for paths under the run's directory, absolute file URIs otherwise."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)

    def base_uri(self) -> str:
        return Path(self.root).as_uri().rstrip("/") + "/"

    def location(self, path: str) -> dict:
        absolute = os.path.abspath(path)
        rel = os.path.relpath(absolute, self.root)
        if rel == os.curdir or rel.startswith(os.pardir):
            return {"uri": Path(absolute).as_uri()}
        return {"uri": quote(os.fsencode(rel.replace(os.sep, "/"))), "uriBaseId": "%SRCROOT%"}  # (a name that is not UTF-8: its own bytes, escaped)


def _region(line: int, column: int, end_line: Optional[int] = None, end_column: Optional[int] = None) -> dict:
    region = {"startLine": max(line, 1), "startColumn": max(column, 1)}
    if end_line is not None and end_line >= line:
        region["endLine"] = end_line
        if end_column is not None and (end_line > line or end_column >= column):
            region["endColumn"] = max(end_column, 1)
    return region


def _physical(paths: _Paths, path: str, region: dict) -> dict:
    return {"physicalLocation": {"artifactLocation": paths.location(path), "region": region}}


def _notebook_line(path: str, cell: int, line: int) -> int:
    """The line of the .ipynb file (cudalint.inputs.nblines) where the cell's line is written."""
    from cudalint.inputs.nblines import file_line

    return file_line(path, cell, line) or 1


def _step(paths: _Paths, step: Step) -> dict:
    if getattr(step, "cell", None) is not None:
        loc = _physical(paths, step.path, {"startLine": _notebook_line(step.path, step.cell, step.line)})
        loc["properties"] = {"cell": step.cell, "cellLine": step.line}
    else:
        loc = _physical(paths, step.path, {"startLine": max(step.line, 1)})
    loc["message"] = {"text": step.note}
    return {"location": loc}


def result(f: Finding, paths: _Paths, rule_index: dict[str, int]) -> dict:
    out: dict = {
        "ruleId": f.code,
        "level": _LEVELS.get(f.severity, "warning"),
        "message": {"text": f.message},
        "locations": [_physical(paths, f.path, _region(f.line, f.column, f.end_line, f.end_column))],
    }
    if f.cell is not None:  # the region is in the .ipynb file; the cell's own position is a property
        start = _notebook_line(f.path, f.cell, f.line)
        out["locations"] = [_physical(paths, f.path, {"startLine": start, "endLine": max(_notebook_line(f.path, f.cell, f.end_line), start)})]
    if f.code in rule_index:
        out["ruleIndex"] = rule_index[f.code]
    if f.witness:
        out["codeFlows"] = [{"threadFlows": [{"locations": [_step(paths, s) for s in f.witness]}]}]
    if f.cell is not None:
        out["properties"] = {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column}
    return out


def document(findings: Iterable[Finding], root: str = ".") -> dict:
    from cudalint.core.registry import RULES

    findings = list(findings)
    codes = sorted(RULES)
    rules = [rule_descriptor(code) for code in codes]
    index = {code: i for i, code in enumerate(codes)}
    paths = _Paths(root)
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cudalint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": REPOSITORY_URL,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": paths.base_uri()}},
                "columnKind": "unicodeCodePoints",
                "results": [result(f, paths, index) for f in findings],
                "invocations": [{"executionSuccessful": True}],
            }
        ],
    }


def sarif(findings: Iterable[Finding], out: TextIO, root: str = ".") -> None:
    json_text.dump(document(findings, root), out)
    out.write("\n")
