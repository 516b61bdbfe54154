"""The layout stays honest: no module over 500 lines, no import cycle, no stage importing a later one.

Imports are read with `ast` from cudalint's own files, those inside functions included (a lazy
import is still a dependency: it only moves the cycle to run time). Imports under
`if TYPE_CHECKING:` are left out: they never run, and they name the host class a mixin is mixed
into (cudalint.summary.labels and child_env name `_Summarizer`) or a type from a stage above.
docs/architecture.md explains the layers.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cudalint"
MAX_LINES = 500

# lowest first; a module may import its own layer and the layers below it, never one above
LAYERS: list[tuple[str, ...]] = [
    ("cudalint", "cudalint.resources", "cudalint.safepath", "cudalint.fingerprint", "cudalint.digest", "cudalint.fspath"),  # the root: found by __file__; the hash; path spellings
    ("cudalint.core",),
    ("cudalint.inputs",),
    ("cudalint.scan", "cudalint.summary"),
    ("cudalint.analysis",),
    ("cudalint.checks",),
    ("cudalint.engine",),
    ("cudalint.api",),
    ("cudalint.fixes",),
    ("cudalint.output",),
    ("cudalint.cli", "cudalint.command", "cudalint.quick_args", "cudalint.named", "cudalint.flake8_plugin",
     "cudalint.server", "cudalint.trace", "cudalint.entry", "cudalint.__main__"),
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def imports(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {cudalint module it imports: first line}."""
    edges: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n) for node in ast.walk(tree) if _is_type_checking(node) for n in ast.walk(node)}
        found: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                # `from pkg import sub` imports the submodule; `from pkg import name`, the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    found.setdefault(t, node.lineno)
        edges[name] = found
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def layer(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (length of the matching prefix, layer)
    for i, names in enumerate(LAYERS):
        for prefix in names:
            if module == prefix or module.startswith(prefix + "."):
                if prefix == "cudalint" and module != "cudalint":
                    continue
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), i)
    return None if best is None else best[1]


def test_no_module_over_500_lines() -> None:
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, "split these modules along their seams (tools/relayout.py SPLITS): " + repr(long)


def test_no_import_cycles() -> None:
    edges = imports(_modules())
    found = []
    for comp in cycles(edges):
        found.append([f"{a} -> {b} (line {edges[a][b]})" for a in comp for b in edges[a] if b in comp])
    assert found == [], "a cycle is a misplaced function or a missing layer: " + repr(found)


def test_every_module_has_a_layer() -> None:
    assert [m for m in _modules() if layer(m) is None] == [], "add the new package to LAYERS and docs/architecture.md"


def test_no_stage_imports_a_later_stage() -> None:
    edges = imports(_modules())
    upward = sorted(f"{a} -> {b} (line {line})" for a, targets in edges.items() for b, line in targets.items()
                    if layer(a) is not None and layer(b) is not None and layer(b) > layer(a))
    assert upward == [], "see the layers in docs/architecture.md: " + repr(upward)


# the checker itself must see what it is meant to see
def _write(tmp: Path, files: dict[str, str]) -> dict[str, Path]:
    out = {}
    for name, text in files.items():
        path = tmp / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out[name] = path
    return out


def test_a_lazy_import_closes_a_cycle(tmp_path: Path) -> None:
    mods = _write(tmp_path, {
        "cudalint.a": "from cudalint.b import x\n",
        "cudalint.b": "def x():\n    from cudalint import a\n",
        "cudalint.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cudalint.a import y\n",
        "cudalint.d": "from cudalint.c import z\n",
    })
    edges = imports(mods)
    assert edges["cudalint.b"] == {"cudalint.a": 2}
    assert edges["cudalint.c"] == {}
    assert cycles(edges) == [["cudalint.a", "cudalint.b"]]


def test_from_package_import_submodule_is_the_submodule(tmp_path: Path) -> None:
    mods = _write(tmp_path, {
        "cudalint.__init__": "", "cudalint.p.__init__": "VALUE = 1\n", "cudalint.p.sub": "",
        "cudalint.q": "from cudalint.p import sub\nfrom cudalint.p import VALUE\n",
    })
    mods = {k.removesuffix(".__init__"): v for k, v in mods.items()}
    assert imports(mods)["cudalint.q"] == {"cudalint.p.sub": 1, "cudalint.p": 2}


@pytest.mark.parametrize("module, expected", [
    ("cudalint.core.ir", 1), ("cudalint.scan.importgraph", 3), ("cudalint.summary.summarize", 3),
    ("cudalint.api", 7), ("cudalint.trace.runner", 10), ("cudalint", 0), ("cudalint.safepath", 0),
])
def test_layers_of_modules(module: str, expected: int) -> None:
    assert layer(module) == expected
