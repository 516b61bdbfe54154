"""What the prefilter leaves out, and what it must keep: each shape that made transformers 5.23.0
select 2,836 of its 2,860 files (and its call graph 2.9 million nodes), next to the shape that
really runs the effect. The equality of findings with and without the prefilter is
tests/test_prefilter.py's; these pin the precision, so a loosened or a broken rule both fail."""
from __future__ import annotations

import pytest

from cudalint.core.catalogue import load_catalogue
from cudalint.scan.select import _Calls, _effective_kinds, _Index, select
from cudalint.scan.scanner import scan, scan_tree

JUDGED = ("child_env", "device_arg", "env_write", "gpu_index", "init", "monkeypatch", "process")


def _kinds(text: str, modname: str = "m") -> tuple[str, ...]:
    return scan(text.encode(), load_catalogue(), modname, False).kinds


def _scan(text: str, modname: str = "m"):
    return scan_tree(text.encode(), load_catalogue(), modname, False)[0]


def _project(files: dict[str, str]) -> tuple[dict, dict]:
    cat = load_catalogue()
    scans, modules = {}, {}
    for path, text in files.items():
        package = path.endswith("/__init__.py")
        name = path[: -len("/__init__.py")] if package else path[:-3]
        modules[path] = name.replace("/", ".")
        scans[path] = scan_tree(text.encode(), cat, modules[path], package)[0]
    return scans, modules


def _selected(files: dict[str, str]) -> set[str]:
    return select(*_project(files), JUDGED)


# ---------- a judged effect of a module's function needs a call -----------------------------------
@pytest.mark.parametrize(
    "text, judged",
    [
        ("import platform\nprint(platform.system())\n", False),  # transformers utils/import_utils.py
        ("import os\nos.system('nvidia-smi')\n", True),
        ("from os import system\nsystem('ls')\n", True),
        ("import os as o\no.system('ls')\n", True),
    ],
)
def test_a_function_effect_needs_a_call(text: str, judged: bool) -> None:
    assert ("*" in _kinds(text)) is judged


@pytest.mark.parametrize(
    "text, judged",
    [
        # transformers/__init__.py re-exports under the same name, and never calls it
        ("from x import *\nfrom subprocess import run as run\n", False),
        ("from x import *\nfrom subprocess import run as launch\nlaunch(['ls'])\n", True),
        ("from x import *\nfrom subprocess import run\nrun(['ls'])\n", True),
    ],
)
def test_an_import_alias_counts_when_it_is_called(text: str, judged: bool) -> None:
    assert ("*" in _kinds(text)) is judged


@pytest.mark.parametrize(
    "text, judged",
    [
        # transformers models/wav2vec2_with_lm/processing_wav2vec2_with_lm.py: `Pool` in a signature
        ("from multiprocessing import get_context\nfrom multiprocessing.pool import Pool\ndef f(pool: Pool = None):\n    return get_context\n", False),
        ("from multiprocessing import get_context\nctx = get_context('spawn')\nwith ctx.Pool(2) as p:\n    pass\n", True),
    ],
)
def test_a_judged_method_of_a_returned_type_needs_a_call(text: str, judged: bool) -> None:
    assert ("*" in _kinds(text)) is judged


# ---------- what a module's top level reaches ------------------------------------------------------
_CLASS = """import os
class Pipeline:
    def __call__(self):
        return self.get_iterator()
    def get_iterator(self):
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
"""


@pytest.mark.parametrize(
    "top, judged",
    [
        ("Pipeline.push_to_hub = print\n", False),  # transformers pipelines/base.py L1330
        ("def f(p: Pipeline) -> Pipeline:\n    pass\n", False),  # an annotation is not a call
        ("Pipeline()()\n", True),  # used: its special methods run, and what they name
        ("p = object()\np.get_iterator()\n", True),  # a method runs when its name is called
        ("factory = Pipeline\n", True),  # passed on: whoever calls it runs __call__
    ],
)
def test_a_class_named_at_the_top_level(top: str, judged: bool) -> None:
    assert ("*" in _scan(_CLASS + top).top_kinds) is judged


@pytest.mark.parametrize(
    "top, reached",
    [
        ("def f(c: Cfg):\n    pass\n", False),  # transformers vision_utils.py: a signature's annotation
        ("x = Cfg.__doc__\n", False),  # transformers training_args_seq2seq.py
        ("x = Cfg()\n", True),
        ("def f(c=Cfg()):\n    pass\n", True),  # a default value runs on import
        ("x = Cfg.build()\n", True),  # the attribute runs
        ("x = Cfg.quiet()\n", False),  # ... and only it
    ],
)
def test_an_imported_class_reached_from_the_top_level(top: str, reached: bool) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/cfg.py": "import os\nclass Cfg:\n    def __init__(self):\n        os.system('nvidia-smi')\n    @staticmethod\n    def build():\n        os.system('nvidia-smi')\n    @staticmethod\n    def quiet():\n        pass\n",
        "pkg/user.py": "from pkg.cfg import Cfg\n" + top,
        "pkg/app.py": "import pkg.user\n",  # selected only if importing user runs the effect
    }
    assert ("pkg/app.py" in _selected(files)) is reached


# a folder that is a package and a folder of scripts at once: run as `python tools/train.py`, its
# folder is sys.path[0] and a neighbour is imported by its bare name (cudalint.core.project resolves
# it beside the importer; the selection must reach it the same way, and only where the name is)
@pytest.mark.parametrize("call, reached", [("helper.setup()", True), ("helper.quiet()", False), ("other.setup()", False)])
def test_a_neighbour_imported_by_its_bare_name(call: str, reached: bool) -> None:
    files = {
        "tools/__init__.py": "",
        "tools/helper.py": "import os\ndef setup():\n    os.system('nvidia-smi')\ndef quiet():\n    pass\n",
        "tools/train.py": f"import helper\nimport other\n{call}\n",
    }
    assert ("tools/train.py" in _selected(files)) is reached


# ---------- star imports ----------------------------------------------------------------------------
def test_a_star_import_is_followed_only_where_the_name_is() -> None:
    files = {
        "pkg/__init__.py": "from .one import *\nfrom .two import *\nfrom .loop_a import *\n",
        "pkg/one.py": "import os\ndef f():\n    os.system('ls')\n",
        "pkg/two.py": "from .three import *\n",
        "pkg/three.py": "import os\ndef g():\n    os.system('ls')\n",
        "pkg/loop_a.py": "from .loop_b import *\n",
        "pkg/loop_b.py": "from .loop_a import *\n",
        "pkg/broken.py": "def (:\n",
        "pkg/uses_broken.py": "from .broken import *\n",
    }
    calls = _calls_of(files)
    init = "pkg/__init__.py"
    assert sorted(calls._providers(init, "f")) == ["pkg.loop_a", "pkg.one"]
    assert sorted(calls._providers(init, "g")) == ["pkg.loop_a", "pkg.two"]  # through two's own star import
    assert calls._providers(init, "anything") == ("pkg.loop_a",)  # a cycle of star imports: unknown
    assert calls._providers("pkg/uses_broken.py", "anything") == ("pkg.broken",)  # does not parse: unknown
    assert calls._providers("pkg/one.py", "f") == ()  # no star import at all
    # the node of a name the package does not define goes only where the name is
    node = calls._node(init, b"g")
    assert node is not None and "pkg.two.g" in node[1] and "pkg.one.g" not in node[1]


def test_a_module_that_imports_itself_through_its_package_calls_its_own_function() -> None:
    """benchmarks/adversarial.py at 4,000 modules: a cross edge picked its own module. The chain
    `pkg.me.helper` names the importer itself, which the index leaves out of its targets; falling
    back to the package's attribute `me.helper` asked every module of the star-import cycle for
    it (4,081 nodes of one name)."""
    files = {
        "pkg/__init__.py": "from .me import *\nfrom .loop import *\n",
        "pkg/loop.py": "from pkg import *\n",
        "pkg/me.py": "import os\nfrom pkg import me as other\ndef helper():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\ndef run():\n    other.helper()\n",
    }
    calls = _calls_of(files)
    assert calls._resolve("pkg/me.py", "pkg.me.helper") == [("pkg/me.py", b"helper")]
    assert calls._resolve("pkg/me.py", "pkg.me") == []  # the module itself, nothing called
    assert calls._resolve("pkg/loop.py", "pkg.me.helper") == [("pkg/me.py", b"helper")]  # (another importer, as before)
    assert calls.reaches("pkg/me.py", ["pkg.me.helper"], {"*"})
    assert not any(path == "pkg/__init__.py" for path, _ in calls.nodes)


# ---------- a call's first argument: `torch.device(<int>)` initializes CUDA, `torch.device("cuda")` not --
@pytest.mark.parametrize(
    "text, init",
    [
        ("import torch\ntorch.device(0)\n", True),
        ("import torch\ntorch . device (-1)\n", True),  # spaces in the chain, a negative literal
        ("import torch as t\nt.device(3)\n", True),  # qualified through the import's alias
        ("import torch\nN = 2\ntorch.device(N)\n", True),  # a name the module assigns an int
        ("import torch\ntorch.device('cuda')\n", False),
        ("import torch\ntorch.device(rank)\n", False),  # a name nothing here assigns an int
        ("import torch\ntorch.device()\n", False),
        ("import torch\nother.device(0)\n", False),  # another module's `device`
        # in a function: the module's int constants count, and the function's own
        ("import torch\nN = 2\ndef f():\n    return torch.device(N)\nf()\n", True),
        ("import torch\ndef f():\n    k = 1\n    return torch.device(k)\nf()\n", True),
        ("import torch\ndef f(k):\n    return torch.device(k)\nf('cuda')\n", False),
    ],
)
def test_an_int_first_argument_is_found_by_the_scan(text: str, init: bool) -> None:
    scanned = _scan(text)
    assert ("init" in scanned.kinds) is init
    assert ("init" in scanned.top_kinds) is init


# ---------- an API replaced by assignment (CUD008): an attribute of an imported name -------------------
@pytest.mark.parametrize(
    "text, patched",
    [
        ("import torch\ntorch.cuda.is_available = lambda: False\n", True),
        ("import torch\nx = 1; torch.cuda.is_available = f\n", True),  # after a `;`
        ("import torch\ntorch . cuda . is_available : object = f\n", True),  # spaces, an annotation
        ("import torch\nsetattr(torch.cuda, 'is_available', f)\n", True),
        ("import torch\nself.is_available = f\n", False),  # not an imported name
        ("import torch\nif torch.cuda.is_available == f:\n    pass\n", False),  # a comparison
        ("import torch\nfoo(torch).is_available = f\n", False),  # not a dotted name
        ("import torch\ny = torch.cuda.is_available = f\n", False),  # the chain does not start its line
        ("import torch\ntorch.cuda.is_available()\n", False),
    ],
)
def test_an_assigned_api_is_found_by_the_scan(text: str, patched: bool) -> None:
    assert ("monkeypatch" in _kinds(text)) is patched


# ---------- the question "may these calls reach an event of the kind" -----------------------------
def _calls_of(files: dict[str, str]) -> _Calls:
    scans, modules = _project(files)
    index = _Index(modules)
    importers: dict[str, list[str]] = {}
    for p, s in scans.items():
        for t in index.targets(p, s.imports):
            importers.setdefault(t, []).append(p)
    return _Calls(index, scans, modules, _effective_kinds(scans, importers), importers, True)


# a helper chain into a module that writes the environment (the shape of transformers' utils, which
# every model module calls through two or three layers), and a chain beside it that reaches nothing
CHAIN = {
    "pkg/__init__.py": "",
    "pkg/env.py": "import os\ndef pin(i):\n    os.environ['CUDA_VISIBLE_DEVICES'] = str(i)\ndef idle():\n    pass\n",
    "pkg/mid.py": "from pkg.env import pin, idle\ndef setup(i):\n    pin(i)\ndef rest():\n    idle()\n",
    "pkg/a.py": "from pkg.mid import setup, rest\ndef go():\n    rest()\n    setup(0)\n",
    "pkg/b.py": "from pkg.mid import setup\ndef run():\n    setup(1)\n",
    "pkg/c.py": "from pkg.mid import rest\ndef calm():\n    rest()\n",
}


def test_reaching_marks_the_way_and_a_later_question_stops_on_it() -> None:
    calls = _calls_of(CHAIN)
    goal = {"*"}  # (an environment write)
    assert calls.reaches("pkg/a.py", ["pkg.mid.rest", "pkg.mid.setup"], goal)
    key = frozenset(goal)
    # the nodes followed to the write, not the branch beside it
    assert {("pkg/mid.py", b"setup"), ("pkg/env.py", b"pin")} <= calls.reached[key]
    assert ("pkg/mid.py", b"rest") not in calls.reached[key] and ("pkg/env.py", b"idle") not in calls.reached[key]
    asked: list = []
    node = calls._node
    calls._node = lambda path, name: asked.append((path, name)) or node(path, name)  # type: ignore[method-assign]
    assert calls.reaches("pkg/b.py", ["pkg.mid.setup"], goal)
    assert asked == []  # `setup` is known to reach it: nothing followed again


def test_not_reaching_marks_every_node_seen_and_is_asked_once() -> None:
    calls = _calls_of(CHAIN)
    goal = {"*"}  # (an environment write)
    assert not calls.reaches("pkg/c.py", ["pkg.mid.rest"], goal)
    key = frozenset(goal)
    assert {("pkg/mid.py", b"rest"), ("pkg/env.py", b"idle")} <= calls.unreached[key]
    assert not calls.reached.get(key)
    assert calls.reaches("pkg/a.py", ["pkg.mid.rest", "pkg.mid.setup"], goal)  # the other branch still reaches it
    assert not calls.reaches("pkg/a.py", ["pkg.mid.rest"], goal)
    assert not calls.reaches("pkg/a.py", ["pkg.mid.nothing_here"], goal)


def test_a_cycle_of_calls_is_followed_once() -> None:
    files = {
        "pkg/__init__.py": "",
        # (the module writes the environment, in a function the cycle never calls)
        "pkg/ping.py": "import os\nfrom pkg import pong\ndef ping(n):\n    return pong.pong(n - 1) if n else os.getpid()\ndef pin():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
        "pkg/pong.py": "import os\nfrom pkg import ping\ndef pong(n):\n    return ping.ping(n - 1) if n else 0\ndef pin():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
        "pkg/main.py": "from pkg.ping import ping\ndef go():\n    ping(3)\n",
    }
    calls = _calls_of(files)
    asked: list = []
    node = calls._node
    calls._node = lambda path, name: asked.append((path, name)) or node(path, name)  # type: ignore[method-assign]
    assert not calls.reaches("pkg/main.py", ["pkg.ping.ping"], {"*"})
    assert sorted(asked) == [("pkg/ping.py", b"ping"), ("pkg/pong.py", b"pong")]
