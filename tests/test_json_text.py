"""cudalint.output.json_text writes what `json.dump(value, out, indent=2)` writes, byte for byte."""
from __future__ import annotations

import enum
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudalint.output import json_text

_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text()
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_the_same_text_as_json_dump(value):
    out = io.StringIO()
    json_text.dump(value, out)
    expected = io.StringIO()
    json.dump(value, expected, indent=2)
    assert out.getvalue() == expected.getvalue()


class _Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        (),
        {"a": {}, "b": [], "c": [{}], "d": [[]]},
        {"path": "ünïcode ☃ \udcff \x00 \"quoted\" \\", "line": 10**30, "x": -0.0, "y": 1e-300, "z": float("nan")},
        [float("inf"), float("-inf"), True, False, None, 0],
        {1: "an int key", "b": 2},  # json turns the key into a string: handed to json
        {None: 1, True: 2, 2.5: 3},
        [_Level.HIGH, {"level": _Level.HIGH}],  # an int subclass: handed to json
    ],
)
def test_the_shapes_json_has_rules_for(value):
    assert json_text.dumps(value) == json.dumps(value, indent=2)


def test_what_json_rejects_is_rejected_and_nothing_is_written():
    out = io.StringIO()
    with pytest.raises(TypeError) as ours:
        json_text.dump({"a": [1, object()]}, out)
    with pytest.raises(TypeError) as theirs:
        json.dumps({"a": [1, object()]}, indent=2)
    assert str(ours.value) == str(theirs.value)
    assert out.getvalue() == ""


def test_a_value_that_contains_itself_is_rejected_as_json_rejects_it():
    loop: list = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        json_text.dumps({"a": loop})


def test_deep_nesting_writes_as_json_does():
    value: object = []
    for i in range(200):
        value = [i, {"k": value}] if i % 2 else {"k": [value, None]}
    assert json_text.dumps(value) == json.dumps(value, indent=2)
