"""The real `pre-commit try-repo` against this checkout, and the README's own hook block run by
`pre-commit run --all-files` against a clone of it, each in a throwaway git repository.

pre-commit builds the hook's own virtualenv and pip-installs cudalint from the checkout into it
(its dependencies come from PyPI); the environment is kept under pytest's cache folder so a second
run of the suite reuses it for the same commit.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
GOOD = 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n\nimport torch  # noqa: E402\n\ntorch.cuda.is_available()\n'

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a git checkout of cudalint"
)


@pytest.fixture()
def repo(tmp_path: Path, request) -> tuple[Path, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PRE_COMMIT_HOME")}
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    home = Path(cache.mkdir("pre-commit-home")) if cache is not None else Path(tempfile.gettempdir()) / "cudalint-test-pre-commit-home"
    env["PRE_COMMIT_HOME"] = str(home)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    work = tmp_path / "user-project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "."], cwd=work, check=True, env=env)
    (work / "bad.py").write_text(BAD, encoding="utf-8")
    (work / "good.py").write_text(GOOD, encoding="utf-8")
    return work, env


def try_repo(work: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cudalint", "--color", "never", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,  # the first run builds the hook's virtualenv (libcst, click, pathspec from PyPI)
    )


def test_hook_fails_on_the_bad_file_and_passes_on_the_good_one(repo) -> None:
    work, env = repo
    subprocess.run(["git", "add", "bad.py", "good.py"], cwd=work, check=True, env=env)
    bad = try_repo(work, env, "--files", "bad.py")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "cudalint" in bad.stdout and "Failed" in bad.stdout
    assert "bad.py:6:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 5)" in bad.stdout
    good = try_repo(work, env, "--files", "good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout and "CUD001" not in good.stdout


def test_hook_passes_when_nothing_is_staged(repo) -> None:
    work, env = repo  # bad.py exists but is not staged: the hook has no file to check
    proc = try_repo(work, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(no files to check)Skipped" in proc.stdout


def readme_hook_block() -> str:
    """The native hook's YAML block of README.md, as a user copies it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("**3. pre-commit**") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    return section[start : section.index("```\n", start)]


@pytest.fixture()
def cudalint_clone(tmp_path: Path, repo) -> Path:
    """A clone of this repository at HEAD, standing in for the URL of the README's `repo:`."""
    _, env = repo
    clone = tmp_path / "cudalint-clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, env=env)
    return clone


def test_readme_snippet_runs_as_written(repo, cudalint_clone: Path) -> None:
    """README's block, verbatim but for the repository's URL: its `rev` exists and its hook finds the bug."""
    work, env = repo
    block = readme_hook_block()
    url = "https://github.com/cudalint/cudalint"
    assert f"repo: {url}\n" in block and "rev: " in block
    (work / ".pre-commit-config.yaml").write_text(block.replace(url, str(cudalint_clone)), encoding="utf-8")
    subprocess.run(["git", "add", "bad.py", "good.py", ".pre-commit-config.yaml"], cwd=work, check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=work, capture_output=True, text=True, env=env, timeout=1800,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mutable reference" not in proc.stdout + proc.stderr  # a commit sha, not a branch
    lines = proc.stdout.splitlines()
    assert "bad.py:6:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 5); the driver read it then, so this write has no effect" in lines
    assert not any(line.startswith("good.py:") for line in lines)


def test_autoupdate_freeze_pins_the_newest_commit(repo, cudalint_clone: Path) -> None:
    """What the README says `pre-commit autoupdate --freeze` does while cudalint has no tag."""
    work, env = repo
    url = "https://github.com/cudalint/cudalint"
    config = work / ".pre-commit-config.yaml"
    config.write_text(readme_hook_block().replace(url, str(cudalint_clone)), encoding="utf-8")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cudalint_clone, capture_output=True, text=True, check=True).stdout.strip()
    tags = subprocess.run(["git", "tag"], cwd=cudalint_clone, capture_output=True, text=True, check=True).stdout.split()
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "autoupdate", "--freeze", "--color", "never"],
        cwd=work, capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if not tags:
        assert f"    rev: {head}\n" in config.read_text(encoding="utf-8")


def test_hook_with_one_staged_file_sees_the_cause_in_an_unstaged_module(repo) -> None:
    """pre-commit passes only gpus.py; its finding is caused by serve.py and utils/device.py (#17 part 5)."""
    work, env = repo
    from tests.fixture_expectations import FIXTURES

    shutil.copytree(FIXTURES / "CUD001" / "cross_module", work / "app")
    subprocess.run(["git", "add", "app/gpus.py"], cwd=work, check=True, env=env)
    proc = try_repo(work, env)  # no --files: the staged files, as `git commit` runs the hook
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "app/gpus.py:5:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() "
        "(app/utils/device.py:3)" in proc.stdout
    )
    assert "app/serve.py:8" not in proc.stdout.replace("    app/serve.py", "")  # serve.py's own finding: not staged, not reported
    assert "Found 1 finding in 1 file (1 checked)." in proc.stdout
