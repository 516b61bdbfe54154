"""A linter is run on code its user did not write: it never runs that code, never writes outside its
cache (and the files --fix edits), and takes its own cache as untrusted input.

Each test builds the hostile input in a temporary folder and runs cudalint as a user does.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudalint.core import cache_files, cache_packs
from cudalint.core.cache_packs import SUMMARIES
from cudalint.api import lint_paths
from cudalint.engine.cache import Cache
from cudalint.core.catalogue import load_catalogue
from cudalint.core.ir import Event, ModuleIR
from tests.support.packs import pack_files, rewrite_summaries, summary_records
from tests.test_hardening import BUG, CANARY, CANARY_LINE

BIN = Path(sys.executable).parent
# a trap module: if anything imports it, a marker file names it (builtins only: it may shadow anything)
TRAP = "open({marker!r} + '/RAN-' + __name__, 'w').close()\n"


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln and not ln.startswith((" ", "Found", "All"))]


def _modules_before_our_code() -> set[str]:
    """What the interpreter itself imports for `python -m pkg` before any of the package's code runs:
    a file of that name in the current folder shadows it for every `-m` program (Python's own
    behaviour, documented in the README), so the `-m` case cannot plant those."""
    probe = subprocess.run(
        [sys.executable, "-c", "import runpy, importlib.util, importlib.machinery, sys; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd="/",
    )
    return {m.split(".")[0] for m in probe.stdout.split()}


def _hostile_tree(root: Path, marker: Path, skip: set[str] = frozenset()) -> list[str]:
    """A project of 70 modules (enough for worker processes) with a real bug, and beside them a trap
    named after every top-level module of the standard library (multiprocessing.py, pickle.py,
    json.py, threading.py, ...). Returns the names of the project's files."""
    root.mkdir(parents=True, exist_ok=True)
    marker.mkdir(parents=True, exist_ok=True)
    for name in sorted(sys.stdlib_module_names):
        # (os is loaded by the interpreter before any code runs, and a project module named os
        # would stand for the real one in the analysis of canary.py)
        if name in skip or name in sys.builtin_module_names or name == "os":
            continue
        (root / f"{name}.py").write_text(TRAP.format(marker=str(marker)))
    files = ["canary.py"]
    (root / "canary.py").write_text(CANARY)
    for i in range(70):
        (root / f"mod{i:02}.py").write_text(f"import os\nimport json\nimport multiprocessing\nVALUE = {i}\n")
        files.append(f"mod{i:02}.py")
    return files


def _no_trap_ran(marker: Path) -> None:
    assert sorted(p.name for p in marker.iterdir()) == []


@pytest.mark.parametrize(
    "how",
    ["cold", "warm", "jobs2", "named", "no_cache", "python_m"],
)
def test_linting_never_imports_the_trees_modules(tmp_path: Path, how: str) -> None:
    """Found on a real tree: a top-level multiprocessing.py in the linted folder ran in each worker,
    and the run died with BrokenProcessPool, reporting nothing."""
    tree, marker = tmp_path / "tree", tmp_path / "markers"
    skip = _modules_before_our_code() if how == "python_m" else set()
    files = _hostile_tree(tree, marker, skip)
    cache = tmp_path / "cache"
    if how == "python_m":
        cmd = [sys.executable, "-m", "cudalint"]
    else:
        cmd = [str(BIN / "cudalint")]
    args = {"cold": ["."], "warm": ["."], "jobs2": ["--jobs", "2", "."], "named": files, "no_cache": ["--no-cache", "."], "python_m": ["."]}[how]
    runs = 2 if how == "warm" else 1
    for _ in range(runs):
        proc = subprocess.run([*cmd, *args], cwd=tree, capture_output=True, text=True, env=_env(CUDALINT_CACHE_DIR=str(cache)), timeout=600)
        assert proc.stderr == ""
        assert proc.returncode == 1
        assert _lines(proc.stdout) == [CANARY_LINE]
        _no_trap_ran(marker)


@pytest.mark.parametrize("jobs,given", [("1", ("canary.py", "mod00.py")), ("2", ("canary.py", "mod00.py")), ("2", (".",))])
def test_flake8_never_imports_the_trees_modules(tmp_path: Path, jobs: str, given: tuple[str, ...]) -> None:
    """Given the folder: the main process's analysis starts its workers before it builds the import
    graph (cudalint.engine.runner.standby), and they import the summarizer in the linted folder."""
    tree, marker = tmp_path / "tree", tmp_path / "markers"
    _hostile_tree(tree, marker)
    proc = subprocess.run(
        [str(BIN / "flake8"), "--select", "CUD", "--jobs", jobs, *given],
        cwd=tree, capture_output=True, text=True, env=_env(CUDALINT_CACHE_DIR=str(tmp_path / "cache")), timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    shown = os.path.join(".", "canary.py") if given == (".",) else "canary.py"
    assert proc.stdout.startswith(f"{shown}:4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized")
    _no_trap_ran(marker)


# flake8's own entry point, with the default start method of Python 3.14 on Linux; a script outside
# the tree, so that its folder, not the tree, is on the path of this process (as for `flake8`)
_FLAKE8_STARTING = """\
import multiprocessing, sys
if __name__ == "__main__":  # (the helpers import this script again, as __mp_main__)
    multiprocessing.set_start_method("forkserver")
    from flake8.main.cli import main
    sys.exit(main())
"""


def test_flake8_never_imports_the_trees_modules_where_its_pool_forks_from_a_server(tmp_path: Path) -> None:
    """Found on Python 3.14 (tools/python314.sh): flake8's pool started its fork server and resource
    tracker (`python -c ...`) in the linted folder, the tree's linecache.py and traceback.py ran in
    them, and flake8 died with no output. cudalint.flake8_plugin starts both first, from a trusted
    folder."""
    tree, marker = tmp_path / "tree", tmp_path / "markers"
    _hostile_tree(tree, marker)
    driver = tmp_path / "flake8_starting.py"
    driver.write_text(_FLAKE8_STARTING)
    proc = subprocess.run(
        [sys.executable, str(driver), "--select", "CUD", "--jobs", "2", "canary.py", "mod00.py"],
        cwd=tree, capture_output=True, text=True, env=_env(CUDALINT_CACHE_DIR=str(tmp_path / "cache")), timeout=120,  # (broken, the pool starts workers that die, forever)
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("canary.py:4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized")
    _no_trap_ran(marker)


def test_the_workers_see_the_trusted_path_and_the_users_folder(tmp_path: Path, monkeypatch) -> None:
    """cudalint.safepath: workers start in the standard library's folder (so '' finds only it) and
    then enter the run's folder; relative paths are still the user's."""
    from cudalint.engine import runner
    from cudalint import safepath

    monkeypatch.chdir(tmp_path)
    pool = runner._executor(1)
    try:
        with safepath.trusted_cwd() as real:
            assert os.getcwd() == safepath.STDLIB_DIR and real == str(tmp_path)
            cwd, path = pool.submit(_where).result()
    finally:
        pool.shutdown()
    assert os.getcwd() == str(tmp_path)
    assert cwd == str(tmp_path)
    assert "" not in path and str(tmp_path) not in path


def _where() -> tuple[str, list[str]]:
    return os.getcwd(), list(sys.path)


def test_trust_sys_path_drops_the_current_folder_the_interpreter_put_first(tmp_path: Path, monkeypatch) -> None:
    from cudalint import safepath

    here = os.path.dirname(os.path.dirname(safepath.__file__))
    monkeypatch.chdir(tmp_path)
    for before, after in [
        (["", "/usr/lib/x", here], ["/usr/lib/x", here]),  # python -c
        ([str(tmp_path), "/usr/lib/x"], ["/usr/lib/x"]),  # python -m
        (["/venv/bin", "/usr/lib/x"], ["/venv/bin", "/usr/lib/x"]),  # the console script
        (["/usr/lib/x", str(tmp_path)], ["/usr/lib/x", str(tmp_path)]),  # PYTHONPATH, set by the user
    ]:
        monkeypatch.setattr(sys, "path", list(before))
        safepath.trust_sys_path()
        assert sys.path == after
    monkeypatch.setattr(sys, "path", ["", here, "/usr/lib/x"])
    monkeypatch.chdir(here)  # running from a checkout of cudalint: that folder is cudalint's own
    safepath.trust_sys_path()
    assert sys.path == ["", here, "/usr/lib/x"]


# ---------- the cache is untrusted input ---------------------------------------------------------
def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    e = _env(**env)
    if "CUDALINT_CACHE_DIR" not in env:
        e.pop("CUDALINT_CACHE_DIR", None)  # the default: ./.cudalint_cache
    return subprocess.run([str(BIN / "cudalint"), *args], cwd=cwd, capture_output=True, text=True, env=e, timeout=600)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_a_symlinked_cache_folder_is_not_followed(tmp_path: Path) -> None:
    project, victim = tmp_path / "project", tmp_path / "victim"
    project.mkdir()
    victim.mkdir()
    (victim / ".gitignore").write_text("precious\n")
    (victim / "settings.json").write_text("{}\n")
    (project / "canary.py").write_text(CANARY)
    os.symlink("../victim", project / ".cudalint_cache")  # committed in the repository
    before = _snapshot(victim)
    for _ in range(2):
        proc = _cli(["."], project)
        assert _lines(proc.stdout) == [CANARY_LINE]
        assert proc.stderr == "cudalint: warning: the cache folder .cudalint_cache is a symbolic link or not a folder: not used\n"
    assert _snapshot(victim) == before


def test_files_in_the_cache_folder_that_cudalint_did_not_create_are_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "canary.py").write_text(CANARY)
    cache = tmp_path / ".cudalint_cache"
    cache.mkdir()
    (cache / ".gitignore").write_text("# mine\n")
    proc = _cli(["."], tmp_path)
    assert _lines(proc.stdout) == [CANARY_LINE]
    assert (cache / ".gitignore").read_text() == "# mine\n"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_a_link_inside_the_cache_folder_is_not_written_through(tmp_path: Path) -> None:
    (tmp_path / "canary.py").write_text(CANARY)
    victim = tmp_path / "victim"
    victim.mkdir()
    cache = tmp_path / ".cudalint_cache"
    cache.mkdir()
    for name in ("v3", "index", "runs", "catalogue"):
        os.symlink("../victim", cache / name)
    proc = _cli(["."], tmp_path)
    assert _lines(proc.stdout) == [CANARY_LINE]
    assert list(victim.iterdir()) == []


def test_a_folder_made_a_link_after_this_process_wrote_there_is_not_written_through(tmp_path: Path) -> None:
    """A process remembers the cache folders it checked (cudalint.core.cache_files._ready), and a
    long-lived one (the language server) sees the folder change under it: a path that now leads
    elsewhere is checked again."""
    cache, victim = tmp_path / "cache", tmp_path / "victim"
    victim.mkdir()
    cache_files.write(cache, "v1/ab/" + "a" * 64 + ".json", b"{}")
    assert cache_files.read(cache, "v1/ab/" + "a" * 64 + ".json") == {}
    shutil.rmtree(cache / "v1" / "ab")
    os.symlink(victim, cache / "v1" / "ab")
    cache_files.write(cache, "v1/ab/" + "b" * 64 + ".json", b"{}")
    assert list(victim.iterdir()) == []
    os.unlink(cache / "v1" / "ab")  # a folder again, another one: written to once checked
    cache_files.write(cache, "v1/ab/" + "c" * 64 + ".json", b"[]")
    assert cache_files.read(cache, "v1/ab/" + "c" * 64 + ".json") == []
    assert [p.name for p in (cache / "v1" / "ab").iterdir()] == ["c" * 64 + ".json"]


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "canary.py").write_text(CANARY)
    (src / "helper.py").write_text("import torch\n\ndef init():\n    torch.cuda.init()\n")
    (src / "train.py").write_text("import os\nfrom helper import init\ninit()\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    return src


def _run(src: Path, cache_dir: Path | None) -> list[dict]:
    cache = Cache.open(cache_dir, load_catalogue()) if cache_dir is not None else None
    return [f.to_json() for f in lint_paths([str(src)], cache=cache, jobs=1).findings]


def _entries(cache_dir: Path, pattern: str) -> list[Path]:
    return sorted(p for p in cache_dir.rglob(pattern) if p.is_file())


def _sign(cache_dir: Path, entry: Path, value) -> None:
    """Write `value` where `entry` is, signed with this machine's key: damage that the signature
    cannot catch (cudalint's own bug, say) must still be a miss."""
    name = entry.relative_to(cache_dir).as_posix()
    cache_files.write(cache_dir, name, value if isinstance(value, bytes) else json.dumps(value).encode())


def test_an_index_key_that_names_a_path_outside_the_cache_is_refused(tmp_path: Path) -> None:
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    plain = _run(src, None)
    assert _run(src, cache_dir) == plain
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "settings.json").write_text('{"keep": true}\n')
    (idx,) = _entries(cache_dir, "*.idx")
    index = json.loads(idx.read_bytes().partition(b"\n")[2])
    evil = os.path.relpath(victim / "settings", cache_dir / "v1" / "xx")
    for signed in (False, True):
        forged = {k: [v[0], v[1], evil, v[3], v[4]] for k, v in index.items()}
        if signed:
            _sign(cache_dir, idx, forged)
        else:
            idx.write_bytes(b"cudalint-cache-2 " + b"0" * 64 + b"\n" + json.dumps(forged).encode())
        for run in _entries(cache_dir, "*.run"):
            run.unlink()
        assert _run(src, cache_dir) == plain
        assert (victim / "settings.json").read_text() == '{"keep": true}\n'
        assert sorted(p.name for p in victim.iterdir()) == ["settings.json"]


def test_a_planted_catalogue_entry_hides_nothing(tmp_path: Path) -> None:
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    plain = _run(src, None)
    assert [f["code"] for f in plain] == ["CUD001", "CUD001"]
    (cache_dir / "catalogue").mkdir(parents=True)
    from cudalint.core.catalogue import _load, _parsed_file, catalogue_files

    for toml in map(Path, catalogue_files()):
        # the name cudalint would look for, with content that empties the library
        planted = {"library": {"name": toml.stem, "import_roots": [toml.stem]}}
        name = _parsed_file(toml.read_bytes())
        (cache_dir / name).write_text(json.dumps(planted))
    _load.cache_clear()
    assert _run(src, cache_dir) == plain
    _load.cache_clear()


@pytest.mark.parametrize(
    "damage",
    [
        None,  # unsigned: planted
        [1],
        [],  # a list of the wrong length
        "entries",  # a string
        [[]],  # not a table
    ],
)
def test_the_whole_catalogue_entry_answers_alone_and_a_damaged_one_is_a_miss(tmp_path: Path, damage, monkeypatch) -> None:
    """The parsed TOML of every catalogue file is also kept in one entry (one read, not 31); a
    damaged one is a miss, and the catalogue is made from the files as before. (Without the shipped
    pack, cudalint.core.catalogue_pack: as for files it does not hold, such as a user's.)"""
    from cudalint.core import catalogue
    from cudalint.core.catalogue import _load, _whole_file, load_catalogue as load
    from cudalint.core.catalogue_source import digest_of, read_sources

    monkeypatch.setattr(catalogue, "shipped", lambda data: None)
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    plain = _run(src, None)
    _load.cache_clear()
    reference = load(cache_dir=cache_dir)
    whole = cache_dir / _whole_file(digest_of(read_sources()))
    per_file = [p for p in _entries(cache_dir / "catalogue", "*.json") if p != whole]
    assert whole.is_file() and len(per_file) == len(read_sources())
    for entry in per_file:
        entry.unlink()
    _load.cache_clear()
    assert load(cache_dir=cache_dir) == reference
    assert _entries(cache_dir / "catalogue", "*.json") == [whole]  # (the whole entry answered: nothing parsed)
    if damage is None:
        whole.write_text(json.dumps([{"library": {"name": "torch", "import_roots": []}}] * len(per_file)))
    else:
        _sign(cache_dir, whole, damage)
    _load.cache_clear()
    assert load(cache_dir=cache_dir) == reference
    _load.cache_clear()
    assert _run(src, cache_dir) == plain
    _load.cache_clear()


@pytest.mark.parametrize(
    "where,damage",
    [
        ("*.run", [1]),
        ("*.run", [{"Finding": [5]}]),
        ("*.run", [{"Finding": ["CUD001", "x.py", "1", 1, 1, 1, "m", [], "error", None]}]),
        (SUMMARIES, pickle.dumps(ModuleIR("x.py", "x", 5))),  # (`top` is not a block)
        (SUMMARIES, pickle.dumps(ModuleIR("x.py", "x", (), functions={"f": 5}))),
        (SUMMARIES, pickle.dumps([1, 2])),
        (SUMMARIES, pickle.dumps(Event("init", (1, 1, 1, 1), "t"))),
        (SUMMARIES, pickle.dumps(Path("x.py"))),  # a class outside the IR's
        (SUMMARIES, {"ModuleIR": ["x.py", "x", [], {"": []}, {"": []}, [], False, []]}),  # (the JSON form, before 4)
        ("*.idx", {"x": [1, 2, "nothex", 4]}),
        ("*.idx", [1]),
        ("*.idx", {"x": [1, 2, "0" * 64, "0" * 64, "m", "extra"]}),  # (the form with a scan's digest, before 2026-11)
        ("catalogue/*.json", {"api": 5}),
    ],
)
@pytest.mark.parametrize("signed", [False, True], ids=["planted", "signed"])
def test_an_entry_of_the_wrong_shape_is_a_miss(tmp_path: Path, where: str, damage, signed: bool) -> None:
    """Valid JSON of the wrong shape once stopped every run with exit 2. Planted (unsigned) or
    signed with this machine's key (a bug of cudalint's own), it is a miss: the findings are
    those of a run without the cache."""
    from cudalint.core.catalogue import _load

    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    plain = _run(src, None)
    _load.cache_clear()
    assert _run(src, cache_dir) == plain
    payload = damage if isinstance(damage, bytes) else json.dumps(damage).encode()
    if where == SUMMARIES:  # (records in packs: cudalint.core.cache_packs)
        assert rewrite_summaries(cache_dir, lambda name, old: payload, signed=signed)
    entries = _entries(cache_dir, where) if where != SUMMARIES else []
    assert entries or where == SUMMARIES, where
    for entry in entries:
        if signed:
            _sign(cache_dir, entry, damage)
        else:
            entry.write_bytes(payload)
    # what the next run must read: the damaged entry, not an earlier layer that answers first
    if not where.endswith(".run"):
        for run in _entries(cache_dir, "*.run"):
            run.unlink()
    _load.cache_clear()
    assert _run(src, cache_dir) == plain
    _load.cache_clear()


class _Runs:
    """Pickles as a call of `exec`: what plain `pickle.loads` would run."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return (exec, (self.code,))


def test_a_signed_summary_that_would_run_code_runs_nothing(tmp_path: Path) -> None:
    """Summaries are pickled (cudalint.engine.summary_codec). A pickle signed with this machine's
    key (a stolen key, say) that names a function to call is refused whole: nothing runs, and the
    findings are those of a run without the cache."""
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    ran = tmp_path / "ran"
    plain = _run(src, None)
    assert _run(src, cache_dir) == plain
    payload = pickle.dumps(_Runs(f"open({str(ran)!r}, 'w').close()"))
    pickle.loads(payload)  # (it does run code when read as plain pickle)
    assert ran.exists()
    ran.unlink()
    assert rewrite_summaries(cache_dir, lambda name, old: payload)
    for run in _entries(cache_dir, "*.run"):
        run.unlink()
    assert _run(src, cache_dir) == plain
    assert not ran.exists()


def test_an_entry_copied_under_another_name_is_a_miss(tmp_path: Path) -> None:
    """The signature covers the entry's name: a summary moved to stand for other bytes is refused."""
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    plain = _run(src, None)
    _run(src, cache_dir)
    names = [name for name, _payload in summary_records(cache_dir)]
    assert len(names) >= 2
    # each record's payload and signature moved under the next record's name
    cache_packs.close_all()
    for pack in pack_files(cache_dir):
        data = pack.read_bytes()
        walked = list(cache_packs._walk(str(pack)))
        heads = [data[at - len(name) - cache_packs._HEAD.size:at - len(name)] for name, at, _size, _mac in walked]
        bodies = [data[at:at + size] for _name, at, size, _mac in walked]
        order = list(range(1, len(walked))) + [0]
        pack.write_bytes(b"".join(heads[j][:6] + struct.pack(">I", len(bodies[j])) + heads[j][10:] + walked[i][0].encode() + bodies[j] for i, j in enumerate(order)))
    assert sorted(n for n, _ in summary_records(cache_dir)) == [] and sorted(n for n, _a, _s, _m in (w for p in pack_files(cache_dir) for w in cache_packs._walk(str(p)))) == sorted(names)
    for run in _entries(cache_dir, "*.run"):
        run.unlink()
    again = Cache.open(cache_dir, load_catalogue())
    assert [f.to_json() for f in lint_paths([str(src)], cache=again, jobs=1).findings] == plain


def test_a_file_edited_between_the_two_reads_is_cached_under_the_bytes_parsed(tmp_path: Path, monkeypatch) -> None:
    """Pass 1 hashes a file's bytes, pass 2 reads it again to summarize it: an edit in between once
    stored the new summary under the old key, and the finding stayed hidden in every later run."""
    from cudalint.engine import tasks

    src, cache_dir = tmp_path / "proj", tmp_path / "cache"
    src.mkdir()
    (src / "helper.py").write_text("import torch\n\ndef init():\n    pass\n")
    (src / "train.py").write_text("import os\nfrom helper import init\ninit()\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    real_read = tasks._read
    edited = "import torch\n\ndef init():\n    torch.cuda.init()\n"

    def read_then_edit(info):
        data = real_read(info)
        if info.path.endswith("helper.py") and b"pass" in data:
            (src / "helper.py").write_text(edited)  # the edit lands right after pass 1 read it
            os.utime(src / "helper.py", ns=(1, 1))  # (same size would hide it from the index: this does not)
        return data

    monkeypatch.setattr(tasks, "_read", read_then_edit)
    _run(src, cache_dir)
    monkeypatch.setattr(tasks, "_read", real_read)
    assert _run(src, cache_dir) == _run(src, None)
    assert [f["line"] for f in _run(src, cache_dir)] == [4]


def test_concurrent_runs_while_files_change_leave_a_true_cache(tmp_path: Path) -> None:
    """Four runs at once share one cache while a writer flips files between two versions; the next
    quiet run must equal --no-cache."""
    src, cache_dir = _project(tmp_path), tmp_path / "cache"
    for i in range(70):
        (src / f"m{i:02}.py").write_text(f"import helper\nX = {i}\n")
    versions = [
        "import torch\n\ndef init():\n    torch.cuda.init()\n",
        "import torch\n\ndef init():\n    pass\n",
    ]
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time, sys
            versions = {versions!r}
            for i in range(400):
                open({str(src / 'helper.py')!r}, 'w').write(versions[i % 2] + '#' * (i % 7) + '\\n')
                time.sleep(0.005)
        """)],
    )
    procs = [
        subprocess.Popen([str(BIN / "cudalint"), "--jobs", "2" if i % 2 else "1", "."], cwd=src, env=_env(CUDALINT_CACHE_DIR=str(cache_dir)),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for i in range(4)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=600)
        assert err == ""
    writer.wait(timeout=600)
    quiet = [_cli(["--format", "json", "."], src, CUDALINT_CACHE_DIR=str(cache_dir)).stdout for _ in range(2)]
    plain = _cli(["--format", "json", "--no-cache", "."], src).stdout
    assert quiet == [plain, plain]


# ---------- inputs that once crashed or hung the whole run -------------------------------------
def _tree_with(tmp_path: Path, make) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "canary.py").write_text(CANARY)
    make(tree)
    return tree


def _remove_deep(top: Path) -> None:
    """rmtree recurses once per level (and so does pytest's clean-up of old temporary folders):
    down to the bottom, then up, removing one level at a time."""
    here = os.getcwd()
    os.chdir(top)
    try:
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            shutil.rmtree("d")
    finally:
        os.chdir(here)


def _nested(tree: Path, depth: int, package: bool) -> None:
    here = os.getcwd()
    os.chdir(tree)
    try:
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
            if package:
                open("__init__.py", "w").close()
        Path("deep.py").write_bytes(BUG)
    finally:
        os.chdir(here)


def _dag(tree: Path, n: int = 24) -> None:
    for i in range(n + 1):
        (tree / f"L{i}").mkdir()
    (tree / f"L{n}" / "x.py").write_text("x = 1\n")
    for i in range(n):
        os.symlink(f"../L{i + 1}", tree / f"L{i}" / "a")
        os.symlink(f"../L{i + 1}", tree / f"L{i}" / "b")


def _elif_raise(tree: Path) -> None:
    lines = ["import os", "import torch", "def f(x):", "    if x == 0:", "        raise ValueError"]
    for i in range(1, 600):
        lines += [f"    elif x == {i}:", "        raise ValueError"]
    lines += ["torch.cuda.init()", 'os.environ["CUDA_VISIBLE_DEVICES"] = "1"']
    (tree / "elif.py").write_text("\n".join(lines) + "\n")


def _big_list(tree: Path) -> None:
    (tree / "data.py").write_bytes(b"x = [" + b"1," * (5 * 1024 * 1024 - 8) + b"]\n")


def _big_cell(tree: Path) -> None:
    cell = "x = [" + "1," * (1024 * 1024) + "]\n"
    (tree / "nb.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": cell}], "nbformat": 4, "metadata": {}}))


def _int_limit() -> str:
    """CPython's own words for a number too long to read (3.10.13 says "(4300)", 3.11 "(4300 digits)")."""
    try:
        json.loads("9" * 5000)
    except ValueError as exc:
        return str(exc).split(";")[0]  # (cudalint.inputs.notebook leaves out the advice after it)
    return ""


D = "d/" * 1100
HOSTILE_INPUTS = [
    ("non_utf8_name", lambda t: (t / os.fsdecode(b"bad\xffname.py")).write_bytes(BUG),
     [os.fsdecode(b"bad\xffname.py") + ":4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() (line 3); the driver read it then, so this write has no effect"]),
    ("elif_raise_600", _elif_raise,
     ["elif.py:1205:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() (line 1204); the driver read it then, so this write has no effect"]),
    ("nested_folders_1100", lambda t: _nested(t, 1100, package=False),
     [f"{D}deep.py:4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() (line 3); the driver read it then, so this write has no effect"]),
    ("nested_packages_1100", lambda t: _nested(t, 1100, package=True),
     [f"{D}deep.py:4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() (line 3); the driver read it then, so this write has no effect"]),
    ("folders_linked_into_a_dag_24", _dag, []),
    ("fifo_named_ipynb", lambda t: os.mkfifo(t / "x.ipynb"), ["x.ipynb:1:1: CUD900 skipped: not a regular file (a FIFO, socket or device)"]),
    ("notebook_cells_not_a_list", lambda t: (t / "nb.ipynb").write_text('{"worksheets":[{"cells":5}]}'),
     ["nb.ipynb:1:1: CUD900 not a notebook: a worksheet's `cells` is not a list"]),
    ("notebook_huge_integer", lambda t: (t / "nb.ipynb").write_text('{"cells": [], "n": ' + "9" * 5000 + "}"),
     [f"nb.ipynb:1:1: CUD900 not a notebook: invalid JSON: {_int_limit()}"]),
    ("list_literal_10mb", _big_list,
     ["data.py:1:1: CUD900 skipped: 5,242,873 names and numbers, more than the 300,000 cudalint analyzes in one file (its syntax tree would take about 5.0 GB); exclude it, or split it"]),
    ("notebook_cell_2mb", _big_cell,
     ["nb.ipynb:1:1: CUD900 skipped: 1,048,577 names and numbers, more than the 300,000 cudalint analyzes in one file (its syntax tree would take about 1.0 GB); exclude it, or split it"]),
]


def _limited_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))  # a run that parsed the big input would die


@pytest.mark.parametrize("name,make,expected", HOSTILE_INPUTS, ids=[c[0] for c in HOSTILE_INPUTS])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_hostile_input_is_one_clear_line_and_the_run_goes_on(tmp_path: Path, name, make, expected, jobs) -> None:
    tree = _tree_with(tmp_path, make)
    proc = subprocess.run(
        [str(BIN / "cudalint"), "--no-cache", "--jobs", jobs, "."], cwd=tree, capture_output=True, env=_env(),
        timeout=600, preexec_fn=_limited_memory,
    )
    out = proc.stdout.decode("utf-8", "surrogateescape")
    if name.startswith("nested"):
        _remove_deep(tree)
    assert proc.stderr == b""
    assert proc.returncode == 1
    assert sorted(_lines(out)) == sorted(expected + [CANARY_LINE])


# ---------- --fix ----------------------------------------------------------------------------------
FIX_CASE = Path(__file__).parent / "data" / "fix" / "move_literal.py"


def test_fix_refuses_a_link_out_of_the_linted_tree(tmp_path: Path) -> None:
    outside, tree = tmp_path / "outside", tmp_path / "tree"
    outside.mkdir()
    tree.mkdir()
    shutil.copyfile(FIX_CASE, outside / "victim.py")
    os.symlink("../outside/victim.py", tree / "train.py")
    before = (outside / "victim.py").read_bytes()
    proc = _cli(["--fix", "."], tree)
    assert (outside / "victim.py").read_bytes() == before
    assert proc.stderr.splitlines()[:2] == [
        f"cudalint: train.py: not fixed: it is a symbolic link to {outside / 'victim.py'}, outside the paths being fixed",
        f"help: if that file is yours to change, run `cudalint --fix {outside / 'victim.py'}`",
    ]
    assert proc.returncode == 1


def test_fix_refuses_a_hard_linked_file(tmp_path: Path) -> None:
    shutil.copyfile(FIX_CASE, tmp_path / "train.py")
    os.link(tmp_path / "train.py", tmp_path / "other_name.py.bak")
    before = (tmp_path / "train.py").read_bytes()
    proc = _cli(["--fix", "train.py"], tmp_path)
    assert (tmp_path / "train.py").read_bytes() == before
    assert os.stat(tmp_path / "train.py").st_ino == os.stat(tmp_path / "other_name.py.bak").st_ino
    assert proc.stderr.splitlines()[:2] == [
        "cudalint: train.py: not fixed: the file has 2 hard links, and a fix writes a new file: the other names would keep the old code",
        "help: apply the fix by hand (`cudalint --diff` shows it), or give this name its own copy and run --fix again",
    ]


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)])
def test_a_signal_during_fix_leaves_no_temporary_file(tmp_path: Path, sig, code) -> None:
    """The signal arrives while the new file is being written (from inside os.fsync, the slowest
    step): it waits until the file is renamed into place, then ends the run."""
    shutil.copyfile(FIX_CASE, tmp_path / "train.py")
    driver = textwrap.dedent(f"""
        import os, signal, sys
        real_fsync = os.fsync
        def fsync(fd):
            os.kill(os.getpid(), {int(sig)})
            real_fsync(fd)
        os.fsync = fsync
        from cudalint.entry import main
        main(["--fix", "train.py"])
    """)
    proc = subprocess.run([sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=600)
    assert proc.returncode == code, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["train.py"]
    assert (tmp_path / "train.py").read_bytes() == FIX_CASE.with_name("move_literal.fixed.py").read_bytes()
