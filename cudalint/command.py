"""The lint command's work once its options are known.

Two parsers make the options: click (cudalint.cli), for every command line, and cudalint.quick_args,
without importing click, for the plain ones a warm run, an editor or a pre-commit hook makes. Both
end here, so what a run does and prints does not depend on which parser read its command line.
"""
from __future__ import annotations

import os
import sys

from cudalint.core.record import record
from cudalint.output.echo import echo

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import NoReturn, Optional

# the choices of the options that take one (click.Choice in cudalint.cli, checked by cudalint.quick_args)
FORMATS = ("text", "json", "sarif", "github")
COLOURS = ("auto", "always", "never")
TARGET_VERSIONS = ("py310", "py311", "py312", "py313", "py314")


class UsageError(Exception):
    """A command line the run cannot honour: `cudalint: <why>` on stderr, exit 2."""


@record
class Options:
    """The lint command's parameters, named as cudalint.cli's click command names them; the
    defaults are click's for an option not given."""

    paths: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    fmt: str = "text"
    no_gitignore: bool = False
    no_cache: bool = False
    jobs: Optional[int] = None
    cache_dir: Optional[str] = None
    statistics: bool = False
    output_file: Optional[str] = None
    fix: bool = False
    diff: bool = False
    add_noqa: bool = False
    baseline: Optional[str] = None
    exit_zero: bool = False
    quiet: bool = False
    silent: bool = False
    color: str = "auto"
    show_source: bool = False
    show_settings: bool = False
    show_files: bool = False
    stdin_filename: Optional[str] = None
    config_file: Optional[str] = None
    target_version: Optional[str] = None
    extend_catalogue: tuple[str, ...] = ()


def main(options: Options, stdin_text: Optional[str] = None) -> NoReturn:
    """Run the command and exit as click's standalone mode would: an interrupt prints `Aborted!`
    (exit 1), a closed pipe exits 1 quietly, a failure of the tool itself says so (exit 2)."""
    try:
        lint(options, stdin_text)
    except SystemExit:
        raise
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)  # (closes the terminal's ^C echo)
        echo("Aborted!", err=True)
        sys.exit(1)
    except BrokenPipeError:
        _quiet_streams()
        sys.exit(1)
    except Exception as exc:
        from cudalint.output.destinations import OutputError

        if isinstance(exc, OutputError):
            echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)
        echo(f"cudalint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
    sys.exit(0)


def _quiet_streams() -> None:
    # the reader went away: the interpreter's last flush must not print a traceback
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(c.strip().upper() for c in value.split(",") if c.strip())
    return tuple(out)


def _per_file_ignores(values: tuple[str, ...]) -> Optional[tuple[tuple[str, tuple[str, ...]], ...]]:
    """`--per-file-ignores 'tests/*:CUD001,CUD002'` (ruff's form), repeatable."""
    from cudalint.inputs.settings import SettingsError, known_codes

    out = []
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern or not codes.strip():
            raise SettingsError(f"--per-file-ignores: expected GLOB:CODES (e.g. 'tests/*:CUD001'), got {value!r}")
        out.append((pattern, known_codes(_codes((codes,)), "--per-file-ignores")))
    return tuple(out) or None


def _fail(message: str) -> NoReturn:
    echo(f"cudalint: {message}", err=True)
    sys.exit(2)


def lint(o: Options, stdin_text: Optional[str] = None) -> NoReturn:
    """`stdin_text`: the file read from stdin (`cudalint -`), which the caller checked and read."""
    from cudalint.inputs.settings import SettingsError, known_codes, resolve

    targets = list(o.paths) or ["."]
    if stdin_text is not None:
        targets = [o.stdin_filename or "-"]
    else:
        missing = [t for t in targets if not os.path.lexists(t)]
        if missing:
            for t in missing:
                echo(f"cudalint: {t}: no such file or directory", err=True)
            sys.exit(2)
    # the command line overrides the file: an option that was given replaces the file's value
    try:
        overrides = {
            "select": _codes(o.select) or None,
            "extend_select": _codes(o.extend_select) or None,
            "ignore": _codes(o.ignore) or None,
            "per_file_ignores": _per_file_ignores(o.per_file_ignores),
            "exclude": tuple(o.exclude) or None,
            "respect_gitignore": False if o.no_gitignore else None,
            "target_version": o.target_version,
            "extend_catalogue": tuple(o.extend_catalogue) or None,
        }
        for option in ("select", "extend_select", "ignore"):
            known_codes(overrides[option] or (), "--" + option.replace("_", "-"))
        config, config_path = resolve(targets, o.config_file, overrides)
    except SettingsError as exc:
        _fail(str(exc))
    from cudalint.engine.cache import Cache, default_cache_dir
    from cudalint.fspath import clean
    from cudalint.core.catalogue_source import CatalogueError, catalogue_digest

    directory = None if o.no_cache or o.fix or o.diff else (clean(o.cache_dir) if o.cache_dir else default_cache_dir())
    if o.show_settings:
        from cudalint.output.rulecli import show_settings as show

        show(config, config_path, directory)
        sys.exit(0)
    if o.show_files:
        from cudalint.named import context

        ctx = context([t for t in targets if not os.path.isdir(t)], [t for t in targets if os.path.isdir(t)], config, o.force_exclude)
        for path in sorted(ctx.reported):
            echo(path)
        sys.exit(0)
    try:
        # the files' bytes name the catalogue: it is loaded only if the cache does not answer the run
        digest = catalogue_digest(config.extend_catalogue)
    except CatalogueError as exc:  # an extend-catalogue file that is missing: a usage error
        _fail(str(exc))
    if o.fix or o.diff:  # a fix is checked against fresh analysis: no cache
        from cudalint.output.destinations import run_fix

        try:
            code = run_fix(targets, config, fmt=o.fmt, diff=o.diff, output_file=o.output_file, statistics=o.statistics)
        except KeyboardInterrupt:  # (every file is the old one or the new one: cudalint.fixes.files.write_atomic)
            sys.exit(130)
        except CatalogueError as exc:
            _fail(str(exc))
        sys.exit(0 if o.exit_zero and code == 1 else code)
    cache = None
    if directory is not None:
        from cudalint.core.cache_files import usable_root

        if usable_root(directory) is None:
            shown = os.path.relpath(directory)
            shown = directory if shown.startswith("..") else shown
            echo(f"cudalint: warning: the cache folder {shown} is a symbolic link or not a folder: not used", err=True)
        else:
            cache = Cache.for_digest(directory, digest)
    from cudalint.named import lint_targets

    texts = {targets[0]: stdin_text} if stdin_text is not None else None
    try:
        run = lint_targets(targets, config, cache=cache, jobs=o.jobs, force_exclude=o.force_exclude, texts=texts)
    except KeyboardInterrupt:
        sys.exit(130)
    except CatalogueError as exc:  # an extend-catalogue file that is wrong: found when it is loaded
        _fail(str(exc))
    result = run.result
    if o.add_noqa:
        from cudalint.engine.suppress import add_noqa as write_noqa

        added, problems = write_noqa(result.findings)
        for problem in problems:
            echo(f"cudalint: {problem}", err=True)
        if not o.silent:
            echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        sys.exit(0)
    if o.baseline:
        from cudalint.output.baseline import BaselineError, load, new_findings

        try:
            known = load(o.baseline)
        except BaselineError as exc:
            _fail(str(exc))
        from cudalint.api import LintResult

        result = LintResult(findings=tuple(new_findings(result.findings, known)), files=result.files)
    fixes = None
    if o.fmt == "json" and not o.statistics and result.findings:
        from cudalint.fixes.fix_cache import cached_fixes

        fixes = cached_fixes(result.findings, run.files, config, texts, cache=cache)
    from cudalint.output.destinations import write_report

    if not (o.silent and o.output_file is None):
        write_report(
            result, fmt=o.fmt, output_file=o.output_file, statistics=o.statistics, color=o.color,
            quiet=o.quiet or o.silent, show_source=o.show_source, fixes=fixes, texts=texts,
        )
    sys.exit(1 if result.findings and not o.exit_zero else 0)
