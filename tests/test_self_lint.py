"""cudalint lints its own source and tests cleanly, like flake8-bugbear does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cudalint_source_is_clean() -> None:
    paths = [p for p in ("cudalint", "tests", "benchmarks", "scripts") if (ROOT / p).exists()]
    proc = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "--exclude", "tests/data", *paths],  # data: bugs on purpose
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("All checks passed")


def test_no_unused_or_undefined_names() -> None:
    """pyflakes through flake8 (`--select F`): an unused import costs a warm run its import time, an
    undefined name is a crash waiting for its branch."""
    paths = [p for p in ("cudalint", "tests", "benchmarks", "scripts") if (ROOT / p).exists()]
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "F", "--exclude", "tests/data,fixtures", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
