"""Summaries without the thread model's events, for a project in which no llama.cpp context can exist.

The thread model (cudalint.analysis.threads) is the only reader of these events, and it runs only
when some module makes a llama.cpp context (`ModuleIR.makes_llama`: cudalint.checks.llama). On vllm
they were 36 % of the events and 28 % of the memory the run's 2,740 summaries held (323 -> 232 MB,
measured with a deep `sys.getsizeof`), and the flow engine stepped over every one of them.

`load_files` strips each summary as it arrives while no module seen so far makes a context, and
puts back the full summaries (from the cache, or summarized again) when one turns up later: the
analysis then reads exactly what it read before. The cache always holds full summaries, and the
summaries a touched file is compared by (cudalint.engine.run_keys.summary_names) are full ones.
"""
from __future__ import annotations

from typing import Any

from cudalint.core.deep import call_roomy
from cudalint.core.ir import Branch, Event, Loop, MainGuard, ModuleIR, Try

# the event kinds only the thread model reads (cudalint.core.ir.Event), and "return"'s data (its
# origin, read by cudalint.analysis.threads); a plain "return" ends a path for the flow engine
THREAD_ONLY = frozenset({"bind", "call_refs", "llama_use", "llama_iter", "lock_enter", "lock_exit", "thread_start", "concurrency"})


def _block(block: tuple) -> tuple:
    out: list = []
    changed = False
    for node in block:
        t = type(node)
        if t is Event:
            kind = node.kind
            if kind in THREAD_ONLY:
                changed = True
                continue
            if kind == "return" and node.data:
                node = Event("return", node.loc, node.text)
                changed = True
        elif t is Branch:
            arms = tuple(_block(a) for a in node.arms)
            if any(a is not b for a, b in zip(arms, node.arms)):
                node = Branch(arms, node.exhaustive, node.at_import)
                changed = True
        elif t is Loop:
            body, orelse = _block(node.body), _block(node.orelse)
            if body is not node.body or orelse is not node.orelse:
                node = Loop(body, orelse, node.loc, node.infinite)
                changed = True
        elif t is Try:
            body, orelse, final = _block(node.body), _block(node.orelse), _block(node.final)
            handlers = tuple(_block(h) for h in node.handlers)
            if body is not node.body or orelse is not node.orelse or final is not node.final or any(a is not b for a, b in zip(handlers, node.handlers)):
                node = Try(body, handlers, orelse, final)
                changed = True
        elif t is MainGuard:
            body, orelse = _block(node.body), _block(node.orelse)
            if body is not node.body or orelse is not node.orelse:
                node = MainGuard(body, orelse)
                changed = True
        out.append(node)
    return tuple(out) if changed else block


def strip(summary: ModuleIR) -> ModuleIR:
    """`summary` without the thread model's events (itself when it has none)."""
    from dataclasses import replace

    top = _block(summary.top)
    functions = {}
    changed = top is not summary.top
    for name, fn in summary.functions.items():
        body = _block(fn.body)
        if body is not fn.body:
            fn = replace(fn, body=body)
            changed = True
        functions[name] = fn
    return replace(summary, top=top, functions=functions) if changed else summary


class Lean:
    """Strips the summaries `load_files` receives while no module makes a llama.cpp context; says
    which it stripped, so that they can be read again whole if one does."""

    def __init__(self, enabled: bool = True):
        self.on = enabled
        self.stripped: set[str] = set()

    def __call__(self, path: str, value: Any, hold: bool = False, stripped: bool = False) -> Any:
        """`value` stripped, unless a module makes a context; `hold`: not yet (it is compared whole
        with the file's earlier summary first); `stripped`: a worker stripped it already."""
        if type(value) is not ModuleIR:
            return value
        if value.makes_llama:
            self.on = False  # (the ones stripped so far are read again: `repair`)
        if stripped:
            self.stripped.add(path)
            return value
        if not self.on or hold:
            return value
        lean = call_roomy(strip, value)  # (600 nested `elif` arms: a block 600 deep)
        if lean is not value:
            self.stripped.add(path)
        return lean

    def repair(self) -> set[str]:
        """The paths whose full summaries the analysis needs again (a context can exist)."""
        return set() if self.on else set(self.stripped)
