"""Files the scan finds likely to be chosen are summarized from the scan's own tree (one parse, not
two); one the selection then leaves out is a stand-in, as if it had never been summarized."""
from __future__ import annotations

import shutil
from pathlib import Path

from cudalint.core.catalogue import load_catalogue
from cudalint.engine import runner
from cudalint.scan import select
from tests.fixture_expectations import FIXTURES

JUDGED = ("child_env", "device_arg", "env_write", "gpu_index", "init", "monkeypatch", "process")


def _load(files: list[str]) -> runner.Loaded:
    return runner.load_files(files, load_catalogue(), jobs=1, judged=JUDGED)


def test_summaries_made_during_the_scan_change_nothing(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    (src / "plain.py").write_text("def helper(x):\n    return x + 1\n")  # selected by nobody
    files = sorted(str(p) for p in src.rglob("*.py"))
    monkeypatch.setattr(select, "likely_selected", lambda kinds, judged: False)
    parsed_twice = _load(files)
    monkeypatch.setattr(select, "likely_selected", lambda kinds, judged: True)  # every file, chosen or not
    all_early = _load(files)
    monkeypatch.undo()
    default = _load(files)
    assert parsed_twice.skipped >= 1  # (the test needs a file the selection leaves out)
    for loaded in (all_early, default):
        assert repr(loaded.modules) == repr(parsed_twice.modules)
        assert (loaded.summarized, loaded.skipped, loaded.problems) == (parsed_twice.summarized, parsed_twice.skipped, parsed_twice.problems)


def test_likely_selected_follows_the_judged_kinds() -> None:
    assert select.likely_selected(("env_write",), ("env_write",))
    assert select.likely_selected(("cuda_sink",), ("gpu_index", "env_write"))
    assert not select.likely_selected(("cuda_sink",), ("env_write",))  # CUD004 not judged
    assert not select.likely_selected((), JUDGED)
