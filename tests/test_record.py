"""cudalint.core.record against dataclasses: the classes every run builds (options, settings, files,
findings) behave as the frozen dataclasses they were, and the cache's findings come back whole or not
at all (cudalint.core.findings.Finding.from_json)."""
from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudalint.core import record
from cudalint.core.findings import Finding, Step


@record.record(order=True, not_compared=("cell",))
class RStep:
    path: str
    line: int
    note: str = ""
    cell: int | None = None


@dataclasses.dataclass(frozen=True, order=True)
class DStep:
    path: str
    line: int
    note: str = ""
    cell: int | None = dataclasses.field(default=None, compare=False)


_values = st.tuples(st.sampled_from(["a.py", "b.py"]), st.integers(0, 3), st.sampled_from(["", "x"]), st.sampled_from([None, 1, 2]))


@given(_values, _values)
def test_equality_hash_and_order_are_the_dataclass_ones(a: tuple, b: tuple) -> None:
    ra, rb, da, db = RStep(*a), RStep(*b), DStep(*a), DStep(*b)
    assert (ra == rb, ra != rb) == (da == db, da != db)
    assert (ra < rb, ra <= rb, ra > rb, ra >= rb) == (da < db, da <= db, da > db, da >= db)
    assert (hash(ra) == hash(rb)) is (ra == rb) or ra != rb
    assert repr(ra).replace("RStep", "DStep") == repr(da)


def test_equality_is_per_class_and_ordering_across_classes_refused() -> None:
    assert RStep("a", 1) != DStep("a", 1) and RStep("a", 1) != ("a", 1, "", None)
    assert RStep("a", 1, cell=3) == RStep("a", 1, cell=4) and len({RStep("a", 1, cell=3), RStep("a", 1, cell=4)}) == 1
    with pytest.raises(TypeError):
        RStep("a", 1) < DStep("a", 2)  # noqa: B015
    assert RStep.__eq__(RStep("a", 1), DStep("a", 1)) is NotImplemented


def test_the_constructor_binds_as_a_dataclass_one() -> None:
    assert RStep("a", 1) == RStep(path="a", line=1) == RStep("a", line=1, note="")
    assert (RStep("a", 1).note, RStep("a", 1).cell, RStep("a", 1, "n", 2).cell) == ("", None, 2)
    for args, kwargs, says in [
        (("a",), {}, "missing required argument: 'line'"),
        (("a", 1, "n", 2, 3), {}, "takes 4 arguments, 5 given"),
        (("a", 1), {"colour": 1}, "unexpected keyword argument 'colour'"),
        (("a", 1), {"path": "b"}, "multiple values for argument 'path'"),
    ]:
        with pytest.raises(TypeError, match=says):
            RStep(*args, **kwargs)
    # (four arguments given, none missing: the count check is not off by one)
    assert RStep("a", 1, "n", 2).cell == 2


def test_a_record_is_frozen_pickles_and_replaces() -> None:
    step = RStep("a", 1)
    for attempt in (lambda: setattr(step, "line", 2), lambda: delattr(step, "line"), lambda: setattr(step, "new", 1)):
        with pytest.raises(record.FrozenInstanceError):
            attempt()
    assert isinstance(record.FrozenInstanceError("x"), AttributeError)
    assert record.replace(step, line=5) == RStep("a", 5) and step.line == 1
    assert record.fields(step) == record.fields(RStep) == ("path", "line", "note", "cell") == RStep.__match_args__
    finding = Finding("CUD001", "a.py", 1, 2, 1, 9, "m", (Step("a.py", 1, "n", cell=2),), cell=1)
    assert pickle.loads(pickle.dumps(finding, protocol=5)) == finding
    assert pickle.loads(pickle.dumps(finding, protocol=5)).witness[0].cell == 2


def test_a_class_a_record_cannot_be_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        @record.record
        class Bad:
            a: int = 1
            b: int

    with pytest.raises(TypeError, match="not fields: colour"):

        @record.record(not_compared=("colour",))
        class Worse:
            a: int


def test_the_methods_are_named_for_their_class() -> None:
    assert RStep.__init__.__qualname__ == "RStep.__init__" and RStep.__lt__.__qualname__ == "RStep.__lt__"
    assert "__lt__" not in vars(record.record(type("Plain", (), {"__annotations__": {"a": "int"}})))


_FINDING = Finding("CUD001", "a.py", 3, 1, 3, 20, "CUDA before CVD", (Step("a.py", 1, "set", cell=2), Step("b.py", 9, "init")), "warning", cell=4)


def test_findings_come_back_from_their_json() -> None:
    for finding in (_FINDING, record.replace(_FINDING, cell=None, witness=())):
        back = Finding.from_json(finding.to_json())
        assert back == finding and back.cell == finding.cell and [s.cell for s in back.witness] == [s.cell for s in finding.witness]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("code"),
        lambda d: d.update(line=True),  # (bool is an int to isinstance, not here)
        lambda d: d.update(line="3"),
        lambda d: d.update(extra=1),
        lambda d: d.update(cell="4"),
        lambda d: d.update(witness=("x",)),
        lambda d: d.update(witness=[{"path": "a.py", "line": 1}]),
        lambda d: d.update(witness=[{"path": "a.py", "line": 1, "note": "n", "cell": None}]),
        lambda d: d.update(witness=[{"path": "a.py", "line": 1, "note": "n", "colour": 1}]),
        lambda d: d.update(witness=[["a.py", 1, "n"]]),
        lambda d: d.update(severity=None),
    ],
)
def test_a_finding_of_another_shape_is_refused(change) -> None:
    data = _FINDING.to_json()
    change(data)
    with pytest.raises(ValueError):
        Finding.from_json(data)
    with pytest.raises(ValueError):
        Finding.from_json([data])
