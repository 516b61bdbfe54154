"""The `cudalint` command."""
from __future__ import annotations

import sys
from typing import Optional

import click

from cudalint import __version__


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for value in values:
        out.extend(c.strip().upper() for c in value.split(",") if c.strip())
    return tuple(out)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--exclude", multiple=True, help="Glob patterns of files and directories to skip.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True)
@click.option("--explain", metavar="CODE", help="Print the documentation of a rule and exit.")
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
) -> None:
    """Find GPU bugs that raise no error. Lints PATHS (default: the current directory).

    \b
    cudalint --trace script.py [ARGS]...   run a program and confirm or refute each finding
    cudalint --trace -m package.module     the same for `python -m package.module`
    """
    from cudalint.registry import RULES, doc, doc_path

    if explain:
        code = explain.upper()
        if code not in RULES or not doc_path(code).is_file():
            raise click.UsageError(f"unknown rule code {explain!r}; known: {', '.join(sorted(RULES))}")
        click.echo(doc(code), nl=False)
        return
    from cudalint.api import lint_paths
    from cudalint.settings import SettingsError, known_codes, resolve

    targets = list(paths) or ["."]
    # the command line overrides the file: an option that was given replaces the file's value
    overrides = {
        "select": _codes(select) or None,
        "ignore": _codes(ignore) or None,
        "exclude": tuple(exclude) or None,
        "respect_gitignore": False if no_gitignore else None,
        "target_version": target_version,
        "extend_catalogue": tuple(extend_catalogue) or None,
    }
    try:
        for option, codes in (("--select", overrides["select"]), ("--ignore", overrides["ignore"])):
            known_codes(codes or (), option)
        config, _ = resolve(targets, config_file, overrides)
    except SettingsError as exc:
        click.echo(f"cudalint: {exc}", err=True)
        sys.exit(2)
    from cudalint.catalogue import CatalogueError, load_catalogue

    from pathlib import Path

    from cudalint.cache import Cache, default_cache_dir

    directory = None if no_cache or fix or diff else (Path(cache_dir) if cache_dir else default_cache_dir())
    try:
        catalogue = load_catalogue(config.extend_catalogue, cache_dir=directory)
    except CatalogueError as exc:  # an extend-catalogue file that is missing or wrong: a usage error
        click.echo(f"cudalint: {exc}", err=True)
        sys.exit(2)
    if fix or diff:  # a fix is checked against fresh analysis: no cache
        from cudalint.outputs import run_fix

        try:
            sys.exit(run_fix(targets, config, fmt=fmt, diff=diff, output_file=output_file, statistics=statistics))
        except KeyboardInterrupt:  # (every file is the old one or the new one: cudalint.fix.write_atomic)
            sys.exit(130)
    cache = None
    if directory is not None:
        from cudalint.cache_files import usable_root

        if usable_root(directory) is None:
            import os

            shown = os.path.relpath(directory)
            shown = directory if shown.startswith("..") else shown
            click.echo(f"cudalint: warning: the cache folder {shown} is a symbolic link or not a folder: not used", err=True)
        else:
            cache = Cache.open(directory, catalogue)
    try:
        result = lint_paths(targets, config, cache=cache, jobs=jobs)
    except KeyboardInterrupt:
        sys.exit(130)
    from cudalint.outputs import write_report

    write_report(result, fmt=fmt, output_file=output_file, statistics=statistics)
    sys.exit(1 if result.findings else 0)


def main(argv: Optional[list[str]] = None) -> None:
    """The linting CLI; `cudalint.entry.main` (the console script) sends `--trace` to the tracer first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="cudalint", standalone_mode=True)
    except SystemExit:
        raise
    except Exception as exc:  # the tool itself failed: say so, exit 2, never a traceback wall
        click.echo(f"cudalint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
