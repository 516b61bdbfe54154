"""Which files a run looks at (cudalint.inputs.discover), as ruff decides: a path named on the
command line is linted whatever it is; inside folders, `.gitignore` files (the folder's own, and
those of the folders above it up to the repository's root) and the usual build folders are skipped.

Exact file lists, on trees made here: the shapes of a monorepo whose subproject is linted alone
(huggingface/transformers' `examples/`, ignored build output beside the code)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudalint.inputs.discover import discover


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _found(paths: list[Path], cwd: Path, **kwargs) -> tuple[list[str], list[str]]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        got = discover([os.path.relpath(p, cwd) for p in paths], **kwargs)
    finally:
        os.chdir(old)
    return sorted(got.files), [f"{p.path}: {p.message}" for p in got.problems]


def test_a_gitignore_above_the_linted_folder_applies_up_to_the_repository_root(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".gitignore": "keep.py\n",  # above the repository: not this repository's rule
        "repo/.git/HEAD": "ref: refs/heads/main\n",
        "repo/.gitignore": "generated_*.py\n",
        "repo/sub/generated_ops.py": "",
        "repo/sub/train.py": "",
        "repo/sub/keep.py": "",
    })
    files, problems = _found([tmp_path / "repo" / "sub"], tmp_path / "repo")
    assert files == ["sub/keep.py", "sub/train.py"] and problems == []
    # without the rules, everything
    assert _found([tmp_path / "repo" / "sub"], tmp_path / "repo", respect_gitignore=False)[0] == [
        "sub/generated_ops.py", "sub/keep.py", "sub/train.py",
    ]


def test_a_nested_gitignore_applies_to_its_own_folder_only(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".git/HEAD": "",
        ".gitignore": "/build_*.py\n",
        "a/.gitignore": "scratch.py\n",
        "a/scratch.py": "",
        "a/deep/scratch.py": "",
        "a/model.py": "",
        "b/scratch.py": "",
        "build_x.py": "",
        "a/build_x.py": "",  # (anchored at the top: not this one)
        "dist/out.py": "",  # a build folder
    })
    files, problems = _found([tmp_path], tmp_path)
    assert files == ["a/build_x.py", "a/model.py", "b/scratch.py"] and problems == []


def test_a_named_path_is_linted_whatever_it_is(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "ignored.py\n", ".git/HEAD": "", "ignored.py": "", "notes.txt": ""})
    os.symlink("gone.py", tmp_path / "dangling.py")
    files, problems = _found([tmp_path / "ignored.py", tmp_path / "notes.txt", tmp_path / "dangling.py"], tmp_path)
    # (a link to nothing is read, and that read says what is wrong: cudalint.inputs.source)
    assert files == ["dangling.py", "ignored.py", "notes.txt"] and problems == []


@pytest.mark.parametrize("name", ["nowhere.py", "nowhere/", "no/such/folder/x.py"])
def test_a_missing_path_is_a_problem_named_by_its_spelling(tmp_path: Path, name: str) -> None:
    got = discover([str(tmp_path / name)])
    assert got.files == () and [(p.path, p.message) for p in got.problems] == [(str(tmp_path / name), "no such file or directory")]


def test_a_path_that_is_no_folder_in_the_middle_is_missing_too(tmp_path: Path) -> None:
    _tree(tmp_path, {"file.py": ""})
    got = discover([str(tmp_path / "file.py" / "x.py")])
    assert got.files == () and [p.message for p in got.problems] == ["no such file or directory"]
