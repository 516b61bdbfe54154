"""Turn a list of files into module summaries: read, key, parse, summarize; cached and in parallel.

1. pass 1: every file the cache's index does not know unchanged is read, keyed (its bytes and module
   name: cudalint.engine.cache) and summarized, or gets its CUD900 when CPython's parser refuses it;
2. pass 2: the summaries of the files the index knows, from the cache (made again if an entry is
   missing or damaged); an edit that left its file's summary as it was may end the run here with an
   earlier run's findings (cudalint.engine.run_keys).

Every file is summarized. Until 2026-11 a byte scan and a selection over the import graph chose the
files worth summarizing (the others became empty stand-ins, with equal findings), but the scan cost
as much as the summaries it spared: on the 11 fetched trees the selection took 93-99 % of the files
(timm 153 of 286), and summarizing them all was 20-36 % faster cold with the same findings and no
more memory (torch 22.3 -> 14.2 s, 278 -> 212 MB; vllm 26.9 -> 20.7 s).

Workers are forked when this process runs no other thread (the command line, flake8's main process),
else spawned (the language server's threads), and receive paths. They send back their results
(module IR, CUD900 findings) pickled, through the pool's pipe only: pickle builds objects at C
speed, where decoding JSON-like data cost the parent a second on torch. Nothing pickled is ever
stored; the cache is JSON (cudalint.engine.cache). Results are merged by path, so the output does
not depend on which worker finished first.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from cudalint.engine import run_keys
from cudalint.engine.cache import Cache
from cudalint.core.findings import Finding
from cudalint.core.deep import call_roomy as _deep
from cudalint.engine.gc_pause import paused_gc
from cudalint.engine.indexed import Indexed, index_files
from cudalint.engine.fileinfo import FileInfo
from cudalint.engine.tasks import LEAN, _first_task, _run_chunk, _summary_task, _unpacker, start_worker
from cudalint.safepath import trusted_cwd

if TYPE_CHECKING:  # (imported where used: a run the cache answers whole needs neither: `reused_run`)
    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR

# file names are bytes: one that is not UTF-8 reaches us with surrogates (PEP 383), and goes back so
_NAMES = ("utf-8", "surrogateescape")
# below this many files a pool costs more (interpreter start-up, imports) than it saves
PARALLEL_MIN_FILES = 64


class Loaded:
    """What `load_files` made. A plain class (a mutable dataclass before: the dataclasses module,
    which imports inspect, is no longer on the path of a run with one file touched)."""

    def __init__(
        self,
        modules: list[ModuleIR],
        problems: list[Finding],
        summarized: int = 0,
        run_key: str = "",
        reused: Optional[list] = None,
        summary_key: str = "",
        lean_key: str = "",
        cut: bool = False,
    ) -> None:
        self.modules = modules  # the summaries of the files that parse
        self.problems = problems  # CUD900 findings, in file order
        self.summarized = summarized  # files that got a syntax tree in this run (cache misses)
        self.run_key = run_key  # names this exact input (every file's key, the configuration): see Cache.get_run
        self.reused = reused  # findings of an earlier run with the same run_key, or the same summary_key
        self.summary_key = summary_key  # names the summaries this run analyzed (cudalint.engine.run_keys)
        self.lean_key = lean_key  # names their lean forms, when no module makes a llama.cpp context (run_keys.LEAN)
        # `reused` came by summary_key: the findings before the files' own `# cudalint: noqa` lines,
        # which a summary does not hold (the caller applies them)
        self.cut = cut
        # waits until the pool's workers have written the cache entries they kept and exited
        # (cudalint.engine.tasks.start_worker): the caller analyzes meanwhile, then calls it
        self.settle: Callable[[], None] = lambda: None


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
    extend_catalogue: Sequence[str] = (),
    run_salt: Optional[str] = None,
    cutoff: bool = True,
    indexed: Optional[Indexed] = None,
    meanwhile: Callable[[], None] = lambda: None,
) -> Loaded:
    """Summaries of `paths` (module IR) and their CUD900 findings.

    `run_salt` names everything else the run's findings depend on (the configuration; the catalogue
    is in the cache's salt); with a cache, a
    run over unchanged files with the same salt returns the earlier findings (`reused`). None: the
    findings depend on more than these files, so nothing is reused. `cutoff`: an edit that leaves
    every summary as it was may reuse them too (cudalint.engine.run_keys), before the files' own
    directives are applied. `indexed`: pass 0, done already (`index_files` of the same paths, with the
    contents given instead of the files' and the files kept out of the cache). `meanwhile`: the
    caller's work that needs no summary, done here while the pool's workers summarize (once, and
    only if a pool runs)."""
    indexed = indexed if indexed is not None else index_files(paths, cache)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    pool = _Pool(jobs if len(indexed.infos) >= PARALLEL_MIN_FILES else 1, tuple(extend_catalogue), catalogue, meanwhile)
    try:
        loaded = _load(pool, indexed, catalogue, cache, run_salt, cutoff)
    finally:
        settle = pool.close()
    loaded.settle = settle
    return loaded


def _load(
    pool: "_Pool",
    indexed: Indexed,
    catalogue: Catalogue,
    cache: Optional[Cache],
    run_salt: Optional[str],
    cutoff: bool,
) -> Loaded:
    """`load_files` with its pool."""
    from cudalint.core.ir import ModuleIR
    from cudalint.engine.lean import Lean, may_make_context

    salt = cache.salt if cache is not None else ""
    infos = indexed.infos
    info_of = {i.path: i for i in infos}
    cache_dir = str(cache.directory) if cache is not None else None
    # the thread model's events, while no module makes a llama.cpp context (cudalint.engine.lean): left
    # out as pass 1 summarizes (cudalint.summary.thread_free), unless a file names a library that makes
    # contexts; then every summary is whole from the start (stripped, each would be made again whole
    # once the maker's summary came)
    at_once = not may_make_context(indexed.todo, catalogue)
    lean = Lean(enabled=at_once)
    keys = dict(indexed.keys)
    problems: dict[str, Finding] = {}  # files that cannot be read
    before: dict[str, tuple[str, str, str]] = {}  # path -> (key, summary name, lean name) of the bytes it had, when they changed
    # pass 1's summaries; one a worker found in the cache stays pickled (`_run_chunk`) until taken
    # below: a run an earlier run's findings answer (a restored cache) never unpickles it
    made: dict[str, Any] = {}
    # what the index recorded of each file: one whose bytes changed has its new summary compared
    # whole with its old one (`before`), so a worker keeps it whole (cudalint.engine.tasks._first_task);
    # the others are made lean (cudalint.summary.thread_free) until a module makes a llama.cpp context
    prior = {i.path: cache.previous(i.path) for i in indexed.todo if i.text is None} if cache is not None else {}
    items = [(i, salt, prior[i.path][0] if prior.get(i.path) else None, at_once) for i in indexed.todo]
    found: set[str] = set()  # summaries pass 1 found in the cache (bytes known under another stamp)
    unpack = _unpacker()
    for path, key, stamp, summary, new, form in pool.map(_first_task, items, cache_dir=cache_dir):
        if not key:
            problems[path] = summary
            continue
        keys[path] = key
        if cache is not None and stamp is not None and info_of[path].text is None:
            old = prior.get(path)
            if old is not None and old[0] != key:
                before[path] = old
            cache.remember(path, info_of[path].module, stamp, key)
        if type(summary) is not tuple:
            made[path] = lean(path, summary, hold=path in before, stripped=form == LEAN)
        elif new:
            # made in this run, which will most likely be analyzed: unpickled now, while the workers
            # summarize the rest (after them, lightning's parent took 50 ms for it alone)
            made[path] = lean(path, unpack(summary), hold=path in before, stripped=summary[2])
        else:
            made[path] = summary  # (read from the cache: bytes until no earlier run's findings answer)
        if not new:
            found.add(path)
    run_key = ""
    if cache is not None and run_salt is not None:
        run_key = run_keys.source_key(salt, run_salt, infos, keys, problems)
        reused = cache.get_run(run_key)
        if reused is not None:
            cache.save_index()
            return Loaded(modules=[], problems=[], run_key=run_key, reused=reused)
    # pass 2: the files the index knows unchanged, from the cache
    results: dict[str, Any] = {}
    work: list[tuple[FileInfo, str, str]] = []
    stored: list[FileInfo] = []  # unchanged, summarized before: read only if no earlier run answers
    summarized = 0
    for info in infos:
        if info.path not in keys:
            continue  # (it cannot be read: `problems` says why)
        if info.path in made:
            value = made.pop(info.path)  # (an object was made lean as it arrived, above)
            if type(value) is tuple:  # (from a worker, which stripped it unless told not to: value[2])
                results[info.path] = lean(info.path, unpack(value), hold=info.path in before, stripped=value[2])
            else:
                results[info.path] = value
            if info.path in found:
                cache.hits += 1  # type: ignore[union-attr]
            else:
                summarized += 1
                if cache is not None and info.cached:
                    cache.misses += 1
            continue
        if cache is not None and info.cached:
            stored.append(info)
        else:
            work.append((info, keys[info.path], salt))
    del unpack
    fresh = [i for i in stored if i.path in before]  # compared with their old summaries below
    keep = lambda path, value: lean(path, value, hold=path in before)  # noqa: E731
    moved: set[str] = set()  # summarized from bytes other than those its key names (edited meanwhile)

    def held(info: FileInfo) -> Any:
        # the summary as this process's last run analyzed it (the language server's), as lean as
        # this run wants it; a stripped one is no use once a module makes a llama.cpp context
        got = cache.kept(keys[info.path]) if cache is not None and info.path not in before else None
        if got is None or (got[1] and not lean.on):
            # else a lean one from the cache, while no module makes a context
            made = _deep(lambda: cache.get_lean(keys[info.path])) if cache is not None and lean.on and info.path not in before else None
            return lean(info.path, made, stripped=True) if made is not None else None
        return lean(info.path, got[0], stripped=got[1])

    run_key, summarized = _summarize(pool, cache, fresh, work, keys, salt, results, run_key, summarized, cache_dir, moved, keep, held)
    cut_key = lean_cut = ""
    if cache is not None and cutoff and run_salt is not None and run_key:
        names, lean_names = run_keys.summary_names(cache, infos, results, before, keys)
        cut_key = run_keys.summary_key(salt, run_salt, infos, names, problems) or ""
        # (while no module makes a llama.cpp context, the lean forms name the input too: runs that
        # made none keep their findings under that name as well, `Loaded.lean_key`)
        lean_cut = (run_keys.summary_key(salt, run_salt + run_keys.LEAN, infos, lean_names, problems) or "") if lean.on else ""
        reused = cache.get_run(cut_key) if cut_key else None
        if reused is None and lean_cut:
            reused = cache.get_run(lean_cut)
        if reused is not None:
            cache.save_index()
            return Loaded(modules=[], problems=[], run_key=run_key, reused=reused, summary_key=cut_key, cut=True)
    rest = [i for i in stored if i.path not in results]
    run_key, summarized = _summarize(pool, cache, rest, [], keys, salt, results, run_key, summarized, cache_dir, moved, keep, held)
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
        work_again = [(i, keys[i.path], salt) for i in whole if not (cache is not None and i.cached)]
        hits = cache.hits if cache is not None else 0
        run_key, _ = _summarize(pool, cache, stored_again, work_again, keys, salt, results, run_key, 0, cache_dir, moved)
        if cache is not None:
            cache.hits = hits  # (mostly this run's own entries, read again: no earlier run's work)
    modules: list[ModuleIR] = []
    out_problems: list[Finding] = []
    for info in infos:
        if info.path in problems:
            out_problems.append(problems[info.path])
            continue
        value = results.get(info.path)
        if isinstance(value, Finding):
            out_problems.append(value)
        elif isinstance(value, ModuleIR):
            modules.append(value)
    if cache is not None:
        cache.save_index()
        # for this process's next run (`held`): while no module makes a context every summary went
        # through `lean` (one with no thread events to strip too: marked so, it is not walked again)
        for info in infos:
            value = results.get(info.path)
            if type(value) is ModuleIR and info.cached and info.path not in moved:
                cache.keep(keys[info.path], value, lean.on)
    return Loaded(modules=modules, problems=out_problems, summarized=summarized, run_key=run_key, summary_key=cut_key, lean_key=lean_cut if lean.on else "")


def _summarize(
    pool: "_Pool",
    cache: Optional[Cache],
    stored: list[FileInfo],
    work: list,
    keys: dict[str, str],
    salt: str,
    results: dict[str, Any],
    run_key: str,
    summarized: int,
    cache_dir: Optional[str],
    moved: set[str],
    keep: Callable[[str, Any], Any] = lambda _path, value: value,
    held: Callable[[FileInfo], Any] = lambda _info: None,
) -> tuple[str, int]:
    """Into `results`: the summaries of `stored` as `held` has them, else from the cache (or made
    again), and of `work`, as `keep` makes them (cudalint.engine.lean). Returns the run key ("" when
    a file changed while this run read it: its path goes into `moved`) and the count made."""
    work = list(work)
    for info in stored:
        value = held(info)
        if value is not None:
            results[info.path] = value
            continue
        # the same entries as cudalint.api.load_module (and so the flake8 plugin) reads and writes
        hit = _deep(lambda: cache.get(keys[info.path])) if cache is not None else None
        if hit is not None:
            results[info.path] = keep(info.path, hit)
        else:
            work.append((info, keys[info.path], salt))
    for path, result, changed in pool.map(_summary_task, work, cache_dir=cache_dir):
        if changed:  # edited while this run read it: these findings stand for no one input
            run_key = ""
            moved.add(path)
        results[path] = keep(path, result)
        summarized += 1
    return run_key, summarized


class _Pool:
    """A process pool started on first use (`_executor`), or plain calls when `jobs` is 1."""

    def __init__(self, jobs: int, extra: tuple[str, ...], catalogue: Catalogue, meanwhile: Callable[[], None] = lambda: None):
        if _daemonic():
            # flake8 --jobs N runs the plugin in daemonic pool workers, which may not start processes:
            # every file of a project of 64 modules or more got "CUD900 cudalint cannot run"
            jobs = 1
        self.jobs = jobs
        self.extra = extra
        self.catalogue = catalogue
        self.executor: Optional[Any] = None  # a ProcessPoolExecutor
        self.meanwhile: Optional[Callable[[], None]] = meanwhile  # (None once called)

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
            self.executor = _take_standby(self.jobs) or _executor(self.jobs)
        chunks = _chunks(items, self.jobs)
        with trusted_cwd():  # (workers start here: Executor.map submits every chunk at once)
            parts = self.executor.map(_run_chunk, [fn.__name__] * len(chunks), chunks, [self.extra] * len(chunks), [kwargs] * len(chunks))
        if self.meanwhile is not None:
            prepare, self.meanwhile = self.meanwhile, None
            prepare()
        return (result for part in parts for result in pickle.loads(part))

    def close(self) -> Callable[[], None]:
        """Let the workers go: they write the cache entries they kept (cudalint.engine.tasks._LATER)
        and exit while this process goes on. Returns what waits for that."""
        threads = []
        if self.executor is not None:
            # (shutdown(wait=False) lets go of the thread that reaps the workers: kept to join)
            threads.append(getattr(self.executor, "_executor_manager_thread", None))
            self.executor.shutdown(wait=False)
        self.executor = None

        def settle() -> None:
            for thread in threads:
                if thread is not None:
                    thread.join()

        return settle


# workers started ahead of the run that will give them their first chunk (`standby`): (jobs, executor)
_STANDBY: list[tuple[int, Any]] = []


def standby(paths: Sequence[str], cache: Optional[Cache], jobs: Optional[int] = None) -> None:
    """Start now the workers a `load_files` of `paths` with `cache` will summarize them with, when it
    will use a pool (as many files as PARALLEL_MIN_FILES the index does not know unchanged): they
    fork and import the summarizer (`start_worker`) while the caller does the rest of its own work
    first. flake8's main process finds its projects and builds their import graph first (40-60 ms of
    lightning's cold run), and each worker then spent 35 ms importing before its first file: that
    analysis took 1.135 -> 1.011 s (medians of 21 runs, alternating with the code before; ultralytics
    1.703 -> 1.550 s of 11). A standby nobody takes is let go by `drop_standby`."""
    from cudalint.engine.indexed import index_files

    jobs = default_jobs() if jobs is None else max(1, jobs)
    if _STANDBY or jobs <= 1 or len(paths) < PARALLEL_MIN_FILES or _daemonic():
        return
    if len(index_files(paths, cache).todo) < PARALLEL_MIN_FILES:
        return  # (a warm run: no pool, or too few files for one)
    try:
        executor = _executor(jobs)
        with trusted_cwd():  # (the first task forks every worker: cudalint.safepath)
            executor.submit(int)
    except OSError:  # (no process to be had now: the run makes its pool itself, as before)
        return
    _STANDBY.append((jobs, executor))


def _take_standby(jobs: int) -> Optional[Any]:
    if _STANDBY and _STANDBY[-1][0] == jobs:  # (the one it pops)
        return _STANDBY.pop()[1]
    return None


def drop_standby() -> None:
    """Let go of the workers `standby` started that no run took (they exit, and this waits: the
    caller may fork next, which a pool's threads must not see)."""
    while _STANDBY:
        _STANDBY.pop()[1].shutdown(wait=True)


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
    """Workers that import nothing from the linted tree (cudalint.safepath): they, and any helper
    process multiprocessing starts, start in the standard library's folder; the workers enter the
    run's folder before their first task."""
    from concurrent.futures import ProcessPoolExecutor  # (a run served by the cache never needs it)
    from multiprocessing import get_context

    with trusted_cwd() as here:
        return ProcessPoolExecutor(max_workers=workers, mp_context=get_context(_start_method()), initializer=start_worker, initargs=(here,))


def _start_method() -> str:
    """"fork" on Linux while this process runs no other thread: a forked worker starts in a
    millisecond with cudalint imported and the catalogue loaded, where a spawned one starts an
    interpreter, imports cudalint and loads the catalogue again, and the pool's queues start
    multiprocessing's resource tracker, one more interpreter (lightning with an empty cache: 0.71 ->
    0.64 s, CPU 1.12 -> 0.99 s; flake8 +41 % -> +35 %). Either way a worker has this process's
    `sys.path`, which the entry point made trusted (cudalint.safepath). "spawn" where another thread
    runs (the language server's): a fork copies the locks those threads hold."""
    import threading

    return "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"
