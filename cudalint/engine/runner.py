"""Turn a list of files into module summaries: scan, select, parse, summarize; cached and in parallel.

Two passes over the files, each in worker processes when there are many:
1. scan every file's bytes (cudalint.scan.select) and hash them (the cache key);
2. summarize the files the prefilter selects. The scan ran CPython's own parser over every file, so
   a skipped file with a syntax error still gets its CUD900. A file whose own effects are judged is
   summarized in pass 1 already, from the scan's syntax tree (it is always selected).

Workers are started with the spawn method (no state inherited from the parent) and receive paths.
They send back their results (module IR, CUD900 findings, scans as lists) pickled, through the pool's
pipe only: pickle builds objects at C speed, where decoding JSON-like data cost the parent a second
on torch. Nothing pickled is ever stored; the cache is JSON (cudalint.engine.cache). Results are merged by
path, so the output does not depend on which worker finished first.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from cudalint.inputs import source
from cudalint.engine import run_keys
from cudalint.engine.cache import Cache, scan_digest
from cudalint.core.findings import Finding
from cudalint.core.deep import call_roomy as _deep
from cudalint.engine.gc_pause import paused_gc
from cudalint.engine.indexed import Indexed, index_files
from cudalint.engine.fileinfo import FileInfo
from cudalint.engine.tasks import _CALLS_FIELDS, _read, _run_chunk, _scan_task, _summary_task, _unpacker, start_worker
from cudalint.safepath import trusted_cwd

if TYPE_CHECKING:  # (imported where used: a run the cache answers whole needs neither: `reused_run`)
    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR
    from cudalint.scan.scanner import Scan

# file names are bytes: one that is not UTF-8 reaches us with surrogates (PEP 383), and goes back so
_NAMES = ("utf-8", "surrogateescape")
# below this many files a pool costs more (interpreter start-up, imports) than it saves
PARALLEL_MIN_FILES = 64
# ...but a file this big takes longer to scan than a worker takes to start: see _Pool.map_scans
BIG_FILE_BYTES = 256 * 1024


@dataclass
class Loaded:
    modules: list[ModuleIR]  # summarized files, and empty stand-ins for those the prefilter skipped
    problems: list[Finding]  # CUD900 findings, in file order
    summarized: int = 0  # files that got a syntax tree in this run (cache misses)
    skipped: int = 0  # files the prefilter decided need no summary
    run_key: str = ""  # names this exact input (every file's key, the configuration): see Cache.get_run
    reused: Optional[list] = None  # findings of an earlier run with the same run_key, or the same summary_key
    summary_key: str = ""  # names the summaries this run analyzed (cudalint.engine.run_keys)
    # `reused` came by summary_key: the findings before the files' own `# cudalint: noqa` lines, which
    # a summary does not hold (the caller applies them)
    cut: bool = False
    # waits until the pool's workers have written the cache entries they kept and exited
    # (cudalint.engine.tasks.start_worker): the caller analyzes meanwhile, then calls it
    settle: Callable[[], None] = lambda: None


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
    run_salt: Optional[str] = None,
    cutoff: bool = True,
    indexed: Optional[Indexed] = None,
) -> Loaded:
    """Summaries of `paths` (module IR, or stand-ins for skipped files) and their CUD900 findings.

    `run_salt` names everything else the run's findings depend on (the configuration, and so the
    `judged` kinds, which follow from it and the catalogue the cache's salt names); with a cache, a
    run over unchanged files with the same salt returns the earlier findings (`reused`). None: the
    findings depend on more than these files, so nothing is reused. `cutoff`: an edit that leaves
    every summary as it was may reuse them too (cudalint.engine.run_keys), before the files' own
    directives are applied. `indexed`: pass 0, done already (`index_files` of the same paths, with the
    contents given instead of the files' and the files kept out of the cache)."""
    indexed = indexed if indexed is not None else index_files(paths, cache)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    pool = _Pool(jobs if len(indexed.infos) >= PARALLEL_MIN_FILES else 1, tuple(extend_catalogue), catalogue, cores=jobs)
    try:
        loaded = _load(pool, indexed, catalogue, cache, prefilter, judged, run_salt, cutoff)
    finally:
        settle = pool.close()
    loaded.settle = settle
    return loaded


def _load(
    pool: "_Pool",
    indexed: Indexed,
    catalogue: Catalogue,
    cache: Optional[Cache],
    prefilter: bool,
    judged: Iterable[str],
    run_salt: Optional[str],
    cutoff: bool,
) -> Loaded:
    """`load_files` with its pool."""
    from cudalint.core.ir import ModuleIR
    from cudalint.engine.lean import Lean

    salt = cache.salt if cache is not None else ""
    infos = indexed.infos
    info_of = {i.path: i for i in infos}
    cache_dir = str(cache.directory) if cache is not None else None
    lean = Lean()  # (the thread model's events, while no module makes a llama.cpp context: cudalint.engine.lean)
    # pass 1: keys and scans (from the cache's index when the file's mtime and size are unchanged)
    keys = dict(indexed.keys)
    scans: dict[str, Scan] = {}
    problems: dict[str, Finding] = {}
    todo = indexed.todo
    known = indexed.known  # unchanged since the index recorded their keys
    digests = dict(indexed.digests)
    before: dict[str, tuple[str, str]] = {}  # path -> (key, summary name) of the bytes it had, when they changed

    # summaries made in pass 1, from the scan's own syntax tree; from a worker still pickled (`_run_chunk`):
    # as objects beside the scans and the selection's memos they made vllm's peak (388 of 418 MB)
    early: dict[str, Any] = {}

    def scan_all(todo: list[FileInfo]) -> None:
        # what the index recorded of each file: one that may have changed has its new summary compared
        # whole with its old one (`before`), so a worker must not strip it (cudalint.engine.tasks._run)
        prior = {i.path: cache.previous(i.path) for i in todo if i.text is None} if cache is not None else {}
        items = [(i, salt, prior.get(i.path) is not None) for i in todo]
        for path, key, raw, stamp, summary in pool.map_scans(items, judged=tuple(judged) if prefilter else (), cache_dir=cache_dir):
            if isinstance(raw, Finding):
                problems[path] = raw
            else:
                keys[path], scans[path] = key, _scan_from(raw)
                if cache is not None and stamp is not None and info_of[path].text is None:
                    old = prior.get(path)
                    if old is not None and old[0] != key:
                        before[path] = old
                    digests[path] = cache.remember(path, info_of[path].module, stamp, key, raw)
                elif info_of[path].text is not None:  # an editor's buffer: its selection is reused too
                    digests[path] = scan_digest(raw)
                if summary is not None:
                    early[path] = summary if type(summary) is tuple else lean(path, summary, hold=path in before)

    scan_all(todo)
    run_key = ""
    if cache is not None and run_salt is not None:
        run_key = run_keys.source_key(salt, run_salt, prefilter, infos, keys, problems)
        reused = cache.get_run(run_key)
        if reused is not None:
            cache.save_index()
            return Loaded(modules=[], problems=[], run_key=run_key, reused=reused)
    memo = run_keys.selection_key(cache, infos, keys, digests, judged) if cache is not None and prefilter else None
    remembered = cache.get_selection(memo) if memo is not None else None  # type: ignore[union-attr]
    if remembered is not None:  # the same scans as a run before: its selection, and no scan read
        chosen, broken = remembered
        present = set(keys)
    else:
        if known:  # the scans of the unchanged files, from the cache
            again = []
            for info in known:
                raw = cache.scan_of(keys[info.path])  # type: ignore[union-attr]
                if raw is None:
                    again.append(info)
                else:
                    scans[info.path] = _scan_from(raw)
            scan_all(again)
        from cudalint.scan.select import select  # (not needed by a run the cache answers whole)

        with paused_gc():
            if not prefilter or _all_made(scans, early):
                chosen = set(scans)
            else:
                chosen = _deep(lambda: select(scans, {i.path: i.module for i in infos if i.path in scans}, judged))
        broken = {p for p, sc in scans.items() if not sc.syntax_ok}
        present = set(scans)
        if memo is not None:
            cache.put_selection(memo, chosen, broken)  # type: ignore[union-attr]
    # (selected: the summaries of pass 2 need the room more than the scans)
    scans.clear()
    if cache is not None:
        cache.save_index(forget_scans=True)
    # pass 2: summaries of the chosen files, and of the others CPython's parser refused (CUD900)
    results: dict[str, Any] = {}
    work: list[tuple[FileInfo, str, bool, str]] = []
    stored: list[FileInfo] = []  # unchanged, summarized before: read only if no earlier run answers
    summarized = 0
    unpack = _unpacker()
    for info in infos:
        if info.path not in present:
            continue
        want = info.path in chosen
        if not want and info.path not in broken:
            continue
        if want and info.path in early:
            made = early.pop(info.path)  # (an object was made lean as it arrived: `scan_all`)
            if type(made) is tuple:  # (from a worker, which stripped it unless told not to: made[2])
                results[info.path] = lean(info.path, unpack(made), hold=info.path in before, stripped=made[2])
            else:
                results[info.path] = made
            summarized += 1
            if cache is not None and info.cached:
                cache.misses += 1  # (made, and cached, while the file was scanned)
            continue
        if cache is not None and want and info.cached:
            stored.append(info)
        else:
            work.append((info, keys[info.path], want, salt))
    early.clear()  # (of files not chosen after all)
    del unpack
    fresh = [i for i in stored if i.path in before]  # compared with their old summaries below
    keep = lambda path, value: lean(path, value, hold=path in before)  # noqa: E731
    run_key, summarized = _summarize(pool, cache, fresh, work, keys, salt, chosen, results, run_key, summarized, cache_dir, keep)
    cut_key = ""
    if cache is not None and cutoff and run_salt is not None and run_key:
        names = run_keys.summary_names(cache, infos, results, before, keys, present, chosen, broken)
        cut_key = run_keys.summary_key(salt, run_salt, prefilter, judged, infos, chosen, names, problems) or ""
        reused = cache.get_run(cut_key) if cut_key else None
        if reused is not None:
            cache.save_index()
            return Loaded(modules=[], problems=[], run_key=run_key, reused=reused, summary_key=cut_key, cut=True)
    rest = [i for i in stored if i.path not in results]
    run_key, summarized = _summarize(pool, cache, rest, [], keys, salt, chosen, results, run_key, summarized, cache_dir, keep)
    # (compared whole with their earlier summaries above; now as lean as the others)
    for path in before:
        if path in results:
            results[path] = lean(path, results[path])
    again = {p for p in lean.repair() if p in results}  # a module makes a llama.cpp context: every summary whole
    if again:
        for path in again:
            del results[path]
        whole = [i for i in infos if i.path in again]
        stored_again = [i for i in whole if cache is not None and i.cached]
        work_again = [(i, keys[i.path], True, salt) for i in whole if not (cache is not None and i.cached)]
        hits = cache.hits if cache is not None else 0
        run_key, _ = _summarize(pool, cache, stored_again, work_again, keys, salt, chosen, results, run_key, 0, cache_dir)
        if cache is not None:
            cache.hits = hits  # (mostly this run's own entries, read again: no earlier run's work)
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
    return Loaded(modules=modules, problems=out_problems, summarized=summarized, skipped=skipped, run_key=run_key, summary_key=cut_key)


def _all_made(scans: dict[str, "Scan"], early: dict[str, Any]) -> bool:
    """Pass 1 summarized every file that parses: the selection, whose gain is the summaries it
    spares, can spare none, and every module is analyzed, as with the prefilter off (which finds
    what the prefiltered analysis finds: tests/test_prefilter.py). A project whose modules all
    import their own package (benchmarks/adversarial.py's cycles: 0.33 s of a 4.2 s run)."""
    return all(path in early for path, scan in scans.items() if scan.syntax_ok)


def _summarize(pool: "_Pool", cache: Optional[Cache], stored: list[FileInfo], work: list, keys: dict[str, str], salt: str, chosen: set[str], results: dict[str, Any], run_key: str, summarized: int, cache_dir: Optional[str], keep: Callable[[str, Any], Any] = lambda _path, value: value) -> tuple[str, int]:
    """Into `results`: the summaries of `stored` from the cache (or made again), and of `work`, as
    `keep` makes them (cudalint.engine.lean). Returns the run key ("" when a file changed while this
    run read it) and the count made."""
    work = list(work)
    for info in stored:
        # the same entries as cudalint.api.load_module (and so the flake8 plugin) reads and writes
        hit = _deep(lambda: cache.get(keys[info.path])) if cache is not None else None
        if hit is not None:
            results[info.path] = keep(info.path, hit)
        else:
            work.append((info, keys[info.path], True, salt))
    for path, result, changed in pool.map(_summary_task, work, cache_dir=cache_dir):
        if changed:  # edited while this run read it: these findings stand for no one input
            run_key = ""
        if result is None:
            continue
        results[path] = keep(path, result)
        summarized += path in chosen
    return run_key, summarized


def _scan_from(raw: Sequence[Any]) -> "Scan":
    from cudalint.scan.scanner import Scan

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


class _Pool:
    """A spawn-context process pool started on first use, or plain calls when `jobs` is 1."""

    def __init__(self, jobs: int, extra: tuple[str, ...], catalogue: Catalogue, cores: int = 1):
        if _daemonic():
            # flake8 --jobs N runs the plugin in daemonic pool workers, which may not start processes:
            # every file of a project of 64 modules or more got "CUD900 cudalint cannot run"
            jobs = cores = 1
        self.jobs = jobs
        self.cores = cores
        self.extra = extra
        self.catalogue = catalogue
        self.executor: Optional[Any] = None  # a ProcessPoolExecutor
        self.beside: Optional[Any] = None  # one worker for map_scans's big files

    def map_scans(self, items: list, judged: tuple[str, ...] = (), cache_dir: Optional[str] = None) -> Iterable:
        """`map(_scan_task, items)`, but when this run is serial and has a spare core, the scan of
        each big file is split: a second process finds what its code may call and reach while this
        one finds which functions may never return and makes the summary (from its own tree). On
        one huge module these are the halves of the run, and they need not wait for each other."""
        serial = self.jobs <= 1 or len(items) < PARALLEL_MIN_FILES
        big = [i for i, item in enumerate(items) if _worth_splitting(item[0])] if serial and self.cores > 1 else []
        if not big:
            return self.map(_scan_task, items, judged=judged, cache_dir=cache_dir)
        import pickle  # (a serial run with no big file never needs it)

        if self.beside is None:
            self.beside = _executor(1)
        with trusted_cwd():  # (workers start here)
            futures = {i: self.beside.submit(_run_chunk, "_scan_task", [items[i]], self.extra, {"stops": False}) for i in big}
        out: list = [None] * len(items)
        with paused_gc():
            for i, item in enumerate(items):
                if i not in futures:
                    out[i] = _scan_task(item, self.catalogue, judged=judged, cache_dir=cache_dir)
            for i, future in futures.items():
                mine = _scan_task(items[i], self.catalogue, judged=judged, cache_dir=cache_dir, calls=False)
                _path, key, half, _stamp, _ = pickle.loads(future.result())[0]
                if key != mine[1] or not isinstance(half, list) or not isinstance(mine[2], list):
                    # read failed, or the file changed between the two reads: the whole scan here
                    out[i] = _scan_task(items[i], self.catalogue, judged=judged, cache_dir=cache_dir)
                    continue
                raw = list(mine[2])
                for at in _CALLS_FIELDS:
                    raw[at] = half[at]
                out[i] = (mine[0], mine[1], raw, mine[3], mine[4])
        return out

    def map(self, fn: Callable, items: list, **kwargs: Any) -> Iterable:
        """`fn` over `items`, in order. Workers' results are handed on as they arrive: held all at
        once until the last one came, torch's 2,070 summaries in the form they were sent in made
        the run's peak memory."""
        if not items:
            return ()
        if self.jobs <= 1 or len(items) < PARALLEL_MIN_FILES:
            with paused_gc():
                return [fn(item, self.catalogue, **kwargs) for item in items]
        import pickle

        if self.executor is None:
            self.executor = _executor(self.jobs)
        chunks = _chunks(items, self.jobs)
        with trusted_cwd():  # (workers start here: Executor.map submits every chunk at once)
            parts = self.executor.map(_run_chunk, [fn.__name__] * len(chunks), chunks, [self.extra] * len(chunks), [kwargs] * len(chunks))
        return (result for part in parts for result in pickle.loads(part))

    def close(self) -> Callable[[], None]:
        """Let the workers go: they write the cache entries they kept (cudalint.engine.tasks._LATER)
        and exit while this process goes on. Returns what waits for that."""
        threads = []
        for executor in (self.executor, self.beside):
            if executor is not None:
                # (shutdown(wait=False) lets go of the thread that reaps the workers: kept to join)
                threads.append(getattr(executor, "_executor_manager_thread", None))
                executor.shutdown(wait=False)
        self.executor = self.beside = None

        def settle() -> None:
            for thread in threads:
                if thread is not None:
                    thread.join()

        return settle


def _chunks(items: list, jobs: int) -> list[list]:
    """The items in runs, in order (`map` keeps it), each of about a quarter of a worker's share of
    the bytes still to hand out, down to a floor: big runs first and small ones at the end, so that
    the workers finish together ("guided" scheduling; with runs of equal bytes the last worker
    still ran alone for half a run). By bytes, since a run of big files made one worker finish last
    (timm's 17 runs of 17 files each held 43 to 684 KB); at most 64 files a run, since each file
    also costs a fixed amount."""
    sizes = [_size(item[0]) for item in items]
    remaining = sum(sizes)
    floor = max(1, remaining // (jobs * 64))
    out: list[list] = []
    run: list = []
    held = 0
    target = max(floor, remaining // (jobs * 4))
    for item, size in zip(items, sizes):
        run.append(item)
        held += size
        if held >= target or len(run) >= 64:
            out.append(run)
            remaining -= held
            run, held = [], 0
            target = max(floor, remaining // (jobs * 4))
    if run:
        out.append(run)
    return out


def _size(info: FileInfo) -> int:
    if info.text is not None:
        return len(info.text)
    try:
        return os.stat(info.path).st_size
    except OSError:
        return 0


def _daemonic() -> bool:
    # a process multiprocessing started imported it to run at all: without it loaded this is the main
    # process, and a warm run need not import it (20 ms of its 190)
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is not None and bool(multiprocessing.current_process().daemon)


def _executor(workers: int) -> Any:
    """Spawned workers that import nothing from the linted tree (cudalint.safepath): they, and the
    helper process multiprocessing starts, start in the standard library's folder; the workers
    enter the run's folder before their first task."""
    from concurrent.futures import ProcessPoolExecutor  # (a run served by the cache never needs it)
    from multiprocessing import get_context

    # (the pool's queues start multiprocessing's resource tracker, another `python -c` process)
    with trusted_cwd() as here:
        return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=start_worker, initargs=(here,))


def _worth_splitting(info: FileInfo) -> bool:
    """A file big enough that scanning it in two processes saves time, yet small enough that two
    syntax trees of it at once stay within the memory one big file may take (source.MAX_WORDS)."""
    size = _size(info)  # (0 when it cannot be read: not big)
    if size < BIG_FILE_BYTES:
        return False
    if size <= source.MAX_WORDS:  # (half the words source.too_big allows: it cannot hold more)
        return True
    data = _read(info)
    return isinstance(data, bytes) and source.words(data) <= source.MAX_WORDS // 2
