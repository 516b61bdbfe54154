"""`cudalint --trace`: run a program with the catalogue's hooks and check the static findings
against what really happened. `run` is the one entry point; the modules each do one job:

bootstrap (inside the child) · hooks (import hook, wrappers) · concurrency (llama context) ·
process (env writes, forks, exit) · events (the JSON-lines stream) · location (user frames) ·
nvml (libcuda probe, NVML sampler) · plan (catalogue -> hooks) · correlate (pure) · report · runner.

Importing this package imports nothing else, so the traced child starts quickly.
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # importing typing here would cost the traced program's start-up
if TYPE_CHECKING:
    from typing import Sequence, TextIO


# the child's configuration travels in this variable; the bootstrap removes it before the program runs
CONFIG_VAR = "CUDALINT_TRACE"
# the child's `-c` program: import the bootstrap from where this cudalint lives, without leaving
# that directory on the program's sys.path
BOOT = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from cudalint.trace import bootstrap as _b; "
    "del sys.path[0]; _b.main(sys.argv[1:])"
)


def run(argv: list[str], *, module: bool, fmt: str = "text", out: "TextIO | None" = None,
        output: "str | None" = None, html: "str | None" = None, findings: "list | None" = None,
        findings_file: "str | None" = None, catalogue: "Sequence[str]" = (), events_file: "str | None" = None) -> int:
    """Run `argv` (`[script, *args]`, or `[module, *args]` with module=True) under the tracer and
    write the report to `out` (default: the file `output`, else stderr; the program's stdout stays
    its own). Returns 1 when a finding is confirmed; else the program's failure status (128+N for
    signal N) or 0; 2 when the program could not be started."""
    from cudalint.trace.runner import run as _run

    if findings is None and findings_file:
        from cudalint.trace.options import load_findings

        findings = load_findings(findings_file)
    return _run(argv, module=module, fmt=fmt, out=out, output=output, html=html, findings=findings,
                catalogue=catalogue, events_file=events_file)


def run_from_cli(argv: list[str]) -> int:
    """`cudalint --trace ...` (argv from `--trace` on): parse the tracer's options, then `run`."""
    from cudalint.trace.cli import run_from_cli as _run_from_cli

    return _run_from_cli(argv)
