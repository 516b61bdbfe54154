"""The cache's form of the IR (cudalint.engine.serialize): what it writes comes back equal, and
what it did not write (another form, another field count or type, a class it does not know, a dict
where the IR has none) is refused, so that the cache counts it a miss."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalint.core.catalogue import load_catalogue
from cudalint.core.findings import Finding, Step
from cudalint.core.ir import Event, ModuleIR
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
