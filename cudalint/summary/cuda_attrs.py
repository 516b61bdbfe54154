"""What a CUDA-initializing call built, kept on `self` (CUD005): `self.model =
AutoModel.from_pretrained(...).to("cuda")` in `__init__`, then `self.model(x)` in a method that a
forked child runs (`Process(target=self.work)`). Names are followed by the summarizer's scopes
(`_Scope.cuda_objs`); attributes of `self` live as long as the instance, so they are kept per class
for the rest of the module.

An attribute once given such an object stays one for the class (a later `self.model = None` in
another method does not say when that method runs). Known limit: a method written above the one that builds the object does not see it (one pass, in
source order); attributes set in a base class are not followed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import ast

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer


def _self_attr(expr: ast.AST, scope: "_Scope") -> Optional[str]:
    if type(expr) is ast.Attribute and type(expr.value) is ast.Name and expr.value.id == "self" and scope.cls:  # type: ignore[attr-defined]
        return expr.attr  # type: ignore[attr-defined]
    return None


def note(s: "_Summarizer", target: ast.expr, made: tuple, scope: "_Scope") -> None:
    """`self.x = <CUDA-initializing call>`: remember (line, text, library) for the class."""
    attr = _self_attr(target, scope)
    if attr is not None:
        s.cuda_attrs[(scope.cls, attr)] = made


def use(s: "_Summarizer", call: ast.Call, scope: "_Scope", out: list) -> bool:
    """`self.model(x)` / `self.model.encode(x)`: a use of what a CUDA-initializing call built."""
    if not s.cuda_attrs:
        return False
    func = call.func
    for recv in (func, func.value if type(func) is ast.Attribute else None):  # type: ignore[attr-defined]
        attr = _self_attr(recv, scope) if recv is not None else None
        if attr is not None and (scope.cls, attr) in s.cuda_attrs:
            line, text, library = s.cuda_attrs[(scope.cls, attr)]
            note = f"uses self.{attr}, which {text} built on the GPU (line {line})"
            out.append(s.event("init", call, (s.text(func), library, "context", note)))
            return True
    return False
