"""A callee's events are not judged again where the caller's state cannot change the answer
(cudalint.analysis.replay), and are where it can. Each economy is paired with the finding it must keep."""
from __future__ import annotations

from pathlib import Path

import pytest

from cudalint.analysis.facts import Fact, Seen
from cudalint.analysis.flow import Analyzer, Exposed
from cudalint.analysis.replay import Reads, Replay, Watched
from cudalint.api import lint_paths
from cudalint.checks import env
from cudalint.core.findings import Step
from cudalint.core.ir import Event
from tests.flow_projects import analyze


def _fact(line: int, unless: tuple[str, ...] = ()) -> Fact:
    return Fact((Step("m.py", line, "made here"),), ("x()", "m.py", line), unless)


def _analyze(tmp_path: Path, files: dict[str, str]) -> Analyzer:
    return analyze(tmp_path, files)


def _found(an: Analyzer) -> list[tuple[str, int, str]]:
    return sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values())


def _count_env_judgments(monkeypatch) -> list[int]:
    """Counts the calls of CUD001's check (a wrapper that passes the event through untouched)."""
    calls: list[int] = []
    real = env.checks

    def counting(catalogue, enabled):
        out = []
        for kind, check in real(catalogue, enabled):
            def wrapped(analyzer, exposed, lookup, prefix, _check=check):
                calls.append(exposed.event.loc[0])
                return _check(analyzer, exposed, lookup, prefix)

            out.append((kind, wrapped))
        return out

    monkeypatch.setattr(env, "checks", counting)
    return calls


# ---------- the lookup and the event a nested judgment gets ----------------------------------------

def test_reads_answers_as_seen_from_and_names_what_it_read() -> None:
    mine, theirs = _fact(1), _fact(2)
    reads = Reads({"a": mine}, {"a": theirs, "b": theirs})
    assert reads("a") is mine and reads("b") is theirs and reads("c") is None
    assert reads.keys == ["a", "b", "c"]
    assert reads.callee_only() is False  # the caller's state answered "a"

    reads = Reads({"imported": 1, "z": mine}, {"b": theirs})
    assert reads("b") is theirs and reads("c") is None
    assert reads.callee_only() is True and reads.keys == ["b", "c"]


def test_reads_counts_the_conditions_of_the_callees_facts() -> None:
    conditional = _fact(3, unless=("env_value:X=1",))
    reads = Reads({}, {"init:driver": conditional})
    assert reads("init:driver") is conditional
    assert reads.callee_only() is True and reads.keys == ["init:driver", "env_value:X=1"]
    # the condition holds in the caller: the fact is gone there, and that answer came from the caller
    reads = Reads({"env_value:X=1": _fact(4)}, {"init:driver": conditional})
    assert reads("init:driver") is None
    assert reads.callee_only() is False


def test_reads_sees_through_a_chain_of_callers() -> None:
    inner = _fact(5)
    chain = Seen({"q": _fact(6)}, {"p": inner})
    reads = Reads({}, chain)
    assert reads("p") is inner and reads("q") is not None
    assert reads.callee_only() is True and reads.keys == ["p", "q"]


def test_watched_notes_only_what_depends_on_the_caller() -> None:
    ev = Event("env_write", (3, 1, 3, 9), "w", ("CUDA_VISIBLE_DEVICES", True, False, "0", ()))
    link = (Step("a.py", 7, "calls f()"), None)
    for name in ("event", "path", "local", "nested"):
        watched = Watched(Exposed(ev, "m.py", link, {}))
        getattr(watched, name)
        assert not watched.linked, name
    for name in ("link", "chain", "outermost", "fresh"):
        watched = Watched(Exposed(ev, "m.py", link, {}))
        getattr(watched, name)
        assert watched.linked, name
    watched = Watched(Exposed(ev, "m.py", link, {}))
    assert watched.event is ev and watched.chain == (link[0],) and watched.nested


def test_a_settled_summary_needs_a_state_without_its_keys() -> None:
    replay, summary, other = Replay(), object(), object()
    assert replay.settled(summary, {}) == (0, frozenset())
    replay.settle(summary, 0b101, {"init:driver"})
    assert replay.settled(summary, {}) == (0b101, {"init:driver"})
    assert replay.settled(summary, {"imported": 3, "env_set:X": _fact(1)})[0] == 0b101
    assert replay.settled(summary, {"init:driver": _fact(1)}) == (0, frozenset())
    assert replay.settled(other, {})[0] == 0
    replay.settle(other, 0b1, {"init:driver"})
    assert replay._settled[id(other)][2] is replay._settled[id(summary)][2]  # (one copy of equal key sets)


def test_events_settle_one_by_one_and_keep_what_settled_them() -> None:
    replay, summary = Replay(), object()
    replay.settle(summary, 0b001, {"init:driver"})
    replay.settle(summary, 0b100, {"import:torch"})
    # each event's keys stay with the union: a state holding either settles neither
    assert replay.settled(summary, {}) == (0b101, {"init:driver", "import:torch"})
    assert replay.settled(summary, {"import:torch": _fact(1)})[0] == 0
    # nothing new settled: the keys are not widened (more states keep what was settled)
    replay.settle(summary, 0b001, {"env_set:X"})
    assert replay.settled(summary, {"env_set:X": _fact(1)})[0] == 0b101


# ---------- in the analysis ------------------------------------------------------------------------

_FOUND_IN_ANOTHER_CALLER = {
    # a.py calls the helper before anything initialized (settled: it read only "init:..." keys the
    # caller lacks); b.py calls it after torch.cuda.init(): the write is too late there
    "settled, then a caller holding what it read": (
        {
            "a.py": "import lib\n\nlib.set_gpu()\n",
            "b.py": "import torch\nimport lib\n\ntorch.cuda.init()\nlib.set_gpu()\n",
            "lib.py": 'import os\n\n\ndef set_gpu():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
        },
        ("lib.py", 5),
        [("b.py", 4), ("b.py", 5), ("lib.py", 5)],
    ),
    # `torch.cuda.is_available()` initializes unless PYTORCH_NVML_BASED_CUDA_CHECK=1: CUD001 leaves that
    # to the outermost caller (cudalint.checks.fork._judged_without_callers reads the call steps), so a
    # judgment that asked settles nothing. helper()'s walk asks, and defers; z.py calls set_gpu()
    # itself, without the variable: found
    "asked where it was reached from": (
        {
            "a.py": 'import os\nimport lib\n\n\ndef helper():\n    lib.set_gpu()\n\n\nos.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"\nhelper()\n',
            "lib.py": 'import os\nimport torch\n\n\ndef set_gpu():\n    torch.cuda.is_available()\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
            "z.py": "import lib\n\nlib.set_gpu()\n",
        },
        ("lib.py", 7),
        [("z.py", 3), ("lib.py", 7)],
    ),
}


@pytest.mark.parametrize("case", sorted(_FOUND_IN_ANOTHER_CALLER))
def test_a_callee_settled_in_one_caller_is_judged_again_where_it_matters(tmp_path: Path, case: str) -> None:
    files, (name, line), witness_tail = _FOUND_IN_ANOTHER_CALLER[case]
    an = _analyze(tmp_path, files)
    assert _found(an) == [(name, line, "CUD001")]
    (finding,) = an.findings.values()
    steps = [(Path(s.path).name, s.line) for s in finding.witness]
    assert steps[-len(witness_tail):] == witness_tail


def test_a_module_imported_by_many_is_judged_once_per_kind_of_state(tmp_path: Path, monkeypatch) -> None:
    """benchmarks/adversarial.py's shape, small: every module imports a package whose top level writes
    the variable; no importer initialized CUDA before, so one judgment per write settles them all."""
    calls = _count_env_judgments(monkeypatch)
    files = {"pkg/__init__.py": 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'}
    for i in range(30):
        files[f"user{i}.py"] = f"import pkg\n\n\ndef work{i}():\n    return {i}\n"
    files["late.py"] = "import torch\n\ntorch.cuda.init()\nimport pkg\n"
    an = _analyze(tmp_path, files)
    assert _found(an) == [("__init__.py", 3, "CUD001"), ("__init__.py", 4, "CUD001")]
    # each write: in its own walk, in the first importer's (which settles the package), in late.py's
    # (init:driver held: judged, found); about 30 x 2 judgments without the replay
    assert len(calls) <= 8, calls


# two levels: the event is judged in mid.py's walk (settled there, from lib.py's facts alone) and
# carried up with the keys it read; a caller above holding one of them judges it again
_TWO_LEVELS = {
    "a.py": "import mid\n\nmid.helper()\n",
    "b.py": "import torch\nimport mid\n\ntorch.cuda.init()\nmid.helper()\n",
    "lib.py": 'import os\n\n\ndef set_gpu():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
    "mid.py": "import lib\n\n\ndef helper():\n    lib.set_gpu()\n\n\ndef again():\n    lib.set_gpu()\n",
}


def test_an_event_settled_below_is_judged_again_where_a_caller_above_holds_what_it_read(tmp_path: Path) -> None:
    an = _analyze(tmp_path, _TWO_LEVELS)
    assert _found(an) == [("lib.py", 5, "CUD001")]
    (finding,) = an.findings.values()
    steps = [(Path(s.path).name, s.line) for s in finding.witness]
    assert steps == [("b.py", 4), ("b.py", 5), ("mid.py", 5), ("lib.py", 5)]


def test_an_event_settled_below_is_not_judged_again_by_every_caller_above(tmp_path: Path, monkeypatch) -> None:
    """benchmarks/adversarial.py's shape, small: a write no state ever finds too late (97,000
    judgments there) reaches each user through its own middle module; no caller's state holds
    anything it read. Judged in pkg's own walks (its root and its summary) and in the first middle
    module's state, which settles pkg's summary for the others and carries that up: 90 importers
    above, 3 judgments."""
    calls = _count_env_judgments(monkeypatch)
    files = {"pkg/__init__.py": 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'}
    for i in range(30):
        files[f"mid{i}.py"] = f"import pkg\n\n\ndef work{i}():\n    return {i}\n"
        files[f"user{i}.py"] = f"import mid{i}\n\nmid{i}.work{i}()\n"
        files[f"more{i}.py"] = f"import user{i}\n"
    an = _analyze(tmp_path, files)
    assert _found(an) == []
    assert calls == [3, 3, 3], calls


def test_a_summary_whose_events_all_settled_below_is_settled_whole(tmp_path: Path) -> None:
    """mid.helper()'s one event was settled in its own walk (lib.set_gpu() judged there): a.py's
    call, whose state holds nothing it read, settles helper's summary whole, so the next caller
    that exposes nothing skips its events without a look."""
    an = _analyze(tmp_path, _TWO_LEVELS)
    helper = an.summaries[(str(tmp_path / "mid.py"), "helper")]
    assert len(helper.exposed) == 1 and helper.exposed[0].settled is not None
    assert an.replay.settled(helper, {})[0] == 0b1


def test_what_a_call_derived_unsettles_the_events_after_it(tmp_path: Path) -> None:
    """run()'s write settled in a.py's call (the spawn start method: its first start derives no
    fork server, and the write read none); main.py's state lacks what settled it, but its forkserver
    start method makes the first start derive the fork server, which the write reads: judged again."""
    run = (
        "import multiprocessing\nimport os\n\n\ndef serve(name):\n    print(name)\n\n\ndef run():\n"
        '    multiprocessing.Process(target=serve, args=("a",)).start()\n'
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
        '    multiprocessing.Process(target=serve, args=("b",)).start()\n'
    )
    files = {
        "a.py": 'import multiprocessing\nimport work\n\nif __name__ == "__main__":\n    multiprocessing.set_start_method("spawn")\n    work.run()\n',
        "main.py": 'import multiprocessing\nimport work\n\nif __name__ == "__main__":\n    multiprocessing.set_start_method("forkserver")\n    work.run()\n',
        "work.py": run,
    }
    an = _analyze(tmp_path, files)
    assert _found(an) == [("work.py", 12, "CUD006")]


def test_a_derivation_that_read_the_callers_state_still_reaches_the_caller(tmp_path: Path) -> None:
    # the fork server starts in the caller; the callee's write is after it only there
    # (fixtures/CUD006/bad_set_forkserver.py's shape, the write in an imported module's function)
    files = {
        "cfg.py": 'import os\n\n\ndef configure():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
        "main.py": (
            "import multiprocessing\nimport cfg\n\n\ndef serve(name):\n    print(name)\n\n\ndef start_two():\n"
            '    multiprocessing.Process(target=serve, args=("a",)).start()\n'
            "    cfg.configure()\n"
            '    multiprocessing.Process(target=serve, args=("b",)).start()\n\n\n'
            'if __name__ == "__main__":\n    multiprocessing.set_start_method("forkserver")\n    start_two()\n'
        ),
    }
    an = _analyze(tmp_path, files)
    assert _found(an) == [("main.py", 12, "CUD006")]


def test_checks_a_caller_never_needs_are_not_run_there(tmp_path: Path, monkeypatch) -> None:
    an = _analyze(tmp_path, {"m.py": "import os\n"})
    nested = {kind: [c.__name__ for c, _wants, _local in checks] for kind, checks in an.nested_checks.items()}
    everything = {kind: [c.__name__ for c in checks] for kind, checks in an.checks.items()}
    assert "check_env" in everything["env_write"] and "check_env" not in nested["env_write"]
    assert "check_sink" in everything["gpu_index"] and "gpu_index" not in nested
    assert "check_own" in nested["env_write"] and "check_env_write" in nested["env_write"]


def test_a_check_that_wants_another_event_is_decided_at_once(tmp_path: Path) -> None:
    text = 'import os\n\n\ndef setup():\n    os.environ["OMP_NUM_THREADS"] = "4"\n\n\nsetup()\nsetup()\n'
    an = _analyze(tmp_path, {"m.py": text})
    decided = {(check.__name__, loc[0]) for check, _path, loc in an.decided}
    # CUD010's and CUD004's checks of CUDA_VISIBLE_DEVICES never look at another variable's write
    assert ("check_own", 5) in decided and ("check_env", 5) in decided
    assert ("check_env_write", 5) not in decided


def test_lint_paths_agrees_with_itself_on_the_settled_shape(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
        "a.py": "import pkg\n",
        "z.py": "import torch\n\ntorch.cuda.init()\nimport pkg\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    got = [(Path(f.path).name, f.line, f.code) for f in lint_paths([str(tmp_path)], jobs=1).findings]
    assert got == [("__init__.py", 3, "CUD001")]


def test_an_event_skipped_as_already_imported_settles_nothing(tmp_path: Path) -> None:
    """load() imports m, whose top level writes the variable: a.py imported m before calling it (the
    write does not run again there), z.py did not, and initialized CUDA first."""
    files = {
        "a.py": "import m\nimport f\n\nf.load()\n",
        "f.py": "def load():\n    import m\n",
        "m.py": 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
        "z.py": "import torch\nimport f\n\ntorch.cuda.init()\nf.load()\n",
    }
    an = _analyze(tmp_path, files)
    assert _found(an) == [("m.py", 3, "CUD001")]


def test_a_finding_away_from_its_event_settles_nothing(tmp_path: Path) -> None:
    """A check may report elsewhere than at its event (only the finding at the event decides it):
    such a judgment is made again in the next caller's state."""
    from cudalint.core.findings import Finding

    calls: list[int] = []

    def elsewhere(_analyzer, exposed, _lookup, _prefix):
        calls.append(exposed.event.loc[0])
        return Finding.at("CUD001", "other.py", (1, 1, 1, 2), message="m", witness=(), severity="error")

    files = {
        "a.py": "import lib\n\nlib.set_gpu()\nlib.set_gpu()\n",
        "lib.py": 'import os\n\n\ndef set_gpu():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n',
    }
    analyze(tmp_path, files, checks={"env_write": [elsewhere]})
    # set_gpu's own walk, then each of a.py's two calls (the second imports nothing new)
    assert calls == [5, 5, 5]


def test_a_lookup_through_callers_answers_as_the_levels_merged_from_the_inside() -> None:
    """Seen.get's shortcut (the outermost fact without conditions) against the merge it stands for
    (Seen._merged, a level at a time from the innermost call outwards), on generated chains."""
    import random

    rng = random.Random(7)
    keys = ["a", "b", "c"]
    for _ in range(3000):
        def state() -> dict:
            out: dict = {}
            for key in keys:
                roll = rng.random()
                if roll < 0.25:
                    out[key] = _fact(rng.randrange(100))
                elif roll < 0.45:
                    out[key] = _fact(rng.randrange(100), unless=(rng.choice(keys),))
            return out

        chain = state()
        for _level in range(rng.randrange(1, 5)):
            chain = Seen(state(), chain)
        for key in keys + ["imported"]:
            assert chain.get(key) is (chain._merged(key) if key != "imported" else None), key
