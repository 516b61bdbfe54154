"""Which expression a call passes for a parameter, named as the catalogue names it: "0|device"."""
from __future__ import annotations

from typing import Optional

import libcst as cst


def arg_expr(call: cst.Call, slots: Optional[str]) -> Optional[cst.BaseExpression]:
    """The argument at the first slot that is given: a position ("0") or a keyword ("device")."""
    if not slots:
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for slot in slots.split("|"):
        slot = slot.strip()
        if slot.isdigit():
            if int(slot) < len(positional):
                return positional[int(slot)].value
            continue
        for a in call.args:
            if a.keyword is not None and a.keyword.value == slot:
                return a.value
    return None
