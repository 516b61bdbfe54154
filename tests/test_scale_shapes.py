"""Import shapes that once made a run grow with the number of import paths (issue 16): cycles, star
imports, deep re-export chains, packages whose `__init__` imports everything. The generated project
(benchmarks/adversarial.py) is linted every way; each way must find the same, and the flow must
walk each module's top level once."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from cudalint.analysis import flow
from cudalint.analysis import facts
from cudalint.api import lint_paths
from cudalint.core.catalogue import load_catalogue
from tests.test_same_findings import _all_ways, _json

_GEN = Path(__file__).resolve().parent.parent / "benchmarks" / "adversarial.py"


def _generate(root: Path, modules: int, per_package: int) -> None:
    spec = importlib.util.spec_from_file_location("adversarial", _GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    mod.generate(root, modules=modules, per_package=per_package)


def test_generated_shapes_same_findings_every_way(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "src"
    _generate(src, modules=60, per_package=12)
    monkeypatch.chdir(src)
    found = _all_ways("adv", tmp_path, monkeypatch)
    codes = {f["code"] for f in found}
    assert {"CUD001", "CUD003"} <= codes
    # CUDA_VISIBLE_DEVICES written after an import-time CUDA init reached through the star-imported
    # top package: p4/m5 writes first in import order (p0/m5 imports p1.m4, which runs p1, ... p4);
    # the other m5 modules write the same '0' again, which changes nothing (rules/CUD001.md)
    assert [(f["path"], f["line"]) for f in found if f["code"] == "CUD001"] == [("adv/p4/m5.py", 19)], found


def test_generated_shapes_touched_file_same_findings(tmp_path: Path, monkeypatch) -> None:
    from cudalint.engine.cache import Cache
    from cudalint.core.catalogue import load_catalogue

    src = tmp_path / "src"
    _generate(src, modules=40, per_package=10)
    monkeypatch.chdir(src)
    cold = lint_paths(["adv"], jobs=1, cache=Cache.open(tmp_path / "c", load_catalogue()))
    with open(src / "adv" / "p1" / "m3.py", "a") as fh:
        fh.write("\n# a comment\n")
    touched = lint_paths(["adv"], jobs=1, cache=Cache.open(tmp_path / "c", load_catalogue()))
    assert _json(touched) == _json(cold) == _json(lint_paths(["adv"], jobs=1))


def test_each_module_top_level_walked_once(tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "src"
    _generate(src, modules=120, per_package=20)
    monkeypatch.chdir(src)
    walks: list = []
    original = flow.Analyzer.walk_root

    def counting(self, mod, block, include_main, start=None, exposes=True):
        if block is mod.top:
            walks.append((type(self).__name__, mod.path, include_main))
        return original(self, mod, block, include_main, start, exposes)

    monkeypatch.setattr(flow.Analyzer, "walk_root", counting)
    lint_paths(["adv"], jobs=1)
    main = [w for w in walks if w[0] == "Analyzer"]
    # once as a root (its __main__ block included) and at most once as an import
    assert len([w for w in main if w[2]]) == len({w[1] for w in main})
    assert len([w for w in main if not w[2]]) <= len({w[1] for w in main})


def test_imported_modules_are_one_shared_set() -> None:
    # a module is a bit (cudalint.analysis.flow.Analyzer.bit); bits past 256 are ints Python does not cache
    one, two = 1 << 300, 1 << 301
    a = facts.add_imported({}, one)
    b = facts.add_imported(a, one)
    assert b is a  # nothing new imported: the same state, no copy
    joined = facts.join([a, facts.add_imported({}, two)])
    assert facts.imported(joined) == one | two
    assert facts.imported(facts.join([a, {}])) is facts.imported(a)
    assert facts.imported(facts.join([{}, a])) is facts.imported(a)
    both = facts.add_imported(a, two)
    assert facts.imported(facts.join([both, a])) is facts.imported(both)  # a subset joins into the larger set itself
    assert facts.imported(facts.join([a, both])) is facts.imported(both)
    assert facts.add_imported(both, one) is both


def test_labels_nest_no_deeper_than_the_bound() -> None:
    """A chain of project calls (`x = self.a(x); x = self.b(x); ...`, a model's forward) once nested
    each call's result label inside the next: timm took 36 s and 680 MB. The nesting is cut at
    labels.MAX_INNER_DEPTH, whatever the chain's length."""
    from cudalint.summary import labels
    from cudalint.api import load_module
    from cudalint.core import record
    from cudalint.core.catalogue import load_catalogue
    from cudalint.core.ir import Label

    def module(calls: int):
        body = "".join(f"    x = self.f{i}(x)\n" for i in range(calls))
        return load_module("m.py", load_catalogue(), f"class M:\n  def forward(self, x):\n{body}    return x\n")

    def depth(obj) -> int:
        if isinstance(obj, Label):
            return 1 + max((depth(i) for i in obj.inner), default=0)
        if isinstance(obj, (tuple, list, frozenset, set)):
            return max((depth(i) for i in obj), default=0)
        if record.is_record(obj):  # (the IR's classes: cudalint.core.record)
            return max((depth(getattr(obj, f)) for f in record.fields(obj)), default=0)
        if isinstance(obj, dict):
            return max((depth(v) for v in obj.values()), default=0)
        return 0

    # a returned call's label (1) around the cut chain (MAX + 1) inside the return label (1)
    assert depth(module(60)) == depth(module(10)) == labels.MAX_INNER_DEPTH + 3
    assert depth(module(2)) == 4
    short = tuple(Label(kind="ret", origin=i, text="f()", inner=()) for i in range(2))
    chain = short
    for i in range(10):
        chain = (Label(kind="ret", origin=100 + i, text="g()", inner=chain),)
    assert depth(labels.bounded(chain)) == labels.MAX_INNER_DEPTH + 1
    assert labels.bounded(short) is short  # nothing to cut: the same tuple


def test_the_summarizer_asks_the_catalogue_once_per_catalogue(monkeypatch) -> None:
    """The tables the summarizer reads in every file (environment mappings, library roots, the
    thread model's names) are made once per catalogue, not per file; another catalogue gets its own."""
    import copy

    from cudalint.summary import concurrent_calls, summarize
    from cudalint.summary.from_bytes import _summarize_bytes

    made: list = []
    real = concurrent_calls.specs
    monkeypatch.setattr(concurrent_calls, "specs", lambda cat: made.append(cat) or real(cat))
    monkeypatch.setattr(summarize, "_TABLES", {})
    cat = load_catalogue()
    for i in range(3):
        _summarize_bytes(f"m{i}.py", b"import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", f"m{i}", False, cat)
    assert made == [cat]
    other = copy.copy(cat)
    mod = _summarize_bytes("m.py", b"import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", "m", False, other)
    assert made == [cat, other] and [e.kind for e in mod.top] == ["import_lib", "env_write"]
