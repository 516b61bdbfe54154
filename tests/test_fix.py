"""`cudalint --fix` / `--diff`: certain fixes only, formatting kept, idempotent, atomic.

Cases live in tests/data/fix: `NAME.py` becomes exactly `NAME.fixed.py` (move_*: the write moves up;
guard*: is_available() becomes device_count() > 0; device_order*: CUD004's CUDA_DEVICE_ORDER line;
crlf_bom: line ends, BOM and non-ASCII kept); `keep_*.py` must not change (each is a finding whose fix
would not be certain) and gets a `help:` line instead.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from cudalint.api import lint_paths
from tests.fixture_expectations import FIXTURES

DATA = Path(__file__).parent / "data" / "fix"
FIXED = sorted(p for p in DATA.glob("*.py") if not p.name.endswith(".fixed.py") and not p.name.startswith("keep_"))
KEPT = sorted(DATA.glob("keep_*.py"))


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}
    )


@pytest.mark.parametrize("case", FIXED, ids=lambda p: p.stem)
def test_fix_makes_exactly_the_expected_file_and_is_idempotent(case: Path, tmp_path: Path) -> None:
    target = tmp_path / case.name
    shutil.copyfile(case, target)
    before = lint_paths([str(target)]).findings
    assert before, "a fix case must have a finding to fix"

    diff = run_cli(["--diff", case.name], tmp_path)
    assert diff.returncode == 1 and diff.stdout.startswith(f"--- a/{case.name}\n+++ b/{case.name}\n")
    assert target.read_bytes() == case.read_bytes(), "--diff must not write"

    proc = run_cli(["--fix", case.name], tmp_path)
    expected = case.with_name(case.stem + ".fixed.py").read_bytes()
    assert target.read_bytes() == expected
    assert proc.returncode == 0 and proc.stdout == "All checks passed (1 file checked).\n"
    assert proc.stderr.startswith("Fixed ")
    cst.parse_module(expected.decode("utf-8-sig"))
    assert lint_paths([str(target)]).findings == ()

    again = run_cli(["--fix", case.name], tmp_path)
    assert target.read_bytes() == expected and again.stderr == ""
    assert run_cli(["--diff", case.name], tmp_path).stdout == ""


@pytest.mark.parametrize("case", KEPT, ids=lambda p: p.stem)
def test_uncertain_fix_is_reported_with_a_suggestion_not_edited(case: Path, tmp_path: Path) -> None:
    target = tmp_path / case.name
    shutil.copyfile(case, target)
    proc = run_cli(["--fix", case.name], tmp_path)
    assert target.read_bytes() == case.read_bytes()
    assert proc.returncode == 1
    assert "    help: not fixed automatically" in proc.stdout
    assert "set it before anything initializes CUDA" in proc.stdout
    assert run_cli(["--diff", case.name], tmp_path).returncode == 0


def test_fixing_every_fixture_is_safe_and_idempotent(tmp_path: Path) -> None:
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, tree)
    before = {(f.path, f.code) for f in lint_paths([str(tree)]).findings}
    first = run_cli(["--fix", "fixtures"], tmp_path)
    assert first.returncode == 1  # most fixture findings have no certain fix
    changed = [p for p in tree.rglob("*.py") if p.read_bytes() != (FIXTURES / p.relative_to(tree)).read_bytes()]
    assert changed, "some fixture has a certain fix"
    for p in changed:
        cst.parse_module(p.read_text())
    after = lint_paths([str(tree)]).findings
    assert {(f.path, f.code) for f in after} <= before
    snapshot = {p: p.read_bytes() for p in tree.rglob("*")  if p.is_file()}
    second = run_cli(["--fix", "fixtures"], tmp_path)
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == snapshot
    assert second.stderr == ""


def test_read_only_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    case = DATA / "move_literal.py"
    target = tmp_path / case.name
    shutil.copyfile(case, target)
    os.chmod(target, 0o444)
    proc = run_cli(["--fix", case.name], tmp_path)
    assert target.read_bytes() == case.read_bytes()
    assert proc.returncode == 1
    assert "cudalint: move_literal.py: not fixed: the file is read-only" in proc.stderr
    assert "CUD001" in proc.stdout
    assert sorted(os.listdir(tmp_path)) == [case.name]  # no temporary file left behind


def test_fix_through_a_symlink_edits_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    case = DATA / "move_literal.py"
    (tmp_path / "real").mkdir()
    shutil.copyfile(case, tmp_path / "real" / case.name)
    os.chmod(tmp_path / "real" / case.name, 0o640)
    os.symlink(f"real/{case.name}", tmp_path / "link.py")
    run_cli(["--fix", "link.py"], tmp_path)
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real" / case.name).read_bytes() == case.with_name("move_literal.fixed.py").read_bytes()
    assert stat.S_IMODE(os.stat(tmp_path / "real" / case.name).st_mode) == 0o640


def test_file_that_cannot_be_parsed_is_not_touched(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n")
    proc = run_cli(["--fix", "bad.py"], tmp_path)
    assert (tmp_path / "bad.py").read_text() == "def f(:\n"
    assert proc.returncode == 1 and "CUD900" in proc.stdout
