"""The `cudalint` console script: `--trace` goes straight to the tracer, everything else to the CLI.

Kept apart from cudalint.cli so that a traced program's start-up does not pay for importing click.
"""
from __future__ import annotations

import sys
from typing import Optional


def main(argv: Optional[list[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("--trace"):
        from cudalint.trace import run_from_cli

        sys.exit(run_from_cli(args))
    from cudalint.cli import main as cli_main

    cli_main(args)
