"""`cudalint --trace`: run a program with the catalogue's hooks and check the static findings
against what really happened. `run` is the one entry point; the modules each do one job:

bootstrap (inside the child) · hooks (import hook, wrappers) · concurrency (llama context) ·
process (env writes, forks, exit) · events (the JSON-lines stream) · location (user frames) ·
nvml (libcuda probe, NVML sampler) · plan (catalogue -> hooks) · correlate (pure) · report · runner.

Importing this package imports nothing else, so the traced child starts quickly.
"""
from __future__ import annotations

TYPE_CHECKING = False  # importing typing here would cost the traced program's start-up


def run_from_cli(argv: list[str]) -> int:
    """`cudalint --trace ...` (argv from `--trace` on): parse the tracer's options, then `run`."""
    from cudalint.trace.cli import run_from_cli as _run_from_cli

    return _run_from_cli(argv)
