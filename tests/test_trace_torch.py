"""The tracer on real torch (CPU wheel): torch.cuda.is_available() is hooked at the Python level as
the catalogue names it, so the call is recorded even though this build has no CUDA."""
from __future__ import annotations

import pytest

from tests.conftest import child_env, write_program
from tests.support.static import finding

torch = pytest.importorskip("torch")  # guard for running outside `make test` only; CI installs torch

CVD_MSG = "CUDA_VISIBLE_DEVICES is set after CUDA was initialized"


def test_cvd_written_after_is_available_is_confirmed(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        use_cuda = torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        print("use_cuda", use_cuda)
    """)
    r = tracer(tmp_path, ["prog.py"])  # the analyzer's own finding
    assert r.returncode == 1
    assert r.stdout == "use_cuda False\n"  # the program's own output, untouched
    assert r.verdicts() == [("CUD001", 4, "confirmed")]
    assert r.report["findings"][0]["evidence"] == (
        "torch.cuda.is_available() ran at prog.py:3 before CUDA_VISIBLE_DEVICES='1' was written at prog.py:4")
    assert r.report["runtime_findings"] == []
    assert r.report["evidence"] == "call order only (no NVIDIA driver on this machine)"
    assert r.report["program"]["status"] == "exited with status 0"


def test_fixed_program_is_refuted_and_clean(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        use_cuda = torch.cuda.is_available()
    """)
    # a (wrong) static finding on the fixed program is refuted by the run ...
    r = tracer(tmp_path, ["prog.py"], [finding("CUD001", "prog.py", 3, CVD_MSG)])
    assert r.returncode == 0
    assert r.verdicts() == [("CUD001", 3, "refuted")]
    assert r.report["findings"][0]["evidence"] == (
        "CUDA_VISIBLE_DEVICES='1' was written at prog.py:3 before any CUDA initialization; "
        "the first, torch.cuda.is_available() ran at prog.py:4, came later")
    # ... and with the analyzer's findings (none) the run is clean
    r = tracer(tmp_path, ["prog.py"])
    assert r.returncode == 0
    assert r.report["findings"] == [] and r.report["runtime_findings"] == []


def test_fork_after_is_available_is_confirmed(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        torch.cuda.is_available()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert r.returncode == 1
    assert r.verdicts() == [("CUD005", 4, "confirmed")]
    assert r.report["findings"][0]["evidence"] == (
        "torch.cuda.is_available() ran at prog.py:3 before the fork at prog.py:4 (call order)")


def test_multiprocessing_fork_start_is_located_at_start_call(tmp_path, tracer):
    write_program(tmp_path, """
        import multiprocessing as mp
        import torch

        def child():
            pass

        if __name__ == "__main__":
            torch.cuda.is_available()
            p = mp.get_context("fork").Process(target=child)
            p.start()
            p.join()
    """)
    r = tracer(tmp_path, ["prog.py"], [])
    assert r.returncode == 1
    assert r.runtime() == [("CUD005", "prog.py", 10)]
    assert r.report["runtime_findings"][0]["evidence"] == (
        "torch.cuda.is_available() ran at prog.py:8 before the fork at prog.py:10 (call order)")


def test_fork_before_init_is_refuted(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        torch.cuda.is_available()
    """)
    r = tracer(tmp_path, ["prog.py"], [finding("CUD005", "prog.py", 3, "fork after CUDA was initialized")])
    assert r.returncode == 0
    assert r.verdicts() == [("CUD005", 3, "refuted")]
    assert r.report["findings"][0]["evidence"] == "fork at prog.py:3 ran with CUDA not initialized (call order)"


def test_path_that_never_ran_is_not_reached(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import sys
        import torch

        def configure():
            torch.cuda.is_available()
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"

        if len(sys.argv) > 1:
            configure()
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert (r.returncode, r.verdicts()) == (0, [("CUD001", 7, "not reached")])
    assert r.report["findings"][0]["evidence"] == "prog.py:7 never ran"
    r = tracer(tmp_path, ["prog.py", "go"])  # the same finding, reached through argv
    assert (r.returncode, r.verdicts()) == (1, [("CUD001", 7, "confirmed")])


def test_init_inside_third_party_import_is_a_runtime_only_finding(tmp_path, tracer):
    lib = tmp_path / "venv" / "site-packages" / "fancylib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("import torch\nHAS_GPU = torch.cuda.is_available()\n")
    write_program(tmp_path, """
        import os
        import fancylib
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """)
    env = child_env()
    env["PYTHONPATH"] += ":" + str(lib.parent)
    r = tracer(tmp_path, ["prog.py"], env=env)
    assert r.returncode == 1
    assert r.runtime() == [("CUD001", "prog.py", 3)]
    rt = r.report["runtime_findings"][0]
    assert rt["message"] == "CUDA_VISIBLE_DEVICES is written after CUDA was initialized; the change has no effect"
    assert rt["evidence"] == (
        f"torch.cuda.is_available() ran at prog.py:2 (called from {lib}/__init__.py:2) "
        "before CUDA_VISIBLE_DEVICES='0' was written at prog.py:3")


def test_evidence_survives_os_exit(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        torch.cuda.is_available()
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        os._exit(7)
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert r.returncode == 1
    assert r.verdicts() == [("CUD001", 4, "confirmed")]
    assert r.report["program"]["status"] == "exited with status 7"
