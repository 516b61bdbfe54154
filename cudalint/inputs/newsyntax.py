"""Files written for a newer Python than the one running cudalint.

CPython's `ast` reads only its own version's grammar, and users run a linter from one environment
over many projects. When `ast` refuses a file, libcst's native parser (which reads every grammar up to
3.14 whatever interpreter runs it) finds the newer constructs, and each is rewritten into older syntax
that keeps the byte offset of everything else on every line (cudalint computes positions, segments
and noqa from the original text). CPython then parses the rewritten text and the file is analyzed
as usual. Only this failure path pays: the fast path is `ast` alone.

What is rewritten, and why it changes no finding:
- `type X[T] = v` (3.12): becomes `X=...`; the value is evaluated lazily, never at the statement.
- type parameters `def f[T: B = D]`, `class C[T]` (3.12, defaults 3.13): blanked; bounds and
  defaults are evaluated lazily too.
- t-strings (3.14): `t` becomes `f`; the interpolations run eagerly in both.
- `except A, B:` (3.14): parenthesized.  `except* E:` (3.11, on 3.10): `except  E:`.
- f-strings that need 3.12's grammar (PEP 701: a quote, backslash or comment inside `{}`): the outer
  quote is swapped when that suffices; otherwise the string becomes a plain string of the same shape,
  and the calls inside its `{}` are not seen (the only loss, and only on 3.10 and 3.11).
What cannot be rewritten yields one CUD900 that names the construct and the Python it needs.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Union

import libcst as cst  # this module is imported only when CPython refused a file
from libcst._nodes.internal import CodegenState

from cudalint.core.findings import Finding

if TYPE_CHECKING:
    import ast

_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST
RUNNING = sys.version_info[:2]


@dataclass(frozen=True)
class Construct:
    version: tuple[int, int]
    name: str
    line: int
    column: int  # 0-based, characters


@dataclass(frozen=True)
class Edit:
    start: int  # character offsets into the original text
    end: int
    text: str


def parse_newer(text: str, path: str, error: SyntaxError) -> Union["ast.Module", Finding, None]:
    """The tree of a file CPython refused, when newer syntax is the reason; None when it is not."""
    try:
        module = cst.parse_module(text)
    except Exception:  # libcst refuses it too: a plain syntax error
        return None
    finder = _Finder(text, {})
    try:
        finder.spans = offsets(module)
        module.visit(finder)
    except Exception:  # RecursionError on deeply nested code, or a libcst internal we rely on changed
        return None
    if finder.python2:
        return None  # `except E, e:` is Python 2 here, not PEP 758: CPython's message says so
    if not finder.constructs:
        return None
    tree = None
    if finder.edits is not None:
        tree = _compile(_apply(text, finder.edits), path)
    if tree is not None:
        return tree
    return _explain(path, finder.constructs, error)


def _explain(path: str, constructs: list[Construct], error: SyntaxError) -> Finding:
    line = error.lineno or 1
    on_line = [c for c in constructs if c.line == line]
    failing = max(on_line or constructs, key=lambda c: c.version)
    needed = max(c.version for c in constructs)
    message = (
        f"this file uses Python {_v(failing.version)} syntax ({failing.name}), which Python {_v(RUNNING)} "
        f"running cudalint cannot parse; run cudalint with Python >= {_v(needed)}"
    )
    if error.lineno:
        column = error.offset or 1
    else:
        line, column = failing.line, failing.column + 1
    return Finding.at("CUD900", path, (line, column, line, column), message)


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _compile(text: str, path: str) -> Optional["ast.Module"]:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(text, path, "exec", dont_inherit=True, flags=_ONLY_AST)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _apply(text: str, edits: list[Edit]) -> str:
    out, at = [], 0
    for e in sorted(edits, key=lambda e: e.start):
        if e.start < at:  # overlapping edits (a construct inside another one's span): the outer wins
            continue
        out.append(text[at : e.start])
        out.append(e.text)
        at = e.end
    out.append(text[at:])
    return "".join(out)


def blank(segment: str, head: str = "") -> Optional[str]:
    """`segment` as spaces of the same UTF-8 length on every line, starting with `head`.

    A line break inside the segment gets a backslash before it, so that what was one logical line
    (brackets, a string) stays one. None when a line has no byte for it.
    """
    pieces = segment.split("\n")
    out = []
    for i, piece in enumerate(pieces):
        cr = piece.endswith("\r") and i < len(pieces) - 1
        body = piece[:-1] if cr else piece
        size = len(body.encode("utf-8"))
        lead = head if i == 0 else ""
        if len(lead) > size:
            return None
        filled = lead + " " * (size - len(lead))
        if i < len(pieces) - 1:
            if size == len(lead):
                return None
            filled = filled[:-1] + "\\"
        out.append(filled + ("\r" if cr else ""))
    return "\n".join(out)


class _Offsets(CodegenState):
    """libcst's code generation, counting characters: each node's span as offsets into the text.

    libcst's PositionProvider computes lines and columns for every token and took 1.0 s of the
    2.4 s the fallback needed on a 3,000-line file; offsets are what the edits need, at half the cost.
    Same rules for the span as PositionProvider (syntactic positions: no leading whitespace).
    """

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: dict = {}
        self._stack: list[int] = []

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        pass  # only the end of the file moves, and no node's span is measured after it

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if node not in self.spans:
            self.spans[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.spans[start_node][0]
            if end_node is not None:
                end = self.spans[end_node][1]
            self.spans[node] = (start, end)


def offsets(module: cst.Module) -> dict:
    state = _Offsets(module)
    module._codegen(state)
    return state.spans


class _Finder(cst.CSTVisitor):
    """Collects the constructs newer than the running Python, and the edits that rewrite them."""

    def __init__(self, text: str, spans: dict) -> None:
        super().__init__()
        self.text = text
        self.spans = spans
        self.constructs: list[Construct] = []
        self.edits: Optional[list[Edit]] = []
        self.python2 = False

    # --- helpers ---------------------------------------------------------------------------------
    def span(self, node) -> tuple[int, int]:
        return self.spans[node]

    def found(self, version: tuple[int, int], name: str, node) -> bool:
        """Records a construct newer than the running Python; False when this Python reads it."""
        if RUNNING >= version:
            return False
        start = self.spans[node][0]
        line = self.text.count("\n", 0, start) + 1
        column = start - (self.text.rfind("\n", 0, start) + 1)
        self.constructs.append(Construct(version, name, line, column))
        return True

    def edit(self, start: int, end: int, make: Callable[[str], Optional[str]]) -> None:
        if self.edits is None:
            return
        new = make(self.text[start:end])
        if new is None:
            self.edits = None  # this construct cannot be rewritten: the file gets the message
        else:
            self.edits.append(Edit(start, end, new))

    # --- the constructs ---------------------------------------------------------------------------
    def visit_TypeAlias(self, node) -> bool:
        if self.found((3, 12), "type alias statement", node):
            start, _ = self.span(node)
            _, end = self.span(node.value)
            self.edit(start, end, lambda seg: blank(seg, node.name.value + "=..."))
        self._type_params(node.type_parameters)
        return False  # the value and the parameters are not evaluated here: nothing inside matters

    def visit_FunctionDef(self, node) -> bool:
        self._type_params(node.type_parameters)
        return True

    def visit_ClassDef(self, node) -> bool:
        self._type_params(node.type_parameters)
        return True

    def visit_TypeParameters(self, node) -> bool:
        return False  # handled by its owner; bounds and defaults are evaluated lazily

    def _type_params(self, params) -> None:
        if params is None:
            return
        with_default = [p for p in params.params if getattr(p, "default", None) is not None]
        if with_default:
            self.found((3, 13), "type parameter default", with_default[0])
        if self.found((3, 12), "type parameter list", params):
            start, end = self.span(params)
            self.edit(start, end, blank)

    def visit_ExceptHandler(self, node) -> bool:
        self._bare_tuple(node, star=False)
        return True

    def visit_ExceptStarHandler(self, node) -> bool:
        if self.found((3, 11), "except*", node):
            start, _ = self.span(node)
            star = self.text.index("*", start)
            self.edit(star, star + 1, lambda _seg: " ")
        self._bare_tuple(node, star=True)
        return True

    def _bare_tuple(self, node, star: bool) -> None:
        kind = node.type
        if not isinstance(kind, cst.Tuple) or kind.lpar:
            return
        last = kind.elements[-1].value
        if not star and len(kind.elements) == 2 and isinstance(last, cst.Name) and last.value[:1].islower():
            self.python2 = True  # `except socket.error, e:` binds e in Python 2; exception classes are CapWords
            return
        if not self.found((3, 14), "except with several types without parentheses", kind):
            return
        start, end = self.span(kind)
        # `except A, B:` -> `except(A,B):` keeps the length when a space can give way on each side
        before = start - 1 if start > 0 and self.text[start - 1] in " \t" else None
        segment = self.text[start:end]
        gap = next((i for i, ch in enumerate(segment) if ch in " \t" and segment[i - 1] == ","), None)
        if before is not None:
            self.edit(before, start, lambda _seg: "(")
        else:
            self.edit(start, start, lambda _seg: "(")
        if gap is not None:
            self.edit(start, end, lambda seg: seg[:gap] + seg[gap + 1 :] + ")")
        else:
            self.edit(start, end, lambda seg: seg + ")")

    def visit_TemplatedString(self, node) -> bool:
        if self.found((3, 14), "t-string", node):
            self._string(node, node.start.replace("t", "f").replace("T", "F"))
        return False  # the strings inside `{}` were checked with it

    def visit_FormattedString(self, node) -> bool:
        if RUNNING >= (3, 12):
            return False
        start, end = self.span(node)
        if _compile_expr(self.text[start:end]):
            return False
        self.found((3, 12), "f-string with a quote, backslash or comment inside {} (PEP 701)", node)
        self._string(node, node.start)
        return False

    def _string(self, node, prefix_start: str) -> None:
        """An f-string the running Python reads, from a t-string or an f-string written for 3.12."""
        start, end = self.span(node)
        text = self.text[start:end]
        opening, closing = node.start, node.end
        body = text[len(opening) : len(text) - len(closing)]
        candidate = prefix_start + body + closing
        if _compile_expr(candidate):
            self.edit(start, end, lambda _seg: candidate)
            return
        if len(closing) == 1:  # swap the quotes: 3.12's `f"{d["k"]}"` reads as `f'{d["k"]}'`
            other = "'" if closing == '"' else '"'
            swapped = prefix_start[:-1] + other + body + other
            if _compile_expr(swapped):
                self.edit(start, end, lambda _seg: swapped)
                return
        # a plain string of the same shape: the value is still a str, what ran inside `{}` is lost
        prefix = opening[: -len(closing)]

        def plain(seg: str) -> Optional[str]:
            inner = blank(body) if len(closing) == 1 else _spaces_keep_lines(body)
            if inner is None:
                return None
            return " " * len(prefix) + closing + inner + closing

        self.edit(start, end, plain)


def _spaces_keep_lines(body: str) -> str:
    return "\n".join(" " * len(p.encode("utf-8")) for p in body.split("\n"))


def _compile_expr(text: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile("(" + text + "\n)", "<string>", "eval", dont_inherit=True, flags=_ONLY_AST)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
