"""Runs inside the traced process: install the hooks, then run the program as `python` would.

Started by the parent as `python <flags> -c <BOOT> <script|module> args...` with the configuration
in the CUDALINT_TRACE environment variable, which is removed before the program starts (the program
sees the environment it would have seen). A script runs in the real `__main__` module as
`python script.py` runs it, a module through runpy's `_run_module_as_main` as `python -m` does, with
`sys.argv` and `sys.path[0]` as python sets them; an uncaught exception is shown
through `sys.excepthook` with the cudalint and runpy frames cut off, and Ctrl-C ends the process
by SIGINT as CPython does.
"""
from __future__ import annotations

import os
import sys

from cudalint.trace.handoff import CONFIG_VAR
from cudalint.trace import children, hooks, process
from cudalint.trace.events import EventWriter
from cudalint.trace.location import _PKG_DIR
from cudalint.trace.plan import load_plan
from cudalint.trace.state import TraceState

START_FAILED = 2


def _trim(tb):  # type: ignore[no-untyped-def]
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if fn.startswith(_PKG_DIR + os.sep) or os.path.basename(fn) == "runpy.py" or fn.startswith("<frozen runpy"):
            tb = tb.tb_next
        else:
            break
    return tb


def _is_zip(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _run_script(target: str) -> None:
    """What `python script.py` does: the code runs in the real `__main__` module (so pickling and
    multiprocessing find it), `__file__` and the code's filename are absolute, `sys.argv[0]` stays
    as typed."""
    import builtins
    import io
    from importlib.machinery import SourceFileLoader

    path = os.path.abspath(target)
    with io.open_code(path) as fh:
        source = fh.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = sys.modules["__main__"]
    namespace = main.__dict__
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __file__=path, __cached__=None, __package__=None,
                     __spec__=None, __loader__=SourceFileLoader("__main__", path), __builtins__=builtins)
    exec(code, namespace)


def install(events_path: str, plan_path: str, *, root: bool, mode: str = "", target: str = "",
            args: tuple = ()) -> EventWriter:
    """Start tracing this process: the first event (`start` for the program, `proc` for a process
    below it), then the hooks. Shared by the program's process and every child (children.py)."""
    writer = EventWriter(events_path)
    plan = load_plan(plan_path)
    state = TraceState(writer)
    env_names = sorted({e["name"] for e in plan["env"]} | {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"})
    env = {n: os.environ.get(n) for n in env_names}
    if root:
        writer.emit("start", mode=mode, target=target, argv=[target, *args], cwd=os.getcwd(), env=env,
                    python=sys.version.split()[0], ppid=os.getppid())
    else:
        writer.emit("proc", argv=list(sys.argv), command=children.describe_command(children._command()),
                    cwd=os.getcwd(), env=env, ppid=os.getppid())

    # hooks first: `-m pkg.mod` imports pkg (and whatever it imports) while looking for the module
    driver_vars = [e["name"] for e in plan["env"] if e["frozen_by"] == "init:driver"]
    process.install_env_hook(state, env_names, driver_vars)
    process.install_fork_hooks(state)
    process.install_exit_hook(state, env_names)
    hooks.install(state, plan)
    if root:
        children.enable(events_path, plan_path, state)
    writer.emit("ready")
    return writer


def main(argv: list[str]) -> None:
    events_path, plan_path = os.environ.pop(CONFIG_VAR).split("\n")
    mode, target, args = argv[0], argv[1], argv[2:]
    writer = install(events_path, plan_path, root=True, mode=mode, target=target, args=tuple(args))

    # `python -P` (safe_path) puts no program directory on sys.path; otherwise -c left '' there
    set_path0 = bool(sys.path) and sys.path[0] == "" and not getattr(sys.flags, "safe_path", False)
    if mode == "module":
        if set_path0:
            sys.path[0] = os.getcwd()
        import importlib.util

        try:
            found = importlib.util.find_spec(target) is not None
        except (ImportError, ValueError) as exc:
            found, why = False, str(exc)
        else:
            why = f"No module named {target}"
        if not found:
            writer.emit("start_failed", error=why)
            print(f"{sys.executable}: {why}", file=sys.stderr)
            sys.exit(START_FAILED)
    elif set_path0:
        if os.path.isdir(target):
            del sys.path[0]  # runpy puts a directory (its __main__.py) on sys.path itself
        else:
            sys.path[0] = os.path.dirname(os.path.realpath(target))

    sys.argv = [target, *args]
    try:
        if mode == "module" or os.path.isdir(target) or not target.endswith((".py", ".pyw")) and _is_zip(target):
            import runpy  # only here: a plain script does not pay for its import
        if mode == "module":
            run_as_main = getattr(runpy, "_run_module_as_main", None)  # what `python -m` calls
            if run_as_main is not None:
                run_as_main(target, alter_argv=True)
            else:  # pragma: no cover - a Python without the private helper
                runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif os.path.isdir(target) or not target.endswith((".py", ".pyw")) and _is_zip(target):
            runpy.run_path(target, run_name="__main__")
        else:
            _run_script(target)
    except SystemExit:
        raise
    except BaseException as exc:
        writer.emit("uncaught", error=type(exc).__name__, message=str(exc)[:500])
        # the default hook prints exc.__traceback__, not its argument: trim the exception's own
        exc.__traceback__ = _trim(exc.__traceback__)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        if isinstance(exc, KeyboardInterrupt):
            # CPython ends a process killed by Ctrl-C with SIGINT so the shell sees it
            import signal

            sys.stdout.flush()
            sys.stderr.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        sys.exit(1)
