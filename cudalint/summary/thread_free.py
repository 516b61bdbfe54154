"""Summaries without the thread model's events: what `strip` leaves of a summary, and what the
summarizer makes at once when asked for a lean summary (`summarize(..., lean=True)`), skipping the
work whose only product `strip` would remove.

The thread model (cudalint.analysis.threads) is the only reader of these events, and it runs only
when some module makes a llama.cpp context (`ModuleIR.makes_llama`, which a lean summary still
holds exactly: the catalogued call's own effects set it). cudalint.engine.lean decides when a run
may read lean summaries.
"""
from __future__ import annotations

from cudalint.core.ir import Branch, Event, Loop, MainGuard, ModuleIR, Try

# the event kinds only the thread model reads (cudalint.core.ir.Event), and "return"'s data (its
# origin, read by cudalint.analysis.threads); a plain "return" ends a path for the flow engine
THREAD_ONLY = frozenset(
    {"bind", "call_refs", "llama_use", "llama_iter", "lock_enter", "lock_exit", "thread_start", "concurrency", "concurrent_use"}
)


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
            if not any(arms):
                # nothing in any arm: a step that changes no state. Dropped whether stripping emptied
                # it or not, as the lean summarizer never makes one of an expression (`a and b()`,
                # `x if c else y`) whose only events were the thread model's: both forms are one
                changed = True
                continue
            if any(a is not b for a, b in zip(arms, node.arms)):
                node = Branch(arms, node.exhaustive, node.at_import)
                changed = True
        elif t is Loop:
            body, orelse = _block(node.body), _block(node.orelse)
            if not body and not orelse and not node.infinite:
                changed = True  # (a comprehension's loop too: as the branch above)
                continue
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
    from cudalint.core.record import replace

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
