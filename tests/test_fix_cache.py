"""Proven fixes are kept beside the run (cudalint.fixes.fix_cache): a warm `--format json` run takes
them instead of proving them again, an edit proves them again, and a damaged entry is a miss."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cudalint.api import lint_paths
from cudalint.core import cache_files
from cudalint.core.catalogue import load_catalogue
from cudalint.engine.cache import Cache
from cudalint.fixes import fix_cache
from cudalint.inputs.config import Config
from tests.fixture_expectations import FIXTURES


def _fixes(src: Path, cache_dir: Path) -> dict:
    cache = Cache.open(cache_dir, load_catalogue())
    files = sorted(str(p) for p in src.rglob("*.py"))
    findings = lint_paths(files, cache=cache).findings
    return {(Path(k[0]).name, k[1], k[3]): (f.message, [e.to_json() for e in f.edits]) for k, f in fix_cache.cached_fixes(findings, files, Config(), None, cache=cache).items()}


def _proofs(monkeypatch) -> list:
    calls: list = []
    real = fix_cache.fixes_for

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fix_cache, "fixes_for", counting)
    return calls


@pytest.fixture
def src(tmp_path: Path) -> Path:
    out = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", out)
    return out


def test_a_warm_run_takes_the_proven_fixes(src: Path, tmp_path: Path, monkeypatch) -> None:
    calls = _proofs(monkeypatch)
    first = _fixes(src, tmp_path / "c")
    assert list(first) == [("serve.py", 8, "CUD001")]
    assert first[("serve.py", 8, "CUD001")][0] == "Move the write above the first import that can initialize CUDA"
    assert _fixes(src, tmp_path / "c") == first
    assert len(calls) == 1


def test_an_edit_proves_the_fixes_again(src: Path, tmp_path: Path, monkeypatch) -> None:
    calls = _proofs(monkeypatch)
    first = _fixes(src, tmp_path / "c")
    serve = src / "serve.py"
    serve.write_text(serve.read_text() + "\n# edited\n")
    assert _fixes(src, tmp_path / "c") == first  # (the fix is the same: its edits end above the comment)
    assert len(calls) == 2


@pytest.mark.parametrize("damage", [[1], [["serve.py", 8, 1, "CUD001", "msg", "safe", [["x", 1, 1, 1]]]], {"a": 1}, [["p", "8", 1, "CUD001", "m", "safe", []]]])
@pytest.mark.parametrize("signed", [False, True], ids=["planted", "signed"])
def test_a_damaged_entry_is_proven_again(src: Path, tmp_path: Path, monkeypatch, damage, signed: bool) -> None:
    calls = _proofs(monkeypatch)
    first = _fixes(src, tmp_path / "c")
    (entry,) = (tmp_path / "c" / "fixes").glob("*.json")
    if signed:
        cache_files.write(tmp_path / "c", entry.relative_to(tmp_path / "c").as_posix(), json.dumps(damage).encode())
    else:
        entry.write_text(json.dumps(damage))
    assert _fixes(src, tmp_path / "c") == first
    assert len(calls) == 2


# vllm's shape (vllm/platforms/rocm.py, vllm/utils/torch_utils.py): CUDA_VISIBLE_DEVICES written inside
# a function, after CUDA was initialized in another module; no fix can move or guard it
INSIDE = "import os\n\n\ndef sync(v):\n    os.environ['CUDA_VISIBLE_DEVICES'] = v\n"
# a write inside a function of a file whose own `X.is_available()` call may be guarded (line 8)
GUARDED = "import os\nimport torch\nif torch.cuda.is_available():\n    pass\n\n\ndef sync(v):\n    os.environ['CUDA_VISIBLE_DEVICES'] = v\n"


@pytest.mark.parametrize(
    ("text", "line", "same_file", "expected"),
    [
        (INSIDE, 5, False, False),  # in a function
        ("import os\nif True:\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", 3, False, False),  # in a block
        ("import os\n@deco(\n    1)\ndef f():\n    pass\n", 2, False, False),  # in a decorator
        ("import torch\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", 3, False, True),  # top level: may move
        (GUARDED, 8, True, True),  # its own file's is_available(): may be guarded
        (INSIDE, 5, True, False),  # initialized in its own file, but no is_available() call to guard
        ("def (:\n", 1, False, True),  # does not parse: the plan reads it its own way
    ],
)
def test_a_fix_is_planned_only_where_one_can_be(text: str, line: int, same_file: bool, expected: bool) -> None:
    from cudalint.core.findings import Finding, Step
    from cudalint.fixes.prospects import may_fix

    cause = Step("a.py" if same_file else "b.py", 1, "torch.cuda.is_available() initializes CUDA")
    finding = Finding(code="CUD001", path="a.py", line=line, column=5, end_line=line, end_column=9, message="m", witness=(cause,))
    assert may_fix([finding], text) is expected
    other = Finding(code="CUD004", path="a.py", line=line, column=5, end_line=line, end_column=9, message="m", witness=(cause,))
    assert may_fix([other], text) is True  # (CUDA_DEVICE_ORDER's fix has no such test)
    assert may_fix([finding, other], text) is True  # (one finding that may be fixed is enough)


def test_no_syntax_tree_is_made_for_a_finding_no_fix_can_remove(tmp_path: Path, monkeypatch) -> None:
    from cudalint.fixes import fixinfo
    from cudalint.inputs import source

    (tmp_path / "init.py").write_text("import torch\n\nREADY = torch.cuda.is_available()\n")
    (tmp_path / "a.py").write_text("import init\n" + INSIDE + "\nsync('0')\n")
    result = lint_paths([str(tmp_path)], Config())
    assert [(f.code, Path(f.path).name, f.line) for f in result.findings] == [("CUD001", "a.py", 6), ("CUD003", "init.py", 3)]
    monkeypatch.setattr(source, "parse_cst", lambda *a: pytest.fail("libcst parsed a file no fix can change"))
    files = [str(tmp_path / "init.py"), str(tmp_path / "a.py")]
    assert fixinfo.fixes_for(result.findings, files, Config()) == {}


def test_a_write_made_too_late_by_an_importer_is_not_planned() -> None:
    """CUDA was initialized before the module's top level began (the witness enters its file only
    at the write): no move within the file comes first. An import of its own on the way may move."""
    from cudalint.core.findings import Finding, Step
    from cudalint.fixes.prospects import may_fix

    text = "import torch\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
    init, write = Step("b.py", 1, "torch.cuda.init() initializes CUDA"), Step("a.py", 3, "written here")
    entered = (init, Step("b.py", 2, "import a runs a.py's top level"), write)
    own_import = (init, Step("a.py", 1, "import torch_setup runs its top level"), write)
    for witness, expected in ((entered, False), ((init, write), False), (own_import, True)):
        finding = Finding(code="CUD001", path="a.py", line=3, column=1, end_line=3, end_column=5, message="m", witness=witness)
        assert may_fix([finding], text) is expected, witness


def test_a_file_may_be_fixed_when_any_of_its_writes_may_move() -> None:
    from cudalint.core.findings import Finding, Step
    from cudalint.fixes.prospects import may_fix

    text = INSIDE + "\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"  # the second write at the top level, line 7
    cause = (Step("b.py", 1, "torch.cuda.is_available() initializes CUDA"),)
    inside, top = (Finding(code="CUD001", path="a.py", line=n, column=1, end_line=n, end_column=2, message="m", witness=cause) for n in (5, 7))
    assert may_fix([inside], text) is False
    assert may_fix([inside, top], text) is True and may_fix([top, inside], text) is True


def test_a_file_the_index_does_not_hold_is_named_by_its_bytes(src: Path, tmp_path: Path, monkeypatch) -> None:
    """A file of the run the index has no entry for (a notebook's place; here one the lint did not
    read) names the proofs by its bytes: the same bytes take them from the cache, and a file that
    cannot be read (gone since) makes them be proven again."""
    calls = _proofs(monkeypatch)
    (src / "extra.py").write_text("import os\n")
    cache = Cache.open(tmp_path / "c", load_catalogue())
    files = sorted(str(p) for p in src.rglob("*.py") if p.name != "extra.py")
    findings = lint_paths(files, cache=cache).findings
    given = files + [str(src / "extra.py")]
    first = fix_cache.cached_fixes(findings, given, Config(), None, cache=cache)
    assert fix_cache.cached_fixes(findings, given, Config(), None, cache=cache) == first and len(calls) == 1
    gone = files + [str(src / "gone.py")]
    fix_cache.cached_fixes(findings, gone, Config(), None, cache=cache)
    fix_cache.cached_fixes(findings, gone, Config(), None, cache=cache)
    assert len(calls) == 3


def test_a_file_without_an_is_available_call_cannot_be_guarded() -> None:
    """`_plan_guard` rewrites an `X.is_available()` call of the file's own: with none in the file, a
    write inside a function is not planned even when CUDA was initialized in that file."""
    from cudalint.core.findings import Finding, Step
    from cudalint.fixes.prospects import may_fix

    text = INSIDE.replace("torch.cuda.is_available()", "torch.cuda.init()")
    assert "is_available" not in text
    cause = (Step("a.py", 1, "torch.cuda.init() initializes CUDA"),)
    finding = Finding(code="CUD001", path="a.py", line=5, column=5, end_line=5, end_column=9, message="m", witness=cause)
    assert may_fix([finding], text) is False
    guarded = Finding(code="CUD001", path="a.py", line=8, column=5, end_line=8, end_column=9, message="m", witness=cause)
    assert may_fix([guarded], GUARDED) is True


def test_a_variable_written_in_two_places_is_never_moved() -> None:
    """`_plan_move` moves a write only when the project writes its variable once: the run's own
    CUD001 findings at two places already show it is not (crowded)."""
    from cudalint.core.findings import Finding, Step
    from cudalint.fixes.prospects import may_fix, parse_quietly, written_variable

    text = "import torch_setup\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nos.environ.update(X='1')\nos.environ[NAME] = '1'\nrows[0] = 1\n"
    tree = parse_quietly(text)
    assert [written_variable(tree, n) for n in (1, 3, 4, 5, 6, 9)] == [None, "CUDA_VISIBLE_DEVICES", None, None, None, None]
    assert written_variable(None, 3) is None
    witness = (Step("b.py", 1, "torch.cuda.init() initializes CUDA"), Step("a.py", 1, "import torch_setup runs its top level"), Step("a.py", 3, "written here"))
    finding = Finding(code="CUD001", path="a.py", line=3, column=1, end_line=3, end_column=5, message="m", witness=witness)
    assert may_fix([finding], text, tree, crowded=()) is True
    assert may_fix([finding], text, tree, crowded={"CUDA_VISIBLE_DEVICES"}) is False
    assert may_fix([finding], text, crowded={"CUDA_DEVICE_ORDER"}) is True
    update = Finding(code="CUD001", path="a.py", line=4, column=1, end_line=4, end_column=5, message="m", witness=witness)
    assert may_fix([update], text, tree, crowded={"CUDA_VISIBLE_DEVICES", "X"}) is True  # (not a subscript: planned)


CROWDED_SETUP = "import torch\n\ntorch.cuda.init()\n"
CROWDED_WRITER = "import os\nimport setup_cuda\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"


@pytest.mark.parametrize("writers", [1, 2])
def test_no_syntax_tree_is_made_for_writes_of_a_crowded_variable(tmp_path: Path, monkeypatch, writers: int) -> None:
    """Two modules write CUDA_VISIBLE_DEVICES after an import that initialized CUDA: neither write
    can move (the variable is written twice), so no file is parsed with libcst; one module alone is
    planned as before."""
    from cudalint.fixes import fixinfo
    from cudalint.inputs import source

    (tmp_path / "setup_cuda.py").write_text(CROWDED_SETUP)
    for i in range(writers):
        (tmp_path / f"w{i}.py").write_text(CROWDED_WRITER)
    result = lint_paths([str(tmp_path)], Config())
    assert [(f.code, Path(f.path).name, f.line) for f in result.findings if f.code == "CUD001"] == [("CUD001", f"w{i}.py", 4) for i in range(writers)]
    parsed: list = []
    real = source.parse_cst
    monkeypatch.setattr(source, "parse_cst", lambda src: parsed.append(Path(src.path).name) or real(src))
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    fixinfo.fixes_for(result.findings, files, Config())
    assert parsed == ([] if writers == 2 else ["w0.py"])
