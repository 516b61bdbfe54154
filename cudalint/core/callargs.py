"""A call's arguments in source order, and which expression it passes for a parameter."""
from __future__ import annotations

import ast
from typing import NamedTuple, Optional


class Arg(NamedTuple):
    keyword: Optional[str]  # None for a positional argument (and for `**kwargs`)
    star: str  # "", "*" or "**"
    value: ast.expr
    node: ast.AST  # the keyword argument itself (`k=v`), else the value


def args_of(call: ast.Call) -> list[Arg]:
    """`ast` keeps positional and keyword arguments apart; the summary wants them as written."""
    out = [Arg(None, "*", a.value, a) if type(a) is ast.Starred else Arg(None, "", a, a) for a in call.args]
    if call.keywords:
        out.extend(Arg(k.arg, "**" if k.arg is None else "", k.value, k) for k in call.keywords)
        if call.args:
            out.sort(key=lambda a: (a.node.lineno, a.node.col_offset))
    return out


def slotted(call: ast.Call) -> list[tuple[str, Arg]]:
    """The arguments a parameter of the callee can be named for: (keyword, or position as "0", "1",
    ...; positions after a `*xs` are unknown and left out, as are `*xs` and `**kw` themselves)."""
    out: list[tuple[str, Arg]] = []
    position = 0
    for arg in args_of(call):
        if arg.star:
            if arg.star == "*":
                position = -1
            continue
        slot = arg.keyword if arg.keyword is not None else (str(position) if position >= 0 else "")
        if arg.keyword is None and position >= 0:
            position += 1
        if slot:
            out.append((slot, arg))
    return out


def positional(call: ast.Call) -> list[ast.expr]:
    return [a for a in call.args if type(a) is not ast.Starred]


def first_arg(call: ast.Call) -> Optional[ast.expr]:
    """The value of the first argument written, positional or not."""
    args = args_of(call)
    return args[0].value if args else None


def arg_expr(call: ast.Call, slots: Optional[str]) -> Optional[ast.expr]:
    """The argument at the first slot that is given: a position ("0") or a keyword ("device")."""
    if not slots:
        return None
    pos = positional(call)
    for slot in slots.split("|"):
        slot = slot.strip()
        if slot.isdigit():
            if int(slot) < len(pos):
                return pos[int(slot)]
            continue
        for k in call.keywords:
            if k.arg == slot:
                return k.value
    return None
