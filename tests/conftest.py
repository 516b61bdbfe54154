"""Shared test setup: the summary cache kept out of the tree, the tracer's helpers and the tiny model."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.static import write_findings  # noqa: E402


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
    """Run `python -m cudalint.trace --format json -o report.json [...] argv` in `directory`.

    Without `findings`, the tracer runs the real analyzer on the program, as `cudalint --trace` does.
    """
    report = directory / "report.json"
    cmd = [sys.executable, "-m", "cudalint.trace", "--format", "json", "-o", str(report), *extra]
    if findings is not None:
        # hand-made static findings (`--findings`), to drive the correlation paths the analyzer
        # does not produce on these programs (a wrong finding refuted, no finding at all)
        cmd += ["--findings", write_findings(str(directory), findings)]
    cmd += (["-m"] if module else []) + argv
    proc = subprocess.run(cmd, cwd=directory, env=env or child_env(), capture_output=True, text=True,
                          input=stdin, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() and report.stat().st_size else {}
    return Traced(proc.returncode, proc.stdout, proc.stderr, data)


@pytest.fixture
def tracer():
    return trace


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_tree():
    # CLI runs in tests must not leave .cudalint_cache directories inside fixtures/
    with tempfile.TemporaryDirectory(prefix="cudalint-cache-") as tmp:
        old = os.environ.get("CUDALINT_CACHE_DIR")
        os.environ["CUDALINT_CACHE_DIR"] = tmp
        yield
        if old is None:
            os.environ.pop("CUDALINT_CACHE_DIR", None)
        else:
            os.environ["CUDALINT_CACHE_DIR"] = old
