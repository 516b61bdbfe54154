from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.static import USE_STUB_FINDINGS, write_findings  # noqa: E402


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ~0.5 MB random-weight llama model that llama-cpp-python loads and runs on CPU."""
    pytest.importorskip("gguf")
    from tests.support.tiny_gguf import write_tiny_llama

    return write_tiny_llama(str(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"))


@dataclass
class Traced:
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    def verdicts(self) -> list[tuple[str, int, str]]:
        return [(f["code"], f["line"], f["verdict"]) for f in self.report["findings"]]

    def runtime(self) -> list[tuple[str, str, int]]:
        return [(r["code"], r["path"], r["line"]) for r in self.report["runtime_findings"]]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["GGML_NO_BACKTRACE"] = "1"  # ggml would run gdb on GGML_ASSERT to print a backtrace
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(extra)
    return env


def write_program(directory: Path, text: str, name: str = "prog.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def trace(directory: Path, argv: list[str], findings: list | None = None, *, module: bool = False,
          extra: list[str] = (), stdin: str | None = None, timeout: float = 120, env: dict | None = None) -> Traced:
    """Run `python -m cudalint.trace --format json -o report.json [...] argv` in `directory`."""
    report = directory / "report.json"
    cmd = [sys.executable, "-m", "cudalint.trace", "--format", "json", "-o", str(report), *extra]
    if findings is not None and USE_STUB_FINDINGS:
        cmd += ["--findings", write_findings(str(directory), findings)]
    cmd += (["-m"] if module else []) + argv
    proc = subprocess.run(cmd, cwd=directory, env=env or child_env(), capture_output=True, text=True,
                          input=stdin, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() and report.stat().st_size else {}
    return Traced(proc.returncode, proc.stdout, proc.stderr, data)


@pytest.fixture
def tracer():
    return trace
