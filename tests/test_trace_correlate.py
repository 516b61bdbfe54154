"""correlate() on hand-written event streams: the process timeline and the rules' edge cases."""
from __future__ import annotations

from cudalint.trace.correlate import correlate
from tests.support.static import finding

ENV = [{"name": "CUDA_VISIBLE_DEVICES", "frozen_by": "init:driver", "rule": "CUD001"},
       {"name": "CUPY_ACCELERATORS", "frozen_by": "import:cupy", "rule": "CUD002"},
       {"name": "PYTORCH_CUDA_ALLOC_CONF", "frozen_by": "init:torch", "rule": "CUD002"}]


def site(line):
    return {"path": "/p/a.py", "line": line, "func": "<module>"}


def init(pid, line, library="torch", call="torch.cuda.is_available()"):
    return {"kind": "init", "pid": pid, "init": "driver", "library": library, "call": call, "api": call,
            "site": site(line), "caller": site(line)}


def env(pid, line, key="CUDA_VISIBLE_DEVICES", value="1"):
    return {"kind": "env", "pid": pid, "op": "set", "key": key, "value": value, "site": site(line)}


def run(events, findings=()):
    events = [dict(e, seq=i) for i, e in enumerate([{"kind": "start", "pid": 1, "env": {}}, *events])]
    return correlate(list(findings), events, env_rules=ENV, cwd="/p", returncode=0)


def test_child_inherits_init_from_before_its_fork_only():
    r = run([init(1, 2), {"kind": "child", "pid": 2, "ppid": 1}, env(2, 5)])
    assert [(x.code, x.line) for x in r.runtime] == [("CUD001", 5)]
    r = run([{"kind": "child", "pid": 2, "ppid": 1}, init(1, 2), env(2, 5)])
    assert r.runtime == ()  # the parent initialized after the fork: the child's write is fine


def test_library_and_import_freezes():
    r = run([init(1, 2, library="llama_cpp", call="llama_cpp.Llama()"), env(1, 3, "PYTORCH_CUDA_ALLOC_CONF", "x")])
    assert r.runtime == ()  # frozen by torch's init only
    r = run([{"kind": "import", "pid": 1, "module": "cupy", "site": site(1)}, env(1, 3, "CUPY_ACCELERATORS", "cub")],
            [finding("CUD002", "a.py", 3, "CUPY_ACCELERATORS is set after import cupy")])
    assert [(v.finding.code, v.status, v.evidence) for v in r.verdicts] == [
        ("CUD002", "confirmed", "import cupy at a.py:1 before CUPY_ACCELERATORS='cub' was written at a.py:3")]


def test_codes_the_tracer_cannot_decide_are_not_checked():
    r = run([], [finding("CUD004", "a.py", 3, "NVML index used as a CUDA ordinal")])
    assert [(v.status, v.evidence) for v in r.verdicts] == [
        ("not checked", "the tracer records nothing that decides CUD004")]
    assert not r.confirmed


def test_write_in_a_loop_is_confirmed_by_any_late_iteration():
    r = run([env(1, 4, value="0"), init(1, 2), env(1, 4, value="1")],
            [finding("CUD001", "a.py", 4, "CUDA_VISIBLE_DEVICES is set after CUDA was initialized")])
    assert r.verdicts[0].status == "confirmed"
    assert r.verdicts[0].evidence == (
        "torch.cuda.is_available() ran at a.py:2 before CUDA_VISIBLE_DEVICES='1' was written at a.py:4")


def test_concurrent_construction_is_a_runtime_finding():
    ev = {"kind": "concurrent_construct", "pid": 1, "cls": "llama_cpp.Llama",
          "threads": [{"name": "t1", "method": "__init__", "site": site(7)},
                      {"name": "t2", "method": "__init__", "site": site(7)}]}
    r = run([ev])
    assert [(x.code, x.line, x.message, x.evidence) for x in r.runtime] == [
        ("CUD101", 7, "Llama objects are constructed in several threads at the same time",
         "threads 't1' (a.py:7) and 't2' (a.py:7) were constructing Llama objects at the same time")]


def test_the_driver_probe_overrides_call_order_where_a_driver_exists():
    f = [finding("CUD001", "a.py", 3, "CUDA_VISIBLE_DEVICES is set after CUDA was initialized")]
    # is_available() ran, but with PYTORCH_NVML_BASED_CUDA_CHECK=1 the driver was not initialized
    r = run([init(1, 2), dict(env(1, 3), driver="not-initialized")], f)
    assert r.verdicts[0].status == "refuted"
    # nothing the catalogue knows ran, but the driver says it is initialized
    r = run([dict(env(1, 3), driver="initialized")], f)
    assert (r.verdicts[0].status, r.verdicts[0].evidence) == (
        "confirmed", "the libcuda probe found the driver initialized (by a call the catalogue does not list) "
                     "before CUDA_VISIBLE_DEVICES='1' was written at a.py:3")


def test_fork_whose_witness_cause_never_ran_is_not_reached():
    f = [finding("CUD005", "a.py", 5, "fork after CUDA was initialized",
                 witness=((2, "torch.cuda.is_available() initializes CUDA"), (5, "forks here")))]
    fork = {"kind": "fork", "pid": 1, "site": site(5), "cuda_initialized": False, "evidence": "call order"}
    r = run([fork], f)
    assert [(v.status, v.evidence) for v in r.verdicts] == [(
        "not reached", "the fork at a.py:5 ran, but the witness's first step, a.py:2 "
        "(torch.cuda.is_available() initializes CUDA), never ran in this run, so the path the finding describes "
        "was not taken")]
    assert r.verdicts[0].events == (1,)  # the fork event decided it (the timeline links it)
    r = run([fork, init(1, 2)], f)  # the cause ran, after the fork: the claim is wrong for this run
    assert r.verdicts[0].status == "refuted"
    # a cause seen deeper in a call stack counts as run
    r = run([fork, dict(init(1, 9), stack=[["/p/a.py", 9], ["/p/a.py", 2]])], f)
    assert r.verdicts[0].status == "refuted"
