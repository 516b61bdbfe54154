"""A caller passes a callee's settled events up as one bundle (cudalint.analysis.exposed), and a
caller above that must judge them opens it and judges each as if it had been exposed alone. Each
economy is paired with the finding it must keep; the shapes are benchmarks/adversarial.py's (every
module star-importing a package that imports everything, as transformers' and vllm's `__init__`
chains do), small."""
from __future__ import annotations

from pathlib import Path

from cudalint.analysis.exposed import CAP, Bundle, Exposed, Wrap, events, opened, wrapped
from cudalint.analysis.facts import Fact
from cudalint.core.findings import Step
from cudalint.core.ir import Event
from tests.flow_projects import analyze

TWO_WRITES = 'import os\n\nos.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'


def _fact(path: str, line: int) -> Fact:
    return Fact((Step(path, line, "made here"),), ("x()", path, line))


def _event(line: int) -> Event:
    return Event("env_write", (line, 1, line, 5), f"write{line}", ("CUDA_VISIBLE_DEVICES",))


def _chain(e: Exposed) -> list[tuple[str, int]]:
    return [(s.path, s.line) for s in e.chain]


def _summary(an, tmp_path: Path, name: str):
    return an.summaries[(str(tmp_path / name), "")]


# ---------- opening a bundle ----------------------------------------------------------------------

def test_an_opened_bundle_makes_each_event_as_exposing_it_call_by_call_would() -> None:
    own = {"a": _fact("lib.py", 1)}
    first = Exposed(_event(3), "lib.py", None, own, 0b001, frozenset({"init:driver"}))
    second = Exposed(_event(4), "lib.py", None, own, 0b001, frozenset({"fork"}))
    near = Wrap(Step("mid.py", 1, "import lib"), 0b010, {"b": _fact("mid.py", 0)}, None)
    far = Wrap(Step("top.py", 2, "import mid"), 0b100, {"c": _fact("top.py", 0)}, None)
    inner = wrapped([first, second], near, 2)
    assert inner.settled == {"init:driver", "fork"} and inner.fresh == 0b011 and inner.count == 2
    outer = wrapped([inner], far, 2)  # a bundle passed up alone is wrapped again, not nested
    assert outer.inner is inner.inner and outer.fresh == 0b111 and outer.settled == inner.settled
    made = list(opened(outer))
    assert [e.event.loc[0] for e in made] == [3, 4]
    for e, source in zip(made, (first, second)):
        assert _chain(e) == [("top.py", 2), ("mid.py", 1)]
        assert e.fresh == 0b111 and e.settled == source.settled and e.path == "lib.py"
        # the facts seen there: the outermost caller's, then the middle one's, then the callee's
        assert e.local.get("a") is own["a"] and e.local.get("b") is not None and e.local.get("c") is not None
    assert made[0].local is made[1].local  # events of one callee state share one view


def test_a_bundle_settled_for_the_whole_summary_gives_its_events_those_keys() -> None:
    e = Exposed(_event(3), "lib.py", None, {}, 0, frozenset({"init:driver"}))
    whole = frozenset({"init:driver", "fork", "env_x"})
    outer = wrapped([wrapped([e, e], Wrap(Step("m.py", 1, "i"), 0, {}, None), 2)], Wrap(Step("t.py", 1, "i"), 0, {}, whole), 2)
    assert outer.settled is whole
    assert [x.settled for x in events([outer])] == [whole, whole]
    # settled for a whole summary at two levels: the outermost one's keys, as the last re-exposure set them
    nearer = frozenset({"init:driver", "fork"})
    twice = wrapped([wrapped([e, e], Wrap(Step("m.py", 1, "i"), 0, {}, nearer), 2)], Wrap(Step("t.py", 1, "i"), 0, {}, whole), 2)
    assert [x.settled for x in events([twice])] == [whole, whole]
    nested = wrapped([e, wrapped([e, e], Wrap(Step("m.py", 2, "i"), 0, {}, None), 2)], Wrap(Step("t.py", 2, "i"), 0, {}, whole), 3)
    assert [x.settled for x in events([nested])] == [whole, whole, whole]
    assert [x.settled for x in opened(nested)] == [whole, whole]  # (the inner bundle, still closed, too)


def test_a_nested_bundle_opens_one_level_at_a_time_and_keeps_its_count() -> None:
    e = [Exposed(_event(line), "lib.py", None, {}, 0, frozenset({"k"})) for line in (1, 2, 3)]
    low = wrapped(e, Wrap(Step("a.py", 1, "i"), 0, {}, None), 3)
    mixed = wrapped([Exposed(_event(9), "b.py", None, {}, 0, frozenset({"j"})), low], Wrap(Step("b.py", 2, "i"), 0, {}, None), 4)
    level = list(opened(mixed))
    assert type(level[0]) is Exposed and type(level[1]) is Bundle and level[1].count == 3
    marked = [Exposed(_event(line), "lib.py", None, {}, 0b001, frozenset({"k"})) for line in (1, 2)]
    inner = wrapped(marked, Wrap(Step("a.py", 1, "i"), 0b010, {}, None), 2)
    outer = wrapped([marked[0], inner], Wrap(Step("b.py", 1, "i"), 0b100, {}, None), 3)
    assert [x.fresh for x in opened(outer)] == [0b101, 0b111]  # every module on the way, the still closed bundle's too
    assert [(x.event.loc[0], _chain(x)) for x in events([mixed])] == [
        (9, [("b.py", 2)]), (1, [("b.py", 2), ("a.py", 1)]), (2, [("b.py", 2), ("a.py", 1)]), (3, [("b.py", 2), ("a.py", 1)])
    ]
    cut = Bundle(mixed.inner, mixed.wraps, mixed.settled, mixed.fresh, 2)  # the first two events only
    assert [x.event.loc[0] for x in events([cut])] == [9, 1]
    after = wrapped([low, Exposed(_event(8), "b.py", None, {}, 0, frozenset({"j"}))], Wrap(Step("c.py", 3, "i"), 0, {}, None), 4)
    assert [x.event.loc[0] for x in events([after])] == [1, 2, 3, 8] and after.settled == {"k", "j"}


def test_a_bundle_opened_on_a_path_that_imported_some_of_its_modules_makes_only_the_others() -> None:
    """The caller skips an event whose module its path imported already (`done`): opening does not
    make it, yet it still counts against the bundle's cut; an event outside those modules, and a
    nested bundle, come as they did."""
    a, b = (Exposed(_event(line), "lib.py", None, {}, bit, frozenset({"k"})) for line, bit in ((1, 0b001), (2, 0b010)))
    low = wrapped([a, b], Wrap(Step("a.py", 1, "i"), 0, {}, None), 2)
    mixed = wrapped([a, b, low, b], Wrap(Step("m.py", 1, "i"), 0b100, {}, None), 5)
    assert [(type(x).__name__, x.fresh) for x in opened(mixed, 0b001)] == [("Exposed", 0b110), ("Bundle", 0b111), ("Exposed", 0b110)]
    assert [(type(x).__name__, x.fresh) for x in opened(mixed, 0b1000)] == [("Exposed", 0b101), ("Exposed", 0b110), ("Bundle", 0b111), ("Exposed", 0b110)]
    assert list(opened(mixed, 0b100)) == []  # a module on the way (its wrap's) was imported: nothing runs again
    # the cut (the first 2 events) counts the skipped one: `b` after it is the second
    cut = Bundle(mixed.inner, mixed.wraps, mixed.settled, mixed.fresh, 2)
    assert [x.event.loc[0] for x in opened(cut, 0b001)] == [2]
    assert [x.event.loc[0] for x in opened(cut)] == [1, 2]


# ---------- in the analysis -----------------------------------------------------------------------

def _chain_of_imports(depth: int) -> dict[str, str]:
    files = {"lib0.py": TWO_WRITES}
    for i in range(1, depth + 1):
        files[f"lib{i}.py"] = f"import lib{i - 1}\n"
    return files


def test_events_carried_up_a_chain_are_one_entry_and_are_judged_where_cuda_came_first(tmp_path: Path) -> None:
    """The shape of the README's bug through five re-exporting modules: nobody below main.py
    initialized CUDA, so the two writes pass up as one bundle; main.py initialized it before its
    import and judges both, with every step of the way."""
    files = {**_chain_of_imports(5), "main.py": "import torch\n\ntorch.cuda.init()\nimport lib5\n"}
    an = analyze(tmp_path, files)
    for i in (2, 3, 4, 5):
        (entry,) = _summary(an, tmp_path, f"lib{i}.py").exposed
        assert type(entry) is Bundle and entry.count == 2
    found = sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values())
    assert found == [("lib0.py", 3, "CUD001"), ("lib0.py", 4, "CUD001")]
    finding = next(f for f in an.findings.values() if f.line == 4)
    steps = [(Path(s.path).name, s.line) for s in finding.witness]
    assert steps == [("main.py", 3), ("main.py", 4), ("lib5.py", 1), ("lib4.py", 1), ("lib3.py", 1), ("lib2.py", 1), ("lib1.py", 1), ("lib0.py", 4)]


def test_without_cuda_first_the_carried_writes_find_nothing(tmp_path: Path) -> None:
    files = {**_chain_of_imports(5), "main.py": "import lib5\nimport torch\n\ntorch.cuda.init()\n"}
    assert analyze(tmp_path, files).findings == {}


def test_a_module_importing_many_exposes_one_entry_per_import_not_per_event(tmp_path: Path) -> None:
    """What made the analysis grow with the project times its import closure: `top` re-exposed
    every write of every module it imports, and each importer of `top` again."""
    files = {f"w{i}.py": TWO_WRITES for i in range(30)}
    files["top.py"] = "".join(f"import w{i}\n" for i in range(30))
    files["mid.py"] = "import top\n"
    files["user.py"] = "import mid\n"
    an = analyze(tmp_path, files)
    assert len(_summary(an, tmp_path, "top.py").exposed) == 60  # judged there, one by one
    (entry,) = _summary(an, tmp_path, "mid.py").exposed
    flat = events([entry])
    assert len(flat) == 60 and [Path(e.path).name for e in flat[:4]] == ["w0.py", "w0.py", "w1.py", "w1.py"]


def test_the_cap_on_passed_up_events_counts_the_events_a_bundle_holds(tmp_path: Path) -> None:
    files = {f"w{i}.py": TWO_WRITES for i in range(CAP)}
    files["top.py"] = "".join(f"import w{i}\n" for i in range(CAP))
    files["mid.py"] = "import top\n"
    files["user.py"] = "import mid\n"
    an = analyze(tmp_path, files)
    flat = events(_summary(an, tmp_path, "mid.py").exposed)
    assert len(flat) == CAP
    assert [Path(e.path).name for e in flat[-2:]] == [f"w{CAP // 2 - 1}.py", f"w{CAP // 2 - 1}.py"]  # the first ones, in order


def test_a_bundle_whose_module_ran_already_on_the_path_is_opened_and_that_module_skipped(tmp_path: Path) -> None:
    """main.py imports lib0 through `a` before initializing CUDA, then `b`, which imports lib0
    too: that import runs nothing again, so lib0's writes (in b's bundle) are not judged after the
    initialization; b's own write is."""
    files = {
        **_chain_of_imports(3),
        "a.py": "import lib3\n",
        "b.py": 'import os\nimport lib3\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        "main.py": "import a\nimport torch\n\ntorch.cuda.init()\nimport b\n",
    }
    an = analyze(tmp_path, files)
    assert type(_summary(an, tmp_path, "b.py").exposed[0]) is Bundle
    found = sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values())
    assert found == [("b.py", 4, "CUD001")]


def test_opening_a_bundle_makes_no_event_of_a_module_the_path_imported_already(tmp_path: Path, monkeypatch) -> None:
    """The same shape: main.py opens b's bundle only to skip lib0's writes, so opening it makes none
    of them (vllm's cold run made 15,713 such events and skipped them)."""
    from cudalint.analysis import flow

    made: list[Exposed] = []
    real = flow.inner_entries

    def counted(bundle: Bundle, *done: int):
        for entry in real(bundle, *done):
            if type(entry) is Exposed:
                made.append(entry)
            yield entry

    monkeypatch.setattr(flow, "inner_entries", counted)
    files = {
        **_chain_of_imports(3),
        "a.py": "import lib3\n",
        "b.py": 'import os\nimport lib3\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        "main.py": "import a\nimport torch\n\ntorch.cuda.init()\nimport b\n",
    }
    an = analyze(tmp_path, files)
    assert sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values()) == [("b.py", 4, "CUD001")]
    # b's bundle holds only lib0's two writes, and main.py imported lib0 (through `a`) before it
    assert made == []


# ---------- one call: what it carries up, and how ---------------------------------------------------

def _apply(summary_entries: tuple, state: dict):
    """Analyzer.apply of a summary holding `summary_entries`, at a call in `top.py` line 7, in `state`;
    the entries the caller's walk exposes after it."""
    from types import SimpleNamespace

    from cudalint.analysis.exposed import Outbox
    from cudalint.analysis.flow import Analyzer, Summary, _Walk
    from cudalint.checks import init_keys
    from cudalint.core.project import Project

    an = Analyzer(Project([]), {}, init_keys)
    w = _Walk(mod=SimpleNamespace(path="top.py"), include_main=False, out=Outbox({}))
    call = Event("call", (7, 1, 7, 9), "lib.f()", ("lib.f",))
    an.apply(Summary(out={}, exposed=summary_entries), call, state, w, "lib.f() runs it")
    return w.out.entries


def test_events_settled_by_different_keys_pass_up_in_one_bundle_each_keeping_its_own() -> None:
    a = Exposed(_event(3), "lib.py", None, {}, 0, frozenset({"init:driver"}))
    b = Exposed(_event(4), "lib.py", None, {}, 0, frozenset({"forkserver:started"}))
    (entry,) = _apply((a, b), {})
    assert type(entry) is Bundle and entry.settled == {"init:driver", "forkserver:started"}
    assert [(x.event.loc[0], x.settled, _chain(x)) for x in events([entry])] == [
        (3, a.settled, [("top.py", 7)]), (4, b.settled, [("top.py", 7)])
    ]


def test_a_bundle_opened_for_a_module_imported_already_keeps_each_events_own_keys() -> None:
    from cudalint.analysis.facts import add_imported

    a = Exposed(_event(3), "lib.py", None, {}, 0b01, frozenset({"init:driver"}))
    b = Exposed(_event(4), "other.py", None, {}, 0b10, frozenset({"forkserver:started"}))
    bundle = wrapped([a, b], Wrap(Step("lib.py", 1, "import"), 0, {}, None), 2)
    (entry,) = _apply((bundle,), add_imported({}, 0b10))  # other.py's top level ran already: its write does not run again
    assert type(entry) is Exposed and entry.event.loc[0] == 3 and entry.settled == a.settled
    assert _chain(entry) == [("top.py", 7), ("lib.py", 1)]
