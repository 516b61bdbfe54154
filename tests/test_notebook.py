"""Notebooks: broken input is a CUD900 finding naming the reason; cells and lines map back."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.api import lint_paths
from cudalint.inputs.notebook import shell_exports


def _nb(tmp_path: Path, cells, name="nb.ipynb") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"cells": [{"cell_type": k, "metadata": {}, "source": s} for k, s in cells], "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize(
    "text, reason",
    [
        ("{not json", "not a notebook: invalid JSON: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "not a notebook: the JSON document is not an object"),
        ('{"metadata": {}}', "not a notebook: no `cells` list"),
        ('{"cells": [{"cell_type": "code"}]}', "not a notebook: cell 1 has no source"),
        ('{"cells": [{"source": "x"}]}', "not a notebook: cell 1 has no cell_type"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "not a notebook: the source of cell 1 is not text"),
    ],
)
def test_broken_notebook_is_a_finding(tmp_path: Path, monkeypatch, text: str, reason: str) -> None:
    (tmp_path / "bad.ipynb").write_text(text)
    (tmp_path / "ok.py").write_text("import torch\ntorch.cuda.is_available()\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    monkeypatch.chdir(tmp_path)
    findings = lint_paths(["."]).findings
    assert [(f.path, f.code, f.message) for f in findings] == [("bad.ipynb", "CUD900", reason), ("ok.py", "CUD001", findings[1].message)]


def test_cell_that_does_not_parse_is_reported_and_the_rest_is_linted(tmp_path: Path, monkeypatch) -> None:
    _nb(tmp_path, [("code", "import torch\ntorch.cuda.is_available()"), ("code", "def f(:\n"), ("code", "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'")])
    monkeypatch.chdir(tmp_path)
    got = [(f.code, f.cell, f.line) for f in lint_paths(["nb.ipynb"]).findings]
    assert got == [("CUD001", 3, 2), ("CUD900", 2, 1)] or got == [("CUD900", 2, 1), ("CUD001", 3, 2)]


def test_env_magic_after_init_is_a_write_reported_at_its_cell(tmp_path: Path, monkeypatch) -> None:
    _nb(tmp_path, [("markdown", "# t"), ("code", "import torch\ntorch.cuda.is_available()"), ("code", "%matplotlib inline\n%env CUDA_VISIBLE_DEVICES=1")])
    monkeypatch.chdir(tmp_path)
    (f,) = lint_paths(["nb.ipynb"]).findings
    assert (f.code, f.cell, f.line, f.column, f.end_column) == ("CUD001", 3, 2, 1, 28)
    assert "(cell 2, line 2)" in f.message
    assert [(s.cell, s.line) for s in f.witness] == [(2, 2), (3, 2)]


def test_text_and_json_name_the_cell(tmp_path: Path) -> None:
    _nb(tmp_path, [("code", "import torch, os\ntorch.cuda.is_available()"), ("code", "os.environ['CUDA_VISIBLE_DEVICES'] = '1'")])
    text = subprocess.run([sys.executable, "-m", "cudalint", "nb.ipynb"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert text.splitlines()[0].startswith("nb.ipynb:cell 2:1:1: CUD001 ")
    assert "    nb.ipynb:cell 1:2: torch.cuda.is_available() initializes CUDA" in text
    out = subprocess.run([sys.executable, "-m", "cudalint", "--format", "json", "nb.ipynb"], cwd=tmp_path, capture_output=True, text=True).stdout
    (f,) = json.loads(out)
    assert (f["cell"], f["line"]) == (2, 1)
    assert [(s["cell"], s["line"]) for s in f["witness"]] == [(1, 2), (2, 1)]


def test_noqa_in_a_cell(tmp_path: Path, monkeypatch) -> None:
    _nb(tmp_path, [("code", "!export CUDA_VISIBLE_DEVICES=1  # noqa: CUD009\n!export CUDA_DEVICE_ORDER=PCI_BUS_ID")])
    monkeypatch.chdir(tmp_path)
    assert [(f.code, f.cell, f.line) for f in lint_paths(["nb.ipynb"]).findings] == [("CUD009", 1, 2)]


@pytest.mark.parametrize(
    "command, names",
    [
        ("export CUDA_VISIBLE_DEVICES=1", ["CUDA_VISIBLE_DEVICES"]),
        ("CUDA_VISIBLE_DEVICES=1", ["CUDA_VISIBLE_DEVICES"]),
        ("export A=1; export B=2", ["A", "B"]),
        ("export A=1 && python train.py", []),
        ("CUDA_VISIBLE_DEVICES=1 python train.py", []),
        ("nvidia-smi", []),
    ],
)
def test_shell_exports(command: str, names: list[str]) -> None:
    assert [n for n, _ in shell_exports(command)] == names


def test_shell_and_magic_lines_continued_with_backslash_are_not_python(tmp_path) -> None:
    """`!curl … \\` goes on over the next lines (seen in lm-sys/FastChat's Colab notebook)."""
    import json as _json

    from cudalint.api import lint_paths

    nb = tmp_path / "nb.ipynb"
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["!curl http://127.0.0.1:8000/v1/completions \\\n", "  -H \"Content-Type: application/json\" \\\n", "  -d '{ \"model\": \"x\" }'\n", "x = 1\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%pip install \\\n", "   torch\n", "import torch\n", "torch.cuda.init()\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import os\n", "os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"]},
    ]
    nb.write_text(_json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = lint_paths([str(nb)])
    assert [(f.code, f.cell, f.line) for f in result.findings] == [("CUD001", 3, 2)]


def test_a_cell_magic_after_form_lines_is_a_cell_magic(tmp_path: Path, monkeypatch) -> None:
    """Colab's form lines (`#@title ...`) and blank lines before `%%html` (oobabooga/text-generation-webui,
    Colab-TextGen-GPU.ipynb): the cell is HTML, not a syntax error; a `%%time` cell's Python after them
    is still linted, and a `%%bash` body's `export` still reported, at their own lines."""
    _nb(
        tmp_path,
        [
            ("code", '#@title keep alive { display-mode: "form" }\n%%html\n<audio src="x.m4a" controls>\n'),
            ("code", "import torch\ntorch.cuda.is_available()"),
            ("code", "\n#@markdown run it\n%%time\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"),
            ("code", "#@title shell\n%%bash\nexport CUDA_VISIBLE_DEVICES=0\n"),
        ],
    )
    monkeypatch.chdir(tmp_path)
    got = sorted((f.code, f.cell, f.line) for f in lint_paths(["nb.ipynb"]).findings)
    assert got == [("CUD001", 3, 5), ("CUD009", 4, 3)]
