"""The tracer on real llama-cpp-python (CPU build) with the tiny generated model."""
from __future__ import annotations

import pytest

from tests.conftest import write_program
from tests.support.static import finding

pytest.importorskip("llama_cpp")  # guard for running outside `make test` only; CI installs it

SHARED = """
    import sys
    from concurrent.futures import ThreadPoolExecutor
    from llama_cpp import Llama
    import faulthandler  # (the test's watchdog, on lines that were blank: the lines below keep their numbers)
    llm = Llama(model_path=sys.argv[1], n_ctx=128, verbose=False)
    faulthandler.dump_traceback_later(60, exit=True)  # four threads on one context: an abort, a segfault, or now and then a hang (a CI run waited 120 s)

    def work(prompt):
        return llm(prompt, max_tokens=16)["choices"][0]["text"]


    with ThreadPoolExecutor(max_workers=4) as pool:
        print(len(list(pool.map(work, ["hello", "world", "a b", "the"] * 4))))
"""

LOCKED = """
    import sys
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from llama_cpp import Llama

    llm = Llama(model_path=sys.argv[1], n_ctx=128, verbose=False)
    lock = threading.Lock()


    def work(prompt):
        with lock:
            return llm(prompt, max_tokens=16)["choices"][0]["text"]


    with ThreadPoolExecutor(max_workers=4) as pool:
        print(len(list(pool.map(work, ["hello", "world", "a b", "the"] * 4))))
"""


def test_shared_llama_in_thread_pool_is_confirmed_although_the_process_aborts(tmp_path, tracer, tiny_gguf):
    write_program(tmp_path, SHARED)
    r = tracer(tmp_path, ["prog.py", tiny_gguf])  # the analyzer's own CUD101
    assert r.returncode == 1
    # four threads on one context end in GGML_ASSERT + abort() (or, as often, a segfault first);
    # the events written before the crash survive it
    sig = r.report["program"]["signal"]
    assert sig in ("SIGABRT", "SIGSEGV"), r.stderr[-2000:]
    assert r.report["program"]["status"] == f"was killed by {sig}"
    assert r.verdicts() == [("CUD101", 9, "confirmed")]
    ev = r.report["findings"][0]["evidence"]
    assert ev.startswith("threads 'ThreadPoolExecutor-0_")
    assert "(__call__ at prog.py:9) and 'ThreadPoolExecutor-0_" in ev
    assert ev.endswith("(__call__ at prog.py:9) were inside the same Llama at the same time")
    assert r.report["runtime_findings"] == []


def test_shared_llama_without_static_finding_is_reported_at_run_time(tmp_path, tracer, tiny_gguf):
    write_program(tmp_path, SHARED)
    r = tracer(tmp_path, ["prog.py", tiny_gguf], [])
    assert r.returncode == 1
    assert r.runtime() == [("CUD101", "prog.py", 9)]
    assert r.report["runtime_findings"][0]["message"] == (
        "one Llama is used from several threads at the same time without a lock")


def test_locked_llama_is_clean(tmp_path, tracer, tiny_gguf):
    write_program(tmp_path, LOCKED)
    r = tracer(tmp_path, ["prog.py", tiny_gguf])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == "16\n"
    assert r.report["program"]["status"] == "exited with status 0"
    assert r.report["findings"] == [] and r.report["runtime_findings"] == []


def test_locked_llama_with_a_static_finding_is_refuted(tmp_path, tracer, tiny_gguf):
    write_program(tmp_path, LOCKED)
    static = [finding("CUD101", "prog.py", 12, "Llama object `llm` is used from several threads without a lock")]
    r = tracer(tmp_path, ["prog.py", tiny_gguf], static)
    assert r.returncode == 0
    assert r.verdicts() == [("CUD101", 12, "refuted")]
    assert r.report["findings"][0]["evidence"] == (
        "ran in 4 thread(s) (ThreadPoolExecutor-0_0, ThreadPoolExecutor-0_1, ThreadPoolExecutor-0_2, "
        "ThreadPoolExecutor-0_3) but no two were inside the same context at once in this run")
