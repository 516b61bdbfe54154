"""Tests that are false while the program's modules are being imported.

Some predicates answer a question about state the program sets up itself, later: whether a process
group exists (`torch.distributed.is_initialized()`), whether CUDA was initialized
(`torch.cuda.is_initialized()`). They are false in a fresh process, so the code they guard does not
run at import time: `if dist.is_initialized(): torch.cuda.current_device()` inside a function that a
module's top level calls (ultralytics' `torch_distributed_zero_first`, entered by `SettingsManager()`
at import of `ultralytics.utils`) does not initialize CUDA when the module is imported. At run time
the same branch runs, so the arms stay in the IR; the `Branch` carries `at_import`, the value the
test has during import, and only CUD003 (cudalint.checks.import_time) walks by it.

Which predicates are such is catalogue data (`runtime_state = true`, rules/catalogue/README.md). A
local bound to such a test (`initialized = dist.is_available() and dist.is_initialized()`) is known
too, for the rest of its function, until it is rebound.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from cudalint.summary.summarize import _Summarizer
    from cudalint.summary.syntax import _Scope


def truth(s: "_Summarizer", test: Optional[ast.expr], scope: "_Scope") -> Optional[bool]:
    """The value `test` has while modules are imported: False/True when a runtime-state predicate
    decides it, None when it is not known."""
    kind = type(test)
    if kind is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[union-attr]
        inner = truth(s, test.operand, scope)  # type: ignore[union-attr]
        return None if inner is None else not inner
    if kind is ast.BoolOp:
        parts = [truth(s, v, scope) for v in test.values]  # type: ignore[union-attr]
        if type(test.op) is ast.And:  # type: ignore[union-attr]
            return False if False in parts else None
        return False if all(p is False for p in parts) else None
    if kind is ast.Call:
        q = s.qualify(test.func, scope)  # type: ignore[union-attr]
        if q is not None and not q.startswith(":") and any(api.runtime_state for api in s.cat.calls_named(q)):
            return False
        return None
    if kind is ast.Name:
        for sc in scope.chain():
            if test.id in sc.import_false:  # type: ignore[union-attr]
                return False
            if test.id in sc.bound:  # type: ignore[union-attr]
                return None
    return None


def on_bind(s: "_Summarizer", name: str, value: Optional[ast.expr], scope: "_Scope") -> None:
    """`initialized = dist.is_initialized()`: the name holds a test that is false at import."""
    if value is not None and truth(s, value, scope) is False:
        scope.import_false.add(name)
    else:
        scope.import_false.discard(name)
