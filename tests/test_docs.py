"""Every rule code has a doc in ruff's section format, and --explain prints it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cudalint.registry import DOC_SECTIONS, RULES, doc_path


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_has_doc_with_every_section(code: str) -> None:
    path = doc_path(code)
    assert path.is_file(), f"{code} has no doc at {path}"
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# {code}: ")
    positions = [text.find(section + "\n") for section in DOC_SECTIONS]
    missing = [s for s, p in zip(DOC_SECTIONS, positions) if p < 0]
    assert not missing, f"{code} lacks {missing}"
    assert positions == sorted(positions), f"{code}: sections out of order"


@pytest.mark.parametrize("code", sorted(RULES))
def test_explain_prints_doc(code: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "cudalint", "--explain", code.lower()], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout == doc_path(code).read_text(encoding="utf-8")


def test_explain_unknown_code_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "cudalint", "--explain", "CUD999"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown rule code 'CUD999'" in proc.stderr
