"""The tracer with the real static analyzer (`cudalint.api.lint_paths`), no stub findings.

Skipped until the analyzer is merged into this tree; then it runs as is. Only codes, lines and
verdicts are asserted: the messages are the analyzer's."""
from __future__ import annotations

import pytest

from tests.conftest import write_program
from tests.test_trace_llama import LOCKED, SHARED

pytest.importorskip("cudalint.api")
pytest.importorskip("torch")


def test_analyzer_findings_confirmed_by_the_run(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        import torch
        use_cuda = torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    r = tracer(tmp_path, ["prog.py"])  # no --findings: the parent runs the analyzer
    assert r.report["static"] == "ok"
    assert r.verdicts() == [("CUD001", 4, "confirmed"), ("CUD005", 5, "confirmed")]
    assert r.report["runtime_findings"] == []
    assert r.returncode == 1


def test_fixed_program_is_clean(tmp_path, tracer):
    write_program(tmp_path, """
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        import torch
        use_cuda = torch.cuda.is_available()
    """)
    r = tracer(tmp_path, ["prog.py"])
    assert (r.returncode, r.verdicts(), r.report["runtime_findings"]) == (0, [], [])


def test_shared_llama(tmp_path, tracer, tiny_gguf):
    pytest.importorskip("llama_cpp")
    write_program(tmp_path, SHARED)
    r = tracer(tmp_path, ["prog.py", tiny_gguf])
    assert r.verdicts() == [("CUD101", 9, "confirmed")]
    write_program(tmp_path, LOCKED)
    r = tracer(tmp_path, ["prog.py", tiny_gguf])
    assert (r.returncode, r.verdicts(), r.report["runtime_findings"]) == (0, [], [])
