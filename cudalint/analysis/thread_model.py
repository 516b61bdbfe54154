"""The thread model's data: where code runs (contexts), which objects it shares, what it does
with them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from cudalint.core.findings import Step
from cudalint.core.ir import Block, Branch, Event, Loop, MainGuard, Try


FnKey = tuple[str, str]  # (module path, function qualname); "" is the module's top level
Key = tuple  # ("g", path, name) | ("l", path, fn, name) | ("a", path, cls, attr) | ("r", path, fn)


@dataclass(frozen=True)
class Site:
    event: Event
    held: frozenset  # lock refs held around the event (in the function's own names)
    in_loop: bool


@dataclass(frozen=True)
class Context:
    """One way code comes to run: the main thread, or the threads started at one place."""

    id: str
    many: bool  # several runs of it may overlap
    locks: frozenset  # lock identities held on every path from the entry
    steps: tuple[Step, ...]  # how the code comes to run here, entry first
    how: str  # for messages: "worker threads of a ThreadPoolExecutor"
    parent: Optional[FnKey] = None  # the function whose run started it
    spawn_many: bool = False  # several at once within one run of `parent`
    own_instance: Optional[tuple[str, str]] = None  # (path, class): each run has its own instance
    # several runs of this coroutine are in flight at once on the event loop (an async endpoint,
    # `asyncio.gather(*(f(x) for x in xs))`): its direct work never overlaps, the threads it starts do
    tasks: bool = False
    # the starting code waits for the work (`await asyncio.to_thread(...)`): two such starts in one
    # run of a coroutine run one after the other
    waited: bool = False


MAIN = Context(id="main", many=False, locks=frozenset(), steps=(), how="the main thread")


@dataclass(frozen=True)
class Obj:
    identity: Key
    cls: str  # catalogue class whose methods touch the context
    created: Step
    api: str


@dataclass(frozen=True)
class Use:
    obj: Obj
    ctx: Context
    locks: frozenset
    fn: FnKey
    event: Event
    method: str
    path: str


@dataclass(frozen=True)
class Creation:
    ctx: Context
    locks: frozenset
    fn: FnKey
    event: Event
    path: str


@dataclass
class ThreadModel:
    uses: list[Use] = field(default_factory=list)
    creations: list[Creation] = field(default_factory=list)


def sequential(a: Context, b: Context) -> bool:
    """Two waited starts of one run of the same function (`await to_thread(f, x)` then
    `await to_thread(f, y)`): the second starts after the first is done."""
    return a.waited and b.waited and a.parent == b.parent and not (a.spawn_many or b.spawn_many)


def flatten(block: Block, held: frozenset = frozenset(), in_loop: bool = False, out: Optional[list] = None) -> tuple[list[Site], frozenset]:
    """The events of a body in order, each with the lock refs every path holds around it."""
    out = [] if out is None else out
    for node in block:
        if isinstance(node, Event):
            if node.kind == "lock_enter":
                held = held | {node.data[0]}
            elif node.kind == "lock_exit":
                held = held - {node.data[0]}
            else:
                out.append(Site(node, held, in_loop))
        elif isinstance(node, Branch):
            ends = [flatten(arm, held, in_loop, out)[1] for arm in node.arms]
            if not node.exhaustive:
                ends.append(held)
            held = frozenset.intersection(*ends) if ends else held
        elif isinstance(node, Loop):
            flatten(node.body, held, True, out)
            flatten(node.orelse, held, in_loop, out)
        elif isinstance(node, Try):
            body = flatten(node.body, held, in_loop, out)[1]
            ends = [flatten(h, held, in_loop, out)[1] for h in node.handlers]
            ends.append(flatten(node.orelse, body, in_loop, out)[1])
            after = frozenset.intersection(*ends)
            held = flatten(node.final, after, in_loop, out)[1] if node.final else after
        elif isinstance(node, MainGuard):
            held = flatten(node.body, held, in_loop, out)[1]
    return out, held
