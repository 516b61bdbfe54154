"""A child's environment written into its command line: `VAR=value cmd ...` (also after `export` or
`env`, and after `;`, `&&`, `||`, `|`) in a command the shell runs sets `VAR` in the child exactly as
`env=` does. The GPU launcher copied into many Gaussian-splatting repositories
(autonomousvision/mip-splatting scripts/run_mipnerf360.py) hands each child its GPU this way:
`os.system(f"CUDA_VISIBLE_DEVICES={gpu} python train.py ...")`.

Which calls run a command, at which argument, and when it is a shell command line rather than a
program and its arguments, is catalogue data (`command_arg`, `shell_when`). The command is read from
string literals, f-strings, `%` and `.format` templates, `+` concatenation, `" ".join([...])`, and a
name bound to one of these; a placeholder is a hole whose labels (cudalint.summary.labels) are taken
where the text is built. For a program and its arguments (`Popen([...])`), the words after `env`
are assignments, and `sh -c "..."` runs its third word as a shell command line.

A CUDA_VISIBLE_DEVICES whose value holds a placeholder becomes a "child_env" event
(cudalint.summary.child_env), judged by CUD010 like the `env=` forms. A value that is only literal
text (`CUDA_VISIBLE_DEVICES=0`) carries no numbering and makes no event.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import ast
import re

from cudalint.core.callargs import arg_expr
from cudalint.core.record import record
from cudalint.summary import labels
from cudalint.summary.syntax import _UNKNOWN, literal

if TYPE_CHECKING:  # pragma: no cover
    from cudalint.summary.syntax import _Scope
    from cudalint.summary.summarize import _Summarizer

CVD = "CUDA_VISIBLE_DEVICES"
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_PERCENT = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_OPERATORS = frozenset(";&|()\n")
# words that keep the next word at a command's start: `export A=1; ...`, `env A=1 cmd`
_PASS = frozenset({"export", "env"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_MAX_DEPTH = 40  # `a + b + c ...` nests to the left: a deeper chain is not read


@record
class _Hole:
    """A placeholder in a command's text: the expression and its labels where the text was built."""

    expr: ast.AST
    found: frozenset


Parts = list  # of str | _Hole


def _hole(s: "_Summarizer", expr: ast.AST, scope: "_Scope") -> _Hole:
    return _Hole(expr, labels.labels_of(s, expr, scope))


def _text_of(s: "_Summarizer", expr: ast.AST, scope: "_Scope") -> Optional[str]:
    val = literal(expr, scope.all_consts())
    return val if isinstance(val, str) else None


def parts_of(s: "_Summarizer", expr: Optional[ast.AST], scope: "_Scope", depth: int = 0) -> Optional[Parts]:
    """The text of a string-building expression: literal pieces and holes; None when it builds none."""
    if expr is None or depth > _MAX_DEPTH:
        return None
    kind = type(expr)
    if kind is ast.Constant:
        return [expr.value] if isinstance(expr.value, str) else None  # type: ignore[attr-defined]
    if kind is ast.JoinedStr:
        out: Parts = []
        for piece in expr.values:  # type: ignore[attr-defined]
            if type(piece) is ast.Constant:
                out.append(str(piece.value))  # type: ignore[attr-defined]
            else:
                out.extend(_placeholder(s, piece.value, scope, depth))  # type: ignore[attr-defined]
        return out
    if kind is ast.BinOp:
        op = type(expr.op)  # type: ignore[attr-defined]
        if op is ast.Add:
            left = parts_of(s, expr.left, scope, depth + 1)  # type: ignore[attr-defined]
            right = parts_of(s, expr.right, scope, depth + 1)  # type: ignore[attr-defined]
            if left is None and right is None:
                return None
            return (left if left is not None else [_hole(s, expr.left, scope)]) + (  # type: ignore[attr-defined]
                right if right is not None else [_hole(s, expr.right, scope)]  # type: ignore[attr-defined]
            )
        if op is ast.Mod:
            fmt = _text_of(s, expr.left, scope)  # type: ignore[attr-defined]
            return _percent(s, fmt, expr.right, scope, depth) if fmt is not None else None  # type: ignore[attr-defined]
        return None
    if kind is ast.Call and type(expr.func) is ast.Attribute:  # type: ignore[attr-defined]
        func = expr.func  # type: ignore[attr-defined]
        base = _text_of(s, func.value, scope)
        if base is None:
            return None
        if func.attr == "format":
            return _format(s, base, expr, scope, depth)  # type: ignore[arg-type]
        if func.attr == "join" and len(expr.args) == 1 and not expr.keywords and type(expr.args[0]) in (ast.List, ast.Tuple):  # type: ignore[attr-defined]
            out = []
            for i, el in enumerate(expr.args[0].elts):  # type: ignore[attr-defined]
                if i:
                    out.append(base)
                out.extend(_placeholder(s, el, scope, depth))
            return out
        return None
    if kind is ast.Name:
        stored = lookup(scope, expr.id)  # type: ignore[attr-defined]
        if stored is not None:
            return list(stored)
        text = _text_of(s, expr, scope)
        return [text] if text is not None else None
    return None


def _placeholder(s: "_Summarizer", expr: ast.AST, scope: "_Scope", depth: int) -> Parts:
    """A value put into a command's text: its own text when it is a command part we know
    (`f"{prefix} python train.py"`), else a hole."""
    if type(expr) in (ast.Name, ast.Constant, ast.JoinedStr):
        known = parts_of(s, expr, scope, depth + 1)
        if known is not None:
            return known
    return [_hole(s, expr, scope)]


def _percent(s: "_Summarizer", fmt: str, right: ast.AST, scope: "_Scope", depth: int) -> Optional[Parts]:
    """`"CUDA_VISIBLE_DEVICES=%d python train.py" % gpu` (also a tuple of values, or a dict by name)."""
    if type(right) is ast.Tuple:
        values = list(right.elts)  # type: ignore[attr-defined]
    elif type(right) is ast.Dict:
        values = []
    else:
        values = [right]
    named = {}
    if type(right) is ast.Dict:
        for k, v in zip(right.keys, right.values):  # type: ignore[attr-defined]
            key = literal(k) if k is not None else _UNKNOWN
            if isinstance(key, str):
                named[key] = v
    out: Parts = []
    at = 0
    used = 0
    for m in _PERCENT.finditer(fmt):
        out.append(fmt[at:m.start()])
        at = m.end()
        if m.group(2) == "%":
            out.append("%")
            continue
        if m.group(1) is not None:
            value = named.get(m.group(1))
        else:
            value = values[used] if used < len(values) else None
            used += 1
        if value is None:
            return None
        out.extend(_placeholder(s, value, scope, depth))
    out.append(fmt[at:])
    return out


def _format(s: "_Summarizer", fmt: str, call: ast.Call, scope: "_Scope", depth: int) -> Optional[Parts]:
    """`"CUDA_VISIBLE_DEVICES={} python train.py".format(gpu)` (by position, number or name)."""
    if any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    by_name = {k.arg: k.value for k in call.keywords}
    out: Parts = []
    auto = 0
    try:
        import string  # (only for a format string: most files have none)

        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return None
    for text, field, _spec, _conv in fields:
        out.append(text)
        if field is None:
            continue
        head = re.split(r"[.\[]", field, maxsplit=1)[0]
        if head == "":
            value: Optional[ast.AST] = call.args[auto] if auto < len(call.args) else None
            auto += 1
        elif head.isdigit():
            value = call.args[int(head)] if int(head) < len(call.args) else None
        else:
            value = by_name.get(head)
        if value is None:
            return None
        out.extend(_placeholder(s, value, scope, depth) if head == field else [_hole(s, value, scope)])
    return out


def lookup(scope: "_Scope", name: str) -> Optional[Parts]:
    for sc in scope.chain():
        if name in sc.commands:
            return sc.commands[name]
        if name in sc.bound:
            return None
    return None


# ---------- a command's words and the assignments at a command's start --------------------------
def _words(parts: Parts) -> list:
    """Shell words (each a list of str and holes, quotes taken off) and `None` between commands."""
    out: list = []
    word: list = []
    started = False
    quote = ""
    escaped = False

    def end() -> None:
        nonlocal word, started
        if started:
            out.append(word)
        word, started = [], False

    for part in parts:
        if isinstance(part, _Hole):
            word.append(part)
            started = True
            continue
        for ch in part:
            if escaped:
                word.append(ch)
                escaped = False
            elif ch == "\\" and quote != "'":
                escaped = True
                started = True
            elif quote:
                if ch == quote:
                    quote = ""
                else:
                    word.append(ch)
            elif ch in "'\"":
                quote = ch
                started = True
            elif ch in _OPERATORS:
                end()
                out.append(None)
            elif ch.isspace():
                end()
            else:
                word.append(ch)
                started = True
    end()
    return [_joined(w) if w is not None else None for w in out]


def _joined(word: list) -> Parts:
    """Runs of characters as strings."""
    out: Parts = []
    for piece in word:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        else:
            out.append(piece)
    return out


def _literal_word(word: Parts) -> Optional[str]:
    return word[0] if len(word) == 1 and isinstance(word[0], str) else ("" if not word else None)


def assignments(words: list, at_start: bool = True) -> list[tuple[str, Parts]]:
    """(name, value) of each `NAME=value` where a command starts, or after `export` / `env`."""
    out: list[tuple[str, Parts]] = []
    start = at_start
    after_env = False
    for word in words:
        if word is None:
            start, after_env = True, False
            continue
        if not start:
            continue
        text = _literal_word(word)
        if text in _PASS:
            after_env = after_env or text == "env"
            continue
        if after_env and text is not None and text.startswith("-"):
            continue  # `env -u NAME`: an option of env's (its argument is not a command either)
        first = word[0] if word else None
        m = _ASSIGN.match(first) if isinstance(first, str) else None
        if m is None:
            start = False
            continue
        out.append((m.group(1), _joined([first[m.end():]] + word[1:])))
    return out


def _exec_assignments(s: "_Summarizer", expr: ast.AST, scope: "_Scope") -> list[tuple[str, Parts]]:
    """A program and its arguments: `["env", f"CUDA_VISIBLE_DEVICES={gpu}", "python", ...]`, or a
    shell given its command line (`["bash", "-c", f"CUDA_VISIBLE_DEVICES={gpu} python ..."]`)."""
    if type(expr) not in (ast.List, ast.Tuple):
        return []
    elts = expr.elts  # type: ignore[attr-defined]
    if not elts or any(type(el) is ast.Starred for el in elts[:3]):
        return []
    program = _text_of(s, elts[0], scope)
    name = program.rsplit("/", 1)[-1] if program else ""
    if name == "env":
        words = []
        for el in elts[1:]:
            if type(el) is ast.Starred:
                break
            got = parts_of(s, el, scope)
            words.append(_joined(got) if got is not None else [_hole(s, el, scope)])
        return assignments(words, at_start=True)
    if name in _SHELLS and len(elts) > 2 and _text_of(s, elts[1], scope) == "-c":
        got = parts_of(s, elts[2], scope)
        return assignments(_words(got)) if got is not None else []
    return []


# ---------- hooks called by the summarizer ---------------------------------------------------------
def on_bind(s: "_Summarizer", name: str, value: Optional[ast.AST], scope: "_Scope") -> None:
    """`cmd = f"CUDA_VISIBLE_DEVICES={gpu} python train.py"`: kept, with the labels its holes have here."""
    scope.commands.pop(name, None)
    if value is None or type(value) in (ast.Name, ast.Constant):
        return  # (a literal is a constant; a name bound to a name is read through that name)
    got = parts_of(s, value, scope)
    if got is not None and any(isinstance(p, str) and CVD in p for p in got):
        scope.commands[name] = got


def on_add(s: "_Summarizer", target: ast.AST, value: ast.AST, scope: "_Scope") -> None:
    """`cmd += " --port 8000"` on a kept command."""
    if type(target) is not ast.Name:
        return
    kept = scope.commands.get(target.id)  # type: ignore[attr-defined]
    if kept is None:
        return
    got = parts_of(s, value, scope)
    scope.commands[target.id] = kept + (got if got is not None else [_hole(s, value, scope)])  # type: ignore[attr-defined]


def on_call(s: "_Summarizer", call: ast.Call, q: Optional[str], scope: "_Scope", out: list) -> None:
    """A call that runs a command (catalogue `command_arg`): the CUDA_VISIBLE_DEVICES its command line sets."""
    if not q or q.startswith(":"):
        return
    api = next((a for a in s.cat.calls_named(q) if a.get("command_arg")), None)
    if api is None:
        return
    expr = arg_expr(call, api.get("command_arg"))
    if expr is None:
        return
    shell = True
    if api.get("shell_when"):
        flag = arg_expr(call, api.get("shell_when"))
        # absent or a false literal: a program and its arguments; a variable: a string command
        # with an environment prefix only runs under a shell, so it is read as one
        shell = flag is not None and literal(flag) not in (False, 0, None, "")
    if shell:
        got = parts_of(s, expr, scope)
        found = assignments(_words(got)) if got is not None else []
    else:
        found = _exec_assignments(s, expr, scope)
    for name, value in found:
        holes = [p for p in value if isinstance(p, _Hole)]
        if name != CVD or not holes:
            continue
        text = "".join(p if isinstance(p, str) else "{" + s.text(p.expr) + "}" for p in value)
        given = labels.keep(s, frozenset().union(*(h.found for h in holes)))
        out.append(s.event("child_env", holes[0].expr, (CVD, text, given)))
