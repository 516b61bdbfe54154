"""Every rule code has a doc in ruff's section format, and --explain prints it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.core.registry import DOC_SECTIONS, RULES, doc_path


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_has_doc_with_every_section(code: str) -> None:
    path = Path(doc_path(code))
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
    assert proc.stdout == Path(doc_path(code)).read_text(encoding="utf-8")


def test_explain_unknown_code_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "cudalint", "--explain", "CUD999"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown rule code 'CUD999'" in proc.stderr


# --- shipped docs stand alone --------------------------------------------------------------------
# The rule docs (`--explain`), the catalogue (its README and the `evidence` of every entry) and the
# README ship in the wheel or the sdist; the notes they were written from do not.
ROOT = Path(doc_path("CUD001")).resolve().parent.parent
SHIPPED_DOCS = sorted([*ROOT.glob("rules/*.md"), *ROOT.glob("rules/catalogue/*.md"), *ROOT.glob("rules/catalogue/*.toml"), ROOT / "README.md"])
NOT_SHIPPED = re.compile(r"knowledge[\w-]*\.md|\bshared/|\bseeds\b|design\.md|HELPERS\.md|/work/")
# a public source: an issue or PR (owner/repo#N, PR #N), a version or commit, or a named document
PUBLIC_SOURCE = re.compile(
    r"[\w.-]+/[\w.-]+#\d+|\bPR #\d+|#\d+|\b\d+\.\d+(\.\d+)?\b|@[0-9a-f]{7,}|documentation|Guide|Reference|\bPEP \d+|\bdocs\b"
)


@pytest.mark.parametrize("path", SHIPPED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_doc_names_no_file_that_is_not_shipped(path) -> None:
    text = path.read_text(encoding="utf-8")
    bad = [(n + 1, line.strip()) for n, line in enumerate(text.splitlines()) if NOT_SHIPPED.search(line)]
    assert not bad, f"{path.name} names files users do not have: {bad}"


@pytest.mark.parametrize("path", SHIPPED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_doc_links_resolve(path) -> None:
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{path.name} links to {target}, which does not exist"
    for name in re.findall(r"`((?:rules|cudalint|tests|benchmarks|fixtures|scripts)/[\w./*-]+)`", text):
        assert list(ROOT.glob(name)) or (ROOT / name).exists(), f"{path.name} names {name}, which does not exist"


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_reference_cites_a_public_source(code: str) -> None:
    text = Path(doc_path(code)).read_text(encoding="utf-8")
    refs = text[text.index("## References\n") :].split("\n- ")[1:]
    assert refs, f"{code} has no references"
    vague = [r.split("\n")[0] for r in refs if not PUBLIC_SOURCE.search(r)]
    assert not vague, f"{code}: references without a public source: {vague}"


def test_explain_output_stands_alone() -> None:
    for code in sorted(RULES):
        proc = subprocess.run([sys.executable, "-m", "cudalint", "--explain", code], capture_output=True, text=True)
        assert proc.returncode == 0 and not NOT_SHIPPED.search(proc.stdout), code
