"""Summaries without the thread model's events (cudalint.engine.lean): stripped while no module makes
a llama.cpp context, read again whole when one does, compared whole when a file changed; the same
findings every way (serial, workers, cache cold and warm, touched)."""
from __future__ import annotations

import shutil
from pathlib import Path

from cudalint.api import lint_paths
from cudalint.core.catalogue import load_catalogue
from cudalint.core.ir import ModuleIR, iter_events
from cudalint.engine import runner
from cudalint.engine.cache import Cache
from cudalint.engine.lean import THREAD_ONLY, strip
from cudalint.summary.from_bytes import _summarize_bytes
from tests.fixture_expectations import FIXTURES
from tests.support.packs import drop_summaries

# threads and a lock around a plain object, in a project with no llama.cpp context (the shape of
# vllm's executor code, where these events were a third of the summaries)
POOL = """import threading

lock = threading.Lock()
jobs = []


def run(job):
    with lock:
        jobs.append(job)
    return job


def start(job):
    t = threading.Thread(target=run, args=(job,))
    t.start()
    return t
"""


def _kinds(mod: ModuleIR) -> set[str]:
    bodies = [mod.top] + [fn.body for fn in mod.functions.values()]
    return {ev.kind for body in bodies for ev in iter_events(body)}


def _returns_with_data(mod: ModuleIR) -> int:
    bodies = [mod.top] + [fn.body for fn in mod.functions.values()]
    return sum(1 for body in bodies for ev in iter_events(body) if ev.kind == "return" and ev.data)


def _line(f) -> str:
    return f"{Path(f.path).name}:{f.line}:{f.column}: {f.code} {f.message}"


def _lines(result) -> list[str]:
    return [_line(f) for f in result.findings]


def test_strip_removes_the_thread_events_and_keeps_the_rest(tmp_path: Path) -> None:
    full = _summarize_bytes("pool.py", POOL.encode(), "pool", False, load_catalogue())
    assert isinstance(full, ModuleIR)
    assert {"thread_start", "lock_enter", "lock_exit", "bind"} <= _kinds(full)
    lean = strip(full)
    assert not _kinds(lean) & THREAD_ONLY
    assert _kinds(lean) == _kinds(full) - THREAD_ONLY
    assert _returns_with_data(lean) == 0 and "return" in _kinds(lean)
    assert strip(lean) is lean  # nothing left to strip: the same object


def test_a_project_without_llama_is_analyzed_from_lean_summaries(tmp_path: Path) -> None:
    (tmp_path / "pool.py").write_text(POOL)
    loaded = runner.load_files([str(tmp_path / "pool.py")], load_catalogue(), jobs=1, run_salt=None)
    (mod,) = loaded.modules
    assert _kinds(mod) == {"import_lib", "return"}  # (thread_start, lock_enter, lock_exit, bind: gone)


def _llama_project(tmp_path: Path, fillers: int) -> Path:
    """fixtures/CUD101/injected_global (DriveCoach-AI), whose uses (app.py, backend/llm_engine.py) come
    before the module that makes the context (backend/load_llm.py), with `fillers` modules before them
    all: enough for the worker processes and their packed early summaries."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD101" / "injected_global", src)
    for i in range(fillers):
        (src / f"aa_filler_{i:03d}.py").write_text(POOL if i % 2 else "import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    return src


def test_a_context_made_after_the_uses_were_stripped_finds_them(tmp_path: Path) -> None:
    src = _llama_project(tmp_path, fillers=70)
    serial = _lines(lint_paths([str(src)], jobs=1))
    assert any(" CUD101 " in line and line.startswith("llm_engine.py:19:") for line in serial)
    assert _lines(lint_paths([str(src)], jobs=2)) == serial
    cold = _lines(lint_paths([str(src)], jobs=2, cache=Cache.open(tmp_path / "c", load_catalogue())))
    warm_cache = Cache.open(tmp_path / "c", load_catalogue())
    warm = _lines(lint_paths([str(src)], jobs=2, cache=warm_cache))
    assert cold == warm == serial
    assert warm_cache.runs_reused == 1
    # the module that makes the context is edited: every other summary comes from the cache, stripped
    # while no context is seen, and whole again once load_llm.py's summary says it makes one
    engine = src / "backend" / "load_llm.py"
    engine.write_text(engine.read_text() + "\n\ndef unused():\n    return 1\n")
    touched_cache = Cache.open(tmp_path / "c", load_catalogue())
    touched = _lines(lint_paths([str(src)], jobs=2, cache=touched_cache))
    assert touched == serial == _lines(lint_paths([str(src)], jobs=1))
    assert touched_cache.runs_reused == 0


def test_the_loaded_summaries_are_whole_when_a_context_exists(tmp_path: Path) -> None:
    src = _llama_project(tmp_path, fillers=70)
    files = sorted(str(p) for p in src.rglob("*.py"))
    for jobs in (1, 2):
        loaded = runner.load_files(files, load_catalogue(), jobs=jobs, run_salt=None)
        by_name = {Path(m.path).name: m for m in loaded.modules}
        assert "llama_use" in _kinds(by_name["llm_engine.py"]), jobs
        assert {"thread_start", "lock_enter"} <= _kinds(by_name["aa_filler_001.py"]), jobs


def test_a_touched_file_is_compared_whole_with_its_earlier_summary(tmp_path: Path) -> None:
    """In a project without a context, an edit that changes only thread events leaves the lean
    summary as it was; the early cutoff compares the whole ones, or a name would stand for two
    different summaries (and a later run with a context would take findings made without them)."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    pool = POOL + "\n\ndef pin():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"  # (an event of its own: the run reads this summary)
    pool = "import os\n" + pool
    (src / "pool.py").write_text(pool)
    first = _lines(lint_paths([str(src)], cache=Cache.open(tmp_path / "c", load_catalogue())))
    assert first
    (src / "pool.py").write_text(pool + "# a comment\n")
    cache = Cache.open(tmp_path / "c", load_catalogue())
    assert _lines(lint_paths([str(src)], cache=cache)) == first
    assert cache.runs_reused == 1  # a comment: the whole summary is as it was
    (src / "pool.py").write_text(pool.replace("    with lock:\n        jobs.append(job)", "    jobs.append(job)\n    pass"))
    cache = Cache.open(tmp_path / "c", load_catalogue())
    assert _lines(lint_paths([str(src)], cache=cache)) == first
    assert cache.runs_reused == 0  # the lock is gone: the whole summaries differ, the analysis runs


def test_the_workers_keep_whole_the_summary_of_a_file_the_index_knows(tmp_path: Path) -> None:
    """Pool workers strip the summaries they send (cudalint.engine.tasks._run), but not those of files
    that may have changed (a branch checked out): the cutoff compares them whole with their earlier
    summaries. Stripped, a comment would have made pool.py's differ, and the run would not be reused."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    pool = "import os\n" + POOL + "\n\ndef pin():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    (src / "pool.py").write_text(pool)
    for i in range(70):  # (enough files for the workers)
        (src / f"aa_filler_{i:03d}.py").write_text(POOL if i % 2 else "import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    first = _lines(lint_paths([str(src)], jobs=2, cache=Cache.open(tmp_path / "c", load_catalogue())))
    assert first
    for path in src.rglob("*.py"):  # (a comment in every file: enough changed files for the workers)
        path.write_text(path.read_text() + "# a comment\n")
    cache = Cache.open(tmp_path / "c", load_catalogue())
    assert _lines(lint_paths([str(src)], jobs=2, cache=cache)) == first
    assert cache.runs_reused == 1


def test_the_shared_texts_and_positions_stay_bounded_in_a_long_lived_process(monkeypatch) -> None:
    """The language server summarizes every edit in one process: the table that makes equal event
    texts one object is emptied past its bound, and the summaries stay what they were."""
    from cudalint.summary import summarize

    catalogue = load_catalogue()
    data = POOL.encode()
    first = _summarize_bytes("pool.py", data, "pool", False, catalogue)
    monkeypatch.setattr(summarize, "SHARED_MAX", 4)
    sizes = []
    for i in range(5):
        again = _summarize_bytes("pool.py", data + b"\n" * i, "pool", False, catalogue)
        sizes.append(len(summarize._SHARED))
    events = sum(1 for body in [first.top] + [fn.body for fn in first.functions.values()] for _ in iter_events(body))
    assert 0 < max(sizes) <= 4 + 2 * events  # at most one summary's own entries past the bound
    assert again == _summarize_bytes("pool.py", data + b"\n" * 4, "pool", False, catalogue) and first.top == again.top
    summarize._SHARED.clear()


def test_the_language_servers_memory_keeps_each_summary_as_the_last_analysis_used_it(tmp_path: Path, monkeypatch) -> None:
    """cudalint.server.engine.MemoryCache: after the first analysis (worker processes) every summary
    stays in memory as it was analyzed, stripped while no module makes a llama.cpp context; an edit
    takes them from there, not from the files, and strips nothing again. A buffer that makes a
    context needs them whole: they come from the files, and the findings are a fresh run's each time."""
    from cudalint.api import lint_files
    from cudalint.inputs.config import Config
    from cudalint.server.engine import Project

    src = _llama_project(tmp_path, fillers=70)
    maker = src / "backend" / "load_llm.py"
    engine = src / "backend" / "llm_engine.py"
    files = sorted(str(p) for p in src.rglob("*.py"))
    # (nor does it name llama_cpp: a file that names it has every summary made whole, cudalint.engine.lean.may_make_context)
    no_context = maker.read_text().replace("from llama_cpp import Llama\n", "").replace("Llama(", "dict(")
    catalogue = load_catalogue()

    def fresh(texts: dict[str, str]) -> list[str]:
        found = lint_files(files, Config(), catalogue, texts=texts, jobs=1).findings
        return sorted(_line(f) for f in found if f.path in texts)

    def served(texts: dict[str, str]) -> list[str]:
        return sorted(_line(f) for found in project.analyze(texts).values() for f in found)

    project = Project(src, cache_dir=tmp_path / "c")
    texts = {str(maker): no_context, str(engine): engine.read_text()}
    assert served(texts) == fresh(texts)  # (workers: the first analysis)
    memory = project.cache()._memory
    filler = project.cache().key(str(src / "aa_filler_001.py"), "aa_filler_001", POOL.encode())
    assert memory[filler][1] is True and not _kinds(memory[filler][0]) & THREAD_ONLY
    misses, hits = project.cache().misses, project.cache().hits
    from cudalint.engine import lean

    from cudalint.engine import tasks

    stripped: list[str] = []
    made_lean: list[str] = []
    monkeypatch.setattr(lean, "strip", lambda summary: stripped.append(summary.path) or strip(summary))
    summarize_bytes = tasks.summarize_bytes
    monkeypatch.setattr(tasks, "summarize_bytes", lambda path, *a, lean=False: (made_lean.append(path) if lean else None) or summarize_bytes(path, *a, lean=lean))
    texts[str(engine)] += "\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"
    edited = served(texts)
    # every unchanged file's summary from memory, as lean as it was: the edited buffer alone is
    # summarized, lean at once; the open buffers go through pass 1 every time (the unchanged one
    # from the files' cache, lean as the first analysis kept it): nothing is stripped
    assert project.cache().misses == misses + 1 and project.cache().hits == hits + len(files) - 1
    assert [Path(p).name for p in made_lean] == ["llm_engine.py"] and stripped == []
    assert edited == fresh(texts)
    # the buffer makes a context again: the thread events are needed, whole summaries from the files
    texts[str(maker)] = maker.read_text()
    with_context = served(texts)
    assert with_context == fresh(texts) and any(" CUD101 " in line for line in with_context)
    assert memory[filler][1] is False and {"thread_start", "lock_enter"} <= _kinds(memory[filler][0])
    # and gone again (with an edit of its own: the same buffers as before are an earlier run's findings)
    texts[str(maker)] = no_context + "\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '2'\n"
    stripped.clear()
    without = served(texts)
    assert "aa_filler_001.py" in {Path(p).name for p in stripped}  # the whole ones in memory: stripped for this run
    assert without == fresh(texts) and not any(" CUD101 " in line for line in without)
    assert memory[filler][1] is True


def test_the_language_servers_memory_is_bounded_oldest_first(tmp_path: Path, monkeypatch) -> None:
    from cudalint.server import engine

    monkeypatch.setattr(engine, "MEMORY_ENTRIES", 2)
    cache = engine.MemoryCache(directory=tmp_path, salt="s")
    one, two, three = (_summarize_bytes(f"m{i}.py", f"x = {i}\n".encode(), f"m{i}", False, load_catalogue()) for i in range(3))
    cache.keep("a", one, True)
    cache.keep("b", two, True)
    cache.keep("a", one, False)  # (kept again: nothing else goes)
    assert cache.kept("a") == (one, False) and cache.kept("b") == (two, True)
    cache.keep("c", three, True)
    assert list(cache._memory) == ["b", "c"]  # the oldest went
    assert cache.kept("a") is None and cache.hits == 2


def test_a_summary_of_bytes_edited_during_the_run_is_not_kept_under_the_old_key(tmp_path: Path, monkeypatch) -> None:
    """A file edited between pass 0 (its stamp, its key) and its reading: the run's findings stand for
    no one input, and its summary, made from the new bytes, must not answer the old key in memory."""
    from cudalint.engine.cache import lean_key
    from cudalint.server.engine import MemoryCache

    catalogue = load_catalogue()
    src = tmp_path / "proj"
    src.mkdir()
    for name in ("a", "b"):
        (src / f"{name}.py").write_text(f"import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '{name}'\n")
    files = sorted(str(p) for p in src.glob("*.py"))
    cache = MemoryCache(directory=tmp_path / "c", salt=Cache.open(tmp_path / "c", catalogue).salt)
    runner.load_files(files, catalogue, cache=cache, jobs=1, run_salt=None)
    a = str(src / "a.py")
    old = cache.key(a, "a", (src / "a.py").read_bytes())
    assert cache.kept(old) is not None
    del cache._memory[old]  # (neither in memory nor in the files: summarized again, from what is there now)
    assert drop_summaries(tmp_path / "c", {lean_key(old)}) == 1  # (kept lean: cudalint.summary.thread_free)
    real = runner._summary_task

    def edited_meanwhile(item, extra, cache_dir):
        (src / "a.py").write_text("import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = 'edited'\n")
        return real(item, extra, cache_dir)

    monkeypatch.setattr(runner, "_summary_task", edited_meanwhile)
    loaded = runner.load_files(files, catalogue, cache=cache, jobs=1, run_salt="r")
    assert loaded.run_key == ""
    assert cache.kept(old) is None
    assert cache.kept(cache.key(str(src / "b.py"), "b", (src / "b.py").read_bytes())) is not None


def _index(cache_dir: Path) -> dict:
    """The cache's one index: path -> [mtime_ns, size, key, summary name, module name, lean name]."""
    from cudalint.core import cache_files

    (index,) = (cache_dir / "index").glob("*.idx")
    return cache_files.read(cache_dir, f"index/{index.name}")


def test_pass_one_makes_lean_summaries_unless_a_file_names_a_context_library(tmp_path: Path) -> None:
    """cudalint.engine.lean.may_make_context: a project whose files name no library that makes
    llama.cpp contexts is summarized lean from the start, and kept lean (cudalint.engine.cache.lean_key);
    one that names one (DriveCoach-AI imports llama_cpp) is summarized whole, once per file."""
    from cudalint.engine.cache import lean_key
    from tests.support.packs import summary_records

    for names_one in (True, False):
        src = _llama_project(tmp_path / str(names_one), fillers=70)
        maker = src / "backend" / "load_llm.py"
        if not names_one:  # (no context made: `Llama` is a plain class of its own)
            maker.write_text(maker.read_text().replace("from llama_cpp import Llama", "class Llama(dict):\n    pass"))
        files = sorted(src.rglob("*.py"))
        cache = Cache.open(tmp_path / str(names_one) / "c", load_catalogue())
        found = _lines(lint_paths([str(src)], jobs=2, cache=cache))
        assert found == _lines(lint_paths([str(src)], jobs=1))
        assert any(" CUD101 " in line for line in found) is names_one
        assert cache.misses == len(files)  # each file summarized once
        keys = {hit[2] for hit in _index(tmp_path / str(names_one) / "c").values()}
        recorded = sorted(name for name, _payload in summary_records(tmp_path / str(names_one) / "c"))
        assert recorded == sorted(keys if names_one else {lean_key(k) for k in keys}), names_one


def test_an_edit_of_thread_events_alone_reuses_the_findings_by_lean_names(tmp_path: Path) -> None:
    """No module makes a context: the first run keeps lean summaries only, and an edit that changes
    only the thread model's events (a lock taken away) leaves the lean summary as it was. The earlier
    findings are taken by the lean names (cudalint.engine.run_keys.LEAN); the whole name is the new
    bytes' own, so a run that needs the thread events never takes them. A comment added next: the
    whole summary (kept by the second run, which compared it) and the lean name carry over."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    pool = "import os\n" + POOL + "\n\ndef pin():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    (src / "pool.py").write_text(pool)
    first = _lines(lint_paths([str(src)], cache=Cache.open(tmp_path / "c", load_catalogue())))
    assert first
    unlocked = pool.replace("    with lock:\n        jobs.append(job)", "    jobs.append(job)\n    pass")
    (src / "pool.py").write_text(unlocked)
    cache = Cache.open(tmp_path / "c", load_catalogue())
    assert _lines(lint_paths([str(src)], cache=cache)) == first
    assert cache.runs_reused == 1
    index = _index(tmp_path / "c")[f"{src / 'pool.py'}\0{src / 'pool.py'}"]
    assert index[3] == index[2] != index[5]  # (the whole name: its own; the lean one: the first bytes')
    (src / "pool.py").write_text(unlocked + "# a comment\n")
    cache = Cache.open(tmp_path / "c", load_catalogue())
    assert _lines(lint_paths([str(src)], cache=cache)) == first
    assert cache.runs_reused == 1
    again = _index(tmp_path / "c")[f"{src / 'pool.py'}\0{src / 'pool.py'}"]
    assert again[2] != index[2] and again[3] == index[2] and again[5] == index[5]


def test_a_lean_summary_is_the_whole_one_stripped_for_every_fixture() -> None:
    """cudalint.summary.thread_free: `summarize(..., lean=True)` skips the work whose products `strip`
    removes, and nothing else: byte for byte the same encoding, on every fixture (59 of which make a
    llama.cpp context; the fetched trees were checked the same way, 9,685 modules)."""
    from cudalint.engine.serialize import dumps
    from cudalint.core.modnames import module_name

    catalogue = load_catalogue()
    compared = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        data = path.read_bytes()
        modname, is_package = module_name(path.resolve())
        whole = _summarize_bytes(str(path), data, modname, is_package, catalogue)
        lean = _summarize_bytes(str(path), data, modname, is_package, catalogue, lean=True)
        if isinstance(whole, ModuleIR):
            assert dumps(strip(whole)) == dumps(lean), path
            assert lean.makes_llama is whole.makes_llama
            compared += 1
    assert compared > 200


def test_strip_drops_the_steps_it_leaves_empty_and_keeps_an_endless_loop() -> None:
    """An `a and b()` whose only event was a thread event becomes an empty branch when stripped, and
    the lean summarizer makes no branch at all: both forms drop empty branches and empty loops, a
    step that changes nothing; `while True: pass` still never ends."""
    from cudalint.core.ir import Branch, Event, Loop

    bind = Event("bind", (1, 1, 1, 2), "x = y", ("v::x", "ref:v::y"))
    kept = Event("init", (2, 1, 2, 9), "torch.cuda.init()", ())
    endless = Loop(body=(), orelse=(), loc=(3, 1, 3, 12), infinite=True)
    top = (Branch(arms=((bind,),), exhaustive=False), Loop(body=(bind,), orelse=(), loc=(4, 1, 4, 9)), Branch(arms=((), ()), exhaustive=True), kept, endless)
    mod = ModuleIR(path="m.py", module="m", top=top, functions={}, classes={})
    assert strip(mod).top == (kept, endless)
