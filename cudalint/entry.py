"""The `cudalint` console script: `--trace` goes straight to the tracer, a plain command line to the
lint command (cudalint.quick_args), everything else to click's CLI.

Kept apart from cudalint.cli so that neither a traced program's start-up nor a warm run pays for
importing click.

A run the cache answers whole is mostly imports, so the modules it goes through keep theirs lean
(tests/test_cache.py lists what they must not import): paths as strings (cudalint.fspath, not
pathlib), records (cudalint.core.record, not dataclasses, which imports inspect), and typing's
names for annotations only, under `TYPE_CHECKING = False`, which type checkers read as
typing.TYPE_CHECKING (typing was 5 ms of a 110 ms warm run on lightning). Together with the
dataclasses a warm run's instructions went from 225 M to 130 M (callgrind).
"""
import os
import sys

from cudalint.safepath import trust_sys_path

# before any other import: `python -m cudalint` put the current folder (the tree to lint) first
trust_sys_path()

# set by run(): the cycle collector is off until the process ends, unless the command is not the lint
_collector_paused = False


def _resume_collector() -> None:
    global _collector_paused
    if _collector_paused:
        import gc

        gc.enable()
        _collector_paused = False


def main(argv: "list[str] | None" = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0].startswith("--trace"):
        _resume_collector()  # (the traced program runs in this process)
        from cudalint.trace import run_from_cli

        sys.exit(run_from_cli(args))
    from cudalint.quick_args import parse

    options = parse(args)
    if options is not None:
        from cudalint.command import main as run_command

        run_command(options)
    _resume_collector()  # (click's commands: the language server lives long)
    from cudalint.cli import main as cli_main

    cli_main(args)


def run() -> None:
    """The process's entry (the console script, `python -m cudalint`): `main()`, then the exit.

    When the run left nothing for the interpreter's exit to do (no `atexit` callback, no other
    thread), the process ends at once after flushing its streams: tearing down the modules and
    freeing what the run made took 6 ms of a 48 ms warm run on lightning and 9 of a touched one.
    A run that started workers (multiprocessing registers a callback), is measured by coverage.py,
    or holds a thread, exits the usual way. `main()` itself always raises SystemExit, for callers
    that go on afterwards (tests, other tools).

    The lint command runs without the cycle collector: what its imports and its start make lives
    until the process ends, so the collector found nothing there and ran 17 times, 2-3 ms of a
    40 ms run on lightning that the cache answers whole (and turned back on at the end, its first
    collection walked all of it again). The analysis pauses it anyway (cudalint.engine.gc_pause);
    what else the command makes (settings, the file list, the report) reference counting frees.
    `--trace` and click's commands (the language server lives long) run with it."""
    global _collector_paused
    import gc

    if gc.isenabled():
        gc.disable()
        _collector_paused = True
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if type(code) is not int or not 0 <= code <= 255 or not _nothing_left_to_do():
            raise
        try:  # (the reports flush what they write; a message written some other way may not have been)
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except BaseException:
            raise exc from None  # (a closed pipe: the interpreter's own exit handles it, as before)
        os._exit(code)


def _nothing_left_to_do() -> bool:
    import atexit

    callbacks = getattr(atexit, "_ncallbacks", None)  # (CPython's; elsewhere: exit the usual way)
    if callbacks is None or callbacks() != 0:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1
