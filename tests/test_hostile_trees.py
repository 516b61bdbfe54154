"""Property tests on hostile trees: random file names (not UTF-8, spaces, unicode), nesting, packages,
symbolic links (to files, to folders, out of the tree, dangling, loops), notebooks (valid and broken)
and damage to the cache between runs. Whatever the tree, a run never crashes, and a run with the
cache, cold or after the damage, reports exactly what a run without it reports."""
from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudalint.api import lint_paths
from cudalint.engine.cache import Cache
from cudalint.core.catalogue import load_catalogue
from tests.fixture_expectations import FIXTURES

# real bug shapes and their good twins, from the fixtures
TEXTS = [p.read_bytes() for p in sorted(FIXTURES.rglob("*.py"))[:60]]
BROKEN = [b"def f(:\n", b"x = '\xe9'\n", b"\x00\x01", b"", b"import os\nos.environ['CUDA_VISIBLE_DEVICES'] = 1\n", b"(" * 300]
NAMES = ["a", "b", "train", "my mod", "caf\u00e9", "\u4e2d", os.fsdecode(b"bad\xff"), "-dash", "x.py", "__init__", "utils", "os", "json"]


def _notebook(cells: list[bytes]) -> bytes:
    return json.dumps({"cells": [{"cell_type": "code", "source": c.decode("utf-8", "replace")} for c in cells], "metadata": {}, "nbformat": 4}).encode()


BAD_NOTEBOOKS = [b'{"cells": [', b"[1]", b'{"worksheets":[{"cells":5}]}', b'{"cells": [{"cell_type": "code", "source": 5}]}', b"\xff"]


@st.composite
def trees(draw) -> list[tuple[str, str, object]]:
    """A list of (kind, relative path, payload) to make, in order."""
    ops: list[tuple[str, str, object]] = []
    dirs = [""]
    for _ in range(draw(st.integers(0, 4))):
        parent = draw(st.sampled_from(dirs))
        name = draw(st.sampled_from(NAMES))
        path = os.path.join(parent, name) if parent else name
        if path not in dirs:
            dirs.append(path)
            ops.append(("dir", path, draw(st.booleans())))  # payload: a package (__init__.py)
    if draw(st.booleans()):  # a chain deeper than the others
        chain = "/".join(["n"] * draw(st.integers(5, 60)))
        dirs.append(chain)
        ops.append(("dir", chain, draw(st.booleans())))
    files = []
    for _ in range(draw(st.integers(1, 8))):
        parent = draw(st.sampled_from(dirs))
        stem = draw(st.sampled_from(NAMES))
        if draw(st.integers(0, 5)) == 0:
            data = _notebook(draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3))) if draw(st.booleans()) else draw(st.sampled_from(BAD_NOTEBOOKS))
            name = stem + ".ipynb"
        else:
            data = draw(st.sampled_from(TEXTS)) if draw(st.integers(0, 3)) else draw(st.sampled_from(BROKEN))
            name = stem + ".py"
        path = os.path.join(parent, name) if parent else name
        files.append(path)
        ops.append(("file", path, data))
    for _ in range(draw(st.integers(0, 4))):
        parent = draw(st.sampled_from(dirs))
        where = os.path.join(parent, draw(st.sampled_from(NAMES)) + draw(st.sampled_from(["", ".py"])))
        target = draw(st.sampled_from(["file", "dir", "outside", "dangling", "loop", "self"]))
        ops.append(("link", where, target))
    return ops


def _make(root: Path, outside: Path, ops) -> None:
    made_files = [p for kind, p, _ in ops if kind == "file"]
    made_dirs = [p for kind, p, _ in ops if kind == "dir"]
    rng = random.Random(len(ops))
    for kind, rel, payload in ops:
        path = root / rel
        try:
            if kind == "dir":
                path.mkdir(parents=True, exist_ok=True)
                if payload:
                    (path / "__init__.py").touch()
            elif kind == "file":
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(payload)  # type: ignore[arg-type]
            elif not os.path.lexists(path):
                path.parent.mkdir(parents=True, exist_ok=True)
                target = {
                    "file": os.path.relpath(root / rng.choice(made_files), path.parent) if made_files else "nowhere",
                    "dir": os.path.relpath(root / rng.choice(made_dirs), path.parent) if made_dirs else ".",
                    "outside": str(outside),
                    "dangling": "does-not-exist",
                    "loop": ".",
                    "self": path.name,
                }[payload]  # type: ignore[index]
                os.symlink(target, path)
        except OSError:
            continue  # a name taken by an earlier op (a file where a folder was to be): the tree is what it is


def _damage(cache: Path, how: str, rng: random.Random) -> None:
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and not p.is_symlink() and p.name not in (".gitignore", "CACHEDIR.TAG"))
    for entry in rng.sample(entries, min(len(entries), 3)):
        data = entry.read_bytes()
        if how == "truncate":
            entry.write_bytes(data[: len(data) // 2])
        elif how == "flip":
            if data:
                i = rng.randrange(len(data))
                entry.write_bytes(data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :])
        elif how == "unsigned":
            entry.write_bytes(data.partition(b"\n")[2])  # the JSON without its signature line
        elif how == "wrong_shape":
            entry.write_bytes(data.partition(b"\n")[0] + b"\n" + json.dumps({"ModuleIR": ["x.py", "x", 5, {"": []}, {"": []}, [], False, []]}).encode())
        elif how == "delete":
            entry.unlink()
        elif how == "link":
            entry.unlink()
            os.symlink("/etc/hostname", entry)


def _findings(root: Path, cache_dir: Path | None) -> list[dict]:
    cache = Cache.open(cache_dir, load_catalogue()) if cache_dir is not None else None
    return [f.to_json() for f in lint_paths([str(root)], cache=cache, jobs=1).findings]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(trees(), st.sampled_from(["truncate", "flip", "unsigned", "wrong_shape", "delete", "link"]), st.integers(0, 2**16))
def test_a_hostile_tree_with_a_damaged_cache_reports_what_no_cache_reports(ops, how: str, seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="cudalint-hostile-") as tmp:
        root, outside, cache_dir = Path(tmp) / "tree", Path(tmp) / "outside", Path(tmp) / "cache"
        root.mkdir()
        outside.mkdir()
        (outside / "elsewhere.py").write_bytes(TEXTS[0])
        _make(root, outside, ops)
        plain = _findings(root, None)
        assert _findings(root, cache_dir) == plain  # cold
        _damage(cache_dir, how, random.Random(seed))
        assert _findings(root, cache_dir) == plain  # after the damage
        assert _findings(root, cache_dir) == plain  # and once more, from what that run wrote
