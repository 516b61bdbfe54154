"""Positions of a few libcst nodes, for the fixer (the analyzer reads `ast`: cudalint.core.positions).

libcst's syntax tree carries no positions; its PositionProvider records them for every node of the
module, which costs more than parsing. The rules need the positions of the handful of nodes that
become effects, so we run libcst's code generation once, only for modules that have effects,
tracking the line and column as text is produced and recording only the nodes asked for.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState

_NULL = nullcontext()


@dataclass(frozen=False)
class _State(CodegenState):
    wanted: frozenset = frozenset()
    line: int = 1
    column: int = 0
    found: dict = field(default_factory=dict)
    _stack: list = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for tok in self.indent_tokens:
            self.add_token(tok)

    def add_token(self, value: str) -> None:
        newlines = value.count("\n") + value.count("\r") - value.count("\r\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - max(value.rfind("\n"), value.rfind("\r")) - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            start = self._stack.pop()
            # a syntactic position recorded inside (without leading whitespace) wins
            self.found.setdefault(id(node), (start, (self.line, self.column)))

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: Optional[cst.CSTNode] = None,
        end_node: Optional[cst.CSTNode] = None,
    ):
        if id(node) not in self.wanted:
            return _NULL
        return self._record(node)

    @contextmanager
    def _record(self, node: cst.CSTNode) -> Iterator[None]:
        start = (self.line, self.column)
        yield
        self.found[id(node)] = (start, (self.line, self.column))


def positions(module: cst.Module, wanted: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int, int, int]]:
    """Map id(node) of each wanted node to (line, column, end_line, end_column), columns 1-based."""
    ids = frozenset(id(n) for n in wanted)
    if not ids:
        return {}
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline, wanted=ids)
    module._codegen(state)
    return {k: (s[0], s[1] + 1, e[0], e[1] + 1) for k, (s, e) in state.found.items()}
