"""Other CPython interpreters than the one running the suite, each with cudalint's dependencies.

cudalint's own code comes from the checkout (PYTHONPATH); its runtime dependencies are installed
from the package index into a virtualenv per interpreter, kept under pytest's cache folder so that
later runs of the suite reuse it.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent.parent
PYENV = os.path.expanduser(os.environ.get("PYENV_ROOT", "/root/.pyenv"))


def find(version: str) -> Optional[str]:
    """An interpreter of `version` ("3.10"): the running one, pyenv's, or pythonX.Y on PATH."""
    if "%d.%d" % sys.version_info[:2] == version:
        return sys.executable
    found = sorted(glob.glob(os.path.join(PYENV, "versions", version + ".*", "bin", "python")))
    if found:
        return found[-1]
    return shutil.which("python" + version)


def runtime_requirements() -> list[str]:
    """pyproject.toml's runtime dependencies, markers dropped (tomli too: it is needed before 3.11)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M)
    assert block is not None, "pyproject.toml has no dependencies list"
    return [req.split(";")[0].strip() for req in re.findall(r'"([^"]+)"', block.group(1))]


def home(config) -> Path:
    """Where the virtualenvs are kept: pytest's cache folder, or the temp folder without the cache plugin."""
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("interpreters"))
    path = Path(tempfile.gettempdir()) / "cudalint-test-interpreters"
    path.mkdir(exist_ok=True)
    return path


def with_dependencies(python: str, home: Path) -> str:
    """`python`, or a virtualenv of it under `home` holding cudalint's runtime dependencies."""
    if python == sys.executable:
        return python
    venv = home / ("venv-" + re.sub(r"\W", "_", python))
    marker = venv / ".cudalint-deps"
    wanted = "\n".join(runtime_requirements())
    if marker.is_file() and marker.read_text() == wanted:
        return str(venv / "bin" / "python")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *runtime_requirements()],
        check=True,
        timeout=900,
    )
    marker.write_text(wanted)
    return str(venv / "bin" / "python")
