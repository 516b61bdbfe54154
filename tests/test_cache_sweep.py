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
from cudalint.core import cache_files, cache_packs
from cudalint.core.cache_packs import SUMMARIES
from cudalint.core.catalogue import load_catalogue
from cudalint.engine import cache_sweep
from cudalint.engine.cache import Cache, lean_key, named_summaries
from tests.fixture_expectations import FIXTURES
from tests.support.packs import pack_files, summary_records

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


def _pack(root: Path, records: list[tuple[str, bytes]], days: float) -> Path:
    """A pack of its own holding `records`, last written `days` ago."""
    cache_packs.close_all()
    for name, payload in records:
        cache_packs.append(root, SUMMARIES, name, payload)
    pack = root / SUMMARIES / cache_packs._writers[(str(root), SUMMARIES)].name
    cache_packs.close_all()
    return _aged(pack, days)


def test_a_sweep_removes_what_no_run_can_use_and_nothing_else(tmp_path: Path) -> None:
    src, root = _project(tmp_path)
    ours = _files(root)
    (index,) = (root / "index").iterdir()
    (own,) = pack_files(root)
    _aged(own, 3)  # (the project's own summaries are days old too: named, they stay, merged with the other small packs)
    k = [f"{c * 2}{c * 62}" for c in "0123456789abcdef"]
    gone = {
        _entry(root, f"runs/{k[1]}.run", 31),  # not written for a month
        _entry(root, f"fixes/{k[2]}.json", 31),
        _entry(root, f"catalogue/{k[3][:32]}.json", 31),
        _pack(root, [(k[4], b"4")], 2),  # named only by an index not written for a month
        _entry(root, f"index/{k[5][:16]}.idx", 31, json.dumps({"/x\0x": [1, 2, k[4], k[4], "x", k[4]]}).encode()),
        _aged(_new(root / SUMMARIES / ("0" * 32 + ".pack"), b""), 2),  # a writer died before its first record
    }
    mixed = _pack(root, [(k[0], b"0"), (k[8], b"8")], 2)  # named by no index / by another cudalint's, in use
    gone.add(mixed)
    kept = {
        _pack(root, [(k[6], b"6")], 0.5),  # a run under way may name it yet
        _entry(root, f"runs/{k[7]}.run", 29),
        _entry(root, f"index/{k[9][:16]}.idx", 1, json.dumps({f"{src / 'serve.py'}\0a": [1, 2, k[8], k[8], "serve", k[8]], f"{src}\0b": 5, f"{src}\0c": [1, 2]}).encode()),
        _aged(_new(root / SUMMARIES / ("e" * 32 + ".pack"), b"not a pack"), 40),  # a pack's name, not a pack
        _aged(_new(root / SUMMARIES / "notes.txt"), 40),  # a user's file
        _aged(_new(root / "runs" / "notes.txt"), 40),
        _aged(_new(root / "runs" / f".tmp-123-{'cd' * 4}-8.json"), 0.5),
    }
    gone.add(_aged(_new(root / "runs" / f".tmp-123-{'ab' * 4}-7.json"), 2))  # a writer died here
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.copyfile(mixed, victim / mixed.name)
    _aged(victim / mixed.name, 40)
    (root / SUMMARIES / ("d" * 32 + ".pack")).symlink_to(victim / mixed.name)  # a pack that is a link: not followed
    (root / "fixes" / (k[10] + ".json")).symlink_to(victim / mixed.name)  # an entry that is a link
    kept |= {root / SUMMARIES / ("d" * 32 + ".pack"), root / "fixes" / (k[10] + ".json")}
    _aged(index, 1)
    assert cache_sweep.sweep(root, time.time(), named_summaries) == 6
    assert index.stat().st_mtime < time.time() - DAY / 2  # (every file it names is there: not written again)
    left = _files(root)
    assert not any(p.relative_to(root).as_posix() in left for p in gone)
    assert all(p.relative_to(root).as_posix() in left for p in kept)
    assert ours - {own.relative_to(root).as_posix()} <= left and sorted(p.name for p in victim.iterdir()) == [mixed.name]
    # the mixed pack's record in use went to a new pack; the others stayed where they were
    names = [name for name, _payload in summary_records(root)]
    assert k[0] not in names and names.count(k[8]) == 1 and k[6] in names
    assert not own.exists() and len(names) == len(cache_files.read(root, f"index/{index.name}")) + 2
    assert len([p for p in pack_files(root) if not p.is_symlink() and p.read_bytes().startswith(b"CUDP")]) == 2  # (k6's, and the merged one)
    assert _findings(lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))) == _findings(lint_paths([str(src)]))


def test_a_file_that_went_leaves_the_index_then_its_summary_goes(tmp_path: Path) -> None:
    src, root = _project(tmp_path)
    index = next((root / "index").iterdir())
    before = cache_files.read(root, f"index/{index.name}")
    (src / "gpus.py").unlink()
    gpus = [hit[2] for where, hit in before.items() if where.endswith("gpus.py")]
    assert len(gpus) == 1
    cache_packs.close_all()
    for p in pack_files(root):
        _aged(p, 2)
    assert cache_sweep.sweep(root, time.time(), named_summaries) == 1
    after = cache_files.read(root, f"index/{index.name}")
    assert set(after) == {w for w in before if not w.endswith("gpus.py")}
    names = sorted(name for name, _payload in summary_records(root))
    # (kept lean: no module of it makes a llama.cpp context, cudalint.summary.thread_free)
    assert names == sorted(lean_key(hit[2]) for hit in after.values()) and lean_key(gpus[0]) not in names
    assert _findings(lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))) == _findings(lint_paths([str(src)]))


def test_a_pack_someone_still_writes_to_is_left_alone(tmp_path: Path) -> None:
    """This process's own pack (the language server's, say) is never rewritten under it, and a
    pack removed under a writer makes it start a new one, not write into the removed file."""
    root = tmp_path / "cache"
    k = ["a" * 64, "b" * 64, "c" * 64]
    cache_packs.close_all()
    cache_packs.append(root, SUMMARIES, k[0], b"old")
    (mine,) = pack_files(root)
    _aged(mine, 2)
    assert cache_packs.compact(root, SUMMARIES, lambda name: False, time.time() - DAY) == 0 and mine.exists()
    cache_packs.close_all()
    assert cache_packs.compact(root, SUMMARIES, lambda name: False, time.time() - DAY) == 1 and not mine.exists()
    cache_packs.append(root, SUMMARIES, k[1], b"one")
    (first,) = pack_files(root)
    fd = cache_packs._writers[(str(root), SUMMARIES)].fd
    first.unlink()  # (another process's sweep)
    cache_packs.append(root, SUMMARIES, k[2], b"two")
    try:  # the removed pack's descriptor was closed (its number may serve the new pack now)
        assert os.fstat(fd).st_nlink == 1
    except OSError:
        pass
    assert [name for name, _payload in summary_records(root)] == [k[2]]
    cache_packs.close_all()


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
    stale = _pack(root, [(f"ab{'1' * 62}", b"x")], 2)
    _aged(root / cache_sweep.STAMP, 2)
    lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))  # nothing changed: no index written
    assert stale.exists() and (root / cache_sweep.STAMP).stat().st_mtime < time.time() - DAY
    (src / "gpus.py").write_text((src / "gpus.py").read_text() + "\n\ndef more():\n    return 1\n")
    lint_paths([str(src)], cache=Cache.open(root, load_catalogue()))
    assert not stale.exists() and (root / cache_sweep.STAMP).stat().st_mtime > time.time() - 60


def _new(path: Path, content: bytes = b"{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path
