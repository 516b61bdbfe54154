"""Workers started ahead of the run that uses them (cudalint.engine.runner.standby): flake8's main
process starts them before it finds its projects and builds their import graphs, so that their
start and their imports overlap that work. Started only when the run will use a pool, taken by that
run, and never left running."""
from __future__ import annotations

import argparse
import multiprocessing
import os
from pathlib import Path

import pytest

from cudalint.core.catalogue import load_catalogue
from cudalint.engine import runner
from cudalint.engine.cache import Cache

BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


def _package(root: Path, modules: int) -> list[str]:
    """A package of `modules` modules, the shape of lightning's: an `__init__` importing them all."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (pkg / "__init__.py").write_text("".join(f"from pkg import m{i}\n" for i in range(modules)), encoding="utf-8")
    for i in range(modules):
        (pkg / f"m{i}.py").write_text(f"import pkg\n\nVALUE = {i}\n", encoding="utf-8")
    (pkg / "m7.py").write_text(BAD, encoding="utf-8")
    return sorted(str(p.relative_to(root)) for p in pkg.iterdir())


@pytest.fixture
def started(monkeypatch):
    """The executors `runner._executor` made, in order; none left over from a test."""
    made: list = []
    real = runner._executor
    monkeypatch.setattr(runner, "_executor", lambda workers: made.append(real(workers)) or made[-1])
    yield made
    runner.drop_standby()


def test_a_cold_run_takes_the_workers_started_ahead_of_it(tmp_path, monkeypatch, started) -> None:
    files = _package(tmp_path, 70)
    monkeypatch.chdir(tmp_path)
    catalogue = load_catalogue()
    cache = Cache.open(tmp_path / "cache", catalogue)
    runner.standby(files, cache, jobs=2)
    assert len(started) == 1 and runner._STANDBY == [(2, started[0])]
    assert len(multiprocessing.active_children()) == 2  # (forked now, not at the run's first chunk)
    loaded = runner.load_files(files, catalogue, cache=cache, jobs=2)
    loaded.settle()
    assert len(started) == 1 and runner._STANDBY == []  # the run made no pool of its own
    assert sorted(m.path for m in loaded.modules) == files
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("modules", [70, 62])
def test_no_workers_are_started_for_a_run_that_will_not_use_them(tmp_path, monkeypatch, started, modules) -> None:
    """A warm cache (the index knows every file unchanged) or fewer files than a pool is worth."""
    files = _package(tmp_path, modules)
    monkeypatch.chdir(tmp_path)
    catalogue = load_catalogue()
    runner.load_files(files, catalogue, cache=Cache.open(tmp_path / "warm", catalogue), jobs=1).settle()
    runner.standby(files, Cache.open(tmp_path / "warm", catalogue), jobs=2)
    assert started == []
    runner.standby(files, Cache.open(tmp_path / "cold", catalogue), jobs=1)
    assert started == []
    runner.standby(files, Cache.open(tmp_path / "cold", catalogue), jobs=2)
    assert len(started) == (1 if modules + 1 >= runner.PARALLEL_MIN_FILES else 0)


def test_a_standby_nobody_took_is_let_go(tmp_path, monkeypatch, started) -> None:
    files = _package(tmp_path, 70)
    monkeypatch.chdir(tmp_path)
    runner.standby(files, None, jobs=2)
    runner.standby(files, None, jobs=2)  # (one at a time)
    assert len(started) == 1 and len(multiprocessing.active_children()) == 2
    assert runner._take_standby(3) is None  # (another number of workers: a pool of its own)
    runner.drop_standby()
    assert runner._STANDBY == [] and multiprocessing.active_children() == []


def _flake8_main(tmp_path, monkeypatch, started, given: str, packages: list[str]) -> None:
    """flake8's main process given `given` (with CUD selected), then: the analysis took the standby
    or let it go, every worker has exited (a pool's threads or processes must not be copied into
    flake8's workers), and each package's findings were made before any worker of flake8's."""
    from cudalint import flake8_plugin

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDALINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(flake8_plugin, "_PROJECTS", {})
    flake8_plugin.Plugin.parse_options(argparse.Namespace(filenames=[given], jobs=None))
    assert len(started) == 1 and runner._STANDBY == []
    assert multiprocessing.active_children() == []
    for pkg in packages:
        bad = os.path.join(pkg, "m7.py")
        assert [(f.code, f.line) for f in flake8_plugin._project_for(bad).early[bad][1]] == [("CUD003", 5), ("CUD001", 6)]


def test_flake8s_main_process_takes_the_standby(tmp_path, monkeypatch, started) -> None:
    _package(tmp_path, 70)
    _flake8_main(tmp_path, monkeypatch, started, "pkg", ["pkg"])


def test_flake8s_main_process_lets_go_of_a_standby_its_projects_did_not_take(tmp_path, monkeypatch, started) -> None:
    """Two projects of 41 files in the folder flake8 was given: 82 files found, a pool started, but
    each project's run is too small for one (serial): the standby exits before flake8 forks."""
    for name in ("a", "b"):
        _package(tmp_path / name, 40)
    _flake8_main(tmp_path, monkeypatch, started, ".", [os.path.join("a", "pkg"), os.path.join("b", "pkg")])
