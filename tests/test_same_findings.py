"""The worker pool and the cache change how fast a run is, never what it finds.

Each test compares a run against the plain one (serial, no cache) on the same files: the fixtures,
and generated multi-module programs in which most files mention nothing the catalogue cares about
but import, call and raise through each other. (Until 2026-11 these also held a selection of the
files worth summarizing to the findings of every file summarized: cudalint.engine.runner says why
it went.)
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
from tests.fixture_expectations import FIXTURES


def _json(result):
    return [f.to_json() for f in result.findings]


def _all_ways(target: str, tmp_path: Path, monkeypatch, parallel: bool = True) -> list:
    plain = lint_paths([target], jobs=1)
    runs = {
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


# ---------- generated programs with every shape the analysis follows across modules ---------------
# Spellings of CUDA initialization, environment writes, process starts and NVML indices; classes,
# decorators, default values, re-exports, imports inside functions, helpers that never return.
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


def test_rich_generated_programs_do_find(tmp_path: Path) -> None:
    """Not vacuous: the programs have findings of several codes."""
    codes: set[str] = set()
    for seed in range(60):
        src = tmp_path / str(seed)
        src.mkdir()
        _rich_program(random.Random(1000 + seed), src)
        codes |= {f.code for f in lint_paths([str(src)], jobs=1).findings}
    assert {"CUD001", "CUD003", "CUD004", "CUD005", "CUD008"} <= codes and "CUD900" not in codes, codes


def test_every_file_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """Every file is summarized in pass 1, from the one syntax tree of it this run makes (shapes from
    transformers, where every model imports `..utils`, and timm, whose layers import only torch);
    an unchanged file is not parsed again by the next run, one edited is."""
    from cudalint.inputs import source

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("import torch\n\ndef dev():\n    return torch.zeros(1).cuda()\n")
    (pkg / "model.py").write_text("from .utils import dev\n\ndef build():\n    return dev()\n")
    (pkg / "plain.py").write_text("import math\n\ndef area(r):\n    return math.pi * r * r\n")
    (pkg / "train.py").write_text("import os\nfrom pkg.model import build\nbuild()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n")
    parsed: list[str] = []
    real = source.parse
    monkeypatch.setattr(source, "parse", lambda src: parsed.append(Path(src.path).name) or real(src))
    cache = tmp_path / "cache"
    found = _json(lint_paths([str(pkg)], cache=Cache.open(cache, load_catalogue()), jobs=1))
    assert sorted(parsed) == ["__init__.py", "model.py", "plain.py", "train.py", "utils.py"]
    assert [f["code"] for f in found] == ["CUD001"]
    parsed.clear()
    (pkg / "plain.py").write_text("import math\n\ndef area(r):\n    raise SystemExit(math.e)\n")
    assert _json(lint_paths([str(pkg)], cache=Cache.open(cache, load_catalogue()), jobs=1)) == found
    assert parsed == ["plain.py"]


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
def test_a_file_with_windows_line_ends_is_summarized_as_its_bytes_say(data: bytes, tmp_path: Path) -> None:
    """Pass 1's summary of a file (cudalint.engine.tasks._first_task) is the library's own
    (`_summarize_bytes`): same events, places, texts and string values, whatever its line ends."""
    from cudalint.engine.fileinfo import FileInfo
    from cudalint.engine.serialize import encode
    from cudalint.summary.from_bytes import _summarize_bytes

    path = tmp_path / "winmod.py"
    path.write_bytes(data)
    cat = load_catalogue()
    for lean in (False, True):  # (a lean one is the whole one stripped: cudalint.summary.thread_free)
        item = (FileInfo(path=str(path), module="winmod", is_package=False), "", None, lean)
        path_, key, stamp, made, new, form = tasks._first_task(item, cat)
        assert path_ == str(path) and key and new and stamp == (path.stat().st_mtime_ns, path.stat().st_size)
        assert form == ("lean" if lean else "whole")
        assert encode(made) == encode(_summarize_bytes(str(path), data, "winmod", False, cat, lean=lean))


_PROJECT = {
    "__init__.py": "",
    "utils.py": "import torch\n\ndef dev():\n    return torch.zeros(1).cuda()\n",
    "model.py": "from .utils import dev\n\ndef build():\n    '''Builds it.\n\n    On the GPU.'''\n    return dev()\n",
    "train.py": "import os\nfrom pkg.model import build\nbuild()\nos.environ['CUDA_VISIBLE_DEVICES'] = \\\n    '1'\n",
}


def test_a_project_with_windows_line_ends_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """Every file of it `\\r\\n` (sentence-transformers 5.x): each file is parsed once, and the
    findings are those of the same project with `\\n` line ends."""
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
    assert sorted(parsed) == sorted(_PROJECT)
    monkeypatch.chdir(tmp_path / "unix")
    unix = _json(lint_paths(["pkg"], cache=None, jobs=1))
    assert windows == unix and [f["code"] for f in windows] == ["CUD001"]
