"""cudalint.engine.heap: the C heap's free room goes back to the system before a big analysis."""
from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

_PROGRAM = textwrap.dedent(
    """
    import sys
    from cudalint.engine.heap import MIN_MODULES, give_back_free_memory

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    # 100 KB blocks come from the C heap (below glibc's mmap threshold); the last one, kept, holds
    # the heap's top, so glibc cannot give the room back by itself when the rest are freed
    blocks = [b"x" * 100_000 for _ in range(1_000)]
    kept = b"y" * 100_000
    del blocks
    before = rss_mb()
    give_back_free_memory(int(sys.argv[1]))
    print(before, rss_mb())
    """
)


def _rss_around(modules: int) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", _PROGRAM, str(modules)], capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    return before, after


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_big_project_gives_the_free_room_back() -> None:
    from cudalint.engine.heap import MIN_MODULES

    before, after = _rss_around(MIN_MODULES)
    assert before >= 100 and after <= before - 80, (before, after)  # 100 MB freed in the heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_small_project_leaves_the_heap_alone() -> None:
    from cudalint.engine.heap import MIN_MODULES

    before, after = _rss_around(MIN_MODULES - 1)
    assert before >= 100 and after >= before - 5, (before, after)


def test_without_malloc_trim_nothing_happens(monkeypatch) -> None:
    """musl, macOS and Windows have no malloc_trim: the run goes on."""
    import ctypes

    from cudalint.engine import heap

    def no_library(name):
        raise OSError("no C library by that name")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    heap.give_back_free_memory(heap.MIN_MODULES)
