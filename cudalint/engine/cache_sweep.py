"""Keeping the cache folder the size of what it serves: once a day, what no run can use any more goes.

Every entry is named by content, so nothing in the cache is ever overwritten: each edit leaves the
old bytes' summary behind, each new input a run's findings, and each upgrade of cudalint (its code
is part of every key: cudalint.fingerprint) a whole new set beside the old one (vllm's: 72 MB).
Left alone the folder only grows. A run that writes the index (one that saw a change; a run the
cache answers whole writes nothing and never sweeps) removes, at most once a day (`SWEEP_EVERY`,
the mtime of `sweep.stamp`):

- the summaries no index names (records in the packs of `v3/`, cudalint.core.cache_packs): the
  index of each cudalint and catalogue that used the folder within `UNUSED_FOR` names every file's
  current summary (the entries of files that no longer exist leave the indexes first). A pack no
  one wrote to for a day that holds such records is rewritten without them (or removed when it
  keeps none);
- the indexes, whole-run findings, proven fixes and parsed catalogues (`index/`, `runs/`,
  `fixes/`, `catalogue/`) that no run wrote within `UNUSED_FOR`. A run file is read, not written,
  while nothing changes: a project left as it was for that long has its findings made once more;
- what writers killed mid-write left (cudalint.core.cache_files._TMP_NAME), a day old.

Only what cudalint wrote goes, never through a link (cudalint.core.cache_files.remove_entries). An
index that cannot be read (damaged, planted, signed with another machine's key) names nothing:
sweeping is a miss at worst, never a changed result. The day of grace keeps what a run still under
way has written before it saves its index.
"""
from __future__ import annotations

import os
import stat
import time

from cudalint.core import cache_files, cache_packs

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: cudalint.entry)
if TYPE_CHECKING:
    from typing import Callable

    from cudalint.fspath import PathLike

DAY = 24 * 3600.0
SWEEP_EVERY = DAY
UNUSED_FOR = 30 * DAY
STAMP = "sweep.stamp"
# what goes when unused (flat folders); the summaries (packs in `v3/`) go when unnamed
_BY_AGE = ("index", "runs", "fixes", "catalogue")


def sweep_if_due(root: PathLike, named: Callable[[PathLike], set[str]], now: float | None = None) -> int | None:
    """Sweep `root` when its last sweep is a day old (the first run only starts the clock); the
    number of entries removed, or None when none was due. `named`: the summaries the indexes name
    (cudalint.engine.cache.named_summaries, which knows the index's form)."""
    now = time.time() if now is None else now
    stamp = os.path.join(os.fspath(root), STAMP)
    try:
        st = os.lstat(stamp)
        if not stat.S_ISREG(st.st_mode):
            return None  # (not ours: never swept through, never replaced)
        due = st.st_mtime <= now - SWEEP_EVERY or st.st_mtime > now + DAY  # (a clock set back)
    except FileNotFoundError:
        _touch(stamp, now)
        return None
    except OSError:
        return None
    if not due or not _touch(stamp, now):  # (before the sweep: a run at the same time sees it done)
        return None
    return sweep(root, now, named)


def sweep(root: PathLike, now: float, named: Callable[[PathLike], set[str]]) -> int:
    """Remove what no run can use any more (see the module doc); the number of entries removed."""
    removed = 0
    for folder in _BY_AGE:  # (the indexes first: what only a stale one names goes below)
        removed += cache_files.remove_entries(root, folder, lambda name, st: st.st_mtime < now - UNUSED_FOR, False, now - DAY)
    keep = named(root)
    removed += cache_packs.compact(root, cache_packs.SUMMARIES, keep.__contains__, now - DAY)
    return removed


def _touch(path: str, now: float) -> bool:
    """Make or renew the stamp (a regular file of ours: never through a link)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError:
        return False
    try:
        os.utime(fd, (now, now))
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
