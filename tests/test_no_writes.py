"""Running cudalint never executes, imports or writes into the tree it lints (only --fix edits files,
and only the cache directory may appear)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fixture_expectations import FIXTURES

ALLOWED_NEW = {".cudalint_cache"}  # the performance work's cache directory, if it lands
TRAP = (
    "import pathlib\n"
    "pathlib.Path(__file__).with_name('EXECUTED-' + pathlib.Path(__file__).stem).write_text('ran')\n"
)


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ALLOWED_NEW]
        rel = os.path.relpath(dirpath, root)
        out[rel + "/"] = ""
        for name in filenames:
            p = os.path.join(dirpath, name)
            out[os.path.join(rel, name)] = "link:" + os.readlink(p) if os.path.islink(p) else hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def test_linting_reads_and_never_writes_imports_or_runs(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree / "fixtures")
    # files that would leave a mark if anything imported or ran them
    for name in ("conftest.py", "sitecustomize.py", "setup.py", "__main__.py"):
        (tree / name).write_text(TRAP)
    (tree / "pkg").mkdir()
    (tree / "pkg" / "__init__.py").write_text(TRAP)
    (tree / "pkg" / "mod.py").write_text("import pkg\nfrom . import helper\n" + TRAP)
    (tree / "pkg" / "helper.py").write_text(TRAP)
    (tree / "main.py").write_text("import pkg.mod\nimport os\nimport torch\ntorch.cuda.init()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    os.chmod(tree / "main.py", 0o755)
    before = snapshot(tree)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # were anything imported, it would leave __pycache__
    for args in (
        [],
        ["--format", "json"],
        ["--format", "sarif"],
        ["--format", "github"],
        ["--statistics"],
        ["--diff"],
        ["--select", "CUD", "--no-gitignore"],
    ):
        proc = subprocess.run([sys.executable, "-m", "cudalint", *args, "."], cwd=tree, capture_output=True, text=True, env=env)
        assert proc.returncode == 1, (args, proc.stderr)
        assert proc.stdout.strip() and proc.stderr == ""
        assert snapshot(tree) == before, args
    assert not list(tree.rglob("__pycache__"))
    assert not list(tree.rglob("EXECUTED-*"))
