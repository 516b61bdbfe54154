"""Turn a list of files into module summaries: scan, select, parse, summarize; cached and in parallel.

Two passes over the files, each in worker processes when there are many:
1. scan every file's bytes (cudalint.prefilter) and hash them (the cache key);
2. summarize the files the prefilter selects. The scan ran CPython's own parser over every file, so
   a skipped file with a syntax error still gets its CUD900 (libcst then says where).

Workers are started with the spawn method (no state inherited from the parent), receive paths and
send back plain data (cudalint.serialize), never pickled objects of ours. Results are merged by path,
so the output does not depend on which worker finished first.
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

from cudalint import source
from cudalint.cache import Cache
from cudalint.catalogue import Catalogue, load_catalogue
from cudalint.findings import Finding
from cudalint.ir import ModuleIR
from cudalint.prefilter import Scan, scan, select
from cudalint.project import module_name
from cudalint.serialize import decode, encode

# below this many files a pool costs more (interpreter start-up, imports) than it saves
PARALLEL_MIN_FILES = 64


@dataclass(frozen=True)
class FileInfo:
    path: str
    module: str
    is_package: bool
    text: Optional[bytes] = None  # given contents (flake8's lines, --fix's overlay) instead of the file's
    cached: bool = True  # False: neither read from nor written to the cache (an overlay)


@dataclass
class Loaded:
    modules: list[ModuleIR]  # summarized files, and empty stand-ins for those the prefilter skipped
    problems: list[Finding]  # CUD900 findings, in file order
    summarized: int = 0  # files that got a syntax tree in this run (cache misses)
    skipped: int = 0  # files the prefilter decided need no summary
    run_key: str = ""  # names this exact input (every file's key, the configuration): see Cache.get_run
    reused: Optional[list] = None  # findings of an earlier run with the same run_key


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def load_files(
    paths: Sequence[str],
    catalogue: Catalogue,
    cache: Optional[Cache] = None,
    jobs: Optional[int] = None,
    prefilter: bool = True,
    judged: Iterable[str] = ("env_write",),
    extend_catalogue: Sequence[str] = (),
    run_salt: Optional[str] = "",
    texts: Optional[dict[str, str]] = None,
    uncached: Iterable[str] = (),
) -> Loaded:
    """Summaries of `paths` (module IR, or stand-ins for skipped files) and their CUD900 findings.

    `run_salt` names everything else the run's findings depend on (the configuration); with a cache,
    a run over unchanged files with the same salt returns the earlier findings (`reused`). None:
    the findings depend on more than these files, so nothing is reused."""
    texts = texts or {}
    uncached = set(uncached)
    infos = [_info(p, texts.get(p), p not in uncached) for p in paths]
    jobs = default_jobs() if jobs is None else max(1, jobs)
    salt = cache.salt if cache is not None else ""
    info_of = {i.path: i for i in infos}
    pool = _Pool(jobs if len(infos) >= PARALLEL_MIN_FILES else 1, tuple(extend_catalogue), catalogue)
    try:
        # pass 1: keys and scans (from the cache's index when the file's mtime and size are unchanged)
        keys: dict[str, str] = {}
        scans: dict[str, Scan] = {}
        problems: dict[str, Finding] = {}
        todo: list[FileInfo] = []
        known: list[FileInfo] = []  # unchanged since the index recorded their keys
        for info in infos:
            hint = cache.lookup(info.path) if cache is not None and info.text is None else None
            if hint is not None:
                keys[info.path] = hint
                known.append(info)
            else:
                todo.append(info)

        def scan_all(todo: list[FileInfo]) -> None:
            for path, key, raw, stamp in pool.map(_scan_task, [(i, salt) for i in todo]):
                if isinstance(raw, dict):
                    problems[path] = decode(raw)
                else:
                    keys[path], scans[path] = key, _scan_from(raw)
                    if cache is not None and stamp is not None and info_of[path].text is None:
                        cache.remember(path, stamp, key, raw)

        scan_all(todo)
        run_key = ""
        if cache is not None and run_salt is not None:
            h = hashlib.sha256(f"{salt}\0{run_salt}\0{prefilter}\0{sorted(judged)}".encode())
            for info in infos:
                h.update(f"\0{info.path}\0{keys.get(info.path, '')}".encode())
            for path in sorted(problems):
                h.update(json.dumps(encode(problems[path])).encode())
            run_key = h.hexdigest()
            reused = cache.get_run(run_key)
            if reused is not None:
                cache.save_index()
                return Loaded(modules=[], problems=[], run_key=run_key, reused=reused)
        if known:  # the run could not be reused: the scans of the unchanged files, from the cache
            again = []
            for info in known:
                raw = cache.scan_of(keys[info.path])  # type: ignore[union-attr]
                if raw is None:
                    again.append(info)
                else:
                    scans[info.path] = _scan_from(raw)
            scan_all(again)
        with _no_gc():
            chosen = set(scans) if not prefilter else select(scans, {i.path: i.module for i in infos if i.path in scans}, judged)
        # pass 2: summaries of the chosen files, and of the others CPython's parser refused (CUD900)
        results: dict[str, Any] = {}
        work: list[tuple[FileInfo, str, bool, str]] = []
        for info in infos:
            if info.path not in scans:
                continue
            want = info.path in chosen
            if not want and scans[info.path].syntax_ok:
                continue
            # the same entries as cudalint.api.load_module (and so the flake8 plugin) reads and writes
            hit = _deep(lambda: cache.get(keys[info.path])) if cache is not None and want and info.cached else None
            if hit is not None:
                results[info.path] = hit
            else:
                work.append((info, keys[info.path], want, salt))
        summarized = 0
        for path, raw in pool.map(_summary_task, work, cache_dir=str(cache.directory) if cache is not None else None):
            if raw is None:
                continue
            results[path] = _deep(lambda: decode(raw))
            summarized += path in chosen
    finally:
        pool.close()
    modules: list[ModuleIR] = []
    out_problems: list[Finding] = []
    skipped = 0
    for info in infos:
        if info.path in problems:
            out_problems.append(problems[info.path])
            continue
        value = results.get(info.path)
        if isinstance(value, Finding):
            out_problems.append(value)
        elif isinstance(value, ModuleIR) and info.path in chosen:
            modules.append(value)
        else:
            skipped += 1
            # resolves like the real module, runs nothing and returns: what its summary would say
            modules.append(ModuleIR(path=info.path, module=info.module, top=()))
    if cache is not None:
        cache.save_index()
    return Loaded(modules=modules, problems=out_problems, summarized=summarized, skipped=skipped, run_key=run_key)


def _info(path: str, text: Optional[str], cached: bool) -> FileInfo:
    modname, is_package = module_name(os.path.abspath(path))
    data = text.encode("utf-8") if text is not None else None
    return FileInfo(path=path, module=modname, is_package=is_package, text=data, cached=cached)


def _read(info: FileInfo) -> Union[bytes, Finding]:
    return info.text if info.text is not None else source.read_bytes(info.path)


def _scan_from(raw: Sequence[Any]) -> Scan:
    kinds, may_stop, imports, top_kinds, top_targets, code_targets, func_imports, table, names, stars, defs, stops, syntax_ok = raw
    return Scan(
        kinds=tuple(kinds),
        may_stop=bool(may_stop),
        imports=tuple(imports),
        top_kinds=tuple(top_kinds),
        top_targets=tuple(top_targets),
        code_targets=tuple(code_targets),
        func_imports=tuple(func_imports),
        table=tuple(table),
        names=names,
        stars=tuple(stars),
        defs=defs,
        stops=stops,
        syntax_ok=bool(syntax_ok),
    )


def _scan_raw(s: Scan) -> list:
    return [
        list(s.kinds), s.may_stop, list(s.imports), list(s.top_kinds), list(s.top_targets), list(s.code_targets), list(s.func_imports),
        list(s.table), dict(s.names), list(s.stars), dict(s.defs), dict(s.stops), s.syntax_ok,
    ]


# ---------- work done in a worker (or in-process when serial) ------------------------------------
def _catalogue(ctx: Union[Catalogue, tuple[str, ...]]) -> Catalogue:
    # in-process the caller's catalogue itself; in a worker the same files loaded again
    return ctx if isinstance(ctx, Catalogue) else load_catalogue(ctx)


def _scan_task(item: tuple[FileInfo, str], extra) -> tuple[str, str, Any, Optional[tuple[int, int]]]:
    info, salt = item
    try:
        st = os.stat(info.path)
        stamp: Optional[tuple[int, int]] = (st.st_mtime_ns, st.st_size)  # before reading: never newer than the bytes
    except OSError:
        stamp = None
    data = _read(info)
    if isinstance(data, Finding):
        return info.path, "", encode(data), None
    key = Cache.make_key(salt, info.path, info.module, data)
    return info.path, key, _scan_raw(scan(data, _catalogue(extra), info.module, info.is_package)), stamp


def _summary_task(item: tuple[FileInfo, str, bool, str], extra, cache_dir: Optional[str]) -> tuple[str, Any]:
    """(path, encoded summary or CUD900 finding); None: a skipped file that libcst parses after all."""
    info, key, want, salt = item
    data = _read(info)
    if isinstance(data, Finding):
        return info.path, encode(data)
    result: Union[ModuleIR, Finding, None] = summarize_bytes(info.path, data, info.module, info.is_package, _catalogue(extra))
    if isinstance(result, ModuleIR) and not want:
        result = None  # CPython refused it but libcst did not: not our finding, not needed
    if result is None:
        return info.path, None
    if cache_dir is not None and info.cached:
        from pathlib import Path

        # the key was made from the bytes read in pass 1; a file changed since is summarized
        # under its old key, which a later run never asks for
        _deep(lambda: Cache(directory=Path(cache_dir), salt=salt).put(key, result))
    return info.path, _deep(lambda: encode(result))


def _deep(fn: Callable[[], Any]) -> Any:
    """fn(), again with a deep stack if the data is nested too deeply for the default one."""
    try:
        return fn()
    except RecursionError:
        from cudalint.deep import call_deep

        return call_deep(fn)


def summarize_bytes(path: str, data: bytes, modname: str, is_package: bool, catalogue: Catalogue) -> Union[ModuleIR, Finding]:
    from cudalint.api import _summarize_bytes  # one way to summarize, the library's own

    return _summarize_bytes(path, data, modname, is_package, catalogue)


def _run_chunk(fn_name: str, items: list, extra: tuple[str, ...], kwargs: dict) -> list:
    fn = globals()[fn_name]
    with _no_gc():
        return [fn(item, extra, **kwargs) for item in items]


@contextmanager
def _no_gc() -> Iterator[None]:
    """Syntax trees are large and acyclic: reference counting frees them. The cycle collector would
    walk every live node again and again while they are built (measured on timm: a third of a
    serial run), so it pauses while a batch of files is scanned, summarized or selected."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Pool:
    """A spawn-context process pool started on first use, or plain calls when `jobs` is 1."""

    def __init__(self, jobs: int, extra: tuple[str, ...], catalogue: Catalogue):
        self.jobs = jobs
        self.extra = extra
        self.catalogue = catalogue
        self.executor: Optional[ProcessPoolExecutor] = None

    def map(self, fn: Callable, items: list, **kwargs: Any) -> list:
        if not items:
            return []
        if self.jobs <= 1 or len(items) < PARALLEL_MIN_FILES:
            with _no_gc():
                return [fn(item, self.catalogue, **kwargs) for item in items]
        if self.executor is None:
            self.executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"))
        # many small chunks keep both workers busy to the end; order is restored by `map`
        size = max(1, min(64, len(items) // (self.jobs * 8)))
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        out: list = []
        for part in self.executor.map(_run_chunk, [fn.__name__] * len(chunks), chunks, [self.extra] * len(chunks), [kwargs] * len(chunks)):
            out.extend(part)
        return out

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown()
