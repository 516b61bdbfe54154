"""The fast tree walk and the memo of labels.freeze change nothing a summary holds."""
from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

from cudalint.core.ir import Label
from cudalint.core.walk import node_fields, nodes
from cudalint.summary import labels

SOURCE = textwrap.dedent(
    """
    import os
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    def f(x, *a, k=1, **kw):
        global g
        if "A" in os.environ and x[1:2] is not None:
            os.environ["B"] = old
        return [y for y in a if y], {k: v for k, v in kw.items()}, lambda z: z
    class C(Base, metaclass=M):
        async def m(self):
            async with a as b:
                await b
            match self:
                case [1, *rest] if rest:
                    pass
    """
)


def test_nodes_is_ast_walk_without_contexts() -> None:
    tree = ast.parse(SOURCE)
    want = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    got = nodes(tree)
    assert sorted(map(id, got)) == sorted(map(id, want))
    body = tree.body
    assert sorted(map(id, nodes(body))) == sorted(id(n) for st in body for n in ast.walk(st) if not isinstance(n, ast.expr_context))


def test_nodes_is_ast_walk_on_every_module_of_cudalint() -> None:
    for path in sorted(Path(labels.__file__).resolve().parent.parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        want = sorted(id(n) for n in ast.walk(tree) if not isinstance(n, ast.expr_context))
        assert sorted(map(id, nodes(tree))) == want, path


def test_names_numbers_and_strings_are_not_walked() -> None:
    assert node_fields(ast.Name) == ()
    assert node_fields(ast.Attribute) == ("value",)
    assert node_fields(ast.Global) == ()
    assert node_fields(ast.ImportFrom) == ("names",)
    assert node_fields(ast.alias) == ()
    assert node_fields(ast.Constant) == ()
    assert node_fields(ast.BinOp) == ("left", "op", "right")  # (an operator is a node: ast.walk yields it)
    assert node_fields(ast.Call) == ("func", "args", "keywords")


def test_freeze_keeps_a_tuple_with_nothing_to_freeze() -> None:
    plain = (1, None, True, 2.5)
    assert labels.freeze(plain) is plain
    name = "".join(["cuda", "_visible"])  # (a string made at run time: not interned yet)
    frozen = labels.freeze((1, name, (2, name)))
    assert frozen == (1, "cuda_visible", (2, "cuda_visible"))
    assert frozen[1] is frozen[2][1] is sys.intern(name)
    call = ast.parse("f(1)").body[0]
    assert labels.freeze((0, call, "x")) == (0, 1, "x")


def test_freeze_with_a_memo_is_freeze_without() -> None:
    call = ast.parse("f(1)\ng(2)").body
    inner = Label("nvml", call[1], "g(2)", detail="d")
    lb = Label("ret", call[0], "f(1)", api="a", works=("w",), inner=(inner,))
    data = ("x", (lb, lb), lb, call[0], 3)
    plain = labels.freeze(data)
    memo: dict = {}
    first, again = labels.freeze(data, memo), labels.freeze(data, memo)
    assert repr(first) == repr(plain) == repr(again)
    frozen = first[2]
    assert frozen.origin == 1 and frozen.inner[0].origin == 2 and type(frozen) is Label
    assert first[1][0] is first[1][1] is first[2]  # one label, frozen once
