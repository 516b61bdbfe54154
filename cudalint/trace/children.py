"""Every Python process below the traced program is traced too, into the same events file.

How: the C-level environment of each traced process holds `CUDALINT_TRACE_CHILD` (events file,
plan, where cudalint lives) and PYTHONPATH starts with `boot/`, whose `sitecustomize` starts the
hooks in the new interpreter (spawn and forkserver children of multiprocessing, `subprocess` of
python, torchrun's workers, ProcessPoolExecutor's). The program's own view (`os.environ`) does not
show them: the variables stay in the C environment only, so `env=None` children inherit them, and
a child given an explicit `env` (`os.environ.copy()` plus changes, as torchrun does) gets them
added to a copy by the `subprocess.Popen` wrapper here. Before each start the C environment is put
right again (the program may have rewritten PYTHONPATH). A child's events carry its pid and its
parent's; the parent records a `spawn` event with the child's pid at the user's line that started it.

Not traced: interpreters started with `-I`, `-E` or `-S` (they ignore PYTHONPATH or skip site),
`os.execve`/`os.posix_spawn` with an environment of the program's own making.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from cudalint.trace.state import TraceState

CHILD_VAR = "CUDALINT_TRACE_CHILD"
PATH_VAR = "CUDALINT_TRACE_PYTHONPATH"  # the PYTHONPATH the program set: "=value", or "" for unset
BOOT_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "boot")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

# our own references, taken before the program runs: a program that replaces os.putenv must not
# change what the tracer writes (nor see the tracer's writes)
_putenv = os.putenv
_environ = os.environ
_config: list[str] = []  # [CHILD_VAR's value] once tracing is on in this process


def _child_env(env: Any) -> Any:
    """A copy of a program-made `env` with the tracer's variables added (the program's dict is
    left as it was)."""
    if not _config or any(not isinstance(k, str) for k in env):
        return env
    out = dict(env)
    path = out.get("PYTHONPATH")
    out[CHILD_VAR] = _config[0]
    out[PATH_VAR] = "" if path is None else "=" + path
    out["PYTHONPATH"] = BOOT_DIR + (os.pathsep + path if path else "")
    return out


def refresh(state: TraceState | None = None) -> None:
    """Put the tracer's variables into the C environment, from the program's current PYTHONPATH."""
    if not _config:
        return
    path = _environ.get("PYTHONPATH")
    if state is not None:
        state.quiet = True  # these writes are ours, not evidence
    try:
        _putenv(CHILD_VAR, _config[0])
        _putenv(PATH_VAR, "" if path is None else "=" + path)
        _putenv("PYTHONPATH", BOOT_DIR + (os.pathsep + path if path else ""))
    finally:
        if state is not None:
            state.quiet = False


def _hide() -> None:
    """The program's `os.environ` shows what it would show untraced."""
    data, key = _environ._data, _environ.encodekey  # type: ignore[attr-defined]
    path = data.pop(key(PATH_VAR), None)
    data.pop(key(CHILD_VAR), None)
    data.pop(key("CUDALINT_TRACE"), None)
    if path is not None:
        path = _environ.decodevalue(path)  # type: ignore[attr-defined]
        if path.startswith("="):
            data[key("PYTHONPATH")] = _environ.encodevalue(path[1:])  # type: ignore[attr-defined]
        else:
            data.pop(key("PYTHONPATH"), None)


def enable(events_path: str, plan_path: str, state: TraceState) -> None:
    """In the root process: children of this process will be traced."""
    _config[:] = [f"{events_path}\n{plan_path}\n{_ROOT}"]
    refresh(state)


def _command() -> list[str]:
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            return [os.fsdecode(a) for a in fh.read().split(b"\0")[:-1]][:12]
    except OSError:
        return []


def describe_command(argv: list[str]) -> list[str]:
    """What started a process, short: `-c` code of multiprocessing named as such."""
    out = []
    for a in argv:
        if "multiprocessing.spawn import spawn_main" in a:
            return out + ["<multiprocessing spawn>"]
        if "multiprocessing.forkserver import main" in a:
            return out + ["<multiprocessing forkserver>"]
        out.append(a if len(a) <= 80 else a[:77] + "...")
    return out


# -- the hooks that start children ----------------------------------------------------------------
def popen_handler(state: TraceState) -> Callable[[Any, str, Any], None]:
    """`subprocess.Popen.__init__`: explicit environments get the tracer's variables (on a copy)."""
    from cudalint.trace.location import sites
    from cudalint.trace.wrap import wraps

    def handler(owner: Any, attr: str, init: Any) -> None:
        @wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                if len(args) > 10:  # env is Popen's 11th parameter (3.10 to 3.14)
                    args = (*args[:10], _child_env(args[10]) if args[10] is not None else None, *args[11:])
                    explicit = args[10] is not None
                else:
                    explicit = kwargs.get("env") is not None
                    if explicit:
                        kwargs["env"] = _child_env(kwargs["env"])
                if not explicit:
                    refresh(state)
            except Exception:
                pass
            init(self, *args, **kwargs)
            _spawned(state, sites, getattr(self, "pid", None), "subprocess", args[0] if args else kwargs.get("args"))

        setattr(owner, attr, __init__)

    return handler


def spawnv_handler(state: TraceState) -> Callable[[Any, str, Any], None]:
    """`multiprocessing.util.spawnv_passfds`: spawn children and the forkserver inherit the C
    environment, so it is put right first."""
    from cudalint.trace.location import sites
    from cudalint.trace.wrap import wraps

    def handler(owner: Any, attr: str, fn: Any) -> None:
        @wraps(fn)
        def spawnv_passfds(path: Any, args: Any, passfds: Any) -> Any:
            try:
                refresh(state)
            except Exception:
                pass
            pid = fn(path, args, passfds)
            _spawned(state, sites, pid, "multiprocessing", args)
            return pid

        setattr(owner, attr, spawnv_passfds)

    return handler


def _spawned(state: TraceState, sites: Any, pid: Any, via: str, argv: Any) -> None:
    try:
        user, caller = sites(0)
        if isinstance(argv, (str, bytes)):
            cmd = [os.fsdecode(argv)[:80]]
        else:
            cmd = describe_command([os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in list(argv or ())[:12]])
        state.emit("spawn", child=pid, via=via, command=cmd, site=user, caller=caller)
    except Exception:
        pass
