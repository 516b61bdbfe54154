"""The cache's forms of the IR: a summary pickled under an allowlist (cudalint.engine.summary_codec),
the run results and the comparison of summaries in JSON (cudalint.engine.serialize). What each
writes comes back equal, and what it did not write (another form, another field count or type, a
class it does not know, a function to call, a dict where the IR has none) is refused, so that the
cache counts it a miss."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.core.catalogue import load_catalogue
from cudalint.core.findings import Finding, Step
from cudalint.core.ir import Event, ModuleIR
from cudalint.engine import summary_codec
from cudalint.engine.serialize import dumps, encode, loads
from cudalint.summary.from_bytes import _summarize_bytes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_every_fixture_summary_comes_back_as_it_was() -> None:
    cat = load_catalogue()
    files = sorted(FIXTURES.rglob("*.py"))
    assert len(files) > 100
    dicts = 0
    for path in files:
        made = _summarize_bytes(str(path), path.read_bytes(), "pkg.m", False, cat)
        text = dumps(made)
        back = loads(text)
        # repr shows every field (== on a Label compares its origin alone)
        assert repr(back) == repr(made), path
        assert dumps(back) == text
        # the plain data `encode` makes is what `dumps` writes
        assert json.dumps(encode(made), separators=(",", ":")).encode() == text
        if isinstance(made, ModuleIR):
            dicts += bool(made.functions)
            assert type(back.top) is tuple and all(type(k) is str for k in back.functions)
    assert dicts > 50


def test_the_form_is_positional() -> None:
    event = Event("init", (1, 2, 1, 8), "torch.cuda.init()", ("torch.cuda.init", "torch", 1, ""))
    assert json.loads(dumps(event)) == {"Event": ["init", [1, 2, 1, 8], "torch.cuda.init()", ["torch.cuda.init", "torch", 1, ""]]}
    module = ModuleIR("m.py", "m", (event,), functions={}, classes={})
    assert json.loads(dumps(module)) == {"ModuleIR": ["m.py", "m", [json.loads(dumps(event))], {"": []}, {"": []}, [], False, []]}
    finding = Finding("CUD001", "m.py", 3, 1, 3, 9, "msg", (Step("m.py", 2, "here"),))
    assert loads(dumps([finding])) == [finding]
    # the dict form keeps keys that are not strings
    assert loads(json.dumps({"": [[[1, "a"], 2], [3, "b"]]})) == {(1, "a"): 2, 3: "b"}


@pytest.mark.parametrize(
    "text",
    [
        '{"Event": ["init", [1, 2, 1, 8], "t"]}',  # a field missing
        '{"Event": ["init", [1, 2, 1, 8], "t", [], 5]}',  # one too many
        '{"Event": [5, [1, 2, 1, 8], "t", []]}',  # kind is not a str
        '{"Event": ["init", [1, 2, 1, 8], "t", 5]}',  # data is not a tuple
        '{"Popen": ["ls"]}',  # not a class of the IR
        '{"Event": ["init", [1, 2, 1, 8], "t", []], "x": 1}',  # two keys
        '{"Event": "init"}',  # not a list of fields
        '{"_": "Event", "kind": "init", "loc": [1, 2, 1, 8]}',  # the form before
        '{"ModuleIR": ["m.py", "m", [], {"f": 1}, {"": []}, [], false, []]}',  # a dict not in the dict form
        '{"": [[1, 2, 3]]}',  # not pairs
        '{"": [[{"": []}, 1]]}',  # a key that cannot be one
    ],
)
def test_what_the_cache_did_not_write_is_refused(text: str) -> None:
    with pytest.raises((ValueError, TypeError)):
        loads(text)


def test_a_dict_outside_the_dict_fields_is_refused_when_read_back() -> None:
    """json writes a dict it meets itself as a JSON object: the reader refuses it (a miss), it
    never comes back as something else."""
    event = Event("env_write", (1, 1, 1, 5), "t", ({"k": 1},))
    with pytest.raises(ValueError):
        loads(dumps(event))


def test_what_is_not_ir_is_not_written() -> None:
    with pytest.raises(TypeError):
        dumps(Event("init", (1, 1, 1, 1), "t", (object(),)))
    with pytest.raises(TypeError):
        dumps({1, 2})


def test_every_fixture_summary_comes_back_from_its_pickle() -> None:
    cat = load_catalogue()
    files = sorted(FIXTURES.rglob("*.py"))
    findings = 0
    for path in files:
        made = _summarize_bytes(str(path), path.read_bytes(), "pkg.m", False, cat)
        back = summary_codec.loads(summary_codec.dumps(made))
        assert repr(back) == repr(made) and dumps(back) == dumps(made), path
        findings += isinstance(made, Finding)
    assert findings >= 1  # (a fixture Python refuses: its CUD900 is what the cache keeps)


class _Calls:
    def __init__(self, fn, *args) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _module(**fields) -> ModuleIR:
    base = dict(path="m.py", module="m", top=(), functions={}, classes={})
    base.update(fields)
    return ModuleIR(**base)


@pytest.mark.parametrize(
    "value",
    [
        _Calls(print, "ran"),  # a builtin function
        _Calls(Path, "x"),  # a class outside the IR's
        _Calls(load_catalogue),  # a function of cudalint's own
        [1, 2],
        Event("init", (1, 1, 1, 1), "t"),  # of the IR, but not a summary
        _module(path=5),
        _module(module=None),
        _module(top=[]),
        _module(functions=[]),
        _module(functions={"f": 5}),
        _module(classes=()),
        _module(classes={"C": 5}),
        _module(noqa=[]),
        _module(makes_llama=1),
        _module(reexports=[]),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, ModuleIR) else "ModuleIR",
)
def test_a_pickle_the_cache_did_not_write_is_refused(value) -> None:
    import pickle

    with pytest.raises(ValueError):
        summary_codec.loads(pickle.dumps(value, protocol=5))


@pytest.mark.parametrize("payload", [b"", b"garbage", b'{"ModuleIR": []}', summary_codec.dumps(_module())[:-2]])
def test_bytes_that_are_no_pickle_of_a_summary_are_refused(payload: bytes) -> None:
    with pytest.raises(ValueError):
        summary_codec.loads(payload)


def test_a_summary_and_a_finding_are_read_back() -> None:
    finding = Finding("CUD900", "m.py", 1, 1, 1, 1, "cannot parse", (Step("m.py", 1, "here"),))
    assert summary_codec.loads(summary_codec.dumps(finding)) == finding
    module = _module(functions={}, classes={}, noqa=((3, ("CUD001",)),), makes_llama=True, reexports=(("a", "b.a"),))
    assert repr(summary_codec.loads(summary_codec.dumps(module))) == repr(module)


def test_only_the_classes_of_a_summary_may_be_read() -> None:
    """The allowlist: the IR's records and the findings', nothing else of their modules (the IR's
    functions, the names they import)."""
    allowed = summary_codec._allowed()
    assert sorted(allowed) == sorted(
        [("cudalint.core.ir", n) for n in ("Branch", "ClassInfo", "Event", "Function", "Label", "Loop", "MainGuard", "ModuleIR", "Try")]
        + [("cudalint.core.findings", "Finding"), ("cudalint.core.findings", "Step")]
    )
    assert all(isinstance(cls, type) for cls in allowed.values())


def test_field_types_are_checked_for_known_classes_only() -> None:
    """serialize.has_field_types, which the pickled summaries are checked by: the annotation's type
    in every field that names one, and False for a class the cache does not know, even one that
    shares a name with one it does."""
    import dataclasses
    import subprocess
    import sys

    from cudalint.engine.serialize import has_field_types

    assert has_field_types(Event("init", (1, 1, 1, 1), "t"))
    assert not has_field_types(Event(5, (1, 1, 1, 1), "t"))
    assert not has_field_types(object())

    @dataclasses.dataclass
    class Event2:
        kind: str

    Event2.__name__ = "Event"
    assert not has_field_types(Event2("init"))
    # in a fresh process, before anything made the IR's classes known
    code = "from cudalint.engine.serialize import has_field_types\nfrom cudalint.core.ir import Event\nprint(has_field_types(Event('init', (1, 1, 1, 1), 't')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "True\n"
