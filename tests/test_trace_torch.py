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


BRANCH = """
    import os
    import sys
    import torch

    def setup():
        if torch.cuda.is_available():
            pass

    def configure():
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"

    if len(sys.argv) > 1:
        setup()
    configure()
"""


def test_witness_cause_on_a_branch_not_taken_is_not_reached(tmp_path, tracer):
    write_program(tmp_path, BRANCH)
    r = tracer(tmp_path, ["prog.py"])  # the analyzer's finding: its witness starts at line 6
    assert (r.returncode, r.verdicts()) == (0, [("CUD001", 10, "not reached")])
    assert r.report["findings"][0]["evidence"].startswith(
        "CUDA_VISIBLE_DEVICES='0' was written at prog.py:10, but the witness's first step, prog.py:6 "
        "(torch.cuda.is_available() initializes CUDA")
    assert r.report["findings"][0]["evidence"].endswith(
        "never ran in this run, so the path the finding describes was not taken")
    r = tracer(tmp_path, ["prog.py", "go"])  # the branch taken: the same finding is confirmed
    assert (r.returncode, r.verdicts()) == (1, [("CUD001", 10, "confirmed")])


def test_cause_that_ran_after_the_write_is_refuted(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch

        def later():
            torch.cuda.is_available()

        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        later()
    """)
    wrong = finding("CUD001", "prog.py", 7, CVD_MSG,
                    witness=((5, "torch.cuda.is_available() initializes CUDA"), (7, "written here")))
    r = tracer(tmp_path, ["prog.py"], [wrong])
    assert (r.returncode, r.verdicts()) == (0, [("CUD001", 7, "refuted")])
    assert r.report["findings"][0]["evidence"] == (
        "CUDA_VISIBLE_DEVICES='0' was written at prog.py:7 before any CUDA initialization; "
        "the first, torch.cuda.is_available() ran at prog.py:5, came later")


def test_a_cause_that_was_not_the_first_call_is_still_seen(tmp_path, tracer):
    """Initializing calls are recorded once per calling line, not once per process: the witness's
    line 5 ran (second), so the finding is refuted, not "not reached"."""
    write_program(tmp_path, """
        import os
        import torch

        def later():
            torch.cuda.is_available()

        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        torch.cuda.is_available()
        later()
    """)
    wrong = finding("CUD001", "prog.py", 7, CVD_MSG,
                    witness=((5, "torch.cuda.is_available() initializes CUDA"), (7, "written here")))
    r = tracer(tmp_path, ["prog.py"], [wrong])
    assert r.verdicts() == [("CUD001", 7, "refuted")]


def test_failing_program_with_a_confirmed_finding_exits_1(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        raise SystemExit(5)
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert (r.returncode, r.verdicts()) == (1, [("CUD001", 4, "confirmed")])
    assert r.report["program"]["status"] == "exited with status 5"
    write_program(tmp_path, """
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        import torch
        torch.cuda.is_available()
        raise SystemExit(5)
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert (r.returncode, r.verdicts()) == (5, [])  # nothing confirmed: CI sees the program's failure


def test_module_mode_uses_the_linters_relative_paths(tmp_path, tracer):
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    write_program(pkg, """
        import os
        import torch
        torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    """, name="main.py")
    r = tracer(tmp_path, ["app.main"], module=True)
    assert r.verdicts() == [("CUD001", 4, "confirmed")]
    f = r.report["findings"][0]
    assert f["path"] == "app/main.py"
    assert {s["path"] for s in f["witness"]} == {"app/main.py"}
    assert f["evidence"] == (
        "torch.cuda.is_available() ran at app/main.py:3 before CUDA_VISIBLE_DEVICES='1' was written at app/main.py:4")
