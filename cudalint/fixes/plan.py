"""Which edits a file gets: move an environment write above the first CUDA import, guard a call,
add CUDA_DEVICE_ORDER; or a hint when no edit is certain.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union
import libcst as cst

from cudalint.fixes.cst_positions import positions
from cudalint.core.findings import Finding
from cudalint.fixes.module_shape import _Module, _UNKNOWN_VALUE, _is_import_of, _is_stdlib_import
from cudalint.fixes.prospects import ADD_DEVICE_ORDER_CODE
from cudalint.core.ir import Event, ModuleIR, iter_events


ENV_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


# ---------- what a fix is --------------------------------------------------------------------
@dataclass(frozen=True)
class Fix:
    """One certain edit, as operations on the nodes of the parsed file (by identity)."""

    finding: Finding
    kind: str
    move: tuple[cst.CSTNode, ...] = ()  # top-level statements moved up, in file order
    insert_before: tuple[tuple[cst.CSTNode, cst.BaseStatement], ...] = ()  # (anchor statement, new)
    replace: tuple[tuple[cst.CSTNode, cst.BaseExpression], ...] = ()  # (old node, new node)


@dataclass
class FilePlan:
    path: str
    module: cst.Module
    insert_index: int  # where moved statements go in module.body
    fixes: list[list[Fix]] = field(default_factory=list)  # per finding: the candidate fixes, best first
    hints: dict[Finding, str] = field(default_factory=dict)


# ---------- the env write a finding points at -----------------------------------------------
@dataclass(frozen=True)
class EnvWrite:
    variables: tuple[str, ...]
    root: str  # the name the write goes through: "os" or "environ"
    env_expr: cst.BaseExpression  # `os.environ` / `environ`, or the putenv function
    form: str  # "subscript" | "setdefault" | "update" | "putenv"
    names: frozenset[str]  # names the key and value expressions read


def _names_in(nodes: Iterable[cst.CSTNode]) -> frozenset[str]:
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

    for n in nodes:
        n.visit(V())
    return frozenset(found)


def env_write(small: cst.BaseSmallStatement, mod: _Module, need_constant: bool) -> Optional[EnvWrite]:
    """A write of CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER whose keys (and, if asked, values) are constants."""

    def key_ok(expr: cst.BaseExpression) -> Optional[str]:
        key = mod.constant(expr)
        return key if key in ENV_VARS else None

    def value_ok(expr: cst.BaseExpression) -> bool:
        return not need_constant or mod.constant(expr) is not _UNKNOWN_VALUE

    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            root = mod.env_root(target.value)
            key_expr = target.slice[0].slice.value
            key = key_ok(key_expr)
            if root and key and value_ok(small.value):
                return EnvWrite((key,), root, target.value, "subscript", _names_in([key_expr, small.value]))
        return None
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        func = call.func
        args = list(call.args)
        if any(a.star for a in args):
            return None
        if isinstance(func, cst.Attribute) and func.attr.value == "setdefault":
            root = mod.env_root(func.value)
            if root and len(args) == 2 and all(a.keyword is None for a in args):
                key = key_ok(args[0].value)
                if key and value_ok(args[1].value):
                    return EnvWrite((key,), root, func.value, "setdefault", _names_in([a.value for a in args]))
        if isinstance(func, cst.Attribute) and func.attr.value == "update":
            root = mod.env_root(func.value)
            keys: list[str] = []
            exprs: list[cst.CSTNode] = []
            if not root or not args:
                return None
            for a in args:
                if a.keyword is not None:
                    if a.keyword.value not in ENV_VARS or not value_ok(a.value):
                        return None
                    keys.append(a.keyword.value)
                    exprs.append(a.value)
                elif isinstance(a.value, cst.Dict):
                    for el in a.value.elements:
                        if not isinstance(el, cst.DictElement):
                            return None
                        key = key_ok(el.key)
                        if key is None or not value_ok(el.value):
                            return None
                        keys.append(key)
                        exprs.extend([el.key, el.value])
                else:
                    return None
            return EnvWrite(tuple(keys), root, func.value, "update", _names_in(exprs))
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "putenv"
            and isinstance(func.value, cst.Name)
            and len(args) == 2
            and all(a.keyword is None for a in args)
        ):
            name = func.value.value
            i = mod.binder.get(name)
            if i is not None and mod.single(name) and _is_import_of(mod.body[i], name, "os"):
                key = key_ok(args[0].value)
                if key and value_ok(args[1].value):
                    return EnvWrite((key,), name, func, "putenv", _names_in([a.value for a in args]))
    return None


# ---------- IR helpers -----------------------------------------------------------------------
def _events(ir: ModuleIR) -> Iterator[Event]:
    """Every event of a module: its top level and every function body."""
    yield from iter_events(ir.top)
    for fn in ir.functions.values():
        yield from iter_events(fn.body)


def env_writes(irs: Iterable[ModuleIR]) -> Counter:
    """How many writes of each variable the project has ("" / "*": a write whose key is unknown)."""
    out: Counter = Counter()
    for ir in irs:
        for ev in _events(ir):
            if ev.kind == "env_write":
                out[ev.data[0]] += 1
    return out


class ProjectWrites:
    """`env_writes` of the project, counted when a plan first asks. Counting loads the summary of
    every module that mentions the environment: on vllm 1.7 s of a cold `--format json` run, for
    two CUD001 findings whose fixes both stop earlier (the write is inside a function)."""

    def __init__(self, irs: Callable[[], Iterable[ModuleIR]]):
        self._irs = irs
        self._counts: Optional[Counter] = None

    def get(self, variable: str, default: int = 0) -> int:
        if self._counts is None:
            self._counts = env_writes(self._irs())
        return self._counts.get(variable, default)


Writes = Union[Counter, ProjectWrites]


# ---------- planning -------------------------------------------------------------------------
HINT_MOVE = (
    "set it before anything initializes CUDA: at the top of the entry script, before `import torch` "
    "(or in the shell: CUDA_VISIBLE_DEVICES=... python prog.py)"
)

HINT_ORDER = 'set CUDA_DEVICE_ORDER="PCI_BUS_ID" before CUDA initializes, so CUDA numbers GPUs as NVML does'


def _top_level_index(plan_mod: _Module, pos: dict[int, tuple[int, int, int, int]], line: int) -> Optional[int]:
    for i, stmt in enumerate(plan_mod.body):
        p = pos.get(id(stmt))
        if p is not None and p[0] <= line <= p[2]:
            return i
    return None


def plan_file(path: str, module: cst.Module, findings: Sequence[Finding], ir: ModuleIR, project_writes: Writes) -> FilePlan:
    mod = _Module(module)
    plan = FilePlan(path=path, module=module, insert_index=mod.insert_index)
    pos = positions(module, mod.body)
    for f in findings:
        tries = []
        if f.code == "CUD001":
            tries = [_plan_guard(f, module, ir), _plan_move(f, mod, pos, project_writes)]
        elif f.code == ADD_DEVICE_ORDER_CODE:
            tries = [_plan_device_order(f, mod, module, project_writes)]
        candidates = [fix for fix, _ in tries if fix is not None]
        reasons = [reason for _, reason in tries if reason]
        if candidates:
            plan.fixes.append(candidates)
        if reasons:
            plan.hints[f] = reasons[0]
        elif f.code == "CUD001":
            plan.hints[f] = "not fixed automatically: " + HINT_MOVE
    return plan


def _plan_move(f: Finding, mod: _Module, pos, project_writes: Writes):
    i = _top_level_index(mod, pos, f.line)
    if i is None:
        return None, "not fixed automatically (the write is inside a function or block): " + HINT_MOVE
    stmt = mod.body[i]
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None, "not fixed automatically: " + HINT_MOVE
    write = env_write(stmt.body[0], mod, need_constant=True)
    if write is None:
        return None, "not fixed automatically (the value is computed at run time): " + HINT_MOVE
    unknown_writes = project_writes.get("", 0) + project_writes.get("*", 0)
    if unknown_writes or any(project_writes.get(v, 0) != 1 for v in write.variables):
        return None, "not fixed automatically (the variable is written in more than one place): " + HINT_MOVE
    if i < mod.insert_index:
        return None, None
    moved = [i]
    for name in sorted((write.names | {write.root}) - {"True", "False", "None"}):
        j = mod.binder.get(name)
        if j is None or not mod.single(name):
            return None, f"not fixed automatically ({name!r} is not a module constant): " + HINT_MOVE
        if j < mod.insert_index:
            continue
        if j > i:
            return None, None
        if name == write.root and not _is_stdlib_import(mod.body[j]):
            return None, "not fixed automatically: " + HINT_MOVE
        moved.append(j)
    return Fix(f, "move-env-write", move=tuple(mod.body[j] for j in sorted(set(moved)))), None


def _guard_calls(module: cst.Module) -> list[cst.Call]:
    """`X.is_available()` calls whose value only decides a branch: an if/elif/ternary test, or an
    operand of `not` / `and` / `or` there (comparison binds tighter than all of these)."""
    found: list[cst.Call] = []

    def test(expr: cst.BaseExpression) -> None:
        if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "is_available":
            found.append(expr)
        elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            test(expr.expression)
        elif isinstance(expr, cst.BooleanOperation):
            test(expr.left)
            test(expr.right)

    class V(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            test(node.test)

        def visit_IfExp(self, node: cst.IfExp) -> None:
            test(node.test)

    module.visit(V())
    return found


def _plan_guard(f: Finding, module: cst.Module, ir: ModuleIR):
    if not f.witness or f.witness[0].path != f.path:
        return None, None
    line = f.witness[0].line
    inits = [ev for ev in _events(ir) if ev.kind == "init" and ev.loc[0] == line and ev.data[0] == "torch.cuda.is_available"]
    if not inits:
        return None, None
    calls = _guard_calls(module)
    pos = positions(module, calls)
    locs = {ev.loc[:2] for ev in inits}
    for call in calls:
        p = pos.get(id(call))
        if p is not None and p[:2] in locs:
            func = call.func
            assert isinstance(func, cst.Attribute)
            new_call = call.with_changes(func=func.with_changes(attr=cst.Name("device_count")), lpar=(), rpar=())
            new = cst.Comparison(
                left=new_call,
                comparisons=[cst.ComparisonTarget(operator=cst.GreaterThan(), comparator=cst.Integer("0"))],
                lpar=call.lpar,
                rpar=call.rpar,
            )
            return Fix(f, "guard-device-count", replace=((call, new),)), None
    return None, None


def _find_statement(module: cst.Module, line: int) -> Optional[cst.SimpleStatementLine]:
    stmts: list[cst.SimpleStatementLine] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            stmts.append(node)

    module.visit(V())
    pos = positions(module, stmts)
    for s in stmts:
        p = pos.get(id(s))
        if p is not None and p[0] <= line <= p[2]:
            return s
    return None


def _plan_device_order(f: Finding, mod: _Module, module: cst.Module, project_writes: Writes):
    hint = HINT_ORDER
    if project_writes.get("CUDA_DEVICE_ORDER", 0):
        return None, "not fixed automatically (CUDA_DEVICE_ORDER is already written elsewhere): " + hint
    stmt = _find_statement(module, f.line)
    if stmt is None or len(stmt.body) != 1:
        return None, None  # CUD004 elsewhere (an index passed to a CUDA API): no fix of this kind
    write = env_write(stmt.body[0], mod, need_constant=False)
    if write is None or "CUDA_VISIBLE_DEVICES" not in write.variables:
        return None, None
    code = cst.Module([]).code_for_node(write.env_expr)
    if write.form == "putenv":
        line = f'{code}("CUDA_DEVICE_ORDER", "PCI_BUS_ID")'
    else:
        line = f'{code}["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"'
    new = cst.parse_statement(line + "\n")
    return Fix(f, "add-device-order", insert_before=((stmt, new),)), None
