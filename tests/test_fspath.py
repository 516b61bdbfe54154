"""cudalint.fspath spells every path as pathlib does: a settings file's folder anchors its
`per-file-ignores` patterns, and a catalogue file's path is part of the catalogue's name, so a
spelling that differed from the one `Path` gave would change findings or miss the cache.

Checked like flake8-bugbear's fuzzing: against pathlib itself, on generated spellings made of the
pieces that pathlib normalizes (`.`, doubled, tripled and trailing separators) and the one it keeps (`..`).
"""
from __future__ import annotations

import os
import random
from pathlib import Path, PurePath

import pytest

from cudalint.fspath import absolute, clean, folders_up, join, parent

PIECES = ["a", ".", "..", "/", "//", "///", "b.py", "c/", "d.e/"]
NAMES = ["x", ".", "/", "//", "y/", "z.toml", ".."]


def _spellings(seed: int, count: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        base = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        name = "".join(rng.choice(NAMES) for _ in range(rng.randint(1, 4)))
        out.append((base, name))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_every_spelling_is_pathlibs(seed: int) -> None:
    for base, name in _spellings(seed, 3000):
        assert clean(base) == str(PurePath(base)), base
        assert absolute(base) == str(Path(base).absolute()), base
        assert parent(clean(base)) == str(PurePath(base).parent), base
        assert join(base, name) == str(Path(base, name)), (base, name)


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("", "."), (".", "."), ("./", "."), ("a//b/./c/", "a/b/c"), ("a/../b", "a/../b"),
        ("/", "/"), ("//", "//"), ("///", "/"), ("//a//b", "//a/b"), ("////a", "/a"),
    ],
)
def test_the_spellings_that_differ_from_os_path(given: str, want: str) -> None:
    # (os.path.normpath would drop `a/..`, which a link makes another folder, and `//`)
    assert clean(given) == want == str(PurePath(given))


def test_the_parent_of_the_root_and_of_a_bare_name() -> None:
    assert parent("/") == "/" and parent("a") == "." and parent(".") == "." and parent("/a") == "/"


def test_absolute_is_below_the_current_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute("x/./y.py") == os.path.join(os.getcwd(), "x", "y.py") == str(Path("x/./y.py").absolute())
    assert absolute(Path("/abs/./p")) == "/abs/p"


def test_the_folders_up_are_paths_parents(tmp_path: Path) -> None:
    # (settings, a project's markers, a package's top and .gitignore files are looked for in these)
    (tmp_path / "a" / "b").mkdir(parents=True)
    for start, first in ((tmp_path / "a" / "b", tmp_path / "a" / "b"), (tmp_path / "a" / "b" / "x.py", tmp_path / "a" / "b")):
        assert list(folders_up(start)) == [str(first), *map(str, first.parents)]
    assert list(folders_up("/")) == ["/"]
