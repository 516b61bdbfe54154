"""Turn findings into what a person or a machine reads: text, JSON, GitHub annotations, statistics.

SARIF lives in `cudalint.output.sarif`. Every reporter writes to a text stream it is given; whether the
stream is a terminal (colour) is decided by the caller, see `use_colour`.
"""
from __future__ import annotations

import os
from collections import Counter

from cudalint.core.findings import Finding
from cudalint.output import json_text

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterable, Optional, TextIO

_RESET = "\x1b[0m"
_STYLES = {"path": "\x1b[1m", "code": "\x1b[1;31m", "dim": "\x1b[2m", "summary": "\x1b[1m"}


def use_colour(stream: TextIO, environ: Optional[dict] = None, mode: str = "auto") -> bool:
    """`--color always|never` decides; `auto`: never with NO_COLOR (https://no-color.org), always with
    FORCE_COLOR (https://force-color.org), else only for a terminal. NO_COLOR wins over FORCE_COLOR."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _paint(value: str, style: str, colour: bool) -> str:
    return f"{_STYLES[style]}{value}{_RESET}" if colour else value


def location(f: Finding) -> str:
    if f.cell is not None:
        return f"{f.path}:cell {f.cell}:{f.line}:{f.column}"
    return f"{f.path}:{f.line}:{f.column}"


def text(
    findings: Iterable[Finding],
    out: TextIO,
    files: int,
    colour: bool = False,
    hints: Optional[dict[tuple[str, int, str], str]] = None,
    quiet: bool = False,
    frames=None,
) -> None:
    """`hints`: (path, line, code) -> a `help:` line printed under that finding (after --fix).
    `quiet`: the findings only, no summary line. A code frame for the finding and
    each witness step (`frames`, a cudalint.output.frames.Frames: --show-source)."""
    findings = list(findings)
    for f in findings:
        out.write(f"{_paint(location(f), 'path', colour)}: {_paint(f.code, 'code', colour)} {f.message}\n")
        if frames is not None:
            out.write(frames.finding(f, colour))
        for step in f.witness:
            where = f"{step.path}:cell {step.cell}:{step.line}" if step.cell is not None else f"{step.path}:{step.line}"
            out.write(_paint(f"    {where}: {step.note}", "dim", colour) + "\n")
            if frames is not None:
                out.write(frames.step(step, colour))
        hint = (hints or {}).get((f.path, f.line, f.code))
        if hint:
            out.write(f"    help: {hint}\n")
    if quiet:
        return
    paths = {f.path for f in findings}
    if findings:
        noun = "finding" if len(findings) == 1 else "findings"
        summary = f"Found {len(findings)} {noun} in {len(paths)} file{'s' if len(paths) != 1 else ''} ({files} checked)."
    else:
        summary = f"All checks passed ({files} file{'s' if files != 1 else ''} checked)."
    out.write(_paint(summary, "summary", colour) + "\n")


# Where the rule docs are read on the web. One place to change when the repository moves. (Here, not
# in cudalint.output.sarif, which every JSON report with findings would import for it, with pathlib.)
REPOSITORY_URL = "https://github.com/cudalint/cudalint"
DOCS_URL = REPOSITORY_URL + "/blob/main/rules/{code}.md"


def doc_url(code: str) -> str:
    return DOCS_URL.format(code=code)


def as_json(findings: Iterable[Finding], out: TextIO, fixes: Optional[dict] = None) -> None:
    """The JSON array whose schema is cudalint/schemas/findings.schema.json (README: JSON output).
    `fixes`: cudalint.fixes.fixinfo's proven fixes by (path, line, column, code); absent: `fix` is null."""
    rows = []
    for f in findings:
        row = f.to_json()
        row["url"] = doc_url(f.code)
        fx = (fixes or {}).get((f.path, f.line, f.column, f.code))
        row["fix"] = fx.to_json() if fx is not None else None
        rows.append(row)
    json_text.dump(rows, out)
    out.write("\n")


# ---------- GitHub Actions workflow commands -------------------------------------------------
# https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions: the message is
# "data" (escape %, CR, LF); property values additionally escape ":" and ",".
def _gh_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(value: str) -> str:
    return _gh_data(value).replace(":", "%3A").replace(",", "%2C")


_GH_LEVEL = {"error": "error", "warning": "warning"}


def github(findings: Iterable[Finding], out: TextIO) -> None:
    """One `::error file=…,line=…,col=…,title=CODE::message` line per finding; the witness follows
    the message on lines of its own (GitHub shows annotation messages multi-line)."""
    for f in findings:
        level = _GH_LEVEL.get(f.severity, "notice")
        if f.cell is not None:
            # the line of the .ipynb file itself (cudalint.inputs.nblines); columns of a cell do not map to it
            from cudalint.inputs.nblines import file_line

            line = file_line(f.path, f.cell, f.line) or 1
            end = file_line(f.path, f.cell, f.end_line) or line
            props = [("file", f.path.replace(os.sep, "/")), ("line", str(line)), ("endLine", str(max(end, line))), ("title", f.code)]
        else:
            props = [
                ("file", f.path.replace(os.sep, "/")),
                ("line", str(f.line)),
                ("col", str(f.column)),
                ("endLine", str(f.end_line)),
                ("endColumn", str(f.end_column)),
                ("title", f.code),
            ]
        message = f"{f.code} {f.message}"
        if f.cell is not None:
            message = f"cell {f.cell}, line {f.line}: {message}"
        for step in f.witness:
            where = f"{step.path}:cell {step.cell}:{step.line}" if step.cell is not None else f"{step.path}:{step.line}"
            message += f"\n    {where}: {step.note}"
        joined = ",".join(f"{k}={_gh_property(v)}" for k, v in props)
        out.write(f"::{level} {joined}::{_gh_data(message)}\n")


# ---------- statistics -----------------------------------------------------------------------
def counts(findings: Iterable[Finding]) -> list[tuple[str, int]]:
    """(code, count), most frequent first, then by code."""
    c = Counter(f.code for f in findings)
    return sorted(c.items(), key=lambda item: (-item[1], item[0]))


def statistics(findings: Iterable[Finding], out: TextIO, colour: bool = False) -> None:
    from cudalint.core.registry import RULES

    rows = counts(findings)
    width = max((len(str(n)) for _, n in rows), default=1)
    for code, n in rows:
        rule = RULES.get(code)
        name = rule.name if rule else ""
        out.write(f"{str(n).rjust(width)}\t{_paint(code, 'code', colour)}\t{name}\n")


def statistics_json(findings: Iterable[Finding], out: TextIO) -> None:
    from cudalint.core.registry import RULES

    rows = [
        {"code": code, "name": RULES[code].name if code in RULES else "", "count": n}
        for code, n in counts(findings)
    ]
    json_text.dump(rows, out)
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
