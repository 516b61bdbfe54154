"""Hand the C heap's free memory back to the system between the loading of a big project and its
analysis.

The workers' results arrive as pickles of whole chunks (megabytes each), kept until the parent has
taken every summary of a chunk; CPython's small objects live in arenas of their own, so the room
those pickles leave in the C library's heap is never reused by the summaries and the analysis that
follow, and glibc keeps it (it returns only the top of its heap on its own). On vllm 0.33.0 that was 61 MB
held through the analysis, where the run's peak is: `malloc_trim(0)` there took the peak from 383
to 339 MB. Where the C library has no `malloc_trim` (musl, macOS, Windows) nothing is done.
"""
from __future__ import annotations

# below this many modules the heap is small, and importing ctypes (a few milliseconds) would show
# in a run that touched one file
MIN_MODULES = 500


def give_back_free_memory(modules: int) -> None:
    if modules < MIN_MODULES:
        return
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim  # (the C library the interpreter itself runs on)
    except Exception:  # no such function here, or no C library ctypes can open by that name
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
