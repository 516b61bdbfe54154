"""Which module an import names (cudalint.core.project.Project.resolve_module), on projects made of
bare summaries: the paths and dotted names are the question, so no file is written or parsed.

The shapes are real ones: core/ beside routers/ run from the project root (a FastAPI llama.cpp
server, fixtures/CUD101/namespace_package), and diffusers 0.42.1's quantizers/bitsandbytes/
subpackage, which `import bitsandbytes` inside the diffusers package never means.
"""
from __future__ import annotations

from cudalint.core.ir import ModuleIR
from cudalint.core.project import Project


def _project(*modules: tuple[str, str]) -> Project:
    return Project([ModuleIR(path=path, module=name, top=()) for path, name in modules])


def test_a_folder_without_init_above_the_importer_is_on_sys_path() -> None:
    # app/ has no __init__.py: run from app/, `from core.llm import ...` in routers/chat.py is app/core/llm.py
    # (the dotted names differ from the imports: only the search through the folders finds them)
    p = _project(("app/routers/chat.py", "chat"), ("app/core/llm.py", "llm"), ("app/core/__init__.py", "app_core"))
    chat = p.by_path["app/routers/chat.py"]
    assert p.resolve_module("core.llm", chat) is p.by_path["app/core/llm.py"]
    assert p.resolve_module("core", chat) is p.by_path["app/core/__init__.py"]
    assert p.resolve_module("missing.mod", chat) is None


def test_the_nearest_folder_above_wins() -> None:
    p = _project(
        ("top/mid/low/main.py", "main"),
        ("top/mid/util.py", "mid_util"),
        ("top/util.py", "util2"),  # (its dotted name differs: only the folder walk can find either)
    )
    main = p.by_path["top/mid/low/main.py"]
    assert p.resolve_module("util", main) is p.by_path["top/mid/util.py"]


def test_a_package_folder_above_is_never_on_sys_path() -> None:
    # diffusers/quantizers/bitsandbytes/ is a subpackage: `import bitsandbytes` in
    # diffusers/quantizers/quantizer.py means the installed library, not it
    p = _project(
        ("src/diffusers/__init__.py", "diffusers"),
        ("src/diffusers/quantizers/__init__.py", "diffusers.quantizers"),
        ("src/diffusers/quantizers/auto/__init__.py", "diffusers.quantizers.auto"),
        ("src/diffusers/quantizers/auto/quantizer.py", "diffusers.quantizers.auto.quantizer"),
        ("src/diffusers/quantizers/bitsandbytes/__init__.py", "diffusers.quantizers.bitsandbytes"),
    )
    importer = p.by_path["src/diffusers/quantizers/auto/quantizer.py"]
    assert p.resolve_module("bitsandbytes", importer) is None
    # ... while a folder that is no package above them is searched (src/, where the tests run from)
    q = _project(
        ("src/diffusers/__init__.py", "diffusers"),
        ("src/diffusers/quantizers/__init__.py", "diffusers.quantizers"),
        ("src/diffusers/quantizers/auto/__init__.py", "diffusers.quantizers.auto"),
        ("src/diffusers/quantizers/auto/quantizer.py", "diffusers.quantizers.auto.quantizer"),
        ("src/helpers.py", "shared_helpers"),
    )
    importer = q.by_path["src/diffusers/quantizers/auto/quantizer.py"]
    assert q.resolve_module("helpers", importer) is q.by_path["src/helpers.py"]


def test_the_answers_do_not_depend_on_the_order_of_questions() -> None:
    # the search above a folder is remembered per folder (its ancestors are shared): a folder asked
    # second must get the answer it gets when asked first
    modules = (
        ("r/a/b/one.py", "one"),
        ("r/a/c/__init__.py", "c"),
        ("r/a/c/two.py", "two"),
        ("r/lib/x.py", "x"),
        ("r/a/lib/x.py", "x2"),
    )
    asked = [("r/a/b/one.py", "lib.x"), ("r/a/c/two.py", "lib.x"), ("r/a/c/two.py", "nothing")]
    first = _project(*modules)
    answers = [first.resolve_module(name, first.by_path[path]) for path, name in asked]
    second = _project(*modules)
    backwards = [second.resolve_module(name, second.by_path[path]) for path, name in reversed(asked)][::-1]
    assert [m.path if m else None for m in answers] == ["r/a/lib/x.py", "r/a/lib/x.py", None]
    assert [m.path if m else None for m in backwards] == ["r/a/lib/x.py", "r/a/lib/x.py", None]


def test_the_folder_linted_from_is_searched_unless_it_is_a_package() -> None:
    # relative paths: the folder the run started in is "" (tools/, run as `python tools/train.py`)
    plain = _project(("tools/train.py", "train"), ("helpers.py", "the_helpers"))
    assert plain.resolve_module("helpers", plain.by_path["tools/train.py"]) is plain.by_path["helpers.py"]
    package = _project(("tools/train.py", "train"), ("helpers.py", "the_helpers"), ("__init__.py", "pkg"))
    assert package.resolve_module("helpers", package.by_path["tools/train.py"]) is None


def test_a_module_the_project_names_so_comes_before_a_folder_search() -> None:
    # lib/core/llm.py is the module core.llm (lib/ is where its package starts); app/core/llm.py
    # is found only by searching the folders above routers/: the name decides first
    p = _project(("app/routers/chat.py", "chat"), ("app/core/llm.py", "llm_ns"), ("lib/core/llm.py", "core.llm"))
    assert p.resolve_module("core.llm", p.by_path["app/routers/chat.py"]) is p.by_path["lib/core/llm.py"]
