"""Every fixture is linted through the library and through the CLI; findings must match exactly."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.api import lint_paths
from tests.fixture_expectations import case_files, case_id, expectations, fixture_cases

CASES = fixture_cases()


def _target(case: Path) -> tuple[Path, str]:
    return (case, ".") if case.is_dir() else (case.parent, case.name)


def _expected(case: Path):
    root = case if case.is_dir() else case.parent
    return expectations(root, case_files(case))


def _as_tuples(findings):
    return sorted((f["path"], f.get("cell") or 0, f["line"], f["code"]) for f in findings)


def _expected_tuples(expected):
    return sorted((e.path, e.cell or 0, e.line, e.code) for e in expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fixture_library(case: Path, monkeypatch) -> None:
    cwd, target = _target(case)
    monkeypatch.chdir(cwd)
    result = lint_paths([target])
    got = [f.to_json() for f in result.findings]
    expected = _expected(case)
    assert _as_tuples(got) == _expected_tuples(expected)
    by_place = {(f["path"], f.get("cell") or 0, f["line"], f["code"]): f for f in got}
    for e in expected:
        if e.witness is not None:
            steps = tuple((s["path"], s.get("cell"), s["line"]) for s in by_place[(e.path, e.cell or 0, e.line, e.code)]["witness"])
            assert steps == e.witness, f"witness of {e.code} at {e.path}:{e.line}"


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("bad") or c.is_dir()], ids=case_id)
def test_fixture_cli(case: Path, tmp_path: Path) -> None:
    cwd, target = _target(case)
    proc = subprocess.run(
        [sys.executable, "-m", "cudalint", "--format", "json", target],
        cwd=cwd,
        capture_output=True,
        text=True,
        # (the cache elsewhere: its default, ./.cudalint_cache, is inside fixtures/)
        env={**os.environ, "NO_COLOR": "1", "CUDALINT_CACHE_DIR": str(tmp_path / "cache")},
    )
    expected = _expected(case)
    assert proc.returncode == (1 if expected else 0), proc.stderr
    got = json.loads(proc.stdout)
    assert _as_tuples(got) == _expected_tuples(expected)
    keys = {"code", "path", "line", "column", "end_line", "end_column", "message", "witness", "severity", "url", "fix"}
    for f in got:
        assert set(f) == (keys | {"cell"} if f["path"].endswith(".ipynb") else keys)


def test_all_fixtures_together_give_the_union(monkeypatch) -> None:
    """`make demo` lints fixtures/ as one tree: no fixture may leak into another."""
    from tests.fixture_expectations import FIXTURES

    monkeypatch.chdir(FIXTURES.parent)
    got = sorted((f.path, f.cell or 0, f.line, f.code) for f in lint_paths(["fixtures"]).findings)
    expected = []
    for case in CASES:
        prefix = case.relative_to(FIXTURES.parent).as_posix() if case.is_dir() else case.parent.relative_to(FIXTURES.parent).as_posix()
        for e in _expected(case):
            expected.append((f"{prefix}/{e.path}", e.cell or 0, e.line, e.code))
    assert got == sorted(expected)
