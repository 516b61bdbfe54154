"""CUD005/CUD006 depend on the Python version the project targets (multiprocessing's default start
method on Linux is fork before 3.14, forkserver from 3.14); the finding says which one it assumed."""
from __future__ import annotations

from pathlib import Path

from cudalint.api import lint_paths
from cudalint.inputs.config import Config

LOOP = '''\
import multiprocessing as mp
import os


def train(gpu):
    import torch
    return torch.cuda.device_count()


def launch():
    for gpu in range(4):
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        mp.Process(target=train, args=(gpu,)).start()
'''

FORK_AFTER_INIT = '''\
import multiprocessing as mp

import torch


def work(i):
    return torch.ones(1).cuda() + i


def main():
    torch.cuda.init()
    mp.Process(target=work, args=(1,)).start()
'''


def _lint(tmp_path: Path, text: str, version: str):
    path = tmp_path / "prog.py"
    path.write_text(text)
    return lint_paths([str(path)], Config(target_version=version)).findings


def test_py314_default_is_forkserver_so_the_env_loop_is_cud006(tmp_path):
    findings = _lint(tmp_path, LOOP, "py314")
    assert [(f.code, f.line) for f in findings] == [("CUD006", 13)]
    assert "target-version py314" in findings[0].message
    assert "'forkserver'" in findings[0].message


def test_py310_default_is_fork_so_the_env_loop_is_fine(tmp_path):
    assert _lint(tmp_path, LOOP, "py310") == ()


def test_py310_fork_after_init_says_which_default_it_assumed(tmp_path):
    findings = _lint(tmp_path, FORK_AFTER_INIT, "py310")
    assert [(f.code, f.line, f.column) for f in findings] == [("CUD005", 12, 5)]
    msg = findings[0].message
    assert msg.startswith("mp.Process(target=work, args=(1,)).start() forks after CUDA was initialized by torch.cuda.init() (line 11)")
    assert "the default start method on Linux for target-version py310 ('fork'; 'forkserver' from Python 3.14)" in msg
    assert [(s.line) for s in findings[0].witness] == [11, 12, 7]


def test_py314_forkserver_children_do_not_inherit_cuda(tmp_path):
    assert _lint(tmp_path, FORK_AFTER_INIT, "py314") == ()


def test_explicit_fork_context_is_a_bug_on_py314_too(tmp_path):
    text = FORK_AFTER_INIT.replace("mp.Process(", 'mp.get_context("fork").Process(')
    findings = _lint(tmp_path, text, "py314")
    assert [(f.code, f.line) for f in findings] == [("CUD005", 12)]
    assert "start method 'fork'" in findings[0].message


def test_cud004_cvd_warning_has_warning_severity(tmp_path):
    text = 'import os\nimport GPUtil\nos.environ["CUDA_VISIBLE_DEVICES"] = str(GPUtil.getFirstAvailable()[0])\n'
    findings = _lint(tmp_path, text, "py310")
    # (the write also ignores a restriction the process may have been given: CUD010, an error)
    assert [(f.code, f.line, f.severity) for f in findings] == [("CUD004", 3, "warning"), ("CUD010", 3, "error")]
