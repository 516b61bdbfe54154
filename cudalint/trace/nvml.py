"""The driver and NVML boundary, kept thin: everything here talks to libcuda/NVML or is a pure
helper on what they returned. This is the one place the tracer touches NVIDIA code, and the one
place tests use a double: they replace `NvmlBackend` (`tests/test_trace_nvml.py`'s FakeNvml) and
the probe's `cdll`, since there is no GPU on the test machines; `scripts/gpu-check` exercises
every feature here for real on a GPU machine and prints a pass/fail table.

* `driver_state()` (in `probe.py`, so the traced program imports nothing more) runs inside the
  traced process: side-effect free `RTLD_NOLOAD` + `cuDeviceGetCount` (3 = not initialized).
* `Sampler` runs in the cudalint parent, not in the program: it asks NVML which physical GPUs hold
  a compute context of the traced process (or its children) and with how much memory, so the
  program gets no extra thread and a crash cannot lose the samples already written.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from cudalint.trace.probe import CUDA_ERROR_NOT_INITIALIZED, driver_installed, driver_state

__all__ = ["CUDA_ERROR_NOT_INITIALIZED", "Gpu", "NvmlBackend", "PynvmlBackend", "Sampler", "describe",
           "descendants", "driver_installed", "driver_present", "driver_state", "expected_gpus",
           "open_backend", "sample"]


def driver_present() -> bool:
    """Is there an NVIDIA driver on this machine? (Called in the parent; loading is not initializing.)"""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class Gpu:
    index: int          # NVML index: physical, ignores CUDA_VISIBLE_DEVICES
    uuid: str
    pci_bus_id: str
    name: str = ""


class NvmlBackend(Protocol):
    def devices(self) -> list[Gpu]: ...
    def processes(self, index: int) -> list[tuple[int, int | None]]: ...  # (pid, used bytes)


class PynvmlBackend:
    """nvidia-ml-py (module `pynvml`)."""

    def __init__(self, pynvml: Any) -> None:
        self.nv = pynvml
        self._handles: dict[int, Any] = {}

    def devices(self) -> list[Gpu]:
        nv = self.nv
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = self._handles.setdefault(i, nv.nvmlDeviceGetHandleByIndex(i))
            out.append(Gpu(i, _s(nv.nvmlDeviceGetUUID(h)), _s(nv.nvmlDeviceGetPciInfo(h).busId), _s(nv.nvmlDeviceGetName(h))))
        return out

    def processes(self, index: int) -> list[tuple[int, int | None]]:
        nv = self.nv
        h = self._handles.setdefault(index, nv.nvmlDeviceGetHandleByIndex(index))
        procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
        return [(p.pid, p.usedGpuMemory) for p in procs]


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def open_backend() -> tuple[NvmlBackend | None, str]:
    """(backend, why not): None when nvidia-ml-py is missing or NVML cannot start."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
        backend = PynvmlBackend(pynvml)
        backend.devices()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"NVML unavailable: {exc}"
    return backend, ""


def descendants(root: int, proc: str = "/proc") -> set[int]:
    """root and every process below it (forked workers hold their own contexts)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return {root}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat", "rb") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


def sample(backend: NvmlBackend, pids: set[int]) -> dict[int, int]:
    """NVML index -> bytes used by these pids (0 when NVML does not say)."""
    used: dict[int, int] = {}
    for gpu in backend.devices():
        for pid, mem in backend.processes(gpu.index):
            if pid in pids:
                used[gpu.index] = used.get(gpu.index, 0) + (mem or 0)
    return used


class Sampler:
    """Polls NVML for the traced process tree; emits an `nvml` event whenever the GPUs it holds or
    their memory change (the timeline's memory curve per physical GPU), and `nvml_summary` (GPUs
    ever used, peak memory, the device table) on stop()."""

    def __init__(self, backend: NvmlBackend, root_pid: int, emit: Callable[..., None],
                 interval: float = 0.25, pids: Callable[[int], set[int]] = descendants) -> None:
        self.backend = backend
        self.root = root_pid
        self.emit = emit
        self.interval = interval
        self.pids = pids
        self.peak: dict[int, int] = {}
        self.last: tuple[tuple[int, int], ...] = ()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cudalint-nvml", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def tick(self) -> None:
        try:
            used = sample(self.backend, self.pids(self.root))
        except Exception as exc:
            self.emit("nvml_error", error=str(exc))
            return
        for idx, mem in used.items():
            self.peak[idx] = max(self.peak.get(idx, 0), mem)
        now = tuple(sorted(used.items()))
        if now != self.last:
            self.last = now
            self.emit("nvml", gpus={str(k): v for k, v in sorted(used.items())})

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self.tick()  # the last look: a process that is still exiting may still be listed
        devices = []
        try:
            devices = [g.__dict__ for g in self.backend.devices()]
        except Exception:
            pass
        self.emit("nvml_summary", used={str(k): v for k, v in sorted(self.peak.items())}, devices=devices)


# -- what CUDA_VISIBLE_DEVICES selects ----------------------------------------------------------
def expected_gpus(cvd: str | None, devices: list[Gpu], order: str | None) -> tuple[set[int] | None, list[str]]:
    """Physical (NVML) indices that CUDA_VISIBLE_DEVICES selects, and caveats.

    None means "cannot tell" (MIG tokens). Rules from the CUDA guide (knowledge.md §6): unset = all;
    "" = none; the list stops at the first invalid entry. Integers are CUDA ordinals: with
    CUDA_DEVICE_ORDER=PCI_BUS_ID that is PCI bus order; the default FASTEST_FIRST order is not
    knowable from NVML, so PCI order is assumed and said."""
    notes: list[str] = []
    by_pci = sorted(devices, key=lambda g: g.pci_bus_id.lower())
    if (order or "FASTEST_FIRST") != "PCI_BUS_ID" and cvd and any(t.strip()[:1].isdigit() for t in cvd.split(",")):
        if len({g.name for g in devices}) > 1:
            notes.append("CUDA_DEVICE_ORDER is not PCI_BUS_ID and the GPUs differ: "
                         "CUDA's ordinals may not follow PCI order (assumed here)")
    if cvd is None:
        return {g.index for g in devices}, notes
    out: list[int] = []
    for token in cvd.split(","):
        token = token.strip()
        if token.startswith("MIG-"):
            notes.append("MIG devices are not compared")
            return None, notes
        if token.startswith("GPU-"):
            hits = [g for g in devices if g.uuid.startswith(token)]
            if len(hits) != 1:
                break
            idx = hits[0].index
        else:
            digits = ""
            for ch in token:
                if not ch.isdigit():
                    break
                digits += ch
            if not digits or int(digits) >= len(by_pci):
                break
            idx = by_pci[int(digits)].index
        if idx in out:
            break
        out.append(idx)
    return set(out), notes


def describe(indices: set[int]) -> str:
    items = sorted(indices)
    if not items:
        return "no GPU"
    if len(items) == 1:
        return f"GPU {items[0]}"
    return "GPUs " + ", ".join(str(i) for i in items[:-1]) + f" and {items[-1]}"
