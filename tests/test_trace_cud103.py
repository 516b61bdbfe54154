"""CUD103 at run time: two threads inside two different llama contexts at the same moment."""
from __future__ import annotations

from cudalint.trace.correlate import correlate
from tests.conftest import child_env, write_program
from tests.support.static import finding
from tests.test_trace_runner import _fake_library

MESSAGE = "separate GPU-offloaded llama.cpp contexts decode at the same time"


def site(line):
    return {"path": "/p/a.py", "line": line, "func": "f"}


def run(events, findings):
    events = [dict(e, seq=i, pid=1) for i, e in enumerate([{"kind": "start", "env": {}}, *events])]
    return correlate(list(findings), events, env_rules=[], cwd="/p", returncode=0)


def test_overlap_in_two_contexts_confirms_a_use_alone_refutes():
    f = finding("CUD103", "a.py", 7, MESSAGE)
    both = {"kind": "concurrent_separate", "cls": "llama_cpp.Llama", "threads": [
        {"name": "t1", "method": "__call__", "site": site(7)}, {"name": "t2", "method": "embed", "site": site(9)}]}
    r = run([both], [f])
    assert [(v.status, v.evidence) for v in r.verdicts] == [(
        "confirmed", "threads 't1' (__call__ at a.py:7) and 't2' (embed at a.py:9) were inside two different contexts at the same time")]
    assert r.runtime == ()  # the tracer cannot see GPU offload: no runtime-only CUD103
    use = {"kind": "llama_use", "cls": "llama_cpp.Llama", "instance": 1, "method": "__call__", "site": site(7), "thread": "t1"}
    assert run([use], [f]).verdicts[0].status == "refuted"
    assert run([], [f]).verdicts[0].status == "not reached"


def test_two_models_on_two_threads_are_seen_together(tmp_path, tracer):
    lib = _fake_library(tmp_path)
    write_program(tmp_path, """
        import threading
        from fakellm import Model

        def work(path):
            Model(path).run(path)

        threads = [threading.Thread(target=work, args=(p,), name=f"w{p}") for p in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """)
    env = child_env()
    env["PYTHONPATH"] += ":" + str(lib.parent)
    r = tracer(tmp_path, ["prog.py"], [finding("CUD103", "prog.py", 5, MESSAGE)],
               extra=["--catalogue", str(tmp_path / "fake.toml")], env=env)
    assert r.verdicts() == [("CUD103", 5, "confirmed")]
    assert r.report["findings"][0]["evidence"] in (
        "threads 'wa' (run at prog.py:5) and 'wb' (run at prog.py:5) were inside two different contexts at the same time",
        "threads 'wb' (run at prog.py:5) and 'wa' (run at prog.py:5) were inside two different contexts at the same time")
