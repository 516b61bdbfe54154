"""The real flake8, in a subprocess, against the real CLI: the same findings, places and messages."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.core.findings import Finding, Step
from cudalint.output.report import folded_message
from tests.fixture_expectations import FIXTURES as FIXTURES_DIR, case_id, fixture_cases
from tests.support.packs import summary_records

FORMAT = "%(path)s\t%(row)d\t%(col)d\t%(code)s\t%(text)s"
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


def _project(tmp_path: Path, case: Path) -> Path:
    """The fixture as a user's project: its own folder with a pyproject.toml."""
    proj = tmp_path / "proj"
    if case.is_dir():
        shutil.copytree(case, proj)
    else:
        proj.mkdir()
        shutil.copy(case, proj / case.name)
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    return proj


def flake8(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", f"--format={FORMAT}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def flake8_findings(proc: subprocess.CompletedProcess) -> list[tuple[str, int, int, str, str]]:
    assert "Traceback" not in proc.stderr, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        path, row, col, code, text = line.split("\t")
        out.append((os.path.normpath(path), int(row), int(col), code, text))
    return sorted(out)


def cli_json(cwd: Path, *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "cudalint", "--format", "json", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def as_flake8(found: dict) -> tuple[str, int, int, str, str]:
    """What flake8 must print for one finding of the CLI's JSON."""
    finding = Finding(
        code=found["code"],
        path=found["path"],
        line=found["line"],
        column=found["column"],
        end_line=found["end_line"],
        end_column=found["end_column"],
        message=found["message"],
        witness=tuple(Step(**s) for s in found["witness"]),
    )
    return (os.path.normpath(found["path"]), found["line"], found["column"], found["code"], folded_message(finding))


PY_CASES = [c for c in fixture_cases() if c.suffix != ".ipynb"]


@pytest.mark.parametrize("case", PY_CASES, ids=case_id)
def test_flake8_reports_what_the_cli_reports(case: Path, tmp_path: Path) -> None:
    """Finding by finding: path, line, 1-based column, code, and the message with the witness folded in."""
    proj = _project(tmp_path, case)
    found = [f for f in cli_json(proj, ".") if f["path"].endswith(".py")]
    # a file that does not parse: flake8 reports it itself (E999) and runs no plugin on it
    unparsable = [f for f in found if f["code"] == "CUD900" and f["message"].startswith("syntax error")]
    syntax = sorted((os.path.normpath(f["path"]), f["line"]) for f in unparsable)
    expected = sorted(as_flake8(f) for f in found if f not in unparsable)
    got = flake8_findings(flake8(proj, "--select", "CUD,E999", "."))
    assert [g for g in got if g[3] != "E999"] == expected
    assert sorted((path, line) for path, line, _col, code, _msg in got if code == "E999") == syntax


def test_flake8_on_one_file_still_sees_the_other_modules(tmp_path: Path) -> None:
    """pre-commit and editors give flake8 one file: the finding caused by serve.py is still found in gpus.py."""
    from tests.fixture_expectations import FIXTURES

    proj = _project(tmp_path, FIXTURES / "CUD001" / "cross_module")
    got = flake8_findings(flake8(proj, "--select", "CUD", "gpus.py"))
    assert [(p, r, c, code) for p, r, c, code, _ in got] == [("gpus.py", 5, 5, "CUD001")]
    assert got[0][4].endswith("[via utils/device.py:3 -> serve.py:4 -> serve.py:7]")


def test_noqa_is_flake8s_own(tmp_path: Path) -> None:
    """`# noqa: CUD001` suppresses through flake8's mechanism, so `--disable-noqa` brings it back."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD.replace('"1"\n', '"1"  # noqa: CUD001\n'), encoding="utf-8")
    assert flake8_findings(flake8(tmp_path, "--select", "CUD", "t.py")) == []
    got = flake8_findings(flake8(tmp_path, "--select", "CUD", "--disable-noqa", "t.py"))
    assert [(p, r, c, code) for p, r, c, code, _ in got] == [("t.py", 6, 5, "CUD001")]


def test_columns_match_the_cli_text_output(tmp_path: Path) -> None:
    """flake8 prints `t.py:6:5:` exactly where `cudalint` prints `t.py:6:5:` (TorchFix is off by one)."""
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "CUD", "t.py"], cwd=tmp_path, capture_output=True, text=True)
    cli = subprocess.run([sys.executable, "-m", "cudalint", "t.py"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.startswith("t.py:6:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by ")
    assert cli.stdout.startswith("t.py:6:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by ")
    assert proc.stdout.split(" [via ")[0] == cli.stdout.splitlines()[0]


def _cache_entries(directory: Path) -> list[str]:
    """The names of the summaries in a cache (the parsed catalogue and the run results sit beside them)."""
    return sorted(name for name, _payload in summary_records(directory))


def test_plugin_does_no_work_when_cud_is_not_selected(tmp_path: Path) -> None:
    """With `--select E` flake8 drops CUD codes, so the plugin does not even summarize the file."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    cache = tmp_path / "cache"
    flake8(tmp_path, "--select", "E", "t.py", env={"CUDALINT_CACHE_DIR": str(cache)})
    assert _cache_entries(cache) == []
    got = flake8_findings(flake8(tmp_path, "--select", "E,CUD", "t.py", env={"CUDALINT_CACHE_DIR": str(cache)}))
    assert [code for *_, code, _ in got] == ["CUD001"]
    assert len(_cache_entries(cache)) == 1


def test_files_without_trigger_words_are_not_parsed(tmp_path: Path) -> None:
    """The pre-check of a file flake8 hands over that the analysis made before its workers started
    did not see (an editor's buffer on standard input): with no catalogue word and no project
    import, it is never summarized; with one, it is."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    cache = tmp_path / "cache"
    plain = "import json\n\n\ndef f(x):\n    return json.dumps(x)\n"
    for text, entries in ((plain, 0), (BAD, 1)):
        proc = subprocess.run(
            [sys.executable, "-m", "flake8", f"--format={FORMAT}", "--select", "CUD", "--stdin-display-name", "plain.py", "-"],
            cwd=tmp_path, input=text, capture_output=True, text=True, env={**os.environ, "CUDALINT_CACHE_DIR": str(cache)}, timeout=300,
        )
        assert "Traceback" not in proc.stderr and bool(proc.stdout) == bool(entries), proc
        assert len(_cache_entries(cache)) == entries


def test_the_plugin_and_the_cli_share_the_summary_cache(tmp_path: Path) -> None:
    """The CLI fills the cache; flake8 on the same project adds no entry (it summarized nothing anew)."""
    from tests.fixture_expectations import FIXTURES

    proj = _project(tmp_path, FIXTURES / "CUD001" / "cross_module")
    cache = tmp_path / "cache"
    expected = sorted(as_flake8(f) for f in cli_json(proj, "--cache-dir", str(cache), "."))
    before = _cache_entries(cache)
    # one lean summary per module (cudalint.summary.thread_free), and the whole one of gpus.py, which
    # the CLI read to work out its fix (cudalint.fixes.fixinfo)
    assert len(before) == len(list(proj.rglob("*.py"))) + 1
    got = flake8_findings(flake8(proj, "--select", "CUD", ".", env={"CUDALINT_CACHE_DIR": str(cache)}))
    assert got == expected and len(got) >= 2
    assert _cache_entries(cache) == before


def test_project_cache_defaults_to_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "t.py").write_text(BAD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CUDALINT_CACHE_DIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "CUD", "t.py"], cwd=tmp_path / "pkg", capture_output=True, text=True, env=env
    )
    assert "CUD001" in proc.stdout
    assert len(_cache_entries(tmp_path / ".cudalint_cache")) == 1


def test_tool_cudalint_settings_apply_to_flake8(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cudalint]\nper-file-ignores = { "legacy/*" = ["CUD001"] }\n', encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "new.py").write_text(BAD, encoding="utf-8")
    got = flake8_findings(flake8(tmp_path, "--select", "CUD", "."))
    assert [(p, code) for p, _, _, code, _ in got] == [("new.py", "CUD001")]


def test_a_broken_config_is_reported_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cudalint]\nselct = ["CUD"]\n', encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    proc = flake8(tmp_path, "--select", "CUD", "t.py")
    got = flake8_findings(proc)
    assert [(p, r, c, code) for p, r, c, code, _ in got] == [("t.py", 1, 1, "CUD900")]
    assert "unknown key 'selct'" in got[0][4]


def test_folded_message_shortens_long_witnesses() -> None:
    steps = tuple(Step(f"m{i}.py", i, "x") for i in range(1, 7)) + (Step("t.py", 9, "written here"),)
    f = Finding("CUD001", "t.py", 9, 1, 9, 5, "msg", witness=steps)
    assert folded_message(f) == "msg [via m1.py:1 -> m2.py:2 -> ... -> m5.py:5 -> m6.py:6]"
    local = Finding("CUD001", "t.py", 9, 1, 9, 5, "msg", witness=(Step("t.py", 4, "init"), Step("t.py", 9, "write")))
    assert folded_message(local) == "msg [via line 4]"
    assert folded_message(Finding("CUD900", "t.py", 1, 1, 1, 1, "syntax error")) == "syntax error"


def test_flake8_on_one_file_without_any_project_marker_still_sees_the_other_modules(tmp_path: Path) -> None:
    """No pyproject.toml, setup.cfg or .git anywhere up: the folder holding the top-level package is the project."""
    from tests.fixture_expectations import FIXTURES

    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", proj)
    assert not any((d / m).exists() for d in (proj, *proj.parents) for m in ("pyproject.toml", "setup.cfg", ".git"))
    got = flake8_findings(flake8(proj, "--select", "CUD", "gpus.py"))
    assert [(p, r, c, code) for p, r, c, code, _ in got] == [("gpus.py", 5, 5, "CUD001")]
    assert got[0][4].endswith("[via utils/device.py:3 -> serve.py:4 -> serve.py:7]")


def test_flake8_with_several_jobs_on_a_big_component(tmp_path: Path) -> None:
    """flake8 --jobs 2 runs plugins in daemonic pool workers, which may not start processes: with an
    empty cache, a component of 64 modules or more (cudalint.engine.runner.PARALLEL_MIN_FILES) once
    gave every file "CUD900 cudalint cannot run: daemonic processes are not allowed to have children".
    Now the run is serial there, its findings are the CLI's, and the next flake8 run reads the cache."""
    proj = tmp_path / "proj"
    pkg = proj / "pkg"
    pkg.mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (pkg / "__init__.py").write_text("".join(f"from pkg import m{i}\n" for i in range(70)), encoding="utf-8")
    for i in range(70):
        (pkg / f"m{i}.py").write_text(f"import pkg\n\nVALUE = {i}\n", encoding="utf-8")
    (pkg / "m7.py").write_text(BAD, encoding="utf-8")
    env = {"CUDALINT_CACHE_DIR": str(tmp_path / "cache")}
    first = flake8_findings(flake8(proj, "--jobs", "2", "--select", "CUD", "pkg", env=env))
    assert [(Path(p).name, row, code) for p, row, col, code, text in first] == [("m7.py", 5, "CUD003"), ("m7.py", 6, "CUD001")]
    assert {p.name for p in (tmp_path / "cache").iterdir() if p.is_dir()} >= {"index", "v3"}
    assert flake8_findings(flake8(proj, "--jobs", "2", "--select", "CUD", "pkg", env=env)) == first


def test_flake8_on_a_file_its_project_leaves_out_still_uses_the_cache(tmp_path: Path) -> None:
    """A gitignored folder that flake8 is handed anyway (the bench once copied its corpora inside
    this repository): the project's walk leaves the file out, so it is judged alone, but its bytes
    are the file's own, so the run goes through the index and the whole-run cache like the CLI's,
    and the next flake8 run summarizes nothing anew (before, every warm run re-summarized it)."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    (proj / "scratch").mkdir()
    (proj / "scratch" / "t.py").write_text(BAD, encoding="utf-8")
    cache = tmp_path / "cache"
    env = {"CUDALINT_CACHE_DIR": str(cache)}
    first = flake8_findings(flake8(proj, "--select", "CUD", "scratch/t.py", env=env))
    assert [(p, r, code) for p, r, c, code, _ in first] == [(os.path.join("scratch", "t.py"), 6, "CUD001")]
    assert [p.suffix for p in (cache / "index").iterdir()] and all(p.stat().st_size for p in (cache / "index").iterdir())
    assert flake8_findings(flake8(proj, "--select", "CUD", "scratch/t.py", env=env)) == first


def test_flake8s_main_process_analyzes_once_and_the_workers_look_their_files_up(tmp_path: Path, monkeypatch) -> None:
    """`Plugin.parse_options` runs in flake8's main process before its workers start: the components
    of the files flake8 was given are analyzed there, once, with cudalint's own workers; a (forked)
    worker only looks its file up. A file whose text is not what was analyzed takes its own way."""
    import argparse

    import cudalint.api
    from cudalint import flake8_plugin

    proj = tmp_path / "proj"
    pkg = proj / "pkg"
    pkg.mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "a.py").write_text(BAD, encoding="utf-8")
    (pkg / "b.py").write_text("from pkg import a\n\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", encoding="utf-8")
    (pkg / "plain.py").write_text("import torch\n\nX = torch.zeros(1)\n", encoding="utf-8")
    monkeypatch.chdir(proj)
    monkeypatch.setenv("CUDALINT_CACHE_DIR", str(tmp_path / "cache"))
    flake8_plugin.Plugin.parse_options(argparse.Namespace(filenames=["pkg"]))
    assert flake8_plugin.Plugin.selected
    project = flake8_plugin._project_for("pkg/a.py")
    assert sorted(project.early) == [os.path.join("pkg", n) for n in ("__init__.py", "a.py", "b.py", "plain.py")]
    runs: list = []
    real = cudalint.api.lint_files
    monkeypatch.setattr(cudalint.api, "lint_files", lambda *a, **k: runs.append(a[0]) or real(*a, **k))
    codes = {name: [(f.code, f.line) for f in flake8_plugin.findings_for(f"pkg/{name}", (pkg / name).read_text())] for name in ("a.py", "b.py", "plain.py")}
    assert codes == {"a.py": [("CUD003", 5), ("CUD001", 6)], "b.py": [("CUD001", 4)], "plain.py": []}
    assert runs == []  # every file was served by the main process's analysis
    edited = (pkg / "a.py").read_text() + "\n# edited in the editor\n"
    # its own way: the text differs from what was analyzed (an edited buffer is judged alone)
    assert [(f.code, f.line) for f in flake8_plugin.findings_for("pkg/a.py", edited)] == [("CUD001", 6)]
    assert runs == [["pkg/a.py"]]


def test_the_main_process_looks_for_components_only_when_part_of_a_project_is_given(tmp_path: Path, monkeypatch) -> None:
    """Given the whole project, its files are analyzed together and no import edge is looked for;
    given one folder, only the files connected to it by imports are (the other component is not)."""
    import argparse

    import cudalint.api
    from cudalint import flake8_plugin

    proj = tmp_path / "proj"
    for pkg in ("one", "two"):
        (proj / pkg).mkdir(parents=True)
        (proj / pkg / "__init__.py").write_text("", encoding="utf-8")
        (proj / pkg / "a.py").write_text(BAD, encoding="utf-8")
    (proj / "one" / "b.py").write_text("from one import a\n", encoding="utf-8")
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (proj / "top.py").write_text("import two.a\n", encoding="utf-8")
    monkeypatch.chdir(proj)
    monkeypatch.setenv("CUDALINT_CACHE_DIR", str(tmp_path / "cache"))
    runs: list = []
    real = cudalint.api.lint_files
    monkeypatch.setattr(cudalint.api, "lint_files", lambda *a, **k: runs.append(sorted(a[0])) or real(*a, **k))
    found = os.path.join
    monkeypatch.setattr(flake8_plugin, "_PROJECTS", {})
    flake8_plugin.Plugin.parse_options(argparse.Namespace(filenames=["one"]))
    project = flake8_plugin._project_for("one/a.py")
    assert project.graph._edges is not None
    assert runs == [[found("one", "__init__.py"), found("one", "a.py"), found("one", "b.py")]]
    assert sorted(project.early) == runs[0]
    runs.clear()
    monkeypatch.setattr(flake8_plugin, "_PROJECTS", {})
    flake8_plugin.Plugin.parse_options(argparse.Namespace(filenames=["."]))
    project = flake8_plugin._project_for("one/a.py")
    assert project.graph._edges is None  # (the whole project: no component was looked for)
    everything = [found("one", "__init__.py"), found("one", "a.py"), found("one", "b.py"), "top.py", found("two", "__init__.py"), found("two", "a.py")]
    assert runs == [everything]
    assert sorted(project.early) == everything
    codes = {p: [(f.code, f.line) for f in found_] for p, (_, found_) in project.early.items() if found_}
    assert codes == {found("one", "a.py"): [("CUD003", 5), ("CUD001", 6)], found("two", "a.py"): [("CUD003", 5), ("CUD001", 6)]}


@pytest.mark.parametrize(
    "jobs,names,expected",
    [
        ("auto", ["."], True),
        ("2", ["a.py", "b.py"], True),
        ("1", ["."], False),  # flake8 checks serially: no fork server to start (32 ms on 3.14)
        ("auto", ["one.py"], False),
        ("auto", ["-"], False),
        ("auto", [], True),  # (flake8's default: the current folder)
    ],
    ids=["auto_folder", "two_jobs_two_files", "one_job", "one_file", "stdin", "no_names"],
)
def test_the_fork_server_is_started_only_for_a_pool_flake8_may_use(tmp_path, monkeypatch, jobs, names, expected) -> None:
    from types import SimpleNamespace

    from flake8.main.options import JobsArgument

    from cudalint import flake8_plugin

    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.py").write_text("x = 1\n")
    monkeypatch.setattr(flake8_plugin.os, "cpu_count", lambda: 4)
    assert flake8_plugin._pool_possible(SimpleNamespace(jobs=JobsArgument(jobs), filenames=names)) is expected


# flake8's entry point under a start method that starts its workers afresh (Python 3.14's default
# on Linux, macOS's and Windows'): they do not inherit the main process's analysis
_FLAKE8_UNDER = """\
import multiprocessing, sys
if __name__ == "__main__":  # (the workers import this script again, as __mp_main__)
    multiprocessing.set_start_method(sys.argv.pop(1))
    from flake8.main.cli import main
    sys.exit(main())
"""


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_workers_started_afresh_report_what_forked_ones_do(tmp_path: Path, method: str) -> None:
    """A worker that does not inherit the main process's analysis takes each file's own way (the
    cache the main process filled): the same lines as the forked workers of `--jobs 2`."""
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES_DIR, proj)
    driver = tmp_path / "flake8_under.py"
    driver.write_text(_FLAKE8_UNDER)
    forked = flake8(proj, "--select", "CUD", "--jobs", "2", ".", env={"CUDALINT_CACHE_DIR": str(tmp_path / "c1")})
    afresh = subprocess.run(
        [sys.executable, str(driver), method, f"--format={FORMAT}", "--select", "CUD", "--jobs", "2", "."],
        cwd=proj, capture_output=True, text=True, timeout=300,
        env={**os.environ, "CUDALINT_CACHE_DIR": str(tmp_path / "c2")},
    )
    assert len(flake8_findings(forked)) > 200
    assert flake8_findings(afresh) == flake8_findings(forked)
    assert afresh.returncode == forked.returncode == 1


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_a_folder_with_no_project_marker_is_one_project_as_the_cli_lints_it(tmp_path: Path, method: str) -> None:
    """No pyproject.toml, setup.cfg or .git above it: `cudalint FOLDER` lints the folder's files
    together. By package roots alone, core/ (a namespace package: no __init__.py) was a project of
    its own under flake8, and the CUD101 that its routers' request threads cause was lost, whichever
    way flake8's workers started (the main process's analysis and each worker's own way agree)."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES_DIR / "CUD101" / "namespace_package", tree / "namespace_package")
    driver = tmp_path / "flake8_under.py"
    driver.write_text(_FLAKE8_UNDER)
    proc = subprocess.run(
        [sys.executable, str(driver), method, f"--format={FORMAT}", "--select", "CUD", "--jobs", "2", "namespace_package"],
        cwd=tree, capture_output=True, text=True, timeout=300,
        env={**os.environ, "CUDALINT_CACHE_DIR": str(tmp_path / "cache")},
    )
    got = flake8_findings(proc)
    assert [(p, row, code) for p, row, col, code, text in got] == [(os.path.join("namespace_package", "core", "llm.py"), 15, "CUD101")]
    assert got == sorted(as_flake8(f) for f in cli_json(tree, "--no-cache", "namespace_package"))
    # one file named: its project is its own folder for both, as before
    alone = flake8_findings(flake8(tree, "--select", "CUD", os.path.join("namespace_package", "core", "llm.py"), env={"CUDALINT_CACHE_DIR": str(tmp_path / "cache")}))
    assert alone == [] == cli_json(tree, "--no-cache", os.path.join("namespace_package", "core", "llm.py"))


def test_the_project_of_a_folder_flake8_was_given(tmp_path: Path, monkeypatch) -> None:
    """Where no marker is above: the outermost given folder that holds it (even a package's own
    folder, whose package root is above it), else its package root; a marker always wins."""
    import argparse

    from cudalint import flake8_plugin

    tree = tmp_path / "tree"
    for folder in ("a/sub", "b", "pkg/inner"):
        (tree / folder).mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "inner" / "__init__.py").write_text("")
    (tree / "a" / "x.py").write_text("")
    monkeypatch.chdir(tree)
    given = flake8_plugin._given_folders(argparse.Namespace(filenames=["a", "a/x.py", "pkg/inner", "pkg", "-", "missing"]))
    assert given == (tree / "a", tree / "pkg" / "inner", tree / "pkg")
    roots = {name: flake8_plugin._roots(tree / name, given)[1] for name in ("a", "a/sub", "b", "pkg", "pkg/inner")}
    assert roots == {"a": tree / "a", "a/sub": tree / "a", "b": tree / "b", "pkg": tree / "pkg", "pkg/inner": tree / "pkg"}
    assert flake8_plugin._roots(tree / "pkg" / "inner")[1] == tree  # (nothing given: the folder holding the top-level package)
    (tree / "a" / "setup.cfg").write_text("")
    assert flake8_plugin._roots(tree / "a" / "sub", (tree,))[1] == tree / "a"


@pytest.mark.parametrize("daemonic,jobs,method,started", [(False, "2", "forkserver", True), (True, "2", "forkserver", False), (False, "1", "forkserver", False), (False, "2", "fork", False), (False, "2", "spawn", False)])
def test_only_flake8s_main_process_starts_the_fork_server(monkeypatch, daemonic, jobs, method, started) -> None:
    """flake8's workers parse the options again: on 3.14 each started a fork server of its own."""
    import multiprocessing
    from multiprocessing import forkserver, resource_tracker
    from types import SimpleNamespace

    from flake8.main.options import JobsArgument

    from cudalint import flake8_plugin
    from cudalint.engine import runner
    from cudalint.safepath import STDLIB_DIR

    calls = []
    monkeypatch.setattr(runner, "_daemonic", lambda: daemonic)
    monkeypatch.setattr(multiprocessing, "get_start_method", lambda allow_none=False: method)
    monkeypatch.setattr(forkserver, "ensure_running", lambda: calls.append(("server", os.getcwd())))
    monkeypatch.setattr(resource_tracker, "ensure_running", lambda: calls.append(("tracker", os.getcwd())))
    monkeypatch.setattr(flake8_plugin, "_codes_selected", lambda options: True)
    monkeypatch.setattr(flake8_plugin, "analyze_early", lambda paths: calls.append(("analysis", tuple(paths))))
    monkeypatch.setattr(flake8_plugin.Plugin, "selected", True)
    flake8_plugin.Plugin.parse_options(SimpleNamespace(jobs=JobsArgument(jobs), filenames=["a.py", "b.py"]))
    helpers = [("tracker", STDLIB_DIR), ("server", STDLIB_DIR)] if started else []
    assert calls == ([] if daemonic else helpers + [("analysis", ("a.py", "b.py"))])
