"""The intermediate representation a module is summarized into.

A module becomes a tree of plain, frozen data: the effects its statements have (in evaluation
order) and the structured control flow around them. The checks never see a syntax tree, so the IR
can be cached and shared between the CLI and the flake8 plugin.
"""
from __future__ import annotations

from typing import Iterator, Optional, Union

from cudalint.core.record import factory, record

# (line, column, end_line, end_column); columns 1-based
Loc = tuple[int, int, int, int]


@record(slots=True)
class Event:
    """A leaf effect.

    kind / data:
    - "init": (api_name, library, level, note): a call that initializes CUDA
    - "env_write": (variable or "", value_repr, value_type, exact_str, labels): a write to the process environment
    - "import": (module, ...): candidate project modules whose top level runs here
    - "import_lib": (module,): a catalogued library module is imported
    - "call": (symbol,): a call of a project function ("f", "C.m", "pkg.mod.f")
    - "exit": (how,): the path ends here (sys.exit(), os._exit())
    - "raise": (): an exception is raised
    - "return": (): the function returns
    - "break" / "continue": ()
    Threads (cudalint.analysis.threads; the flow engine ignores them). A `ref` names where an object lives:
    "v:<function qualname>:<name>" ("v::<name>" a module global), "a:<class>.<attr>" (an instance
    attribute), "m:<qualified name>" (another module's global), "c:<call symbol>" (a call's result).
    - "bind": (target ref, origin): an assignment; origin is "new:<api>" (a catalogued constructor),
      "lock:<api>:<1|0>" (a lock; 0 when its count is above one), "stream:<ref>" (a lazy stream of
      that object), "c:<symbol>" (a project call's result) or "ref:<ref>" (another object)
    - "return": (origin,) when the returned value has an origin (see "bind")
    - "llama_use": (method, receiver ref, stream): a call that may use a llama context; stream is
      "" (not streamed), "1" (stream=True, consumed elsewhere), "iter" (iterated right here),
      "bound:<name>" (kept in a local that "llama_iter" events consume), "?" (not a literal)
    - "llama_iter": (receiver ref, name): a stream kept in `name` is iterated here
    - "llama_new": (api,): a catalogued constructor of an object that owns a llama context
    - "thread_start": (api, target symbol, receiver ref, object ref, many, waits, arg refs,
      concurrency): a callable handed to another thread
    - "lock_enter" / "lock_exit": (ref,): `with x:` / `x.acquire()` and the matching exit
    - "concurrency": (api, value): a framework-wide concurrency setting (gradio's queue)
    - "gpu_index": (sink, api_name, labels, arg_text): a device index passed where a CUDA ordinal
      (sink "cuda") or an NVML index (sink "nvml") is expected; labels say where the value came from.
      A subscript of a per-GPU list in NVML order by a CUDA ordinal has api_name "[]" and two more
      items: the list's text and its labels (cudalint.summary.label_effects.subscript_sink)
    - "process": (api_name, method, works, how): a child process starts here (cudalint.summary.labels)
    - "child_work": (pool_line, symbols): work handed to the pool/executor created at pool_line
    - "start_method": (method,): multiprocessing.set_start_method(method)
    """

    kind: str
    loc: Loc
    text: str = ""
    data: tuple = ()


@record(slots=True)
class Branch:
    """if/elif/else, match, a conditional expression: exactly one arm runs.

    `exhaustive` is False when no arm may run (an `if` without `else`).
    """

    arms: tuple["Block", ...]
    exhaustive: bool
    # the test's value while modules are imported, when a runtime-state predicate decides it
    # (cudalint.summary.import_state): None for most tests; only the import-time walk (CUD003) reads it
    at_import: Optional[bool] = None


@record(slots=True)
class Loop:
    """for/while: the body runs zero or more times; `infinite` for `while True`."""

    body: "Block"
    orelse: "Block"
    loc: Loc
    infinite: bool = False


@record(slots=True)
class Try:
    body: "Block"
    handlers: tuple["Block", ...]
    orelse: "Block"
    final: "Block"


@record(slots=True)
class MainGuard:
    """`if __name__ == "__main__":` at module level: runs only when the module is the program."""

    body: "Block"
    orelse: "Block"


Node = Union[Event, Branch, Loop, Try, MainGuard]
Block = tuple[Node, ...]


@record(slots=True, eq=False)
class Label:
    """A value label (cudalint.summary.labels): where a value in a given numbering or role came from."""

    kind: str  # "nvml" | "cuda" | "ret" | "context" | "process"
    origin: object  # the syntax node while summarizing; its line in the IR
    text: str  # code of the origin, for messages
    detail: str = ""
    api: str = ""
    works: tuple[str, ...] = ()
    starts_on: tuple[str, ...] = ()
    rtype: str = ""
    inner: tuple = ()  # "return": the labels of the returned value

    def key(self) -> tuple:
        return (self.kind, self.origin if isinstance(self.origin, int) else id(self.origin), self.detail, self.works)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Label) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


@record(slots=True)
class Function:
    qualname: str  # "f", "C.m", "f.inner"
    loc: Loc
    body: Block
    is_async: bool = False
    decorators: tuple[str, ...] = ()  # qualified names of the decorators, "" when unknown
    params: tuple[str, ...] = ()
    is_generator: bool = False
    returns: tuple = ()  # cudalint.summary.labels.Label of the values it returns (CUD004's return-value flow)


@record(slots=True)
class ClassInfo:
    name: str
    bases: tuple[str, ...]  # symbols as in Event("call") data: local names or qualified names


@record(slots=True)
class ModuleIR:
    path: str
    module: str  # dotted name, "" when unknown
    top: Block
    functions: dict[str, Function] = factory(dict)
    classes: dict[str, ClassInfo] = factory(dict)
    noqa: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (line, codes); () suppresses every code
    # a catalogued llama.cpp constructor is called here ("llama_new", or a "new:" origin): without
    # one anywhere in the project, no object of the thread model (cudalint.analysis.threads) can exist
    makes_llama: bool = False
    # names the module's top level binds by import, to the absolute dotted name they stand for
    # (`from .real import init` in pkg/__init__.py: ("init", "pkg.real.init")): `from pkg import init`
    # elsewhere reaches pkg.real's function through them (cudalint.core.project.Project.function)
    reexports: tuple[tuple[str, str], ...] = ()


def iter_events(block: Block) -> Iterator[Event]:
    """The events of a body in source order, in every branch (not nested function bodies)."""
    for node in block:
        if isinstance(node, Event):
            yield node
        elif isinstance(node, Branch):
            for arm in node.arms:
                yield from iter_events(arm)
        elif isinstance(node, Loop):
            yield from iter_events(node.body)
            yield from iter_events(node.orelse)
        elif isinstance(node, Try):
            yield from iter_events(node.body)
            for h in node.handlers:
                yield from iter_events(h)
            yield from iter_events(node.orelse)
            yield from iter_events(node.final)
        elif isinstance(node, MainGuard):
            yield from iter_events(node.body)
            yield from iter_events(node.orelse)
