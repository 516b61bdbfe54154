"""Where a report goes (stdout or --output-file, with colour only for a terminal) and the --fix/--diff run."""
from __future__ import annotations

import io
import sys

from cudalint.output import report
from cudalint.output.echo import echo
from cudalint.inputs.config import Config

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional, Sequence


class OutputError(Exception):
    """The report cannot be written: `Error: <why>` on stderr, exit 2 (cudalint.command.main)."""

    exit_code = 2


def render(findings, files: int, fmt: str, statistics: bool, colour: bool, hints=None, quiet: bool = False, frames=None, fixes=None) -> str:
    buf = io.StringIO()
    if statistics:
        if fmt == "json":
            report.statistics_json(findings, buf)
        else:
            report.statistics(findings, buf, colour=colour)
    elif fmt == "json":
        report.as_json(findings, buf, fixes=fixes)
    elif fmt == "sarif":
        from cudalint.output.sarif import sarif

        sarif(findings, buf)
    elif fmt == "github":
        report.github(findings, buf)
    else:
        report.text(findings, buf, files, colour=colour, hints=hints, quiet=quiet, frames=frames)
    return buf.getvalue()


def emit(content: str, output_file: Optional[str], colour: Optional[bool] = None) -> None:
    if output_file is None:
        echo(content, nl=False, colour=colour)  # (style codes stripped off a pipe unless told)
        return
    try:
        with open(output_file, "w", encoding="utf-8", newline="", errors="surrogateescape") as fh:
            fh.write(content)
    except OSError as exc:
        raise OutputError(f"cannot write the report to {output_file}: {exc.strerror or exc}") from exc


def write_report(
    result,
    fmt: str = "text",
    output_file: Optional[str] = None,
    statistics: bool = False,
    color: str = "auto",
    quiet: bool = False,
    show_source: bool = False,
    fixes=None,
    texts=None,
) -> None:
    """`color`: --color (auto: a terminal, NO_COLOR and FORCE_COLOR decide; a file is never coloured)."""
    colour = output_file is None and report.use_colour(sys.stdout, mode=color)
    frames = None
    if show_source:
        from cudalint.output.frames import Frames

        frames = Frames(texts)
    emit(render(result.findings, result.files, fmt, statistics, colour, quiet=quiet, frames=frames, fixes=fixes), output_file, colour)


def run_fix(
    paths: Sequence[str],
    config: Config,
    fmt: str = "text",
    diff: bool = False,
    output_file: Optional[str] = None,
    statistics: bool = False,
) -> int:
    """`--diff`: print the diff, exit 1 when there is one. `--fix`: write, then report what is left."""
    from cudalint.fixes.apply import fix_paths

    outcome = fix_paths(paths, config, write=not diff)
    for problem in outcome.problems:
        echo(f"cudalint: {problem}", err=True)
    if diff:
        emit(outcome.diff, output_file)
        return 1 if outcome.diff else 0
    remaining = outcome.remaining
    colour = output_file is None and report.use_colour(sys.stdout)
    emit(render(remaining.findings, remaining.files, fmt, statistics, colour, outcome.hints), output_file)
    if outcome.fixed:
        noun = "finding" if outcome.fixed == 1 else "findings"
        echo(f"Fixed {outcome.fixed} {noun} in {len(outcome.changed)} file{'s' if len(outcome.changed) != 1 else ''}.", err=True)
    return 1 if remaining.findings else 0
