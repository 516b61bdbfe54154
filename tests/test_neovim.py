"""A real editor: Neovim's built-in LSP client (Debian's `neovim`, headless) talks to `cudalint server`.

The Lua script (tests/data/neovim_lsp.lua) opens a file, waits for the diagnostic, rewrites the
buffer into the right order (the write before `import torch`) without saving, and waits for the
diagnostic to clear. `make test` installs neovim when it is missing (CUDALINT_REQUIRE_NVIM=1 there:
a missing editor is then a failure, not a skip).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "data" / "neovim_lsp.lua"
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


def nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if os.environ.get("CUDALINT_REQUIRE_NVIM"):
            pytest.fail("nvim is not installed (make test installs Debian's neovim package)")
        pytest.skip("nvim is not installed (make test installs Debian's neovim package)")
    return found


def test_neovim_shows_the_diagnostic_and_clears_it_after_the_edit(tmp_path: Path) -> None:
    editor = nvim()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    out = tmp_path / "seen.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CUDALINT_PYTHON": sys.executable,
        "CUDALINT_NVIM_OUT": str(out),
        "XDG_STATE_HOME": str(tmp_path / "state"),  # Neovim's LSP log goes there, not into ~
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [editor, "--headless", "-n", "-u", "NONE", "-i", "NONE", "-c", f"luafile {SCRIPT}", "train.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seen = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    assert seen == [
        "diagnostic 6 5 CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 5); "
        "the driver read it then, so this write has no effect",
        "cleared true",
    ], proc.stdout + proc.stderr
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == BAD  # judged from the buffer, never saved
