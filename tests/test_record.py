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


@record.record(slots=True, not_compared=("held",))
class RNode:
    """Shaped as the IR's classes (cudalint.core.ir): slots, a default, one made per object."""

    kind: str
    loc: tuple
    data: tuple = ()
    held: dict = record.factory(dict)


@dataclasses.dataclass(frozen=True, slots=True)
class DNode:
    kind: str
    loc: tuple
    data: tuple = ()
    held: dict = dataclasses.field(default_factory=dict, compare=False)


@given(st.sampled_from(["init", "call"]), st.integers(0, 2), st.sampled_from([(), ("x",), ("x", 1)]))
def test_a_slotted_record_binds_compares_and_pickles_as_a_slotted_dataclass(kind: str, line: int, data: tuple) -> None:
    args = (kind, (line, 1, line, 2), data)
    r, d = RNode(*args), DNode(*args)
    assert (r == RNode(*args), hash(r) == hash(RNode(*args))) == (d == DNode(*args), hash(d) == hash(DNode(*args))) == (True, True)
    assert repr(r).replace("RNode", "DNode") == repr(d)
    assert RNode(kind=kind, loc=args[1]) == RNode(kind, args[1], ()) and RNode(kind, args[1], data, {"a": 1}).held == {"a": 1}
    back = pickle.loads(pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(back) is RNode and back == r and back.held == r.held


def test_a_slotted_record_has_no_dict_and_makes_its_defaults_per_object() -> None:
    r = RNode("init", (1, 1, 1, 1))
    assert RNode.__slots__ == record.fields(RNode) == ("kind", "loc", "data", "held") and not hasattr(r, "__dict__")
    assert r.held == {} and r.held is not RNode("init", (1, 1, 1, 1)).held  # (a factory's default, not one shared dict)
    assert RNode.__init__.__qualname__ == "RNode.__init__" and RNode.__doc__.startswith("Shaped as")
    with pytest.raises(record.FrozenInstanceError):
        r.kind = "call"  # type: ignore[misc]
    with pytest.raises(TypeError):
        RNode("init")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        RNode("init", (1, 1, 1, 1), colour=1)  # type: ignore[call-arg]
    assert record.replace(r, data=("x",)) == RNode("init", (1, 1, 1, 1), ("x",)) and r.data == ()
    assert record.is_record(r) and record.is_record(RNode) and not record.is_record(DNode("init", (1, 1, 1, 1)))


def test_eq_false_leaves_equality_to_the_class() -> None:
    @record.record(slots=True, eq=False)
    class Identity:
        a: int

    @record.record(eq=False)
    class Keyed:
        a: int
        b: int = 0

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Keyed) and self.a == other.a

        def __hash__(self) -> int:
            return hash(self.a)

    one = Identity(1)
    assert one == one and one != Identity(1) and hash(one) == object.__hash__(one)
    assert Keyed(1, 2) == Keyed(1, 3) and len({Keyed(1, 2), Keyed(1, 3)}) == 1 and Keyed(1) != Keyed(2)

    @record.record
    class OwnEq:  # a class's own __eq__ stays, as dataclasses leave it
        a: int

        def __eq__(self, other: object) -> bool:
            return True

    assert OwnEq(1) == OwnEq(2)


def test_a_record_made_per_object_default_in_the_generic_init() -> None:
    @record.record
    class Holder:
        name: str
        seen: dict = record.factory(dict)
        tag: str = ""

    a, b = Holder("a"), Holder("b", tag="t")
    assert a.seen == {} == b.seen and a.seen is not b.seen and b.tag == "t"
    assert Holder("c", {"x": 1}).seen == {"x": 1}


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
