"""The cache keeps the size of what it serves (cudalint.engine.cache_sweep): once a day a run that
writes the index removes what no run can use any more, only what cudalint wrote, never through a
link, and what stays gives the findings a run without the cache gives."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from cudalint.api import lint_paths
from cudalint.core import cache_files
from cudalint.core.catalogue import load_catalogue
from cudalint.engine import cache_sweep
from cudalint.engine.cache import Cache, named_summaries
from tests.fixture_expectations import FIXTURES

DAY = 24 * 3600


def _findings(result) -> list[tuple]:
    return [(f.path, f.line, f.code, f.message) for f in result.findings]


def _aged(path: Path, days: float) -> Path:
    when = time.time() - days * DAY
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def _entry(root: Path, name: str, days: float, payload: bytes = b"x") -> Path:
    cache_files.write(root, name, payload)
    return _aged(root / name, days)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _project(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    cache_dir = tmp_path / "cache"
    lint_paths([str(src)], cache=Cache.open(cache_dir, load_catalogue()))
    return src, cache_dir


def test_a_sweep_removes_what_no_run_can_use_and_nothing_else(tmp_path: Path) -> None:
    src, root = _project(tmp_path)
    ours = _files(root)
    (index,) = (root / "index").iterdir()
    named = sorted(n for n in ours if n.startswith("v2/"))
    for name in named:  # (the project's own summaries are days old too: named, they stay)
        _aged(root / name, 3)
    k = [f"{c * 2}{c * 62}" for c in "0123456789abcdef"]
    gone = {
        _entry(root, f"v2/{k[0][:2]}/{k[0]}.pickle", 2),  # named by no index
        _entry(root, f"runs/{k[1]}.run", 31),  # not written for a month
        _entry(root, f"fixes/{k[2]}.json", 31),
        _entry(root, f"catalogue/{k[3][:32]}.json", 31),
        _entry(root, f"v2/{k[4][:2]}/{k[4]}.pickle", 2),  # named by an index not written for a month
        _entry(root, f"index/{k[5][:16]}.idx", 31, json.dumps({"/x\0x": [1, 2, k[4], k[4], "x"]}).encode()),
        _aged(_new(root / "v2" / k[0][:2] / f".tmp-123-{'ab' * 4}-7.json"), 2),  # a writer died here
    }
    kept = {
        _entry(root, f"v2/{k[6][:2]}/{k[6]}.pickle", 0.5),  # a run under way may name it yet
        _entry(root, f"runs/{k[7]}.run", 29),
        _entry(root, f"v2/{k[8][:2]}/{k[8]}.pickle", 2),  # named by another cudalint's index, in use
        _entry(root, f"index/{k[9][:16]}.idx", 1, json.dumps({f"{src / 'serve.py'}\0a": [1, 2, k[8], k[8], "serve"], f"{src}\0b": 5, f"{src}\0c": [1, 2]}).encode()),
        _aged(_new(root / "v2" / k[0][:2] / f".tmp-123-{'cd' * 4}-8.json"), 0.5),
        _aged(_new(root / "v2" / k[0][:2] / ("e" * 64 + ".pickle")), 2),  # an entry's name, not signed
        _aged(_new(root / "v2" / k[0][:2] / "notes.txt"), 40),  # a user's file
        _aged(_new(root / "runs" / "notes.txt"), 40),
    }
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.copyfile(root / named[0], victim / Path(named[0]).name)
    _aged(victim / Path(named[0]).name, 40)
    (root / "v2" / "ff").symlink_to(victim)  # a shard that is a link: not followed
    (root / "fixes" / (k[10] + ".json")).symlink_to(victim / Path(named[0]).name)  # an entry that is a link
    kept |= {root / "v2" / "ff", root / "fixes" / (k[10] + ".json")}
    _aged(index, 1)
    assert cache_sweep.sweep(root, time.time(), named_summaries) == 6
    assert index.stat().st_mtime < time.time() - DAY / 2  # (every file it names is there: not written again)
    left = _files(root)
    assert not any(p.relative_to(root).as_posix() in left for p in gone)
    assert all(p.relative_to(root).as_posix() in left for p in kept)
    assert ours <= left and sorted(p.name for p in victim.iterdir()) == [Path(named[0]).name]
    assert _findings(lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))) == _findings(lint_paths([str(src)]))


def test_a_file_that_went_leaves_the_index_then_its_summary_goes(tmp_path: Path) -> None:
    src, root = _project(tmp_path)
    index = next((root / "index").iterdir())
    before = cache_files.read(root, f"index/{index.name}")
    (src / "gpus.py").unlink()
    gpus = [hit[2] for where, hit in before.items() if where.endswith("gpus.py")]
    assert len(gpus) == 1
    for p in (root / "v2").rglob("*.pickle"):
        _aged(p, 2)
    assert cache_sweep.sweep(root, time.time(), named_summaries) == 1
    after = cache_files.read(root, f"index/{index.name}")
    assert set(after) == {w for w in before if not w.endswith("gpus.py")}
    assert not list((root / "v2").rglob(f"{gpus[0]}.pickle")) and len(list((root / "v2").rglob("*.pickle"))) == len(after)
    assert _findings(lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))) == _findings(lint_paths([str(src)]))


def test_a_sweep_is_due_once_a_day_and_the_first_run_starts_the_clock(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    old = _entry(root, f"runs/{'a' * 64}.run", 40)
    now = time.time()
    assert cache_sweep.sweep_if_due(root, named_summaries, now) is None and old.exists()  # no stamp yet: made now
    stamp = root / cache_sweep.STAMP
    assert abs(stamp.stat().st_mtime - now) < 1
    assert cache_sweep.sweep_if_due(root, named_summaries, now + DAY - 60) is None and old.exists()
    assert cache_sweep.sweep_if_due(root, named_summaries, now + DAY) == 1 and not old.exists()
    assert abs(stamp.stat().st_mtime - (now + DAY)) < 1
    _entry(root, f"runs/{'b' * 64}.run", 40)
    assert cache_sweep.sweep_if_due(root, named_summaries, now - 2 * DAY) == 1  # a clock set back: sweep, restart the clock
    stamp.unlink()
    stamp.symlink_to(tmp_path / "elsewhere")
    assert cache_sweep.sweep_if_due(root, named_summaries, now + 9 * DAY) is None and not (tmp_path / "elsewhere").exists()
    stamp.unlink()
    os.mkfifo(stamp)
    assert cache_sweep.sweep_if_due(root, named_summaries, now + 9 * DAY) is None


def test_a_run_that_writes_the_index_sweeps_and_a_run_the_cache_answers_does_not(tmp_path: Path) -> None:
    src, root = _project(tmp_path)
    stale = _entry(root, f"v2/ab/ab{'1' * 62}.pickle", 2)
    _aged(root / cache_sweep.STAMP, 2)
    lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))  # nothing changed: no index written
    assert stale.exists() and (root / cache_sweep.STAMP).stat().st_mtime < time.time() - DAY
    (src / "gpus.py").write_text((src / "gpus.py").read_text() + "\n\ndef more():\n    return 1\n")
    lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))
    assert not stale.exists() and (root / cache_sweep.STAMP).stat().st_mtime > time.time() - 60


def _new(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path
