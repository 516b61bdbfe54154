"""The `cudalint` console script: `--trace` goes straight to the tracer, a plain command line to the
lint command (cudalint.quick_args), everything else to click's CLI.

Kept apart from cudalint.cli so that neither a traced program's start-up nor a warm run pays for
importing click.
"""
import sys

from cudalint.safepath import trust_sys_path

# before any other import: `python -m cudalint` put the current folder (the tree to lint) first
trust_sys_path()


def main(argv: "list[str] | None" = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("--trace"):
        from cudalint.trace import run_from_cli

        sys.exit(run_from_cli(args))
    from cudalint.quick_args import parse

    options = parse(args)
    if options is not None:
        from cudalint.command import main as run_command

        run_command(options)
    from cudalint.cli import main as cli_main

    cli_main(args)
