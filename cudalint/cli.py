"""The `cudalint` command (options named and behaving as ruff's `ruff check` where both have one)."""
from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional

import click

from cudalint import __version__


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


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--trace", "trace_flag", is_flag=True, help="Run a program and confirm or refute each finding: `cudalint --trace script.py [ARGS]...` or `--trace -m MODULE` (must come first).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of --select / `select`.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--per-file-ignores", "per_file_ignores", multiple=True, metavar="GLOB:CODES", help="Disable codes in matching files, e.g. 'tests/*:CUD001' (repeatable; replaces the file's table).")
@click.option("--exclude", multiple=True, help="Glob patterns of files and directories to skip.")
@click.option("--force-exclude", is_flag=True, help="Apply exclude patterns to files named on the command line too (pre-commit passes file names).")
@click.option("--format", "--output-format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True)
@click.option("--explain", metavar="CODE", help="Print the documentation of a rule and exit (also `cudalint rule CODE`).")
@click.option("--list-rules", is_flag=True, help="List every rule (code, name, severity, summary) and exit.")
@click.option("--no-gitignore", is_flag=True, help="Also lint files that .gitignore ignores.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the summary cache.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes [default: the usable cores].")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    envvar="CUDALINT_CACHE_DIR",
    help="Where to keep the summary cache [default: ./.cudalint_cache].",
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule code instead of the findings.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file.")
@click.option("--fix", is_flag=True, help="Apply the fixes that are certain, then report what is left.")
@click.option("--diff", is_flag=True, help="Print the fixes --fix would apply as a diff; change no file.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (suppress them all in place).")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Report only findings not in this file (a `--format json` report of an earlier run).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--quiet", "-q", is_flag=True, help="Print the findings, nothing else (no summary line).")
@click.option("--silent", "-s", is_flag=True, help="Print nothing (the exit status still says whether there were findings).")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True, help="Colour in text output; auto honours NO_COLOR and FORCE_COLOR.")
@click.option("--show-source", is_flag=True, help="Show the source line of each finding and of each witness step.")
@click.option("--show-settings", is_flag=True, help="Print the settings the run would use and exit.")
@click.option("--show-files", is_flag=True, help="Print the files the run would report on and exit.")
@click.option("--stdin-filename", type=click.Path(), help="The file the text read from stdin (`cudalint -`) is, judged inside its project.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="Settings file (pyproject.toml's [tool.cudalint], or a cudalint.toml) [default: the nearest pyproject.toml with [tool.cudalint]].",
)
@click.option(
    "--target-version",
    type=click.Choice(["py310", "py311", "py312", "py313", "py314"]),
    help="The oldest Python the project runs on (decides e.g. multiprocessing's default start method).",
)
@click.option("--extend-catalogue", multiple=True, type=click.Path(dir_okay=False), help="An extra catalogue TOML file.")
@click.version_option(__version__, prog_name="cudalint")
def cli(
    paths, select, ignore, exclude, fmt, explain, no_gitignore, no_cache, cache_dir,
    statistics, output_file, fix, diff, config_file=None, target_version=None, extend_catalogue=(), jobs=None,
    trace_flag=False, extend_select=(), per_file_ignores=(), force_exclude=False, list_rules=False,
    add_noqa=False, baseline=None, exit_zero=False, quiet=False, silent=False, color="auto",
    show_source=False, show_settings=False, show_files=False, stdin_filename=None,
) -> None:
    """Find GPU bugs that raise no error. Lints PATHS (default: the current directory); `-` reads
    a file from stdin (name it with --stdin-filename). A named file is judged inside its project.

    \b
    cudalint --trace script.py [ARGS]...   run a program and confirm or refute each finding
    cudalint --trace -m package.module     the same for `python -m package.module`
    cudalint rule CODE | --all             a rule's documentation
    cudalint server                        the language server (LSP over stdio)
    """
    if trace_flag:
        raise click.UsageError("--trace must come first: cudalint --trace script.py [ARGS]...")
    if explain:
        from cudalint.core.registry import RULES, doc, doc_path

        code = explain.upper()
        if code not in RULES or not doc_path(code).is_file():
            raise click.UsageError(f"unknown rule code {explain!r}; known: {', '.join(sorted(RULES))}")
        click.echo(doc(code), nl=False)
        return
    if list_rules:
        from cudalint.output.rulecli import list_rules as show

        show(fmt)
        return
    from cudalint.inputs.settings import SettingsError, known_codes, resolve

    targets = list(paths) or ["."]
    stdin_text = None
    if "-" in targets:
        if targets != ["-"]:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        if fix or diff or add_noqa:
            raise click.UsageError("--fix, --diff and --add-noqa do not apply to stdin")
        stdin_text = sys.stdin.read()
        targets = [stdin_filename or "-"]
        if targets[0].endswith(".ipynb"):
            raise click.UsageError("notebooks cannot be read from stdin")
    elif stdin_filename:
        raise click.UsageError("--stdin-filename needs `-` as the path")
    else:
        missing = [t for t in targets if not os.path.lexists(t)]
        if missing:
            for t in missing:
                click.echo(f"cudalint: {t}: no such file or directory", err=True)
            sys.exit(2)
    # the command line overrides the file: an option that was given replaces the file's value
    try:
        overrides = {
            "select": _codes(select) or None,
            "extend_select": _codes(extend_select) or None,
            "ignore": _codes(ignore) or None,
            "per_file_ignores": _per_file_ignores(per_file_ignores),
            "exclude": tuple(exclude) or None,
            "respect_gitignore": False if no_gitignore else None,
            "target_version": target_version,
            "extend_catalogue": tuple(extend_catalogue) or None,
        }
        for option in ("select", "extend_select", "ignore"):
            known_codes(overrides[option] or (), "--" + option.replace("_", "-"))
        config, config_path = resolve(targets, config_file, overrides)
    except SettingsError as exc:
        click.echo(f"cudalint: {exc}", err=True)
        sys.exit(2)
    from pathlib import Path

    from cudalint.engine.cache import Cache, default_cache_dir
    from cudalint.core.catalogue_source import CatalogueError, catalogue_digest

    directory = None if no_cache or fix or diff else (Path(cache_dir) if cache_dir else default_cache_dir())
    if show_settings:
        from cudalint.output.rulecli import show_settings as show

        show(config, config_path, directory)
        return
    if show_files:
        from cudalint.named import context

        ctx = context([t for t in targets if not os.path.isdir(t)], [t for t in targets if os.path.isdir(t)], config, force_exclude)
        for path in sorted(ctx.reported):
            click.echo(path)
        return
    try:
        # the files' bytes name the catalogue: it is loaded only if the cache does not answer the run
        digest = catalogue_digest(config.extend_catalogue)
    except CatalogueError as exc:  # an extend-catalogue file that is missing: a usage error
        _catalogue_error(exc)
    if fix or diff:  # a fix is checked against fresh analysis: no cache
        from cudalint.output.destinations import run_fix

        try:
            code = run_fix(targets, config, fmt=fmt, diff=diff, output_file=output_file, statistics=statistics)
        except KeyboardInterrupt:  # (every file is the old one or the new one: cudalint.fixes.files.write_atomic)
            sys.exit(130)
        except CatalogueError as exc:
            _catalogue_error(exc)
        sys.exit(0 if exit_zero and code == 1 else code)
    cache = None
    if directory is not None:
        from cudalint.core.cache_files import usable_root

        if usable_root(directory) is None:
            shown = os.path.relpath(directory)
            shown = directory if shown.startswith("..") else shown
            click.echo(f"cudalint: warning: the cache folder {shown} is a symbolic link or not a folder: not used", err=True)
        else:
            cache = Cache.for_digest(directory, digest)
    from cudalint.named import lint_targets

    texts = {targets[0]: stdin_text} if stdin_text is not None else None
    try:
        run = lint_targets(targets, config, cache=cache, jobs=jobs, force_exclude=force_exclude, texts=texts)
    except KeyboardInterrupt:
        sys.exit(130)
    except CatalogueError as exc:  # an extend-catalogue file that is wrong: found when it is loaded
        _catalogue_error(exc)
    result = run.result
    if add_noqa:
        from cudalint.engine.suppress import add_noqa as write_noqa

        added, problems = write_noqa(result.findings)
        for problem in problems:
            click.echo(f"cudalint: {problem}", err=True)
        if not silent:
            click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
        sys.exit(0)
    if baseline:
        from cudalint.output.baseline import BaselineError, load, new_findings

        try:
            known = load(baseline)
        except BaselineError as exc:
            click.echo(f"cudalint: {exc}", err=True)
            sys.exit(2)
        from cudalint.api import LintResult

        result = LintResult(findings=tuple(new_findings(result.findings, known)), files=result.files)
    fixes = None
    if fmt == "json" and not statistics and result.findings:
        from cudalint.fixes.fix_cache import cached_fixes

        fixes = cached_fixes(result.findings, run.files, config, texts, cache=cache)
    from cudalint.output.destinations import write_report

    if not (silent and output_file is None):
        write_report(
            result, fmt=fmt, output_file=output_file, statistics=statistics, color=color,
            quiet=quiet or silent, show_source=show_source, fixes=fixes, texts=texts,
        )
    sys.exit(1 if result.findings and not exit_zero else 0)


def _catalogue_error(exc: Exception) -> "NoReturn":
    click.echo(f"cudalint: {exc}", err=True)
    sys.exit(2)


def main(argv: Optional[list[str]] = None) -> None:
    """The linting CLI; `cudalint.entry.main` (the console script) sends `--trace` to the tracer first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "rule":
            from cudalint.output.rulecli import rule

            rule.main(args=argv[1:], prog_name="cudalint rule", standalone_mode=True)
        elif argv and argv[0] == "server":
            from cudalint.server.cli import server

            server.main(args=argv[1:], prog_name="cudalint server", standalone_mode=True)
        else:
            cli.main(args=argv, prog_name="cudalint", standalone_mode=True)
    except SystemExit:
        raise
    except Exception as exc:  # the tool itself failed: say so, exit 2, never a traceback wall
        click.echo(f"cudalint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
