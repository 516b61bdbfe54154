"""The IR crosses from worker processes to the parent pickled (cudalint.engine.runner): every IR
class pickles as a call of the class, and comes back equal."""
from __future__ import annotations

import copy
import pickle

from cudalint.core import ir, record
from cudalint.core.catalogue import load_catalogue
from cudalint.summary.from_bytes import _summarize_bytes

# a module with every IR node: branches, a loop, a try, a main guard, a class, labels on a call
_TEXT = b'''import os
import torch
import pynvml


class Runner:
    def run(self, n):
        for i in range(n):
            try:
                torch.cuda.set_device(i)
            except RuntimeError:
                break
        else:
            pass
        return n


def pick():
    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    if count > 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(count - 1)
    else:
        torch.cuda.init()


if __name__ == "__main__":
    pick()
'''


def _classes() -> list[type]:
    return [c for c in vars(ir).values() if isinstance(c, type) and record.is_record(c) and c.__module__ == ir.__name__]


def _nodes(value, seen: set) -> None:
    if record.is_record(value) and not isinstance(value, type):
        seen.add(type(value))
        for name in record.fields(value):
            _nodes(getattr(value, name), seen)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _nodes(v, seen)
    elif isinstance(value, dict):
        for k, v in value.items():
            _nodes(k, seen)
            _nodes(v, seen)


def test_every_ir_class_pickles_as_a_call_of_the_class() -> None:
    classes = _classes()
    assert {c.__name__ for c in classes} == {"Event", "Branch", "Loop", "Try", "MainGuard", "Label", "Function", "ClassInfo", "ModuleIR"}
    for cls in classes:
        assert "__reduce__" in vars(cls), cls.__name__
        assert vars(cls)["__slots__"] == record.fields(cls), cls.__name__  # no __dict__ per object


def test_a_summary_comes_back_equal(tmp_path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(_TEXT)
    mod = _summarize_bytes(str(path), _TEXT, "m", False, load_catalogue())
    seen: set = set()
    _nodes(mod, seen)
    assert {c.__name__ for c in seen} >= {"ModuleIR", "Event", "Branch", "Loop", "Try", "MainGuard", "Function", "ClassInfo"}
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(mod, protocol))
        assert type(back) is ir.ModuleIR
        assert repr(back) == repr(mod)
        assert back.functions.keys() == mod.functions.keys()
    assert repr(copy.deepcopy(mod)) == repr(mod)
    event = ir.Event("env_write", (1, 2, 3, 4), "x", ("A", True))
    assert event.__reduce__() == (ir.Event, ("env_write", (1, 2, 3, 4), "x", ("A", True)))
