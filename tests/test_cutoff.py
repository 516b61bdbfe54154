"""Early cutoff (cudalint.engine.run_keys): an edit that leaves every summary as it was reuses the
earlier findings without analysis; any edit that changes what a summary says, or what the run
reports, does not. Each test pairs a run with the cache against the same run without it."""
from __future__ import annotations

import shutil
from pathlib import Path

from cudalint.api import lint_paths
from cudalint.core.catalogue import load_catalogue
from cudalint.engine.cache import Cache
from tests.fixture_expectations import FIXTURES

# the shape of fixtures/CUD004/bad_nvml_index_as_ordinal.py (from the LMQL seed's per-GPU workers)
WORKERS = """import pynvml
import torch


def workers():
    pynvml.nvmlInit()
    for i in range(pynvml.nvmlDeviceGetCount()):
        torch.cuda.set_device(i)
"""


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    (src / "workers.py").write_text(WORKERS)
    return src


def _run(src: Path, cache_dir: Path) -> tuple[list[str], Cache]:
    cache = Cache.open(cache_dir, load_catalogue())
    result = lint_paths([str(src)], cache=cache)
    return [f"{Path(f.path).name}:{f.line}:{f.column}: {f.code} {f.message}" for f in result.findings], cache


def _plain(src: Path) -> list[str]:
    return [f"{Path(f.path).name}:{f.line}:{f.column}: {f.code} {f.message}" for f in lint_paths([str(src)]).findings]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_comment_at_the_end_reuses_the_findings_and_reads_one_summary(tmp_path: Path) -> None:
    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    assert [line.split(": ")[1].split()[0] for line in first] == ["CUD001", "CUD001", "CUD003", "CUD004"]
    (src / "gpus.py").write_text((src / "gpus.py").read_text() + "\n# a comment\n")
    second, cache = _run(src, tmp_path / "c")
    assert second == first == _plain(src)
    # the old summary of gpus.py, read to compare; no other summary is read, no analysis runs
    assert cache.runs_reused == 1 and cache.hits == 1
    # and the next run with nothing changed takes the whole-run result by the files' bytes
    third, cache = _run(src, tmp_path / "c")
    assert third == first and cache.runs_reused == 1 and cache.hits == 0


def test_a_summary_that_moved_a_line_is_analyzed_again(tmp_path: Path) -> None:
    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    (src / "gpus.py").write_text("# a comment on top moves every line\n" + (src / "gpus.py").read_text())
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 0
    assert second == _plain(src) != first
    assert "gpus.py:6:5: CUD001" in " ".join(second) and "gpus.py:5:5: CUD001" in " ".join(first)


def test_a_message_that_changed_with_the_same_lines_is_analyzed_again(tmp_path: Path) -> None:
    """A Label compares equal by its origin alone (cudalint.core.ir.Label): the cutoff compares the
    summaries' encodings, which hold the text a message quotes."""
    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    assert any("`i` is an NVML/nvidia-smi index" in line for line in first)
    _edit(src / "workers.py", "for i in range(pynvml.nvmlDeviceGetCount()):\n        torch.cuda.set_device(i)", "for gpu in range(pynvml.nvmlDeviceGetCount()):\n        torch.cuda.set_device(gpu)")
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 0
    assert second == _plain(src)
    assert any("`gpu` is an NVML/nvidia-smi index" in line for line in second)


def test_a_file_that_cannot_be_read_names_the_run_by_its_cud900(tmp_path: Path) -> None:
    """A file without bytes to key takes part in both names of the run by its CUD900 (run_keys'
    `_add_problems`): why it cannot be read changed, every summary as it was, the run says the new why."""
    import os

    src = _project(tmp_path)
    os.symlink("missing.py", src / "broken.py")
    first, _ = _run(src, tmp_path / "c")
    assert "broken.py:1:1: CUD900 cannot read: no such file (a broken symlink?)" in first
    os.mkfifo(tmp_path / "fifo")
    (src / "broken.py").unlink()
    os.symlink(tmp_path / "fifo", src / "broken.py")
    second, cache = _run(src, tmp_path / "c")
    assert second == _plain(src) != first
    assert "broken.py:1:1: CUD900 skipped: not a regular file (a FIFO, socket or device)" in second and cache.runs_reused == 0


def test_a_file_directive_added_as_a_comment_still_silences_its_file(tmp_path: Path) -> None:
    """`# cudalint: noqa` leaves the summary as it was, and the reused findings are those before
    the files' own directives: they are applied again on the reused ones."""
    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    (src / "workers.py").write_text(WORKERS + "# cudalint: noqa: CUD004\n")
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 1
    assert second == _plain(src) == [line for line in first if not line.startswith("workers.py")]
    # the directive goes again: the finding comes back
    (src / "workers.py").write_text(WORKERS + "\n")
    third, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 1 and third == first


def test_a_line_noqa_changes_the_summary_and_the_findings(tmp_path: Path) -> None:
    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    _edit(src / "workers.py", "torch.cuda.set_device(i)", "torch.cuda.set_device(i)  # noqa: CUD004")
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 0
    assert second == _plain(src) == [line for line in first if not line.startswith("workers.py")]


def test_a_file_that_gains_an_effect_is_analyzed(tmp_path: Path) -> None:
    """A file that did nothing the checks judge and now writes the environment changes the run's input."""
    src = _project(tmp_path)
    (src / "late.py").write_text("import os\n\nX = 1\n")
    first, _ = _run(src, tmp_path / "c")
    (src / "late.py").write_text('import os\n\nimport serve\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n')
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 0
    assert second == _plain(src) and "late.py:5:1: CUD001" in " ".join(second) and second != first


def test_a_planted_summary_name_is_a_miss(tmp_path: Path) -> None:
    """The index is signed (cudalint.core.cache_files); a name in an entry of the wrong shape makes
    the entry a miss, and the findings are those of a run without the cache."""
    import json

    from cudalint.core import cache_files

    src = _project(tmp_path)
    first, _ = _run(src, tmp_path / "c")
    (idx,) = (tmp_path / "c" / "index").glob("*.idx")
    index = json.loads(idx.read_bytes().partition(b"\n")[2])
    forged = {k: v[:3] + ["not a key"] + v[4:] for k, v in index.items()}  # (the summary name)
    cache_files.write(tmp_path / "c", idx.relative_to(tmp_path / "c").as_posix(), json.dumps(forged).encode())
    (src / "workers.py").write_text(WORKERS.replace("set_device(i)", "set_device(0)"))
    second, cache = _run(src, tmp_path / "c")
    assert cache.runs_reused == 0 and second == _plain(src) != first


def test_the_same_bytes_make_the_same_summary() -> None:
    """Labels are collected in sets ordered by their syntax nodes' addresses; the IR lists them in
    source order, or a summary's encoding (and the cause a finding names first) would change from
    run to run. Both summaries stay alive, so the second one's nodes have other addresses."""
    from cudalint.engine.serialize import encode
    from cudalint.summary.from_bytes import _summarize_bytes

    cat = load_catalogue()
    files = sorted(p for p in FIXTURES.rglob("*.py"))
    assert len(files) > 100
    kept = []
    for path in files:
        data = path.read_bytes()
        first = _summarize_bytes(str(path), data, "m", False, cat)
        second = _summarize_bytes(str(path), data, "m", False, cat)
        kept.append((first, second))
        assert encode(first) == encode(second), path
