"""The prefilter, the worker pool and the cache change how fast a run is, never what it finds.

Each test compares a run against the plain one (serial, every file parsed, no cache) on the same
files: the fixtures, and generated multi-module programs in which most files mention nothing the
catalogue cares about but import, call and raise through each other.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from cudalint.engine import runner, tasks
from cudalint.api import lint_paths
from cudalint.engine.cache import Cache
from cudalint.core.catalogue import load_catalogue
from cudalint.scan.scanner import scan, scan_tree
from tests.fixture_expectations import FIXTURES


def _json(result):
    return [f.to_json() for f in result.findings]


def _all_ways(target: str, tmp_path: Path, monkeypatch, parallel: bool = True) -> list:
    plain = lint_paths([target], jobs=1, prefilter=False)
    runs = {
        "prefiltered": lint_paths([target], jobs=1),
        "cold cache": lint_paths([target], jobs=1, cache=Cache.open(tmp_path / "c1", load_catalogue())),
        "warm cache": lint_paths([target], jobs=1, cache=Cache.open(tmp_path / "c1", load_catalogue())),
    }
    if parallel:  # spawning workers costs a second or two: done on a few inputs only
        monkeypatch.setattr(runner, "PARALLEL_MIN_FILES", 1)
        runs["parallel"] = lint_paths([target], jobs=2)
        runs["parallel, cache"] = lint_paths([target], jobs=2, cache=Cache.open(tmp_path / "c2", load_catalogue()))
    for name, result in runs.items():
        assert _json(result) == _json(plain), name
        assert result.files == plain.files, name
    return _json(plain)


def test_fixtures_same_findings_every_way(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    found = _all_ways("fixtures", tmp_path, monkeypatch)
    assert found  # the fixtures do have findings


# ---------- generated programs ------------------------------------------------------------------
_EFFECTS = [
    "torch.cuda.init()",
    "torch.cuda.is_available()",
    "x = torch.zeros(3, device='cuda')",
    "t.cuda()",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    "os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'",
]
_PLAIN = ["y = 1", "print('hello')", "z = [i for i in range(3)]", "pass"]
_STOPS = ["raise ValueError('no')", "sys.exit(1)", "while True:\n        pass"]


def _program(rng: random.Random, root: Path) -> None:
    n = rng.randint(4, 9)
    names = [f"m{i}" for i in range(n)]
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i, name in enumerate(names):
        lines = ["import os", "import sys", "import torch", "t = None"] if rng.random() < 0.4 else []
        others = [m for m in names if m != name]
        funcs = []
        for j in range(rng.randint(1, 3)):
            body = []
            for _ in range(rng.randint(1, 3)):
                r = rng.random()
                if r < 0.25 and lines:
                    body.append(rng.choice(_EFFECTS))
                elif r < 0.45 and others:
                    other = rng.choice(others)
                    body.append(f"from pkg import {other}\n    {other}.f{rng.randint(0, 2)}()")
                elif r < 0.6:
                    body.append(rng.choice(_STOPS) if "import sys" in lines else "raise ValueError('no')")
                else:
                    body.append(rng.choice(_PLAIN))
            if rng.random() < 0.3:
                body = [f"if y:\n        {body[0]}"] + body[1:]
            funcs.append(f"def f{j}():\n    " + "\n    ".join(body))
        top = []
        for _ in range(rng.randint(0, 3)):
            r = rng.random()
            if r < 0.4 and others:
                top.append(f"from pkg import {rng.choice(others)}")
            elif r < 0.6 and lines:
                top.append(rng.choice(_EFFECTS))
            elif r < 0.8 and others:
                other = rng.choice(others)
                top.append(f"import pkg.{other}\npkg.{other}.f{rng.randint(0, 2)}()")
            else:
                top.append(f"f{rng.randint(0, len(funcs) - 1)}()")
        text = "\n".join(lines + ["y = 0"] + funcs + top) + "\n"
        (pkg / f"{name}.py").write_text(text)
    main = ["import os", "import torch", "from pkg import " + ", ".join(rng.sample(names, k=min(2, n)))]
    for name in rng.sample(names, k=min(3, n)):
        main.append(f"import pkg.{name}")
        main.append(f"pkg.{name}.f{rng.randint(0, 2)}()")
    main.append("os.environ['CUDA_VISIBLE_DEVICES'] = '1'")
    (root / "main.py").write_text("\n".join(main) + "\n")
    (root / "broken.py").write_text("def f(:\n    pass\n")  # relevant to nothing, still a CUD900


@pytest.mark.parametrize("seed", range(40))
def test_generated_programs_same_findings_every_way(seed: int, tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(seed)
    src = tmp_path / "src"
    src.mkdir()
    _program(rng, src)
    found = _all_ways(str(src), tmp_path, monkeypatch, parallel=seed < 2)
    assert any(f["code"] == "CUD900" and f["path"].endswith("broken.py") for f in found)


def test_generated_programs_do_skip_files(tmp_path: Path) -> None:
    """The equivalence above is not vacuous: across the seeds, the prefilter does skip files."""
    skipped = total = 0
    for seed in range(40):
        src = tmp_path / str(seed)
        src.mkdir()
        _program(random.Random(seed), src)
        files = sorted(str(p) for p in src.rglob("*.py"))
        loaded = runner.load_files(files, load_catalogue(), jobs=1)
        skipped += loaded.skipped
        total += len(files)
    assert 0.1 * total < skipped < total


def test_scan_sees_what_the_summarizer_sees() -> None:
    cat = load_catalogue()
    plain = scan(b"import json\ndef f():\n    return json.dumps({})\n", cat, "m", False)
    assert not plain.kinds and not plain.may_stop
    assert "init" in scan(b"import torch as T\nT.cuda.init()\n", cat, "m", False).kinds
    assert "init" in scan(b"def f(x):\n    return x.cuda()\n", cat, "m", False).kinds
    assert "*" in scan(b"import os\nos.environ['A'] = '1'\n", cat, "m", False).kinds
    assert scan(b"def f():\n    raise ValueError\n", cat, "m", False).may_stop
    imports = scan(
        b"from . import sib\nfrom ..up import (a as b,\n  c)\nimport pkg.mod as pm\nif x: import q\npm.sub.f()\nsib.g.h()\n",
        cat, "pkg.sub.m", False,
    ).imports
    for name in ("pkg.sub.sib", "pkg.sub.sib.g", "pkg.up", "pkg.up.a", "pkg.up.c", "pkg.mod", "pkg.mod.sub", "q"):
        assert name in imports, name


def test_cache_is_shared_safely_by_two_runs(tmp_path: Path, monkeypatch) -> None:
    """Two runs writing the same cache at once: every entry stays whole JSON, findings unchanged."""
    import threading

    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001", src)
    expected = _json(lint_paths([str(src)], jobs=1))
    results = []

    def run() -> None:
        results.append(_json(lint_paths([str(src)], jobs=1, cache=Cache.open(tmp_path / "cache", load_catalogue()))))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected, expected]
    from tests.test_cache import entry_json

    for entry in (tmp_path / "cache").rglob("*.json"):
        entry_json(entry)  # whole: a signature line, then JSON


# ---------- generated programs that exercise what the selection reasons about -------------------
# Spellings of CUDA initialization, environment writes, process starts and NVML indices; classes,
# decorators, default values, re-exports, imports inside functions, helpers that never return: the
# selection reads all of these from the text (cudalint.scan.select) and must agree with the parser.
_INITS = [
    "torch.cuda.init()",
    "T.cuda.is_available()",
    "ci()",
    "x.cuda()",
    "x.to('cuda')",
    "x.to(DEV)",
    "torch.zeros(1, device='cuda')",
    "torch.zeros(1, device=DEV)",
    "torch.device(0)",
    "torch.device(IDX)",
    "torch.load('w.pt', map_location='cuda:0')",
    "torch.amp.autocast(device_type='cuda')",
]
_NOT_INITS = [
    "torch.device('cuda')",
    "x.to(device)",
    "torch.zeros(1, device=None)",
    "torch.amp.autocast(device_type=x.device.type)",
    "print('x.cuda() in a string')",
    "torch.manual_seed(0)",
]
_WRITES = [
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    "env = os.environ\n    env['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'",
    "os.environ.update(CUDA_VISIBLE_DEVICES='1')",
    "os.environ.setdefault('CUDA_VISIBLE_DEVICES', '2')",
    "os.putenv('CUDA_VISIBLE_DEVICES', '3')",
    "print(os.environ.get('HOME'))",
]
_OTHER = [
    "multiprocessing.Process(target=work).start()",
    "multiprocessing.Process(target=f0).start()",
    "for i in range(pynvml.nvmlDeviceGetCount()):\n        torch.cuda.set_device(i)",
    "torch.cuda.is_available = lambda: False",
    "setattr(torch.cuda, 'is_available', lambda: False)",
    "while True:\n        pass",
    "sys.exit(1)",
    "raise SystemExit(1)",
    "if y:\n        raise ValueError('no')",
    "try:\n        risky()\n    except ValueError:\n        raise",
]
_HEADER = [
    "import os",
    "import sys",
    "import multiprocessing",
    "import torch",
    "import torch as T",
    "import pynvml",
    "from torch.cuda import init as ci",
    "DEV = 'cuda:1'",
    "IDX = 1",
    "x = device = y = None",
    "def risky():\n    pass",
    "def work():\n    pass",
]


def _rich_program(rng: random.Random, root: Path) -> None:
    n = rng.randint(4, 8)
    names = [f"m{i}" for i in range(n)]
    pkg = root / "pkg"
    pkg.mkdir()
    exports = []
    for i, name in enumerate(names):
        others = [m for m in names if m != name]
        lines = list(_HEADER) if rng.random() < 0.45 else ["import sys", "y = None", "def risky():\n    pass"]
        effectful = len(lines) > 3

        def stmt() -> str:
            r = rng.random()
            if effectful and r < 0.22:
                return rng.choice(_INITS)
            if effectful and r < 0.32:
                return rng.choice(_NOT_INITS)
            if effectful and r < 0.45:
                return rng.choice(_WRITES)
            if effectful and r < 0.55:
                return rng.choice(_OTHER)
            if r < 0.62:
                return rng.choice(["raise ValueError('x')", "if y:\n        raise ValueError('x')"])
            if r < 0.75 and others:
                other = rng.choice(others)
                return rng.choice(
                    [
                        f"from pkg import {other}\n    {other}.f{rng.randint(0, 2)}()",
                        f"from pkg.{other} import C{rng.randint(0, 1)}\n    C{rng.randint(0, 1)}()",
                        f"from pkg import g_{other}\n    g_{other}()",
                    ]
                )
            if r < 0.82:
                return f"f{rng.randint(0, 2)}()"
            if r < 0.88:
                return "die()"
            return rng.choice(["pass", "z = [i for i in range(3)]", "print('f0()')"])

        funcs = ["def die():\n    " + rng.choice(["raise SystemExit(2)", "sys.exit(3)", "pass"])]
        for j in range(3):
            body = [stmt() for _ in range(rng.randint(1, 3))]
            deco = rng.choice(["", "", f"@deco{rng.randint(0, 1)}\n"])
            default = rng.choice(["", "", f"a=f{rng.randint(0, j) if j else 0}"]) if j else ""
            funcs.append(f"{deco}def f{j}({default}):\n    " + "\n    ".join(body))
        funcs.insert(1, "def deco0(fn):\n    " + stmt() + "\n    return fn")
        funcs.insert(2, "def deco1(fn):\n    return fn")
        for k in range(2):
            base = rng.choice(["", "", f"(C{k - 1})" if k else "", "(object)"])
            init = "\n        ".join(stmt().replace("\n    ", "\n        ") for _ in range(rng.randint(1, 2)))
            run = stmt().replace("\n    ", "\n        ")
            funcs.append(f"class C{k}{base}:\n    x = {rng.choice(['1', 'f0()', 'None'])}\n    def __init__(self):\n        {init}\n    def run(self):\n        {run}")
        funcs.append(f"def g_{name}():\n    return f{rng.randint(0, 2)}()")
        exports.append(f"from pkg.{name} import g_{name}")
        top = []
        for _ in range(rng.randint(0, 4)):
            r = rng.random()
            if r < 0.3 and others:
                top.append(f"from pkg import {rng.choice(others)}")
            elif r < 0.45 and effectful:
                top.append(rng.choice(_INITS + _WRITES).replace("\n    ", "\n"))
            elif r < 0.6 and others:
                other = rng.choice(others)
                top.append(f"import pkg.{other}\npkg.{other}.f{rng.randint(0, 2)}()")
            elif r < 0.7:
                top.append(f"REGISTRY = {{'f{rng.randint(0, 2)}': 1, 'name': C{rng.randint(0, 1)}}}")
            elif r < 0.8:
                top.append(f"OBJ = C{rng.randint(0, 1)}()")
            elif r < 0.9:
                top.append(f"try:\n    f{rng.randint(0, 2)}()\nexcept ValueError:\n    pass")
            else:
                top.append(f"if __name__ == '__main__':\n    f{rng.randint(0, 2)}()")
        (pkg / f"{name}.py").write_text("\n".join(lines + funcs + top) + "\n")
    (pkg / "__init__.py").write_text("\n".join(rng.sample(exports, k=min(3, len(exports)))) + "\n")
    main = ["import os", "import torch"] + (["import pkg"] if rng.random() < 0.3 else [])
    for name in rng.sample(names, k=rng.randint(1, 2)):
        main.append(rng.choice([f"import pkg.{name}", f"from pkg import {name}", f"from pkg.{name} import f0"]))
        main.append(rng.choice([f"pkg.{name}.f{rng.randint(0, 2)}()", f"pkg.g_{name}()" if f"pkg.{name} import g_" in "" else "pass", "torch.cuda.init()"]))
    main.append("os.environ['CUDA_VISIBLE_DEVICES'] = '1'")
    (root / "main.py").write_text("\n".join(main) + "\n")


@pytest.mark.parametrize("seed", range(60))
def test_rich_generated_programs_same_findings(seed: int, tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(1000 + seed)
    src = tmp_path / "src"
    src.mkdir()
    _rich_program(rng, src)
    _all_ways(str(src), tmp_path, monkeypatch, parallel=False)


def test_rich_generated_programs_do_skip_files_and_do_find(tmp_path: Path) -> None:
    """Not vacuous: the programs have findings of several codes (they are dense: most modules reach
    an effect through `pkg/__init__.py`, so few files are skipped; the skipping itself is measured
    by test_generated_programs_do_skip_files and on timm by `make bench`)."""
    skipped = total = 0
    codes: set[str] = set()
    for seed in range(60):
        src = tmp_path / str(seed)
        src.mkdir()
        _rich_program(random.Random(1000 + seed), src)
        files = sorted(str(p) for p in src.rglob("*.py"))
        skipped += runner.load_files(files, load_catalogue(), jobs=1, judged=("device_arg", "env_write", "gpu_index", "init", "monkeypatch", "process")).skipped
        total += len(files)
        codes |= {f.code for f in lint_paths([str(src)], jobs=1).findings}
    assert {"CUD001", "CUD003", "CUD004", "CUD005", "CUD008"} <= codes and "CUD900" not in codes, codes
    assert 0 < skipped < total, (skipped, total)


@pytest.mark.parametrize("seed", range(10))
def test_large_project_path_same_findings(seed: int, tmp_path: Path, monkeypatch) -> None:
    """Past PRECISE_MAX_FILES the selection goes module by module; it must agree as well."""
    from cudalint.scan import select as prefilter

    monkeypatch.setattr(prefilter, "PRECISE_MAX_FILES", 0)
    src = tmp_path / "src"
    src.mkdir()
    _rich_program(random.Random(2000 + seed), src)
    _all_ways(str(src), tmp_path, monkeypatch, parallel=False)


def test_the_halves_of_a_scan_make_the_whole() -> None:
    """A big file's scan is made in two processes (cudalint.engine.runner._Pool.map_scans): what
    `calls=False` leaves out, `stops=False` makes, and together they are the whole scan."""
    catalogue = load_catalogue()
    files = sorted(FIXTURES.rglob("*.py")) + sorted((FIXTURES.parent / "cudalint").glob("*.py"))
    assert len(files) > 100
    for path in files:
        data = path.read_bytes()
        whole = tasks._scan_raw(scan_tree(data, catalogue, "pkg.mod", False)[0])
        merged = tasks._scan_raw(scan_tree(data, catalogue, "pkg.mod", False, calls=False)[0])
        calls = tasks._scan_raw(scan_tree(data, catalogue, "pkg.mod", False, stops=False)[0])
        for at in tasks._CALLS_FIELDS:
            merged[at] = calls[at]
        assert merged == whole, path


def test_scan_stores_the_call_graph_and_never_returning_paths() -> None:
    """What cudalint.scan.callreach._Calls reads instead of parsing a file again."""
    cat = load_catalogue()
    src = b"""import sys
import helpers as h
from .util import stop


def fail():
    raise SystemExit(1)


def relay():
    fail()


def maybe():
    h.quit_now()


def fine(x):
    return x + 1


class Base:
    def __init__(self):
        sys.exit(2)


class Child(Base):
    def run(self):
        return fine(1)


def make():
    return Child()
"""
    s = scan(src, cat, "pkg.mod", False)
    assert s.stops["fail"] == 1 and s.stops["relay"] == 1
    assert s.stops["maybe"] == [["helpers.quit_now"], []]  # another module's function decides
    assert "fine" not in s.stops and "Child.run" not in s.stops
    assert s.stops["Child"] == 1  # __init__ inherited from a base class of this module
    assert s.stops["make"] == 1
    assert sorted(s.defs) == ["Base", "Child", "__init__", "fail", "fine", "make", "maybe", "relay", "run"]
    kinds, imports, mentions, refs = s.defs["Child"]
    assert "Base" in mentions and "fine" in mentions
    assert [s.table[i] for i in s.defs["maybe"][3]] == ["helpers", "helpers.quit_now"]  # the alias, and the chain spelled
    assert s.names["stop"] == [s.table.index("pkg.util.stop")]


def test_a_file_likely_chosen_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """A file with effects of any kind, or importing a module of its own package, is summarized
    from the scan's syntax tree (cudalint.scan.select.likely_selected); the others are parsed again
    only if the selection chooses them. Shapes from transformers (every model imports
    `..utils`) and timm (layers that import only torch)."""
    from cudalint.inputs import source

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("import torch\n\ndef dev():\n    return torch.device('cuda', 0)\n")
    (pkg / "model.py").write_text("from .utils import dev\n\ndef build():\n    return dev()\n")  # local import, no kinds
    (pkg / "absolute.py").write_text("import pkg.utils\n\ndef build():\n    return pkg.utils.dev()\n")
    (pkg / "plain.py").write_text("import math\nimport pkgtools\n\ndef area(r):\n    return math.pi * r * r\n")  # neither
    (pkg / "train.py").write_text("import os\nfrom pkg.model import build\nbuild()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    from cudalint.summary import from_bytes

    parsed: list[str] = []
    summarized: list[str] = []
    real, real_summary = source.parse, from_bytes.summarize_tree
    monkeypatch.setattr(source, "parse", lambda src: parsed.append(Path(src.path).name) or real(src))
    monkeypatch.setattr(from_bytes, "summarize_tree", lambda path, *a: summarized.append(Path(path).name) or real_summary(path, *a))
    lint_paths([str(pkg)], cache=None, jobs=1)
    assert parsed == []  # every chosen file was guessed
    assert sorted(summarized) == ["absolute.py", "model.py", "train.py", "utils.py"]  # not `plain.py` (nor the empty `__init__.py`)

    (pkg / "plain.py").write_text("import math\nimport pkg.train\n\ndef area(r):\n    return math.pi * r * r\n")
    (pkg / "helper.py").write_text("import math\n")  # chosen by no one, guessed by no one
    (pkg / "stops.py").write_text("import math\n\ndef fail():\n    raise SystemExit(math.e)\n")
    (pkg / "train.py").write_text("import os\nfrom pkg.model import build\nfrom pkg import stops\nstops.fail()\nbuild()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    parsed.clear()
    lint_paths([str(pkg)], cache=None, jobs=1)
    assert parsed == ["stops.py"]  # chosen (it may end the path) without effects or a package import


def test_no_selection_when_pass_1_summarized_every_file(tmp_path: Path, monkeypatch) -> None:
    """Every module imports its own package (benchmarks/adversarial.py's import cycles): pass 1
    made every summary, the selection could spare none and is not made; one module that pass 1
    did not summarize (constants, importing nothing) and it is made again."""
    from cudalint.scan import select as selection

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import *\nfrom .b import *\n")
    (pkg / "a.py").write_text("import torch\nfrom pkg import b\n\ndef dev():\n    return b.ident(torch.zeros(1).cuda())\n")
    (pkg / "b.py").write_text("from pkg import a\n\ndef ident(x):\n    return x\n")
    (pkg / "main.py").write_text("import os\nfrom pkg.a import dev\ndev()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    calls: list[int] = []
    real = selection.select
    monkeypatch.setattr(selection, "select", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.chdir(tmp_path)
    plain = _json(lint_paths(["pkg"], jobs=1, prefilter=False))
    assert [f["code"] for f in plain] == ["CUD001"]
    assert _json(lint_paths(["pkg"], jobs=1)) == plain and calls == []
    (pkg / "constants.py").write_text("SIZE = 3\n")
    assert _json(lint_paths(["pkg"], jobs=1)) == plain and calls == [1]


def test_the_import_scan_follows_a_local_name_into_its_attributes() -> None:
    """`import os` then `os.path.join(...)` reaches `os.path`; `myos.path` (a longer name) and
    `cfg.os.path` (an attribute of something else) do not; a use at the very start of the file
    counts, whatever the file's last byte (cudalint.scan.imports._imports)."""
    from cudalint.scan.imports import _imports

    names, chains, _stars = _imports(b"myos.sep\ncfg.os.curdir\nos . path .join('a')\nimport os", "pkg.m", False)
    assert names == ("os", "os.path", "os.path.join") and chains == {b"os": ("os", "os.path.join")}
    names, chains, _stars = _imports(b"os.getcwd()\nimport os", "pkg.m", False)
    assert names == ("os", "os.getcwd") and chains == {b"os": ("os", "os.getcwd")}


_CRLF_SOURCES = [
    # the line ends of a project written on Windows (sentence-transformers 5.x: every file `\r\n`),
    # with what they touch: strings over several lines, a continued line, a lone `\r`, a BOM, a cookie
    b'"""The module.\r\n\r\nMore."""\r\nimport os\r\nimport torch\r\n\r\nDEV = torch.device("cuda", 0)\r\n'
    b'os.environ["CUDA_VISIBLE_DEVICES"] = \\\r\n    "1"\r\nNOTE = """a\r\nb\rc"""\r\n',
    b'import os\rimport torch\rx = torch.zeros(3).cuda()\ros.environ["CUDA_VISIBLE_DEVICES"] = "0"\r',
    b'\xef\xbb\xbfimport torch\r\nif torch.cuda.is_available():\r\n    m = f"""{1}\r\n{torch.cuda.device_count()}"""\r\n',
    b'# -*- coding: latin-1 -*-\r\nimport os\r\nS = "\xe9t\xe9"\r\nos.environ["CUDA_VISIBLE_DEVICES"] = S\r\n',
]


@pytest.mark.parametrize("data", _CRLF_SOURCES)
def test_a_file_with_windows_line_ends_is_summarized_from_the_scans_tree(data: bytes, tmp_path: Path) -> None:
    """The scan parses the bytes with every line end made `\\n`; CPython's tokenizer does the same
    to the file's own bytes, so the summary made from the scan's tree is the one pass 2 makes
    (cudalint.engine.tasks._scan_task): same events, places, texts and string values."""
    from cudalint.engine.fileinfo import FileInfo
    from cudalint.engine.serialize import encode
    from cudalint.summary.from_bytes import _summarize_bytes

    path = tmp_path / "winmod.py"
    path.write_bytes(data)
    cat = load_catalogue()
    item = (FileInfo(path=str(path), module="winmod", is_package=False), "")
    early = tasks._scan_task(item, cat, judged=("env_write", "init"))[4]
    assert early is not None  # made from the scan's tree
    assert encode(early) == encode(_summarize_bytes(str(path), data, "winmod", False, cat))


_PROJECT = {
    "__init__.py": "",
    "utils.py": "import torch\n\ndef dev():\n    return torch.zeros(1).cuda()\n",
    "model.py": "from .utils import dev\n\ndef build():\n    '''Builds it.\n\n    On the GPU.'''\n    return dev()\n",
    "train.py": "import os\nfrom pkg.model import build\nbuild()\nos.environ['CUDA_VISIBLE_DEVICES'] = \\\n    '1'\n",
}


def test_a_project_with_windows_line_ends_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """Every file of it `\\r\\n` (sentence-transformers 5.x): no file chosen is parsed a second
    time, and the findings are those of the same project with `\\n` line ends."""
    from cudalint.inputs import source

    for folder, end in (("unix", "\n"), ("windows", "\r\n")):
        pkg = tmp_path / folder / "pkg"
        pkg.mkdir(parents=True)
        for name, text in _PROJECT.items():
            (pkg / name).write_bytes(text.replace("\n", end).encode())
    parsed: list[str] = []
    real = source.parse
    monkeypatch.setattr(source, "parse", lambda src: parsed.append(Path(src.path).name) or real(src))
    monkeypatch.chdir(tmp_path / "windows")
    windows = _json(lint_paths(["pkg"], cache=None, jobs=1))
    assert parsed == []
    monkeypatch.chdir(tmp_path / "unix")
    unix = _json(lint_paths(["pkg"], cache=None, jobs=1))
    assert windows == unix and [f["code"] for f in windows] == ["CUD001"]


# ---------- the scan's text searches: fast forms that must answer as the plain ones ----------------
@pytest.mark.parametrize("text", [b"2foo", b"a2foo", b"_2foo", b"foo2", b"foo", b" foo.bar", b"0x1F", b"F(", b"xF", b"(F)", b"__F", b"os.path", b"pos", b"9os", b"9x1", b"ax1", b"b_a", b"1_a", b"# import. x"])
def test_has_word_answers_as_the_list_of_words(text: bytes) -> None:
    from cudalint.scan.text import _WORD, _has_word

    for word in (b"foo", b"F", b"os", b"x1", b"_a", b"import.", b"bar"):
        assert _has_word(text, word) is (word in set(_WORD.findall(text))), (text, word)


def test_joints_are_looked_for_before_the_text_is_rewritten() -> None:
    from cudalint.scan.text import _JOINER, _may_join

    for data in (b'x = "cu" "da"', b"f\"cu{'da'}\"", b"f\"{'cu'}da\"", b"\"c\" 'u' \"da\"", b'x = ("cu"\n     # why\n     "da")'):
        assert b"cuda" not in data and b"cuda" in _JOINER.sub(b"", data) and _may_join(b"cuda", data), data
    assert not _may_join(b"cuda", b'x = "ucd" + "adu"  # cu da')  # no part of it ends where a joint starts


def test_calls_are_found_inside_the_first_argument_too() -> None:
    """(the forward regex took `g` for `f`'s first argument and never saw the call `g(x)`)"""
    from cudalint.scan.text import _qualified_calls

    calls = _qualified_calls(b"import torch as t\nf(g(x), 1)\nt . cuda . set_device(0)\nh (\n  -1)\n", {b"t": ("torch",)})
    assert set(calls) == {"f", "g", "t.cuda.set_device", "torch.cuda.set_device", "h"}
    assert calls.firsts["f"] == {b"g"} and calls.firsts["g"] == {b"x"} and calls.firsts["h"] == {b"-1"}
    assert calls.int_first("torch.cuda.set_device") and not calls.int_first("f")
