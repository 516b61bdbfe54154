"""Is the CUDA driver initialized in this process? Asked inside the traced program, so it must have
no side effect and cost nothing at start-up on machines without a driver (knowledge.md §6).

`dlopen("libcuda.so.1", RTLD_NOLOAD)` finds the driver only if something already loaded it;
`cuDeviceGetCount` returns 3 (CUDA_ERROR_NOT_INITIALIZED) until `cuInit` ran. Neither call
initializes anything. In a child forked from an initialized parent it also says 3, which is why the
fork hook asks in the parent, before the fork.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


CUDA_ERROR_NOT_INITIALIZED = 3


def driver_state(cdll: Callable[..., Any] | None = None) -> str:
    """"not-loaded" | "not-initialized" | "initialized" | "error:<code>" (no side effects)."""
    import ctypes  # imported at start-up already where a driver exists (TraceState)

    load = cdll or ctypes.CDLL
    try:
        lib = load("libcuda.so.1", mode=getattr(os, "RTLD_NOLOAD", 4))
    except OSError:
        return "not-loaded"
    count = ctypes.c_int(0)
    try:
        rc = lib.cuDeviceGetCount(ctypes.byref(count))
    except (AttributeError, OSError):
        return "error:no-symbol"
    if rc == 0:
        return "initialized"
    if rc == CUDA_ERROR_NOT_INITIALIZED:
        return "not-initialized"
    return f"error:{rc}"


def driver_installed() -> bool:
    """Is libcuda.so.1 on this machine, found without loading it? (Used inside the traced program,
    where dlopen-ing the driver would change the process.) The loader's cache, LD_LIBRARY_PATH and
    the usual container mount points."""
    name = "libcuda.so.1"
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"]
    if any(os.path.exists(os.path.join(d, name)) for d in dirs):
        return True
    try:
        with open("/etc/ld.so.cache", "rb") as fh:
            return name.encode() in fh.read()
    except OSError:
        return False
