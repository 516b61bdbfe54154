"""The summary cache: same findings with and without it, signed plain JSON, safe against corruption."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from cudalint.api import lint_paths
from cudalint.engine.cache import Cache
from cudalint.core.catalogue import load_catalogue
from tests.fixture_expectations import FIXTURES
from tests.support.packs import damage_summaries, pack_files, summary_records


def _findings(result):
    return [f.to_json() for f in result.findings]


def entry_body(path: Path) -> bytes:
    """A cache entry's content after its signature line (cudalint.core.cache_files)."""
    head, newline, body = path.read_bytes().partition(b"\n")
    assert newline and head.startswith(b"cudalint-cache-2 ") and len(head) == len(b"cudalint-cache-2 ") + 64
    return body


def entry_json(path: Path):
    """A cache entry's value: a signature line, then plain JSON."""
    return json.loads(entry_body(path))


def test_cached_and_uncached_findings_are_identical(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    cache = Cache.open(tmp_path / "cache", load_catalogue())
    cold = lint_paths(["fixtures"], cache=cache)
    assert cache.hits == 0 and cache.misses > 0
    warm_cache = Cache.open(tmp_path / "cache", load_catalogue())
    warm = lint_paths(["fixtures"], cache=warm_cache)
    # nothing changed: the whole run's result is reused, no summary is even read
    assert warm_cache.runs_reused == 1 and warm_cache.hits == 0 and warm_cache.misses == 0
    plain = lint_paths(["fixtures"])
    assert _findings(cold) == _findings(warm) == _findings(plain)


def test_entries_are_reused_when_one_file_changes(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001", src)
    cache = Cache.open(tmp_path / "cache", load_catalogue())
    cold = lint_paths([str(src)], cache=cache)
    assert cache.hits == 0 and cache.misses > 1
    touched = src / "good_write_first.py"
    touched.write_text(touched.read_text() + "\n# touched\n")
    again = Cache.open(tmp_path / "cache", load_catalogue())
    warm = lint_paths([str(src)], cache=again)
    assert again.runs_reused == 0
    assert again.misses == 1 and again.hits == cache.misses - 1
    assert _findings(cold) == _findings(warm) == _findings(lint_paths([str(src)]))


def test_a_summary_made_by_another_python_is_never_read(tmp_path: Path, monkeypatch) -> None:
    """Each Python reads its own grammar (an older one reads a newer file through
    cudalint.inputs.newsyntax, and 3.10 sees no call inside a PEP 701 f-string): two environments
    sharing one cache folder keep their summaries apart."""
    import types

    from cudalint.engine import cache as cache_module

    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001", src)
    here = Cache.open(tmp_path / "cache", load_catalogue())
    lint_paths([str(src)], cache=here)
    monkeypatch.setattr(cache_module, "sys", types.SimpleNamespace(version_info=(3, 99, 0)))
    other = Cache.open(tmp_path / "cache", load_catalogue())
    assert other.salt.replace(":py3.99:", ":py%d.%d:" % sys.version_info[:2]) == here.salt
    lint_paths([str(src)], cache=other)
    assert other.hits == 0 and other.runs_reused == 0 and other.misses == here.misses > 1


def test_cache_entries_are_signed_and_corruption_is_a_miss(tmp_path: Path) -> None:
    """Summaries are pickles that only the IR's classes may be read from (cudalint.engine.summary_codec);
    the index, the run results and the parsed catalogue are plain JSON. Every one is signed, and
    a damaged one is a miss."""
    from cudalint.engine import summary_codec

    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    cache = Cache.open(tmp_path / "cache", load_catalogue())
    first = lint_paths([str(src)], cache=cache)
    summaries = summary_records(tmp_path / "cache")
    # (the files at the top, `.gitignore` and CACHEDIR.TAG, are not entries)
    others = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent.name not in ("cache", "v3"))
    assert len(pack_files(tmp_path / "cache")) == 1  # (one process: one pack)
    assert len(summaries) == len(list(src.rglob("*.py"))) and {p.parent.name for p in others} == {"index", "runs", "catalogue"}
    for _name, payload in summaries:
        assert summary_codec.loads(payload).path.startswith(str(src))
    assert damage_summaries(tmp_path / "cache") == len(summaries) and summary_records(tmp_path / "cache") == []
    for entry in others:
        entry_json(entry)
        entry.write_text("{not json")
    again = Cache.open(tmp_path / "cache", load_catalogue())
    second = lint_paths([str(src)], cache=again)
    assert again.hits == 0
    assert _findings(first) == _findings(second)
    assert (tmp_path / "cache" / "CACHEDIR.TAG").is_file()


def test_changed_file_is_summarized_again(tmp_path: Path) -> None:
    src = tmp_path / "train.py"
    src.write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    cache = Cache.open(tmp_path / "cache", load_catalogue())
    assert lint_paths([str(src)], cache=cache).findings == ()
    src.write_text("import os\nimport torch\ntorch.cuda.init()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    again = Cache.open(tmp_path / "cache", load_catalogue())
    result = lint_paths([str(src)], cache=again)
    assert [(f.code, f.line) for f in result.findings] == [("CUD001", 4)]
    assert again.misses == 1


def _index(cache_dir: Path) -> dict:
    (idx,) = (cache_dir / "index").glob("*.idx")
    return entry_json(idx)


def test_the_index_records_each_file_by_its_stamp_key_and_summary_name(tmp_path: Path) -> None:
    """A warm run reads only the small index (path -> mtime, size, key, summary name, module name,
    lean summary name) and the run's findings; a comment added to a file gives it a new key, and its
    summary (equal to the old one) keeps the old lean name (cudalint.engine.run_keys): the first run
    kept only lean summaries (no module makes a llama.cpp context), so the whole name is its own."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    lint_paths([str(src)], cache=Cache.open(tmp_path / "cache", load_catalogue()))
    index = _index(tmp_path / "cache")
    files = sorted(src.rglob("*.py"))
    assert len(index) == len(files) and all(len(v) == 6 and v[3] == v[2] == v[5] for v in index.values())  # named by its own key at first
    for path in files:
        st = path.stat()
        assert index[f"{path}\0{path}"][:2] == [st.st_mtime_ns, st.st_size]
    warm = Cache.open(tmp_path / "cache", load_catalogue())
    lint_paths([str(src)], cache=warm)
    assert warm.runs_reused == 1 and warm.hits == warm.misses == 0  # no summary read
    touched = files[0]
    old = index[f"{touched}\0{touched}"]
    touched.write_text(touched.read_text() + "\n# a comment\n")
    lint_paths([str(src)], cache=Cache.open(tmp_path / "cache", load_catalogue()))
    new = _index(tmp_path / "cache")[f"{touched}\0{touched}"]
    assert new[2] != old[2] and new[3] == new[2] and new[5] == old[2] and new[4] == old[4]


def test_files_touched_but_unchanged_are_not_parsed_again(tmp_path: Path, monkeypatch) -> None:
    """A checkout, or a cache restored by CI, gives every file a new mtime: the index knows none of
    them, each is read and keyed again, and the summaries its bytes had come from the cache."""
    from cudalint.inputs import source

    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    first = lint_paths([str(src)], cache=Cache.open(tmp_path / "cache", load_catalogue()), jobs=1)
    files = sorted(src.rglob("*.py"))
    for path in files:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    for run in (tmp_path / "cache" / "runs").glob("*"):
        run.unlink()  # (else the run's findings come back whole, and no summary is read)
    parsed: list[str] = []
    real = source.parse
    monkeypatch.setattr(source, "parse", lambda text: parsed.append(text.path) or real(text))
    again = Cache.open(tmp_path / "cache", load_catalogue())
    second = lint_paths([str(src)], cache=again, jobs=1)
    assert _findings(first) == _findings(second) and first.findings
    assert parsed == [] and again.hits == len(files) and again.misses == 0
    (path,) = [p for p in files if p.name == files[0].name]
    path.write_text(path.read_text() + "\nVALUE = 1\n")
    assert _findings(lint_paths([str(src)], cache=Cache.open(tmp_path / "cache", load_catalogue()), jobs=1)) == _findings(first)
    assert parsed == [str(path)]


def test_a_lost_index_means_reading_every_file_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    cache_dir = tmp_path / "cache"
    first = lint_paths(["fixtures/CUD001"], cache=Cache.open(cache_dir, load_catalogue()))
    for idx in (cache_dir / "index").glob("*.idx"):
        idx.write_text("{not json")
    again = Cache.open(cache_dir, load_catalogue())
    second = lint_paths(["fixtures/CUD001"], cache=again)
    assert _findings(first) == _findings(second)
    assert _index(cache_dir)  # written again


def test_a_package_init_that_goes_away_changes_what_the_cache_gives(tmp_path: Path, monkeypatch) -> None:
    """A module's name comes from the `__init__.py` files above it (cudalint.core.modnames.module_name),
    not from its bytes: deleting one leaves every other file's stamp as it was, and the index must
    not hand back the key (and so the summary, the findings) of the module the file was before. The
    shape: /work/judge/miss/cache_stale_1 (a FastAPI app whose `core/` lost its `__init__.py`), and
    the same with the `__init__.py` above the linted folder, which is not among the inputs at all.
    The name decides the finding: `from core.llm import ...` in svc/ finds lib/core/llm.py by its
    name only while lib/ is no package (no folder above svc/ holds core/)."""
    llm = (
        "from llama_cpp import Llama\n\n\ndef load_model():\n    global llm\n    llm = Llama(model_path='m.gguf')\n\n\n"
        "def run_completion(prompt):\n    return llm(prompt=prompt)\n"
    )
    chat = (
        "from fastapi import APIRouter\nfrom core.llm import run_completion\nrouter = APIRouter()\n\n\n"
        "@router.post('/chat')\ndef chat(message: str):\n    return run_completion(message)\n"
    )
    main = "from fastapi import FastAPI\nfrom core.llm import load_model\n\napp = FastAPI()\nload_model()\n"
    for linted in ("app", "app/src"):
        root = tmp_path / linted.replace("/", "_") / "app"
        src = root / "src" if linted == "app/src" else root
        (src / "lib" / "core").mkdir(parents=True)
        (src / "svc" / "routers").mkdir(parents=True)
        (src / "lib" / "core" / "llm.py").write_text(llm)
        (src / "lib" / "core" / "__init__.py").touch()
        (src / "svc" / "routers" / "__init__.py").touch()
        (src / "svc" / "routers" / "chat.py").write_text(chat)
        (src / "svc" / "main.py").write_text(main)
        # `app/src`: its parts are linted, and `lib/__init__.py` is not among them
        init = src / "lib" / "__init__.py"
        init.touch()
        targets = ["app"] if linted == "app" else ["app/src/lib/core", "app/src/svc"]
        monkeypatch.chdir(root.parent)
        cache_dir = root.parent / "cache"
        with_init = lint_paths(targets, cache=Cache.open(cache_dir, load_catalogue()))
        init.unlink()
        plain = lint_paths(targets)
        again = lint_paths(targets, cache=Cache.open(cache_dir, load_catalogue()))
        assert _findings(again) == _findings(plain), linted
        init.touch()
        back = lint_paths(targets, cache=Cache.open(cache_dir, load_catalogue()))
        assert _findings(back) == _findings(with_init) == _findings(lint_paths(targets)), linted
        assert _findings(with_init) != _findings(plain), linted  # the name decides a finding


def test_workers_write_their_entries_before_the_run_returns(tmp_path: Path) -> None:
    """Pool workers keep the entries they make and write them as they exit, while the parent
    analyzes (cudalint.engine.tasks.start_worker); the run waits for them before it returns."""
    src = tmp_path / "proj"
    for i in range(80):  # (over runner.PARALLEL_MIN_FILES: the run uses worker processes)
        pkg = src / f"p{i // 20}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / "__init__.py").touch()
        (pkg / f"m{i}.py").write_text(f"import os\nimport torch\n\ndef f{i}():\n    return torch.zeros(1).cuda()\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '{i % 4}'\n")
    cache = Cache.open(tmp_path / "cache", load_catalogue())
    cold = lint_paths([str(src)], cache=cache, jobs=2)
    entries = summary_records(tmp_path / "cache")
    assert cache.misses == 84 and len(entries) == 84  # every module summarized (the empty `__init__.py` too), every entry written
    assert len(pack_files(tmp_path / "cache")) == 2  # (one pack per worker)
    touched = src / "p1" / "m21.py"
    touched.write_text(touched.read_text() + "\ndef more():\n    return 1\n")
    again = Cache.open(tmp_path / "cache", load_catalogue())
    warm = lint_paths([str(src)], cache=again, jobs=2)
    assert again.misses == 1 and again.hits == 84  # (the edited file's old summary too: compared with its new one)
    assert _findings(cold) == _findings(warm) == _findings(lint_paths([str(src)], jobs=1))


def test_workers_are_forked_only_while_no_other_thread_runs() -> None:
    """A fork copies the locks other threads hold (the language server runs several): spawned then.
    (A fresh interpreter for the first half: this test process may run threads of its own.)"""
    import subprocess
    import threading

    from cudalint.engine import runner

    alone = subprocess.run([sys.executable, "-c", "from cudalint.engine import runner; print(runner._start_method())"], capture_output=True, text=True, timeout=60)
    assert alone.stdout.strip() == ("fork" if sys.platform.startswith("linux") else "spawn")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert runner._start_method() == "spawn"
    finally:
        stop.set()
        other.join()


def test_a_worker_writes_its_entries_only_while_it_is_idle(monkeypatch) -> None:
    """The writer thread of a pool worker (cudalint.engine.tasks.start_worker) waits while a chunk
    runs, and for a quiet moment after one (the next chunk usually starts at once)."""
    import queue
    import threading
    import time

    from cudalint.engine import tasks

    import os

    written: list = []
    niceness: list = []  # the writer's, as it writes: it yields the cores to the parent's analysis (Linux)

    def write(*entry):
        written.append(entry)
        niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    monkeypatch.setattr(tasks, "_write", write)
    monkeypatch.setattr(tasks, "_IDLE", threading.Event())
    monkeypatch.setattr(tasks, "_IDLE_SINCE", [time.monotonic()])
    monkeypatch.setattr(tasks, "_QUIET", 0.2)
    later: queue.SimpleQueue = queue.SimpleQueue()
    writer = threading.Thread(target=tasks._write_when_idle, args=(later,), daemon=True)
    writer.start()
    later.put(("dir", "salt", "k1", "summary"))
    time.sleep(0.1)
    assert written == []  # busy: a chunk runs
    tasks._IDLE_SINCE[0] = time.monotonic()
    tasks._IDLE.set()
    time.sleep(0.1)
    assert written == []  # idle, but only just: the next chunk may start at once
    time.sleep(0.25)
    assert written == [("dir", "salt", "k1", "summary")]
    tasks._IDLE.clear()
    later.put(("dir", "salt", "k2", "summary"))
    time.sleep(0.1)
    assert len(written) == 1
    tasks._write_rest(later, writer)  # as the worker exits: the rest at once, then the thread ends
    assert written[-1][2] == "k2" and not writer.is_alive()
    assert niceness == [os.getpriority(os.PRIO_PROCESS, 0) + tasks._WRITER_NICE] * 2


_IMPORTED = """
import sys
before = set(sys.modules)  # (what the interpreter's start-up imported, .pth files included, is not the run's)
from cudalint.entry import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = ("cudalint.analysis", "cudalint.checks", "cudalint.summary", "cudalint.scan", "cudalint.core.ir", "cudalint.core.catalogue", "cudalint.core.project", "libcst")
# (OpenSSL, loaded by hashlib and hmac, was 3.5 ms of a 45 ms warm run: cudalint.digest; pickle
# serves worker processes and the cache's summaries, queue worker processes only; pathlib, with urllib.parse and ipaddress, was 2.6 ms: cudalint.fspath;
# dataclasses, with inspect, and typing were a third of a warm run's instructions: cudalint.core.record)
library = ("hashlib", "hmac", "_hashlib", "pickle", "queue", "pathlib", "urllib.parse", "ipaddress", "dataclasses", "inspect", "typing")
print(code, sorted(m for m in sys.modules if m.startswith(heavy) and m != "cudalint.core.catalogue_source"), file=sys.stderr)
print(sorted(m for m in set(sys.modules) - before if m in library), file=sys.stderr)
# (threading: only a worker pool or a deep recursion starts a thread; 0.4 ms of a warm run)
print("threading" in set(sys.modules) - before, file=sys.stderr)
# (the file reader: a run with findings reads their files for the fixes; one without reads none)
print("cudalint.inputs.source" in sys.modules, file=sys.stderr)
"""


def test_a_run_the_cache_answers_whole_imports_no_analysis(tmp_path: Path) -> None:
    """Nothing changed: the findings come from the run cache before the catalogue, the checks, the
    IR or the analysis are imported (cudalint.engine.indexed.reused_run; they were a third of a warm
    run of lightning). A test of what is imported, not of time: `make bench` times it."""
    import subprocess
    import sys

    shutil.copytree(FIXTURES / "CUD001", tmp_path / "proj")
    args = [sys.executable, "-c", _IMPORTED, "--cache-dir", str(tmp_path / "c"), "--format", "json", "proj"]
    runs = [subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120) for _ in range(2)]
    (cold_code, cold_mods), (warm_code, warm_mods) = [p.stderr.splitlines()[0].split(" ", 1) for p in runs]
    assert cold_code == warm_code == "1" and runs[0].stdout == runs[1].stdout and json.loads(runs[1].stdout)
    assert "'cudalint.analysis.flow'" in cold_mods and "'cudalint.core.catalogue'" in cold_mods
    assert warm_mods == "[]"
    assert runs[1].stderr.splitlines()[1:3] == ["[]", "False"]
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "ok.py").write_text("import os\n\nprint(os.environ.get('CUDA_VISIBLE_DEVICES'))\n")
    clean = [subprocess.run(args[:-1] + ["clean"], cwd=tmp_path, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert [p.stdout for p in clean] == ["[]\n", "[]\n"] and clean[0].stderr.splitlines()[3] == "True"
    assert clean[1].stderr.splitlines() == ["0 []", "[]", "False", "False"]
    # a comment added: the file is summarized again, its summary is the one it had, and the earlier
    # findings stand (cudalint.engine.run_keys.summary_key) before the checks or the analysis are
    # imported (as text: JSON proves each finding's fix, which lints the fixed file again)
    # (a project without notebooks: the findings of one would need its cells mapped again)
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", tmp_path / "plain")
    text = args[:-3] + ["plain"]
    before = subprocess.run(text, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    edited = sorted((tmp_path / "plain").rglob("*.py"))[0]
    edited.write_text(edited.read_text() + "\n# a comment\n")
    cut = subprocess.run(text, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    (code, mods), library = cut.stderr.splitlines()[0].split(" ", 1), cut.stderr.splitlines()[1]
    assert code == "1" and cut.stdout == before.stdout and "CUD001" in cut.stdout
    # (the edited file's summary before is read by pickle's C half alone: cudalint.engine.summary_codec;
    # the summarizer's IR and its own classes are records, cudalint.core.record: no dataclasses, so no
    # inspect, on this path)
    assert library == "['typing']"
    assert "'cudalint.summary.summarize'" in mods and not any(f"'{m}" in mods for m in ("cudalint.analysis", "cudalint.checks")), mods


@pytest.mark.parametrize("options", [["--format", "sarif"], ["--format", "github"], ["--statistics"], ["--show-source"]])
def test_no_output_of_a_run_the_cache_answers_imports_dataclasses_or_typing(tmp_path: Path, options: list) -> None:
    """The other outputs than text and JSON too (cudalint.core.record, cudalint.entry)."""
    import ast
    import subprocess
    import sys

    shutil.copytree(FIXTURES / "CUD001", tmp_path / "proj")
    args = [sys.executable, "-c", _IMPORTED, "--cache-dir", str(tmp_path / "c"), *options, "proj"]
    runs = [subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and "CUD001" in runs[1].stdout
    warm = runs[1].stderr.splitlines()
    assert warm[0] == "1 []"
    assert not {"dataclasses", "inspect", "typing"} & set(ast.literal_eval(warm[1])), warm[1]


def test_the_summaries_of_the_form_before_are_removed_and_nothing_else(tmp_path: Path) -> None:
    """The upgrade to pickled summaries (`v2/`) left the JSON ones (`v1/`, 188 MB on vllm) on disk
    for good: the first run that writes the index removes the entries cudalint wrote there, and
    nothing a user keeps in the folder, nothing through a link."""
    from cudalint.core import cache_files

    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", src)
    cache_dir = tmp_path / "cache"
    old = [f"v1/{k[:2]}/{k}.json" for k in ("ab" + "1" * 62, "ab" + "2" * 62, "cd" + "3" * 62)]
    for name in old:
        cache_files.write(cache_dir, name, b'{"ModuleIR": []}')
    (cache_dir / "v1" / "ab" / "notes.txt").write_text("mine\n")  # not an entry's name
    (cache_dir / "v1" / "ab" / ("e" * 64 + ".json")).write_text("{}")  # an entry's name, not signed
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.copyfile(cache_dir / old[2], victim / ("4" * 64 + ".json"))
    (cache_dir / "v1" / "ef").symlink_to(victim)  # a link in place of a folder: not followed
    first = lint_paths([str(src)], cache=Cache.open(cache_dir, load_catalogue()))
    left = sorted(p.relative_to(cache_dir).as_posix() for p in (cache_dir / "v1").rglob("*"))
    assert left == ["v1/ab", "v1/ab/" + "e" * 64 + ".json", "v1/ab/notes.txt", "v1/ef"]
    assert sorted(p.name for p in victim.iterdir()) == ["4" * 64 + ".json"]
    assert _findings(first) == _findings(lint_paths([str(src)]))
    # a folder of old entries alone goes whole; a `v1` that is a link is left as it is
    for p in ("v1/ef", "v1/ab/notes.txt", "v1/ab/" + "e" * 64 + ".json"):
        (cache_dir / p).unlink()
    cache_files.write(cache_dir, old[0], b"{}")
    (src / "gpus.py").write_text((src / "gpus.py").read_text() + "\n\ndef more():\n    return 1\n")
    lint_paths([str(src)], cache=Cache.open(cache_dir, load_catalogue()))
    assert not (cache_dir / "v1").exists() and (cache_dir / "v3").is_dir()
    (cache_dir / "v1").symlink_to(victim)
    (src / "gpus.py").write_text((src / "gpus.py").read_text() + "\n\ndef again():\n    return 1\n")
    lint_paths([str(src)], cache=Cache.open(cache_dir, load_catalogue()))
    assert (cache_dir / "v1").is_symlink() and sorted(p.name for p in victim.iterdir()) == ["4" * 64 + ".json"]


def test_remove_form_counts_what_it_removed(tmp_path: Path) -> None:
    from cudalint.core import cache_files

    assert cache_files.remove_form(tmp_path, "v1") == 0  # no such folder
    (tmp_path / "v1").write_text("a file, not a folder\n")
    assert cache_files.remove_form(tmp_path, "v1") == 0 and (tmp_path / "v1").is_file()
    (tmp_path / "v1").unlink()
    for key in ("ab" + "1" * 62, "cd" + "2" * 62):
        cache_files.write(tmp_path, f"v1/{key[:2]}/{key}.json", b"{}")
    assert cache_files.remove_form(tmp_path, "v1") == 2 and not (tmp_path / "v1").exists()
