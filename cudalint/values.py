"""What a value written to the environment (or passed as a device) is, when the source says so.

`value_info(expr, scope, imports)` -> (type, exact): `type` is the Python type name when the
expression's type is certain ("str", "int", "float", "bool", "NoneType", "bytes", "list", "tuple",
"dict", "set") and "" when it is not; `exact` is the whole string when it is a plain literal (or a
name bound to one), "" otherwise (f-strings, calls, joins).
"""
from __future__ import annotations

from typing import Any, Optional

import libcst as cst

# builtins whose result type is certain, unless the module rebinds the name
_RESULT_TYPES = {
    "str": "str", "repr": "str", "format": "str", "hex": "str", "oct": "str", "bin": "str", "chr": "str", "ascii": "str",
    "int": "int", "len": "int", "ord": "int",
    "float": "float",
    "bool": "bool",
    "list": "list", "tuple": "tuple", "dict": "dict", "set": "set",
}
_CONTAINERS = {
    cst.List: "list", cst.ListComp: "list",
    cst.Tuple: "tuple",
    cst.Dict: "dict", cst.DictComp: "dict",
    cst.Set: "set", cst.SetComp: "set",
}


def _string(expr: cst.BaseExpression) -> Optional[Any]:
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _string(expr.left), _string(expr.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(left, bytes) and isinstance(right, bytes):
            return left + right
    return None


def value_info(expr: Optional[cst.BaseExpression], scope: Any, imports: dict[str, str]) -> tuple[str, str]:
    if expr is None:
        return "", ""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        val = _string(expr)
        if isinstance(val, str):
            return "str", val
        if isinstance(val, bytes):
            return "bytes", ""
        return "", ""
    if isinstance(expr, cst.FormattedString):
        return "str", ""
    if isinstance(expr, cst.Integer):
        return "int", ""
    if isinstance(expr, cst.Float):
        return "float", ""
    if isinstance(expr, cst.Imaginary):
        return "complex", ""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return ("int" if isinstance(expr.expression, cst.Integer) else "float"), ""
    for node_type, name in _CONTAINERS.items():
        if isinstance(expr, node_type):
            return name, ""
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False"):
            return "bool", ""
        if expr.value == "None":
            return "NoneType", ""
        val = scope.lookup_const(expr.value) if scope is not None else None
        if isinstance(val, bool):
            return "", ""
        if isinstance(val, int):
            return "int", ""
        if isinstance(val, str):
            # constants bound from f-strings hold "*" for each placeholder: the type is sure, the text is not
            return "str", ("" if "*" in val else val)
        return "", ""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        name = expr.func.value
        if name in _RESULT_TYPES and name not in imports and (scope is None or scope.lookup_def(name) is None):
            return _RESULT_TYPES[name], ""
    return "", ""
