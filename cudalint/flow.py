"""Path-sensitive flow over the IR, with per-function summaries applied at call sites.

The state is a set of facts that, once true, stay true ("CUDA's driver is initialized", "cupy was
imported"), each with the first witness that made it true. Such gen-only facts compose: the facts
at an event inside a function are the caller's facts at the call plus the function's own facts
before the event. So each function is walked once, from an empty state, and its summary says
(1) which facts may hold when it returns and (2) the events inside it that a check may want to
judge again in a caller's state ("exposed" events).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from cudalint.findings import Finding, Step
from cudalint.ir import Block, Branch, Event, Loop, MainGuard, ModuleIR, Try
from cudalint.project import Project

if TYPE_CHECKING:
    from cudalint.callgraph import ProjectIndex


@dataclass(frozen=True)
class Fact:
    """Why a fact holds: the witness steps, innermost cause first; `cause` names it for messages."""

    steps: tuple[Step, ...]
    cause: tuple[str, str, int]  # (code text, path, line) of what made it true, for messages
    # facts that, had they held when the walk that made this fact began, would have prevented it:
    # `torch.cuda.is_available()` initializes only while PYTORCH_NVML_BASED_CUDA_CHECK is not "1"
    # ("env_value:...=1", set by `import vllm`). A walk knows its own facts, not its callers': the
    # condition is settled where the function is called (`Analyzer.apply`, the checks' lookups).
    unless: tuple[str, ...] = ()

    def later(self, step: Step) -> "Fact":
        return Fact(self.steps + (step,), self.cause, self.unless)

    def describe(self, here: str) -> str:
        text, path, line = self.cause
        return f"{text} (line {line})" if path == here else f"{text} ({path}:{line})"


State = dict  # fact key -> Fact; treated as immutable (copied on write)

# The project modules whose top level already ran on a path: one frozenset of paths under this key
# (not one fact per module), because the set is as large as the import closure and a state is
# copied at every import, call and exposed event: per-module facts made each copy, each exposed
# event's saved state and each summary's facts grow with the number of modules (vllm: 24 GB).
# A frozenset is shared between the states that do not add to it, and joins by union.
IMPORTED = "imported"
_NONE: frozenset = frozenset()


def imported(state: State) -> frozenset:
    return state.get(IMPORTED, _NONE)


def _union(a: frozenset, b: frozenset) -> frozenset:
    if a is b or b <= a:
        return a
    if a <= b:
        return b
    return a | b


def join(states: Iterable[Optional[State]]) -> Optional[State]:
    out: Optional[State] = None
    for st in states:
        if st is None:
            continue
        if out is None:
            out = dict(st)
        else:
            for k, v in st.items():
                if k == IMPORTED:
                    out[k] = _union(out.get(k, _NONE), v)
                    continue
                old = out.setdefault(k, v)
                if old.unless and not v.unless:
                    out[k] = v  # one path made it hold unconditionally
    return out


def holds(fact: Optional[Fact], caller: Optional[State]) -> Optional[Fact]:
    """A callee's fact seen from the call: gone when the caller's state at the call prevented it."""
    if fact is None or not fact.unless or not caller:
        return fact
    return None if any(key in caller for key in fact.unless) else fact


def seen_from(caller: State, local: State, key: str) -> Optional[Fact]:
    """A fact at an event inside a callee: the caller's first, else the callee's own (settled at the call)."""
    return caller.get(key) or holds(local.get(key), caller)


def gen(state: State, keys: Iterable[str], fact: Fact) -> State:
    new = None
    for k in keys:
        if k not in state or (state[k].unless and not fact.unless):
            if k in state:  # it holds for sure now; the witness keeps the first cause
                fact = Fact(state[k].steps, state[k].cause)
            if new is None:
                new = dict(state)
            new[k] = fact
    return state if new is None else new


def add_imported(state: State, paths: frozenset) -> State:
    have = imported(state)
    both = _union(have, paths)
    if both is have:
        return state
    new = dict(state)
    new[IMPORTED] = both
    return new


# The call steps to an exposed event, outermost first, as a linked list: (step, rest) or None.
# Each caller prepends one step, sharing the callee's list; a tuple copied at every level made
# each summary's events cost the depth of the import chain above them (2 GB on 2,000 modules).
Link = Optional[tuple[Step, "Link"]]


@dataclass(frozen=True, slots=True)
class Seen:
    """The facts an event inside a callee saw, as `join([here, inner])` would hold them, without
    copying either: `here` is the caller's state at the call, `inner` what the callee saw (a state,
    or another Seen one call deeper); the callee's facts count where they hold from the call
    (cudalint.flow.holds). A copy per exposed event and caller was 48 million entries on vllm."""

    here: State
    inner: "Union[State, Seen]"
    depth: int = 1

    def get(self, key: str) -> Optional[Fact]:
        if key == IMPORTED:
            return None
        levels = []
        node: Union[State, Seen] = self
        while type(node) is Seen:
            levels.append(node.here)  # type: ignore[union-attr]
            node = node.inner  # type: ignore[union-attr]
        fact = node.get(key)  # type: ignore[union-attr]
        for here in reversed(levels):  # from the innermost call outwards
            fact = holds(fact, here)
            mine = here.get(key)
            if mine is not None and not (fact is not None and mine.unless and not fact.unless):
                fact = mine
        return fact


# a lookup walks the chain: past this many calls it is made one dict again (a generated project of
# 2,000 modules in import cycles spent 20x its time walking chains hundreds of calls deep)
_FLATTEN = 12


def seen(here: State, inner: "Union[State, Seen]") -> "Union[State, Seen]":
    depth = inner.depth + 1 if type(inner) is Seen else 1  # type: ignore[union-attr]
    chain = Seen(here, inner, depth)
    if depth < _FLATTEN:
        return chain
    keys: set[str] = set()
    node: Union[State, Seen] = chain
    while type(node) is Seen:
        keys.update(node.here)  # type: ignore[union-attr]
        node = node.inner  # type: ignore[union-attr]
    keys.update(node)  # type: ignore[arg-type]
    keys.discard(IMPORTED)
    flat = {}
    for key in keys:
        fact = chain.get(key)
        if fact is not None:
            flat[key] = fact
    return flat


@dataclass(frozen=True, slots=True)
class Exposed:
    """An event inside a function, with the steps that lead to it from the function's entry."""

    event: Event
    path: str
    link: Link  # call steps from the function's entry to the event, outermost first
    local: "Union[State, Seen]"  # facts the function itself established before the event

    @property
    def chain(self) -> tuple[Step, ...]:
        """The call steps as a tuple (built on each use: for messages and witnesses)."""
        out = []
        link = self.link
        while link is not None:
            out.append(link[0])
            link = link[1]
        return tuple(out)

    @property
    def nested(self) -> bool:
        """Judged in a caller's walk (through at least one call or import)."""
        return self.link is not None

    @property
    def outermost(self) -> Optional[Step]:
        return self.link[0] if self.link is not None else None


@dataclass(frozen=True)
class Summary:
    out: Optional[State]  # facts when it returns; None if it never returns normally
    exposed: tuple[Exposed, ...]


EMPTY = Summary(out={}, exposed=())

# A check judges an event given the facts that hold before it:
# check(analyzer, exposed_event, lookup, prefix_steps) -> Finding | None
# The finding is at the event's own location, and its code depends on the event only (not on the
# state): the first finding a check makes for an event is the one reported (Analyzer.judge).
Check = Callable[["Analyzer", Exposed, Callable[[str], Optional[Fact]], tuple[Step, ...]], Optional[Finding]]

# A derivation adds facts at an event, given the facts before it (still gen-only: "the fork server
# has started", "an environment variable was written after that"). It runs where the event happens
# and again in every caller's state, like a check:
# derive(event, path, link, lookup) -> [(key, Fact), ...]  (link: the call steps to the event, see Link)
Derive = Callable[[Event, str, "Link", Callable[[str], Optional[Fact]]], Iterable[tuple[str, Fact]]]


@dataclass
class _Walk:
    mod: ModuleIR
    include_main: bool
    exposed: list[Exposed] = field(default_factory=list)
    returns: list[State] = field(default_factory=list)
    loops: list[tuple[list[State], list[State]]] = field(default_factory=list)  # (breaks, continues)
    tries: list[list[State]] = field(default_factory=list)


class Analyzer:
    def __init__(
        self,
        project: Project,
        checks: dict[str, list[Check]],
        init_keys: Callable[[Event], list[str]],
        derive: Optional[dict[str, list[Derive]]] = None,
    ):
        self.project = project
        self.checks = checks
        self.derive = derive or {}
        self.init_keys = init_keys
        self.summaries: dict[tuple[str, str], Summary] = {}
        self.in_progress: set[tuple[str, str]] = set()
        self.findings: dict[tuple, Finding] = {}
        self.decided: set[tuple] = set()  # (check, path, event location) that already made its finding

    @cached_property
    def index(self) -> "ProjectIndex":
        """Call-graph questions about the project (cudalint.callgraph), built once per run for every check."""
        from cudalint.callgraph import ProjectIndex

        return ProjectIndex(self.project)

    # ---------- entry points -----------------------------------------------------------------
    def run(self) -> list[Finding]:
        for mod in sorted(self.project.modules, key=lambda m: m.path):
            self.walk_root(mod, mod.top, include_main=True)
            for qualname in mod.functions:
                self.function_summary(mod, qualname)
        return list(self.findings.values())

    def walk_root(self, mod: ModuleIR, block: Block, include_main: bool) -> Summary:
        w = _Walk(mod=mod, include_main=include_main)
        end = self.block(block, {}, w)
        return Summary(out=join([end] + w.returns), exposed=tuple(w.exposed))

    def module_summary(self, mod: ModuleIR) -> Summary:
        key = (mod.path, "")
        if key in self.summaries:
            return self.summaries[key]
        if key in self.in_progress:
            return EMPTY  # circular import: the partial module is what Python sees too
        self.in_progress.add(key)
        summary = self.walk_root(mod, mod.top, include_main=False)
        self.in_progress.discard(key)
        self.summaries[key] = summary
        return summary

    def function_summary(self, mod: ModuleIR, qualname: str) -> Summary:
        key = (mod.path, qualname)
        if key in self.summaries:
            return self.summaries[key]
        if key in self.in_progress:
            return EMPTY  # recursion: the first activation's effects are what matter
        fn = mod.functions.get(qualname)
        if fn is None:
            return EMPTY
        self.in_progress.add(key)
        summary = self.walk_root(mod, fn.body, include_main=False)
        self.in_progress.discard(key)
        self.summaries[key] = summary
        return summary

    # ---------- findings --------------------------------------------------------------------
    def report(self, finding: Finding) -> None:
        key = (finding.code, finding.path, finding.line, finding.column)
        self.findings.setdefault(key, finding)

    def judge(self, exposed: Exposed, state: State, prefix: tuple[Step, ...]) -> None:
        ev = exposed.event
        for check in self.checks.get(ev.kind, ()):
            # a check reports at its event, under one code per event (see Check): once it has, every
            # later judgment of that event (in another caller's state) would make a finding that
            # report() drops. Judging again anyway cost a finding and its witness per import path.
            decided = (check, exposed.path, ev.loc)
            if decided in self.decided:
                continue

            def lookup(key: str, _state=state, _local=exposed.local) -> Optional[Fact]:
                return seen_from(_state, _local, key)

            finding = check(self, exposed, lookup, prefix)
            if finding is not None:
                self.report(finding)
                if (finding.path, finding.line, finding.column) == (exposed.path, ev.loc[0], ev.loc[1]):
                    self.decided.add(decided)

    # ---------- walking -----------------------------------------------------------------------
    def block(self, block: Block, state: Optional[State], w: _Walk) -> Optional[State]:
        for node in block:
            if state is None:
                return None
            state = self.node(node, state, w)
        return state

    def node(self, node, state: State, w: _Walk) -> Optional[State]:
        if isinstance(node, Event):
            return self.event(node, state, w)
        if isinstance(node, Branch):
            arms = [self.block(arm, state, w) for arm in node.arms]
            if not node.exhaustive:
                arms.append(state)
            return join(arms)
        if isinstance(node, Loop):
            return self.loop(node, state, w)
        if isinstance(node, Try):
            return self.try_(node, state, w)
        if isinstance(node, MainGuard):
            return self.block(node.body if w.include_main else node.orelse, state, w)
        return state

    def loop(self, node: Loop, state: State, w: _Walk) -> Optional[State]:
        w.loops.append(([], []))
        first = self.block(node.body, state, w)
        breaks, continues = w.loops[-1]
        after1 = join([first] + continues)
        again = None
        if after1 is not None:
            # a second iteration sees what the first did; say so in the witness
            step = Step(w.mod.path, node.loc[0], "the loop runs again")
            again = {k: (v if k in state or k == IMPORTED else v.later(step)) for k, v in after1.items()}
            w.loops[-1] = (breaks, [])
            second = self.block(node.body, again, w)
            after2 = join([second] + w.loops[-1][1])
        else:
            after2 = None
        breaks = w.loops.pop()[0]
        normal = None if node.infinite else join([state, after1, after2])
        if normal is not None and node.orelse:
            normal = self.block(node.orelse, normal, w)
        return join([normal] + breaks)

    def try_(self, node: Try, state: State, w: _Walk) -> Optional[State]:
        w.tries.append([])
        body = self.block(node.body, state, w)
        raised = w.tries.pop()
        handler_entry = join([state, body] + raised)
        ends = [self.block(h, handler_entry, w) for h in node.handlers]
        ends.append(self.block(node.orelse, body, w) if body is not None else None)
        after = join(ends)
        if node.final:
            # finally runs on every path, also when the body raised an uncaught exception
            final_entry = after if after is not None else handler_entry
            result = self.block(node.final, final_entry, w)
            return result if after is not None else None
        return after

    def event(self, ev: Event, state: State, w: _Walk) -> Optional[State]:
        kind = ev.kind
        if kind == "init":
            unless, needs = ev.data[4] if len(ev.data) > 4 else ((), ())
            # `import diffusers` inside the diffusers package: the catalogue describes the installed
            # package, but the project's own copy is what runs, and its top level is walked instead
            own = len(ev.data) > 5 and self._own_copy(ev.data[5], w.mod)
            if not own and not any(key in state for key in unless) and all(key in state for key in needs):
                keys = self.init_keys(ev)
                note = f"{ev.text} initializes CUDA" + (f" ({ev.data[3]})" if len(ev.data) > 3 and ev.data[3] else "")
                fact = Fact(steps=(Step(w.mod.path, ev.loc[0], note),), cause=(ev.text, w.mod.path, ev.loc[0]), unless=tuple(unless))
                state = gen(state, keys, fact)
        elif kind == "import_lib":
            fact = Fact(steps=(Step(w.mod.path, ev.loc[0], f"{ev.text} imports it"),), cause=(ev.text, w.mod.path, ev.loc[0]))
            state = gen(state, [f"import:{m}" for m in ev.data], fact)
        elif kind == "import":
            for name in ev.data:
                target = self.project.resolve_module(name, w.mod)
                if target is None or target is w.mod:
                    continue
                # a module's top level runs once per process: a second import finds it in sys.modules
                if target.path in imported(state):
                    continue
                summary = self.module_summary(target)
                state = self.apply(summary, ev, state, w, f"{ev.text} runs {target.path}'s top level")
                if state is None:
                    return None
                state = add_imported(state, frozenset((target.path,)))
        elif kind == "call":
            target = self.project.resolve_symbol(ev.data[0], w.mod)
            if target is not None:
                found = self.project.function(*target)
                if found is not None:
                    mod, fn = found
                    summary = self.function_summary(mod, fn.qualname)
                    state = self.apply(summary, ev, state, w, f"{ev.text} calls {fn.qualname}()")
                    if state is None:
                        return None
        elif kind in ("exit",):
            return None
        elif kind == "raise":
            if w.tries:
                w.tries[-1].append(state)
            return None
        elif kind == "return":
            w.returns.append(state)
            return None
        elif kind == "break":
            if w.loops:
                w.loops[-1][0].append(state)
            return None
        elif kind == "continue":
            if w.loops:
                w.loops[-1][1].append(state)
            return None
        if kind in self.checks:
            exposed = Exposed(event=ev, path=w.mod.path, link=None, local={})
            self.judge(exposed, state, ())
        if kind in self.checks or kind in self.derive:
            w.exposed.append(Exposed(event=ev, path=w.mod.path, link=None, local=state))
        if kind in self.derive:
            state = self.derived(ev, w.mod.path, None, state, state.get)
        return state

    def _own_copy(self, name: str, mod: ModuleIR) -> bool:
        """The project holds the imported package and the importer lives in the tree that holds it
        (the package's own modules, its tools and tests; also DeepSpeed's sdist, where `op_builder/`
        sits beside `deepspeed/` and is installed inside it)."""
        import os

        target = self.project.resolve_module(name.split(".")[0], mod)
        if target is None:
            return False
        path = os.path.normpath(target.path)
        root = os.path.dirname(os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path)
        return os.path.normpath(mod.path).startswith(root + os.sep) if root else True

    def derived(self, ev: Event, path: str, link: Link, state: State, lookup) -> State:
        for key, fact in self._derive_facts(ev, path, link, lookup):
            state = gen(state, [key], fact)
        return state

    def _derive_facts(self, ev: Event, path: str, link: Link, lookup) -> Iterable[tuple[str, Fact]]:
        for derive in self.derive.get(ev.kind, ()):
            yield from derive(ev, path, link, lookup)

    def apply(self, summary: Summary, ev: Event, state: State, w: _Walk, note: str) -> Optional[State]:
        step = Step(w.mod.path, ev.loc[0], note)
        # facts derived in this caller's state from the callee's events so far, in their order
        # (the caller may hold facts the callee could not see, e.g. the start method it set)
        extra: State = {}
        for inner in summary.exposed:
            link = (step, inner.link)
            here = state if not extra else {**extra, **state}
            # judged in this caller's state: facts from here first, then the callee's own
            if inner.event.kind in self.checks:
                self.judge(Exposed(inner.event, inner.path, link, inner.local), here, ())
            if inner.event.kind in self.derive:
                before = lambda key, _s=here, _l=inner.local: seen_from(_s, _l, key)  # noqa: E731
                for key, fact in self._derive_facts(inner.event, inner.path, link, before):
                    if key not in state:
                        extra.setdefault(key, fact)
            if len(w.exposed) < 200:
                # the callee's facts that hold from this call (cudalint.flow.holds), joined with the caller's
                # the callee's facts that hold from this call, under the caller's (cudalint.flow.Seen)
                w.exposed.append(Exposed(inner.event, inner.path, link, seen(here, inner.local)))
        if summary.out is None:
            return None
        added = {
            k: v.later(step)
            for k, v in summary.out.items()
            if k != IMPORTED and (k not in state or (state[k].unless and not v.unless)) and holds(v, state) is not None
        }
        for key, fact in extra.items():
            added.setdefault(key, fact)
        if added:
            state = dict(state)
            state.update(added)
        return add_imported(state, imported(summary.out))
