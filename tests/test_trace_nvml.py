"""The driver/NVML layer against a small double of that boundary (no GPU on the test machines).

`scripts/gpu-check` exercises the real libcuda probe and NVML on a machine with a GPU."""
from __future__ import annotations

import os

from cudalint.trace import nvml
from cudalint.trace.correlate import correlate
from cudalint.trace.nvml import Gpu, Sampler, describe, driver_state, expected_gpus

GPUS = [Gpu(0, "GPU-aaaa-0000", "00000000:17:00.0", "A100"), Gpu(1, "GPU-bbbb-1111", "00000000:65:00.0", "A100")]


class FakeNvml:
    """NVML as nvidia-ml-py shows it: physical devices and the compute processes on each."""

    def __init__(self, procs: dict[int, list[tuple[int, int | None]]]) -> None:
        self.procs = procs

    def devices(self) -> list[Gpu]:
        return list(GPUS)

    def processes(self, index: int) -> list[tuple[int, int | None]]:
        return self.procs.get(index, [])


class FakeLib:
    def __init__(self, rc: int) -> None:
        self.rc = rc

    def cuDeviceGetCount(self, ref) -> int:  # noqa: N802 - the driver's name
        return self.rc


def fake_cdll(rc: int | None):
    def load(name, mode=0):
        assert name == "libcuda.so.1" and mode == os.RTLD_NOLOAD  # never loads the driver itself
        if rc is None:
            raise OSError("not loaded")
        return FakeLib(rc)
    return load


def test_driver_probe_states():
    assert driver_state(fake_cdll(None)) == "not-loaded"
    assert driver_state(fake_cdll(3)) == "not-initialized"  # CUDA_ERROR_NOT_INITIALIZED
    assert driver_state(fake_cdll(0)) == "initialized"
    assert driver_state(fake_cdll(999)) == "error:999"


def test_driver_probe_on_this_machine_has_no_side_effect():
    assert driver_state() in ("not-loaded", "not-initialized")


def test_expected_gpus_follow_cuda_visible_devices():
    assert expected_gpus(None, GPUS, None) == ({0, 1}, [])
    assert expected_gpus("", GPUS, None) == (set(), [])
    assert expected_gpus("1", GPUS, "PCI_BUS_ID") == ({1}, [])
    assert expected_gpus("1,0", GPUS, "PCI_BUS_ID") == ({0, 1}, [])
    assert expected_gpus("0,-1,1", GPUS, "PCI_BUS_ID") == ({0}, [])   # stops at the invalid entry
    assert expected_gpus("GPU-bbbb", GPUS, None) == ({1}, [])          # UUID prefix
    assert expected_gpus("MIG-xyz", GPUS, None) == (None, ["MIG devices are not compared"])
    mixed = [GPUS[0], Gpu(1, "GPU-bbbb-1111", "00000000:65:00.0", "T4")]
    _, notes = expected_gpus("1", mixed, None)
    assert notes == ["CUDA_DEVICE_ORDER is not PCI_BUS_ID and the GPUs differ: "
                     "CUDA's ordinals may not follow PCI order (assumed here)"]


def test_describe():
    assert describe({1}) == "GPU 1"
    assert describe({0, 1}) == "GPUs 0 and 1"
    assert describe({0, 2, 3}) == "GPUs 0, 2 and 3"
    assert describe(set()) == "no GPU"


def test_sampler_records_gpu_changes_and_peaks():
    emitted = []
    backend = FakeNvml({0: [(100, 300 << 20), (999, 1 << 30)], 1: [(101, 500 << 20)]})
    s = Sampler(backend, 100, lambda kind, **f: emitted.append((kind, f)), pids=lambda root: {100, 101})
    s.tick()
    s.tick()  # unchanged: no second event
    backend.procs[0] = [(100, 700 << 20)]
    s.tick()
    s.stop()
    assert emitted[0] == ("nvml", {"gpus": {"0": 300 << 20, "1": 500 << 20}})
    # memory over time: a change of memory is a new sample, an unchanged poll is not
    assert emitted[1] == ("nvml", {"gpus": {"0": 700 << 20, "1": 500 << 20}})
    assert [k for k, _ in emitted] == ["nvml", "nvml", "nvml_summary"]
    assert emitted[-1][1]["used"] == {"0": 700 << 20, "1": 500 << 20}
    assert emitted[-1][1]["devices"][1] == {"index": 1, "uuid": "GPU-bbbb-1111",
                                            "pci_bus_id": "00000000:65:00.0", "name": "A100"}


def test_descendants_reads_proc():
    assert os.getpid() in nvml.descendants(os.getppid())


def _events(cvd_writes, used):
    ev = [{"kind": "start", "pid": 1, "env": {"CUDA_VISIBLE_DEVICES": None, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}]
    ev += [{"kind": "env", "pid": 1, "op": "set", "key": "CUDA_VISIBLE_DEVICES", "value": v,
            "site": {"path": "/p/train.py", "line": 5}} for v in cvd_writes]
    ev.append({"kind": "nvml_summary", "pid": 2, "used": {str(i): 1 << 30 for i in used},
               "devices": [g.__dict__ for g in GPUS]})
    return [dict(e, seq=i) for i, e in enumerate(ev)]


def test_gpu_mismatch_is_reported_and_confirms():
    r = correlate([], _events(["1"], [0, 1]), env_rules=[], cwd="/p", returncode=0)
    assert r.gpu.message == "expected GPU 1 only (CUDA_VISIBLE_DEVICES='1'); the process used GPUs 0 and 1"
    assert r.gpu.mismatch and r.confirmed
    assert r.basis == "NVML (GPU contexts of the process) and call order"


def test_gpu_match_is_fine():
    r = correlate([], _events(["1"], [1]), env_rules=[], cwd="/p", returncode=0)
    assert r.gpu.message == "the process used GPU 1, as CUDA_VISIBLE_DEVICES='1' selects"
    assert not r.gpu.mismatch and not r.confirmed


def test_without_nvml_the_report_says_call_order_only():
    ev = _events([], [])[:-1]
    r = correlate([], ev, env_rules=[], cwd="/p", returncode=0, nvml_why="nvidia-ml-py is not installed")
    assert r.gpu is None
    assert r.basis == "call order only (nvidia-ml-py is not installed)"


def test_the_programs_own_sample_at_exit_counts():
    ev = _events(["1"], [1])
    ev.insert(2, {"kind": "nvml", "source": "exit", "pid": 1, "gpus": {"0": 1 << 20}, "seq": 0})
    ev = [dict(e, seq=i) for i, e in enumerate(ev)]
    r = correlate([], ev, env_rules=[], cwd="/p", returncode=0)
    assert r.gpu.message == "expected GPU 1 only (CUDA_VISIBLE_DEVICES='1'); the process used GPUs 0 and 1"
