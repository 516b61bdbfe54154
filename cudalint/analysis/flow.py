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
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from cudalint.core.findings import Finding, Step
from cudalint.core.ir import Block, Branch, Event, Loop, MainGuard, ModuleIR, Try
from cudalint.core.project import Project
from cudalint.summary.driven import DRIVES
from cudalint.analysis.facts import Fact, IMPORTED, add_imported, gen, holds, imported, join, seen, seen_from
from cudalint.analysis.replay import Reads, Replay, Watched
from cudalint.analysis.exposed import CAP, Bundle, Entry, Exposed, Link, Outbox, Wrap, opened as inner_entries

if TYPE_CHECKING:
    from cudalint.analysis.facts import State

if TYPE_CHECKING:
    from cudalint.analysis.callgraph import ProjectIndex


@dataclass(frozen=True)
class Summary:
    out: Optional[State]  # facts when it returns; None if it never returns normally
    exposed: tuple[Entry, ...]


EMPTY = Summary(out={}, exposed=())


class Cancelled(Exception):
    """The caller no longer wants this analysis (the language server: a newer edit of the project is
    waiting); raised between two walks, leaving nothing half-written: the analysis writes nothing."""


# A check judges an event given the facts that hold before it:
# check(analyzer, exposed_event, lookup, prefix_steps) -> Finding | None
# The finding is at the event's own location, and its code depends on the event only (not on the
# state): the first finding a check makes for an event is the one reported (Analyzer.judge).
Check = Callable[["Analyzer", Exposed, Callable[[str], Optional[Fact]], tuple[Step, ...]], Optional[Finding]]

# A derivation adds facts at an event, given the facts before it (still gen-only: "the fork server
# has started", "an environment variable was written after that"). It runs where the event happens
# and again in every caller's state, like a check, and depends on nothing else (not on the call
# steps to the event: cudalint.analysis.replay):
# derive(event, path, lookup) -> [(key, Fact), ...]
Derive = Callable[[Event, str, Callable[[str], Optional[Fact]]], Iterable[tuple[str, Fact]]]


@dataclass
class _Walk:
    mod: ModuleIR
    include_main: bool
    out: Outbox
    exposes: bool = True  # a summary's walk; a root walk's events are judged and nobody reads them after
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
        imports: Optional[frozenset[str]] = None,
        sparse: Optional[dict[str, tuple[Callable[[Event], bool], str, Callable[[Event], object]]]] = None,
        cancelled: Optional[Callable[[], bool]] = None,
    ):
        self.project = project
        self.cancelled = cancelled  # asked before each walk: True ends the run (`Cancelled`)
        self.imports = imports  # the "import:<module>" facts worth making (cudalint.checks.watched); None: all
        # kind -> (which events of it no check judges, the one fact their derivations depend on, what
        # else they depend on): cudalint.checks.fork.sparse_events
        self.sparse = sparse or {}
        self.checks = checks
        # per kind: (check, the events it wants or None, whether it is local), its marks read once
        # (cudalint.analysis.check_marks); and those a caller judges a callee's event with (not own_only)
        self.marked_checks = {kind: [(c, getattr(c, "wants", None), getattr(c, "local", False)) for c in all_] for kind, all_ in checks.items()}
        self.nested_checks = {
            kind: kept for kind, all_ in self.marked_checks.items() if (kept := [m for m in all_ if getattr(m[0], "nested", True)])
        }
        self.derive = derive or {}
        # per kind: the derivations that look facts up, and those that make theirs from the event alone
        self.derive_split = {
            kind: ([d for d in ds if not getattr(d, "event_only", False)], [d for d in ds if getattr(d, "event_only", False)])
            for kind, ds in self.derive.items()
        }
        self.init_keys = init_keys
        self.summaries: dict[tuple[str, str], Summary] = {}
        self.in_progress: set[tuple[str, str]] = set()
        self.findings: dict[tuple, Finding] = {}
        self.decided: set[tuple] = set()  # (check, path, event location) that already made its finding
        self.replay = Replay()  # nested judgments another caller's state cannot change
        # a module's bit in the sets of modules whose top level ran (cudalint.analysis.facts.IMPORTED)
        self.bit: dict[str, int] = {path: 1 << i for i, path in enumerate(sorted({m.path for m in project.modules}))}

    @cached_property
    def index(self) -> "ProjectIndex":
        """Call-graph questions about the project (cudalint.analysis.callgraph), built once per run for every check."""
        from cudalint.analysis.callgraph import ProjectIndex

        return ProjectIndex(self.project)

    # ---------- entry points -----------------------------------------------------------------
    def run(self) -> list[Finding]:
        for mod in sorted(self.project.modules, key=lambda m: m.path):
            self.walk_root(mod, mod.top, include_main=True, exposes=False)
            for qualname in mod.functions:
                self.function_summary(mod, qualname)
        return list(self.findings.values())

    def walk_root(self, mod: ModuleIR, block: Block, include_main: bool, start: Optional[dict] = None, exposes: bool = True) -> Summary:
        if self.cancelled is not None and self.cancelled():
            raise Cancelled
        w = _Walk(mod=mod, include_main=include_main, out=Outbox(self.sparse), exposes=exposes)
        end = self.block(block, start or {}, w)
        return Summary(out=join([end] + w.returns), exposed=tuple(w.out.entries))

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
        for check, wants, local in self.marked_checks.get(ev.kind, ()):
            # a check reports at its event, under one code per event (see Check): once it has, every
            # later judgment of that event (in another caller's state) would make a finding that
            # report() drops. Judging again anyway cost a finding and its witness per import path.
            decided = (check, exposed.path, ev.loc)
            if decided in self.decided or self._unwanted(wants, ev, decided):
                continue

            def lookup(key: str, _state=state, _local=exposed.local) -> Optional[Fact]:
                return seen_from(_state, _local, key)

            self._record(check(self, exposed, lookup, prefix), decided, local)

    def judge_nested(self, inner: Exposed, link: Link, fresh: int, reads: Reads) -> bool:
        """The callee's exposed event `inner`, reached through `link`, judged in a caller's state, as
        `judge` does, with the caller's lookup `reads`. True when no check made a finding that another
        state could make differently, nor asked where the event was reached from (cudalint.analysis.replay)."""
        ev = inner.event
        same = True
        watched = None
        for check, wants, local in self.nested_checks[ev.kind]:
            decided = (check, inner.path, ev.loc)
            if decided in self.decided or self._unwanted(wants, ev, decided):
                continue
            if watched is None:
                watched = Watched(Exposed(ev, inner.path, link, inner.local, fresh))
            same = self._record(check(self, watched, reads, ()), decided, local) and same
        return same and (watched is None or not watched.linked)

    def _unwanted(self, wants: Optional[Callable[[Event], bool]], ev: Event, decided: tuple) -> bool:
        """The check finds nothing for this event in any state (cudalint.analysis.check_marks.judges): decided now."""
        if wants is None or wants(ev):
            return False
        self.decided.add(decided)
        return True

    def _record(self, finding: Optional[Finding], decided: tuple, local: bool) -> bool:
        """Report a judgment's finding and decide its event where no other state can change that.
        False when the finding is away from the event (another state may make another one)."""
        if finding is None:
            if local:
                self.decided.add(decided)  # (any other state would answer the same)
            return True
        self.report(finding)
        _check, path, loc = decided
        if (finding.path, finding.line, finding.column) != (path, loc[0], loc[1]):
            return False
        self.decided.add(decided)
        return True

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
                fact = Fact(made=(Step(w.mod.path, ev.loc[0], note),), cause=(ev.text, w.mod.path, ev.loc[0]), unless=tuple(unless))
                state = gen(state, keys, fact)
        elif kind == "import_lib":
            keys = [f"import:{m}" for m in ev.data]
            if self.imports is not None:
                keys = [k for k in keys if k in self.imports]
            if keys:
                fact = Fact(made=(Step(w.mod.path, ev.loc[0], f"{ev.text} imports it"),), cause=(ev.text, w.mod.path, ev.loc[0]))
                state = gen(state, keys, fact)
        elif kind == "import":
            for name in ev.data:
                target = self.project.resolve_module(name, w.mod)
                if target is None or target is w.mod:
                    continue
                # a module's top level runs once per process: a second import finds it in sys.modules
                if imported(state) & self.bit[target.path]:
                    continue
                summary = self.module_summary(target)
                if summary is not EMPTY:  # (an import in a cycle, and every import CUD003's walk makes: nothing to apply)
                    state = self.apply(summary, ev, state, w, f"{ev.text} runs {target.path}'s top level", target.path)
                    if state is None:
                        return None
                state = add_imported(state, self.bit[target.path])
        elif kind == "call":
            target = self.project.resolve_symbol(ev.data[0], w.mod)
            if target is not None:
                found = self.project.function(*target)
                # calling a generator function builds the generator and runs none of its body: it
                # runs where the call's result is iterated or entered (cudalint.summary.driven)
                if found is not None and (not found[1].is_generator or (len(ev.data) > 1 and ev.data[1] == DRIVES)):
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
        if w.exposes and (kind in self.nested_checks or kind in self.derive):
            w.out.add(Exposed(event=ev, path=w.mod.path, link=None, local=state))
        if kind in self.derive:
            state = self.derived(ev, w.mod.path, state)
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

    def derived(self, ev: Event, path: str, state: State) -> State:
        for derive in self.derive[ev.kind]:
            for key, fact in derive(ev, path, state.get):
                state = gen(state, [key], fact)
        return state

    def apply(self, summary: Summary, ev: Event, state: State, w: _Walk, note: str, module: Optional[str] = None) -> Optional[State]:
        """The callee's `summary` at the call (or import of `module`, a path) `ev`, in `state`."""
        step = Step(w.mod.path, ev.loc[0], note)
        if not summary.exposed:  # (most calls: nothing to judge here or pass up, only the facts it returns with)
            return self._after(summary, state, step, {})
        done = imported(state)
        bit = self.bit[module] if module is not None else 0
        marks: dict[int, int] = {}  # an event's `fresh`, with `module` added: shared
        # facts derived in this caller's state from the callee's events so far, where the caller's facts
        # changed them (e.g. the start method it set); the others the callee made itself, on its own paths
        extra: State = {}
        views: dict[int, object] = {}  # id(callee's state) -> seen(here, it): events in a row share a state
        here: State = state
        # the callee's events this state cannot change (cudalint.analysis.replay): only exposed again
        settled, settled_by = self.replay.settled(summary, state)
        out = w.out
        if not (w.exposes and out.count < CAP) and settled == (1 << len(summary.exposed)) - 1:
            return self._after(summary, state, step, extra)
        settles, keys = 0, set()  # events that settle here (judged, or settled below), and the keys they read
        run: list[Entry] = []  # carried on unjudged: exposed as one (cudalint.analysis.exposed.Bundle)
        counted = 0  # the events `run` stands for
        run_by: Optional[frozenset[str]] = None  # what settled them for the whole summary, or None: their own keys
        # the entries still to decide, with their place in `summary.exposed` (-1: inside a bundle opened
        # here) and what settles them for the whole summary (a bundle opened here that had settled)
        todo = [(enumerate(summary.exposed), None)]
        while todo:
            i, inner = next(todo[-1][0], (-1, None))
            if inner is None:
                todo.pop()
                continue
            if done & inner.fresh and type(inner) is Exposed:
                continue  # inside the top level of a module this path imported already: it does not run again
            if len(here) != len(state) + len(extra):  # (extra holds only keys state lacks; `run` is empty: a judgment grew it)
                here = {**extra, **state}
                views.clear()
                if settled and not extra.keys().isdisjoint(settled_by):
                    settled = 0  # (the events settled by a state lacking what the call added since)
            forced = todo[-1][1]
            own = False  # settled by its own keys, not for the whole summary
            if i >= 0 and settled >> i & 1:
                carried = settled_by  # what settles the event for the caller's callers
            elif forced is not None:
                carried = forced
            elif inner.settled is not None and here.keys().isdisjoint(inner.settled):
                carried, own = inner.settled, True
                if i >= 0:
                    settles |= 1 << i
                    keys.update(carried)
            else:
                carried = None
            if type(inner) is Bundle and (carried is None or done & inner.fresh):
                # a key that settled one of its events is in this state, or one sits in a module imported
                # already: each is decided alone, as if it had been exposed alone
                todo.append((((-1, e) for e in inner_entries(inner, done)), None if own else carried))
                continue
            exposing = w.exposes and out.count + counted < CAP
            if carried is not None and exposing and not out.is_sparse(inner):
                by = None if own else carried
                if by is not run_by:
                    counted = out.flush(run, counted, Wrap(step, bit, here, run_by), views)
                    run_by = by
                left = CAP - out.count - counted
                run.append(inner if inner.count <= left else Bundle(inner.inner, inner.wraps, inner.settled, inner.fresh, left))
                counted += min(inner.count, left)
                continue
            counted = out.flush(run, counted, Wrap(step, bit, here, run_by), views)
            if carried is None or exposing:
                fresh = inner.fresh
                if module is not None:
                    fresh = marks.get(fresh) or marks.setdefault(fresh, fresh | bit)
                link = (step, inner.link)
            if carried is None:
                # judged in this caller's state: facts from here first, then the callee's own
                kind = inner.event.kind
                reads = Reads(here, inner.local)
                same = self.judge_nested(inner, link, fresh, reads) if kind in self.nested_checks else True
                reading, fixed = self.derive_split.get(kind, ((), ()))
                made = [pair for derive in reading for pair in derive(inner.event, inner.path, reads)]
                if reads.callee_only():
                    if same:
                        if i >= 0:
                            settles |= 1 << i
                            keys.update(reads.keys)
                        carried = self.replay.keys(reads.keys)
                else:
                    # (otherwise the callee made these facts too, where they hold on its paths)
                    made += [pair for derive in fixed for pair in derive(inner.event, inner.path, reads)]
                    for key, fact in made:
                        if key not in state:
                            extra.setdefault(key, fact)
            if exposing:
                # the callee's facts that hold from this call, under the caller's (cudalint.analysis.facts.Seen)
                view = views.get(id(inner.local))
                if view is None:
                    view = views[id(inner.local)] = seen(here, inner.local)
                out.add(Exposed(inner.event, inner.path, link, view, fresh, carried))
        out.flush(run, counted, Wrap(step, bit, here, run_by), views)
        if settles:
            self.replay.settle(summary, settles, keys)
        return self._after(summary, state, step, extra)

    def _after(self, summary: Summary, state: State, step: Step, extra: State) -> Optional[State]:
        """The caller's state after the call: the callee's facts at its returns, and `extra`."""
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
