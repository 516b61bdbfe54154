"""Environment writes (audit events) and forks (`os.register_at_fork`) of the traced process.

`os.environ[k] = v`, `setdefault`, `update`, `os.putenv` all raise the `os.putenv` audit event, and
`del`/`pop`/`os.unsetenv` raise `os.unsetenv` (knowledge.md §8). A write of CUDA_VISIBLE_DEVICES keeps
the value it replaces (`os.environ` is updated after the event), and `subprocess.Popen`'s audit event
gives the CUDA_VISIBLE_DEVICES a child is started with next to this process's own (CUD010). The hook
does one set lookup for the many other audit events. Values are recorded only for the catalogue's variables and `CUDA_*`: other
variables may hold secrets, so only their names are kept.
"""
from __future__ import annotations

import atexit
import os
import sys

from cudalint.trace import concurrency, probe
from cudalint.trace.location import sites
from cudalint.trace.state import TraceState

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any, Iterable

_WANTED = frozenset({"os.putenv", "os.unsetenv", "subprocess.Popen"})
_CVD = "CUDA_VISIBLE_DEVICES"


def _text(value: Any) -> str:
    return os.fsdecode(value) if isinstance(value, (bytes, bytearray)) else str(value)


def install_env_hook(state: TraceState, watched: Iterable[str], driver_vars: Iterable[str] = ()) -> None:
    keep_value = frozenset(watched)
    probe_on = frozenset(driver_vars)  # variables the driver reads at cuInit: ask the driver itself

    def hook(event: str, args: tuple) -> None:
        if event not in _WANTED or state.quiet:
            return
        try:
            if event == "subprocess.Popen":
                _spawn(state, args)
                return
            key = _text(args[0])
            user, caller = sites(0, environ=True)
            fields: dict[str, Any] = {"key": key, "site": user, "caller": caller}
            if event == "os.putenv":
                fields["op"] = "set"
                if key in keep_value or key.startswith("CUDA_"):
                    fields["value"] = _text(args[1])
                if key == _CVD:
                    fields["old"] = os.environ.get(_CVD)
            else:
                fields["op"] = "unset"
            if key in probe_on and state.driver_present:
                # where a driver exists its own answer beats call order: an API the catalogue
                # calls initializing may not have run cuInit (PYTORCH_NVML_BASED_CUDA_CHECK=1),
                # or a call the catalogue does not know may have
                fields["driver"] = probe.driver_state()
            state.emit("env", **fields)
        except Exception:
            pass  # an audit hook that raises would make the user's os.environ write fail

    sys.addaudithook(hook)


def _spawn(state: TraceState, args: tuple) -> None:
    """subprocess.Popen(executable, args, cwd, env): the child's CUDA_VISIBLE_DEVICES when env= gives one."""
    env = args[3] if len(args) > 3 else None
    if not env:
        return
    value = env.get(_CVD, env.get(_CVD.encode(), None)) if hasattr(env, "get") else None
    if value is None:
        return
    user, caller = sites(0)
    state.emit("spawn_env", site=user, caller=caller, value=_text(value), own=os.environ.get(_CVD))


def install_fork_hooks(state: TraceState) -> None:
    def before() -> None:
        try:
            initialized, how = state.cuda_initialized()
            user, caller = sites(0)
            first = state.first_init
            state.emit(
                "fork", site=user, caller=caller, cuda_initialized=initialized, evidence=how,
                first_init={"call": first["call"], "site": first["site"]} if first else None,
            )
        except Exception:
            pass

    def child() -> None:
        try:
            state.after_fork_in_child()
            concurrency.after_fork_in_child()
            state.emit("child", ppid=os.getppid())
        except Exception:
            pass

    os.register_at_fork(before=before, after_in_child=child)


def install_exit_hook(state: TraceState, env_names: list[str]) -> None:
    pid = os.getpid()

    def at_exit() -> None:
        if os.getpid() != pid:
            return  # a forked child that exits normally: its parent's summary is the one that counts
        try:
            initialized, how = state.cuda_initialized()
            state.emit("exit", env={n: os.environ.get(n) for n in env_names},
                       cuda_initialized=initialized, evidence=how)
            if initialized and state.driver_present:
                # the last look from inside: the parent's sampler polls, and a short program can
                # end between two polls. NVML does not initialize CUDA (knowledge.md §5).
                from cudalint.trace import nvml

                backend, _ = nvml.open_backend()
                if backend is not None:
                    state.emit("nvml", source="exit", gpus={str(k): v for k, v in nvml.sample(backend, {pid}).items()})
        except Exception:
            pass

    atexit.register(at_exit)
