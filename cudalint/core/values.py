"""What a value written to the environment (or passed as a device) is, when the source says so.

`value_info(expr, scope, imports)` -> (type, exact): `type` is the Python type name when the
expression's type is certain ("str", "int", "float", "bool", "NoneType", "bytes", "list", "tuple",
"dict", "set") and "" when it is not; `exact` is the whole string when it is a plain literal (or a
name bound to one), "" otherwise (f-strings, calls, joins).
"""
from __future__ import annotations

from typing import Any, Optional

import ast

# builtins whose result type is certain, unless the module rebinds the name
_RESULT_TYPES = {
    "str": "str", "repr": "str", "format": "str", "hex": "str", "oct": "str", "bin": "str", "chr": "str", "ascii": "str",
    "int": "int", "len": "int", "ord": "int",
    "float": "float",
    "bool": "bool",
    "list": "list", "tuple": "tuple", "dict": "dict", "set": "set",
}
_CONTAINERS = {
    ast.List: "list", ast.ListComp: "list",
    ast.Tuple: "tuple",
    ast.Dict: "dict", ast.DictComp: "dict",
    ast.Set: "set", ast.SetComp: "set",
}
_CONSTANTS = {str: "str", bytes: "bytes", int: "int", float: "float", complex: "complex", bool: "bool", type(None): "NoneType"}


def value_info(expr: Optional[ast.expr], scope: Any, imports: dict[str, str]) -> tuple[str, str]:
    if expr is None:
        return "", ""
    kind = type(expr)
    if kind is ast.Constant:
        value = expr.value  # type: ignore[attr-defined]
        name = _CONSTANTS.get(type(value), "")
        return name, (value if name == "str" else "")
    if kind is ast.JoinedStr:
        return "str", ""
    if kind is ast.UnaryOp and type(expr.operand) is ast.Constant and type(expr.operand.value) in (int, float):  # type: ignore[attr-defined]
        return ("int" if type(expr.operand.value) is int else "float"), ""  # type: ignore[attr-defined]
    name = _CONTAINERS.get(kind)
    if name is not None:
        return name, ""
    if kind is ast.Name:
        val = scope.lookup_const(expr.id) if scope is not None else None  # type: ignore[attr-defined]
        if isinstance(val, bool):
            return "", ""
        if isinstance(val, int):
            return "int", ""
        if isinstance(val, str):
            # constants bound from f-strings hold "*" for each placeholder: the type is sure, the text is not
            return "str", ("" if "*" in val else val)
        return "", ""
    if kind is ast.Call and type(expr.func) is ast.Name:  # type: ignore[attr-defined]
        name = expr.func.id  # type: ignore[attr-defined]
        if name in _RESULT_TYPES and name not in imports and (scope is None or scope.lookup_def(name) is None):
            return _RESULT_TYPES[name], ""
    return "", ""
