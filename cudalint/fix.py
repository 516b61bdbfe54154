"""`cudalint --fix` / `--diff`: the few edits that are certain, made with libcst so comments and
formatting stay; everything else keeps its finding and gets a `help:` line instead.

Three fixes (TorchFix's layout: the checks find, this codemod edits):

- `move-env-write` (CUD001): a top-level `CUDA_VISIBLE_DEVICES` / `CUDA_DEVICE_ORDER` write whose key
  and value are literals or module constants moves to just after the module docstring, the
  `__future__` imports and the leading standard-library imports, i.e. before the first import that
  can initialize CUDA. The stdlib import that binds `os` and the constants it reads move with it.
- `guard-device-count` (CUD001): `X.is_available()` (X = torch.cuda) whose value is only tested by an
  `if`/`elif`/conditional expression, and is the call that initialized CUDA before the write,
  becomes `X.device_count() > 0`: same truth value (is_available is `device_count() > 0` on top of
  a CUDA runtime probe; knowledge.md §2), without `cuInit` when NVML works.
- `add-device-order` (CUD004 on a `CUDA_VISIBLE_DEVICES` write built from NVML indices, in a module
  that never sets `CUDA_DEVICE_ORDER`): `CUDA_DEVICE_ORDER="PCI_BUS_ID"` is written just before that
  write, so CUDA numbers the GPUs the way NVML and nvidia-smi do (knowledge.md §6).

Every fix is checked before it is kept: the edited file must parse, the finding must be gone when
the project is linted again, and no (file, code) may gain findings. Files are replaced atomically
(a temporary file in the same directory, then `os.replace`); a read-only or vanished file is
reported and left alone.
"""
from __future__ import annotations

import difflib
import io
import os
import signal
import stat
import sys
import tempfile
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Sequence, Union

import libcst as cst

from cudalint import source
from cudalint.findings import Finding
from cudalint.ir import Event, ModuleIR, iter_events
from cudalint.cst_positions import positions

ENV_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
ADD_DEVICE_ORDER_CODE = "CUD004"  # NVML/nvidia-smi indices used as CUDA numbering
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_UNKNOWN_VALUE = object()


def literal(expr: cst.BaseExpression | None, consts: dict[str, object] | None = None) -> object:
    """The value of a literal expression, `_UNKNOWN_VALUE` when it is not one.

    f-strings keep their literal parts and turn each placeholder into `*`, so a glob such as
    "cuda*" matches f"cuda:{i}".
    """
    if expr is None:
        return None
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:
            return _UNKNOWN_VALUE
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left, consts), literal(expr.right, consts)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return _UNKNOWN_VALUE
    if isinstance(expr, cst.FormattedString):
        out = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(part.value)
            else:
                val = literal(part.expression, consts)
                out.append(str(val) if isinstance(val, (str, int)) and not isinstance(val, bool) else "*")
        return "".join(out)
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value, 0)
        except ValueError:
            return _UNKNOWN_VALUE
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        val = literal(expr.expression, consts)
        return -val if isinstance(val, int) and not isinstance(val, bool) else _UNKNOWN_VALUE
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if consts is not None and expr.value in consts:
            return consts[expr.value]
    return _UNKNOWN_VALUE


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


# ---------- reading and writing files --------------------------------------------------------
@dataclass(frozen=True)
class Loaded:
    path: str
    data: bytes
    text: str
    encoding: str


def load(path: str) -> Union[Loaded, str]:
    """The file's bytes, text and encoding (so it is written back the same way), or why not."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    decoded = source.decode(path, data)
    if isinstance(decoded, Finding):
        return f"{path}: {decoded.message}"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return f"{path}: cannot decode: {exc}"
    if data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    return Loaded(path, data, decoded.text, encoding)


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == root or os.path.commonpath([real, root]) == root for root in roots)


def refusal(path: str, roots: Sequence[str], st: os.stat_result) -> Optional[str]:
    """Why `--fix` must not rewrite this file, with a `help:` line; None when it may. `roots` are the
    real paths of what the user named: a fix never leaves them through a symbolic link, and never
    splits a hard-linked file (a new file under one name, the old code under the others)."""
    real = os.path.realpath(path)
    if not _inside(real, roots):
        return (
            f"{path}: not fixed: it is a symbolic link to {real}, outside the paths being fixed\n"
            f"help: if that file is yours to change, run `cudalint --fix {real}`"
        )
    if st.st_nlink > 1:
        return (
            f"{path}: not fixed: the file has {st.st_nlink} hard links, and a fix writes a new file: "
            "the other names would keep the old code\n"
            "help: apply the fix by hand (`cudalint --diff` shows it), or give this name its own copy and run --fix again"
        )
    return None


def write_atomic(loaded: Loaded, text: str, roots: Sequence[str] = ()) -> Optional[str]:
    """Replace the file with `text`, all or nothing. Returns a problem, or None when written.
    `roots`: the real paths of what the user named (cudalint.fix.refusal); () when not checked."""
    real = os.path.realpath(loaded.path)
    try:
        st = os.stat(real)
    except OSError as exc:
        return f"{loaded.path}: not fixed: {exc.strerror or exc}"
    if roots:
        refused = refusal(loaded.path, roots, st)
        if refused:
            return refused
    # root may write anything: honour the file's mode bits anyway, a read-only file stays as it is
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        return f"{loaded.path}: not fixed: the file is read-only"
    try:
        data = text.encode(loaded.encoding)
    except UnicodeEncodeError as exc:
        return f"{loaded.path}: not fixed: the fix cannot be encoded as {loaded.encoding}: {exc.reason}"
    directory = os.path.dirname(real) or "."
    tmp = None
    # SIGINT and SIGTERM wait while the temporary file exists: an interrupted --fix leaves the old
    # file or the new one, and nothing else (they are delivered once it is renamed or removed)
    blocked = {signal.SIGINT, signal.SIGTERM}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked) if hasattr(signal, "pthread_sigmask") else None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(real)}.", suffix=".cudalint-tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown") and os.geteuid() == 0:
            os.chown(tmp, st.st_uid, st.st_gid)
        with open(real, "rb") as fh:
            if fh.read() != loaded.data:
                return f"{loaded.path}: not fixed: the file changed while cudalint was running"
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        return f"{loaded.path}: not fixed: cannot write: {exc.strerror or exc}"
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return None


# ---------- names, as the module binds them --------------------------------------------------
def _module_bindings(module: cst.Module) -> Counter:
    """How often each name is bound in module scope (conservatively: `global` counts too)."""
    counts: Counter = Counter()

    class Visitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0  # inside a def/class/lambda/comprehension body: another scope

        def _scoped(self, node) -> bool:
            self.depth += 1
            return True

        def _unscoped(self, node) -> None:
            self.depth -= 1

        visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scoped
        leave_Lambda = leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _unscoped

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if self.depth == 0:
                counts[node.name.value] += 1
            self.depth += 1
            return True

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.depth -= 1

        visit_ClassDef = visit_FunctionDef  # a top-level class binds its name the same way
        leave_ClassDef = leave_FunctionDef

        def visit_Global(self, node: cst.Global) -> None:
            for item in node.names:
                counts[item.name.value] += 2  # bound from a function: never a constant

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] += 2

        def _target(self, target: cst.BaseExpression, weight: int = 1) -> None:
            """weight 2: a binding that never makes a constant (augmented, loop, with/except/import as, del)."""
            if self.depth:
                return
            if isinstance(target, cst.Name):
                counts[target.value] += weight
            elif isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    self._target(el.value, weight)
            elif isinstance(target, cst.StarredElement):
                self._target(target.value, weight)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target, 2)

        def visit_For(self, node: cst.For) -> None:
            self._target(node.target, 2)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._target(node.name, 2)  # with ... as x, except E as x, import a as x

        def visit_Del(self, node: cst.Del) -> None:
            self._target(node.target, 2)

        def visit_Import(self, node: cst.Import) -> None:
            if self.depth:
                return
            for alias in node.names:
                if alias.asname is None:
                    root = alias.name
                    while isinstance(root, cst.Attribute):
                        root = root.value
                    if isinstance(root, cst.Name):
                        counts[root.value] += 1

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if self.depth:
                return
            if isinstance(node.names, cst.ImportStar):
                counts["*"] += 1
                return
            for alias in node.names:
                if alias.asname is None and isinstance(alias.name, cst.Name):
                    counts[alias.name.value] += 1

    module.visit(Visitor())
    return counts


def _import_modules(stmt: cst.CSTNode) -> Optional[list[str]]:
    """The modules a top-level `import`/`from … import` line names, None for other statements."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    mods: list[str] = []
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                mods.append(cst.Module([]).code_for_node(alias.name))
        elif isinstance(small, cst.ImportFrom):
            if small.relative or small.module is None:
                return ["."]
            mods.append(cst.Module([]).code_for_node(small.module))
        else:
            return None
    return mods


def _is_stdlib_import(stmt: cst.CSTNode) -> bool:
    mods = _import_modules(stmt)
    return bool(mods) and all(m.split(".")[0] in _STDLIB and m != "__future__" for m in mods)


def _is_future_import(stmt: cst.CSTNode) -> bool:
    return _import_modules(stmt) == ["__future__"]


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    """Does this top-level import line bind `name` (`import os`, `from os import environ`)?"""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else cst.Module([]).code_for_node(alias.name).split(".")[0]
                if bound == name:
                    return True
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else cst.Module([]).code_for_node(alias.name)
                if bound == name:
                    return True
    return False


def _constant_stmt(stmt: cst.CSTNode) -> Optional[tuple[str, object]]:
    """`NAME = "literal"` on a line of its own: (name, value)."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    value = literal(assign.value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return assign.targets[0].target.value, value
    return None


class _Module:
    """What the fixes need to know about one module's top level."""

    def __init__(self, module: cst.Module):
        self.module = module
        self.body = list(module.body)
        self.bindings = _module_bindings(module)
        self.binder: dict[str, int] = {}  # name -> index of the top-level statement binding it
        self.consts: dict[str, object] = {}
        for i, stmt in enumerate(self.body):
            const = _constant_stmt(stmt)
            if const is not None:
                self.binder.setdefault(const[0], i)
                self.consts.setdefault(const[0], const[1])
            elif _import_modules(stmt) is not None:
                for name in list(self.bindings):
                    if name not in self.binder and _binds(stmt, name):
                        self.binder[name] = i
        self.insert_index = self._insert_index()

    def _insert_index(self) -> int:
        i = 0
        if self.body and _is_docstring(self.body[0]):
            i = 1
        while i < len(self.body) and (_is_future_import(self.body[i]) or _is_stdlib_import(self.body[i])):
            i += 1
        return i

    def single(self, name: str) -> bool:
        return self.bindings.get(name, 0) == 1 and self.bindings.get("*", 0) == 0

    def constant(self, expr: cst.BaseExpression) -> object:
        """The value of a literal or of a module constant (a name bound once, to a literal)."""
        if isinstance(expr, cst.Name) and expr.value not in ("True", "False", "None"):
            if expr.value in self.consts and self.single(expr.value):
                return self.consts[expr.value]
            return _UNKNOWN_VALUE
        value = literal(expr)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
        return _UNKNOWN_VALUE

    def env_root(self, expr: cst.BaseExpression) -> Optional[str]:
        """`os.environ` (os bound by `import os`) or `environ` (from `from os import environ`): the root name."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.attr.value == "environ":
            name = expr.value.value
            i = self.binder.get(name)
            if i is not None and self.single(name) and _is_import_of(self.body[i], name, "os"):
                return name
        if isinstance(expr, cst.Name):
            i = self.binder.get(expr.value)
            if i is not None and self.single(expr.value) and _is_import_of(self.body[i], expr.value, "os.environ"):
                return expr.value
        return None


def _is_import_of(stmt: cst.CSTNode, name: str, target: str) -> bool:
    """Does `stmt` bind `name` to `target` ("os" or "os.environ")?"""
    code = cst.Module([]).code_for_node
    for small in stmt.body:  # type: ignore[attr-defined]
        if isinstance(small, cst.Import):
            for alias in small.names:
                full = code(alias.name)
                bound = alias.asname.name.value if alias.asname else full.split(".")[0]
                if bound == name and (full if alias.asname else full.split(".")[0]) == target:
                    return True
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname else code(alias.name)
                if bound == name and f"{code(small.module)}.{code(alias.name)}" == target:
                    return True
    return False


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


def plan_file(path: str, module: cst.Module, findings: Sequence[Finding], ir: ModuleIR, project_writes: Counter) -> FilePlan:
    mod = _Module(module)
    plan = FilePlan(path=path, module=module, insert_index=mod.insert_index)
    pos = positions(module, mod.body)
    unknown_writes = project_writes.get("", 0) + project_writes.get("*", 0)
    for f in findings:
        tries = []
        if f.code == "CUD001":
            tries = [_plan_guard(f, module, ir), _plan_move(f, mod, pos, project_writes, unknown_writes)]
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


def _plan_move(f: Finding, mod: _Module, pos, project_writes: Counter, unknown_writes: int):
    i = _top_level_index(mod, pos, f.line)
    if i is None:
        return None, "not fixed automatically (the write is inside a function or block): " + HINT_MOVE
    stmt = mod.body[i]
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None, "not fixed automatically: " + HINT_MOVE
    write = env_write(stmt.body[0], mod, need_constant=True)
    if write is None:
        return None, "not fixed automatically (the value is computed at run time): " + HINT_MOVE
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


def _plan_device_order(f: Finding, mod: _Module, module: cst.Module, project_writes: Counter):
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


# ---------- applying -------------------------------------------------------------------------
def _strip_blank(stmt: cst.CSTNode) -> cst.CSTNode:
    lines = [ll for ll in getattr(stmt, "leading_lines", ()) if ll.comment is not None]
    return stmt.with_changes(leading_lines=lines)  # type: ignore[attr-defined]


class _Apply(cst.CSTTransformer):
    def __init__(self, fixes: Sequence[Fix], insert_index: int, body: Sequence[cst.CSTNode]):
        super().__init__()
        self.moved = {id(n) for fx in fixes for n in fx.move}
        self.moved_nodes = [n for n in body if id(n) in self.moved]
        self.anchor = body[insert_index] if insert_index < len(body) else None
        self.before: dict[int, list[cst.BaseStatement]] = {}
        for fx in fixes:
            for anchor, new in fx.insert_before:
                self.before.setdefault(id(anchor), []).append(new)
        self.replace = {id(old): new for fx in fixes for old, new in fx.replace}
        self.originals: dict[int, cst.CSTNode] = {}

    def on_leave(self, original_node, updated_node):
        new = self.replace.get(id(original_node))
        if new is not None:
            return new
        return super().on_leave(original_node, updated_node)

    def _rebuild(self, original_body, updated_body, top: bool):
        out: list[cst.CSTNode] = []
        for orig, upd in zip(original_body, updated_body):
            if top and self.anchor is not None and orig is self.anchor and self.moved_nodes:
                out.extend(_strip_blank(n) for n in self.moved_nodes)
                if not getattr(upd, "leading_lines", True):  # keep the moved lines apart from the imports
                    upd = upd.with_changes(leading_lines=[cst.EmptyLine()])
            if top and id(orig) in self.moved:
                continue
            added = self.before.get(id(orig), [])
            if added:
                # the comments above the write now sit above the added line
                out.append(added[0].with_changes(leading_lines=getattr(upd, "leading_lines", ())))
                out.extend(added[1:])
                upd = upd.with_changes(leading_lines=())
            out.append(upd)
        if top and self.anchor is None:
            out.extend(_strip_blank(n) for n in self.moved_nodes)
        return out

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._rebuild(original_node.body, updated_node.body, top=True))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._rebuild(original_node.body, updated_node.body, top=False))


def apply(plan: FilePlan, fixes: Sequence[Fix]) -> str:
    if not fixes:
        return plan.module.code
    return plan.module.visit(_Apply(fixes, plan.insert_index, plan.module.body)).code


# ---------- the run --------------------------------------------------------------------------
@dataclass
class FixOutcome:
    remaining: object  # LintResult after the fixes
    fixed: int
    changed: tuple[str, ...]
    diff: str
    problems: tuple[str, ...]
    hints: dict[tuple[str, int, str], str]


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    out = ""
    for line in lines:
        out += line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    return out


def _ok(before: Sequence[Finding], after: Sequence[Finding], fixed: Sequence[Finding]) -> bool:
    """Each fixed finding is gone and no (file, code) gained findings."""
    b = Counter((f.path, f.code) for f in before)
    a = Counter((f.path, f.code) for f in after)
    gone = Counter((f.path, f.code) for f in fixed)
    return all(a[key] <= b[key] - gone[key] for key in set(a) | set(gone))


def fix_paths(paths: Sequence[str], config, write: bool = True) -> FixOutcome:
    from cudalint.api import lint_files, load_module
    from cudalint.catalogue import load_catalogue
    from cudalint.discover import discover

    catalogue = load_catalogue(config.extend_catalogue)
    found = discover(paths, exclude=config.exclude + config.extend_exclude, respect_gitignore=config.respect_gitignore)
    files = found.files
    before = lint_files(files, config, catalogue, extra=found.problems)
    by_path: dict[str, list[Finding]] = {}
    for f in before.findings:
        if f.cell is None and f.path.endswith((".py", ".pyi")) and f.code in ("CUD001", ADD_DEVICE_ORDER_CODE):
            by_path.setdefault(f.path, []).append(f)

    problems: list[str] = []
    loaded: dict[str, Loaded] = {}
    plans: dict[str, FilePlan] = {}
    irs: dict[str, ModuleIR] = {}
    for path in by_path:
        got = load(path)
        if isinstance(got, str):
            problems.append(got)
            continue
        module = source.parse_cst(source.Source(path, got.text))
        ir = load_module(path, catalogue, got.text)
        if isinstance(module, Finding) or isinstance(ir, Finding):
            continue
        loaded[path], irs[path] = got, ir
    # the variables the project writes anywhere: moving a write is certain only if it is the only one
    writes = env_writes(_project_irs(files, catalogue, irs, load_module))
    for path, fs in by_path.items():
        if path in loaded:
            plans[path] = plan_file(path, cst.parse_module(loaded[path].text), fs, irs[path], writes)

    accepted = _validate(plans, files, config, catalogue, before.findings, found.problems, lint_files)
    hints = {(f.path, f.line, f.code): h for plan in plans.values() for f, h in plan.hints.items()}
    new_texts = {p: apply(plans[p], fx) for p, fx in accepted.items() if fx}
    changed = tuple(p for p, t in new_texts.items() if t != loaded[p].text)
    fixed_findings = [fx.finding for p in changed for fx in accepted[p]]
    diff = "".join(_diff(p, loaded[p].text, new_texts[p]) for p in changed)
    written: list[str] = []
    roots = [os.path.realpath(p) for p in paths]
    if write:
        for p in changed:
            problem = write_atomic(loaded[p], new_texts[p], roots)
            if problem:
                problems.append(problem)
                fixed_findings = [f for f in fixed_findings if f.path != p]
            else:
                written.append(p)
        remaining = lint_files(files, config, catalogue, extra=found.problems) if written else before
    else:
        remaining = before
    for f in fixed_findings:
        hints.pop((f.path, f.line, f.code), None)
    for f in remaining.findings:
        if (f.path, f.line, f.code) not in hints and f.code not in ("CUD900",):
            hints.setdefault((f.path, f.line, f.code), f"see `cudalint --explain {f.code}`")
    return FixOutcome(
        remaining=remaining,
        fixed=len(fixed_findings) if write else 0,
        changed=tuple(written) if write else changed,
        diff=diff,
        problems=tuple(problems),
        hints=hints,
    )


def _project_irs(files, catalogue, known: dict[str, ModuleIR], load_module) -> list[ModuleIR]:
    """The IR of every file that mentions a CUDA variable or writes the environment blindly."""
    out = list(known.values())
    for path in files:
        if path in known or not path.endswith((".py", ".pyi")):
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"CUDA_" not in data and b"environ" not in data:
            continue
        ir = load_module(path, catalogue)
        if isinstance(ir, ModuleIR):
            out.append(ir)
    return out


def _validate(plans: dict[str, FilePlan], files, config, catalogue, before, extra, lint_files) -> dict[str, list[Fix]]:
    """Keep the fixes that pass the check: all at once if they can, else one at a time."""

    def check(selection: dict[str, list[Fix]]) -> bool:
        overlay = {}
        for p, fx in selection.items():
            if not fx:
                continue
            text = apply(plans[p], fx)
            try:
                cst.parse_module(text)
            except Exception:
                return False
            overlay[p] = text
        if not overlay:
            return True
        after = lint_files(files, config, catalogue, extra=extra, overlay=overlay).findings
        return _ok(before, after, [fx.finding for fs in selection.values() for fx in fs])

    everything = {p: [alts[0] for alts in plan.fixes] for p, plan in plans.items() if plan.fixes}
    if not everything or check(everything):
        return everything
    accepted: dict[str, list[Fix]] = {}
    for p, plan in plans.items():
        for alternatives in plan.fixes:
            for fx in alternatives:
                trial = {**accepted, p: accepted.get(p, []) + [fx]}
                if check(trial):
                    accepted = trial
                    break
    return accepted
