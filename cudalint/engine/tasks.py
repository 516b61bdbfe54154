"""The work done in a worker process (or in-process when a run is serial): read a file, key and
summarize it; and how a chunk of that work travels back to the parent (cudalint.engine.runner).
"""
from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from cudalint.inputs import source
from cudalint.engine.cache import Cache
from cudalint.core.findings import Finding
from cudalint.engine.fileinfo import FileInfo
from cudalint.core.deep import call_roomy as _deep
from cudalint.engine.gc_pause import paused_gc

if TYPE_CHECKING:  # (imported where they are used: the runner imports this module on runs the cache answers whole)
    import queue

    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR


def _read(info: FileInfo) -> Union[bytes, Finding]:
    return info.text if info.text is not None else source.read_bytes(info.path)


def _catalogue(ctx: Union[Catalogue, tuple[str, ...]], cache_dir: Optional[str] = None) -> Catalogue:
    # in-process the caller's catalogue itself; in a worker the same files loaded again, their parsed
    # TOML read from the run's cache where the caller left it (tomllib took 20 ms of a worker's start)
    from cudalint.core.catalogue import Catalogue, load_catalogue

    return ctx if isinstance(ctx, Catalogue) else load_catalogue(ctx, cache_dir=cache_dir)


def _first_task(item: tuple, extra, cache_dir: Optional[str] = None) -> tuple[str, str, Optional[tuple[int, int]], Any, bool, str]:
    """(path, key, stamp, summary or CUD900 finding, whether it was made here, its form) of a file the
    cache's index does not know unchanged; key "": it cannot be read (the finding says why). Every
    file is summarized: on every fetched tree the summaries a selection spared were fewer than the
    scan that chose them cost (cudalint.engine.runner).

    `item`: (file, salt, the key the index recorded for it or None, whether a lean summary will do).
    The form: WHOLE (kept whole: the run needs the thread model's events, or bytes other than the
    recorded key's, compared whole with the earlier summary: cudalint.engine.run_keys), LEAN (made
    or read lean: cudalint.summary.thread_free), or "" (whole, may be stripped)."""
    info, salt, recorded, lean_ok = item
    try:
        st = os.stat(info.path)
        stamp: Optional[tuple[int, int]] = (st.st_mtime_ns, st.st_size)  # before reading: never newer than the bytes
    except OSError:
        stamp = None
    data = _read(info)
    if not isinstance(data, Finding):
        data = source.too_big(info.path, data) or data
    if isinstance(data, Finding):
        return info.path, "", None, data, False, ""
    key = Cache.make_key(salt, info.path, info.module, data)
    whole = (recorded is not None and recorded != key) or not lean_ok
    lean = not whole
    if cache_dir is not None and info.cached:
        # bytes summarized before under another stamp (a checkout, a cache restored by CI: every
        # file's mtime is new): their entry, instead of a parse
        cache = _cache(cache_dir, salt)
        if lean:
            hit = _deep(lambda: cache.get_lean(key))
            if hit is not None:
                return info.path, key, stamp, hit, False, LEAN
        hit = _deep(lambda: cache.get(key))
        if hit is not None:
            return info.path, key, stamp, hit, False, WHOLE if whole else ""
    result = summarize_bytes(info.path, data, info.module, info.is_package, _catalogue(extra, cache_dir), lean=lean)
    form = LEAN if lean and type(result) is not Finding else (WHOLE if whole else "")
    return info.path, key, stamp, _deliver(info, key, salt, result, cache_dir, form == LEAN), True, form


# `_first_task`'s forms of a summary
WHOLE = "whole"
LEAN = "lean"


# In a pool worker: the cache entries it made, written by a thread of its own while the worker has
# no chunk to work on (`start_worker`). Encoding a summary and writing it was an eighth of a worker's
# time on transformers when each had a file of its own (appended to the worker's pack since
# cudalint.core.cache_packs, the encoding is most of what is left); at the end of pass 1 one worker
# finishes before the other, and the parent unpacks and analyzes alone (a fifth of the run) while
# both would idle. None: write at once (in-process runs, flake8's workers).
_LATER: "Optional[queue.SimpleQueue]" = None
_IDLE = threading.Event()  # set while the worker has no chunk to work on
_IDLE_SINCE = [0.0]  # when it last finished one (time.monotonic)
# Between two chunks the next one starts at once: the writer waits this long for the worker to
# stay idle, so that an entry's encoding (which holds the interpreter) never delays a chunk.
_QUIET = 0.02


def _deliver(info: FileInfo, key: str, salt: str, result: Union[ModuleIR, Finding], cache_dir: Optional[str], lean: bool = False) -> Any:
    """Into the cache (now, or when this worker is idle), and back to the caller."""
    if cache_dir is not None and info.cached:
        if _LATER is not None:
            _LATER.put((cache_dir, salt, key, result, lean))
        else:
            _write(cache_dir, salt, key, result, lean)
    return result


def _cache(cache_dir: str, salt: str) -> Cache:
    """The run's cache, as a worker (which has its folder and salt, not the object) opens it."""
    return Cache(directory=cache_dir, salt=salt)


def _write(cache_dir: str, salt: str, key: str, result: Union[ModuleIR, Finding], lean: bool = False) -> None:
    _deep(lambda: _cache(cache_dir, salt).put(key, result, lean))


def start_worker(folder: str) -> None:
    """A pool worker's initializer (cudalint.engine.runner._executor): enter the run's folder, and
    start the thread that writes the cache entries while the worker is idle. As the pool shuts the
    worker down, multiprocessing's exit finalizers let it write the rest; the parent waits for that
    only after its analysis (`Loaded.settle`), and a worker that dies first leaves misses, never a
    wrong entry (each entry is written whole)."""
    global _LATER
    import gc
    import queue
    from multiprocessing.util import Finalize

    from cudalint.safepath import enter

    enter(folder)
    # the summarizer's modules, before the first chunk comes (cudalint.engine.runner.standby: while
    # the caller still prepares it); imported on the first file, they were 35 ms of each worker's
    import cudalint.summary.from_bytes  # noqa: F401
    import cudalint.summary.summarize  # noqa: F401
    # The cycle collector stays off for the worker's life: let back on after each chunk
    # (`paused_gc`), its first collection walked everything the chunk had made and still held
    # (1.3 s of the workers' 53 s on vllm). Summaries and syntax trees are freed by reference counts.
    gc.disable()
    _LATER = queue.SimpleQueue()
    _IDLE.set()
    writer = threading.Thread(target=_write_when_idle, args=(_LATER,), name="cudalint-cache-writer", daemon=True)
    writer.start()
    Finalize(None, _write_rest, args=(_LATER, writer), exitpriority=10)


# the writer thread's niceness: its writes yield the cores to the parent's analysis, which waits for
# nothing it does (vllm, when the parent also made a selection: 1.54 -> 0.93 s, the run 29.5 -> 28.0 s)
_WRITER_NICE = 10


def _write_when_idle(later: "queue.SimpleQueue") -> None:
    try:  # (Linux: one thread's niceness; elsewhere the call fails and the thread runs as it is)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _WRITER_NICE)
    except (AttributeError, OSError):
        pass
    while True:
        entry = later.get()
        if entry is None:
            return
        while True:
            _IDLE.wait()
            quiet = time.monotonic() - _IDLE_SINCE[0]
            if quiet >= _QUIET:
                break
            time.sleep(_QUIET - quiet)
        _write(*entry)


def _write_rest(later: "queue.SimpleQueue", writer: threading.Thread) -> None:
    global _LATER
    _LATER = None
    _IDLE_SINCE[0] = float("-inf")
    _IDLE.set()
    later.put(None)
    writer.join()


def _summary_task(item: tuple[FileInfo, str, str], extra, cache_dir: Optional[str]) -> tuple[str, Any, bool]:
    """(path, summary or CUD900 finding, whether the bytes changed since the index recorded `key`) of
    a file whose summary the cache should have held. The summary is cached under the key of the bytes
    it was made from, never under the recorded key for other bytes."""
    info, key, salt = item
    data = _read(info)
    if isinstance(data, Finding):
        return info.path, data, True
    now = Cache.make_key(salt, info.path, info.module, data)
    result = summarize_bytes(info.path, data, info.module, info.is_package, _catalogue(extra, cache_dir))
    return info.path, _deliver(info, now, salt, result, cache_dir), now != key


def summarize_bytes(path: str, data: bytes, modname: str, is_package: bool, catalogue: Catalogue, lean: bool = False) -> Union[ModuleIR, Finding]:
    from cudalint.summary.from_bytes import _summarize_bytes  # one way to summarize, the library's own

    return _summarize_bytes(path, data, modname, is_package, catalogue, lean)


def _run_chunk(fn_name: str, items: list, extra: tuple[str, ...], kwargs: dict) -> bytes:
    """In a worker: `fn` over `items`, pickled here (with a deep stack if the IR is deeply nested:
    pickling recurses, and the pool's own pickling would fail the whole run)."""
    fn = globals()[fn_name]
    _IDLE.clear()  # (the cache writer waits: cudalint.engine.tasks.start_worker)
    try:
        return _run(fn_name, fn, items, extra, kwargs)
    finally:
        _IDLE_SINCE[0] = time.monotonic()
        _IDLE.set()


def _run(fn_name: str, fn: Callable, items: list, extra: tuple[str, ...], kwargs: dict) -> bytes:
    import pickle

    from cudalint.core.ir import ModuleIR

    with paused_gc():
        results = [fn(item, extra, **kwargs) for item in items]
        if fn_name == "_first_task":
            # the summaries stay bytes until the parent takes them (`load_files`): one pickle for the
            # chunk's, which share their strings and positions (cudalint.summary.summarize._SHARED);
            # stripped of the thread model's events here (cudalint.engine.lean) if not made lean,
            # unless the summary makes a llama.cpp context or the parent keeps it whole (WHOLE): on
            # vllm the parent stripped and unpickled them alone, a tenth of its share of the run
            from cudalint.summary.thread_free import strip

            made, stripped = [], []
            for r in results:
                summary, form = r[3], r[5]
                if type(summary) is ModuleIR:
                    lean = summary if form or summary.makes_llama else _deep(lambda: strip(summary))
                    made.append(lean)
                    stripped.append(form == LEAN or lean is not summary)
            if made:
                blob = _deep(lambda: pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
                at = iter(range(len(made)))
                results = [(*r[:3], (blob, (i := next(at)), stripped[i]), *r[4:]) if type(r[3]) is ModuleIR else r for r in results]
        return _deep(lambda: pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL))


def _unpacker() -> Callable[[Any], Any]:
    """A pass-1 summary as `_run_chunk` packed it ((its chunk's pickle, its place)) made an object,
    each chunk's pickle loaded once; an object stays itself."""
    loaded: dict[int, tuple[bytes, list]] = {}

    def unpack(value: Any) -> Any:
        if type(value) is not tuple:
            return value
        blob, at = value[0], value[1]
        hit = loaded.get(id(blob))
        if hit is None:
            import pickle  # (a run summarized in this process has no pickle to load)

            hit = loaded[id(blob)] = (blob, _deep(lambda: pickle.loads(blob)))
        made = hit[1]
        out, made[at] = made[at], None  # (the caller keeps it stripped: cudalint.engine.lean)
        if not any(made):
            del loaded[id(blob)]
        return out

    return unpack
