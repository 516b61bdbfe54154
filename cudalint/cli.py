"""The `cudalint` command (options named and behaving as ruff's `ruff check` where both have one)."""
from __future__ import annotations

import os
import sys
from typing import Optional

import click

from cudalint import __version__
from cudalint.command import COLOURS, FORMATS, TARGET_VERSIONS, Options
from cudalint.command import main as run_command


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--trace", "trace_flag", is_flag=True, help="Run a program and confirm or refute each finding: `cudalint --trace script.py [ARGS]...` or `--trace -m MODULE` (must come first).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of --select / `select`.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--per-file-ignores", "per_file_ignores", multiple=True, metavar="GLOB:CODES", help="Disable codes in matching files, e.g. 'tests/*:CUD001' (repeatable; replaces the file's table).")
@click.option("--exclude", multiple=True, help="Glob patterns of files and directories to skip.")
@click.option("--force-exclude", is_flag=True, help="Apply exclude patterns to files named on the command line too (pre-commit passes file names).")
@click.option("--format", "--output-format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
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
@click.option("--color", "color", type=click.Choice(COLOURS), default="auto", show_default=True, help="Colour in text output; auto honours NO_COLOR and FORCE_COLOR.")
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
    type=click.Choice(TARGET_VERSIONS),
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
        if code not in RULES or not os.path.isfile(doc_path(code)):
            raise click.UsageError(f"unknown rule code {explain!r}; known: {', '.join(sorted(RULES))}")
        click.echo(doc(code), nl=False)
        return
    if list_rules:
        from cudalint.output.rulecli import list_rules as show

        show(fmt)
        return
    stdin_text = None
    if "-" in (list(paths) or ["."]):
        if list(paths) != ["-"]:
            raise click.UsageError("`-` (stdin) cannot be combined with other paths")
        if fix or diff or add_noqa:
            raise click.UsageError("--fix, --diff and --add-noqa do not apply to stdin")
        stdin_text = sys.stdin.read()
        if (stdin_filename or "-").endswith(".ipynb"):
            raise click.UsageError("notebooks cannot be read from stdin")
    elif stdin_filename:
        raise click.UsageError("--stdin-filename needs `-` as the path")
    run_command(
        Options(
            paths=tuple(paths), select=select, extend_select=extend_select, ignore=ignore, per_file_ignores=per_file_ignores,
            exclude=exclude, force_exclude=force_exclude, fmt=fmt, no_gitignore=no_gitignore, no_cache=no_cache, jobs=jobs,
            cache_dir=cache_dir, statistics=statistics, output_file=output_file, fix=fix, diff=diff, add_noqa=add_noqa,
            baseline=baseline, exit_zero=exit_zero, quiet=quiet, silent=silent, color=color, show_source=show_source,
            show_settings=show_settings, show_files=show_files, stdin_filename=stdin_filename, config_file=config_file,
            target_version=target_version, extend_catalogue=tuple(extend_catalogue),
        ),
        stdin_text,
    )


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
