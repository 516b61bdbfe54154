"""The events a summary hands its callers to judge again ("exposed"), one by one or in bundles.

A caller passes a callee's event up unjudged when the event settled below (cudalint.analysis.replay)
and its own state lacks every key that settled it. In an import cycle with star imports nearly
every module re-exposes every event of the modules it imports: each summary held one `Exposed` per
event of its whole import closure (up to the cap of 200), and the work grew with the project's size
times its closure's (the generated project of benchmarks/adversarial.py: 114,000 exposures for
2,000 modules, 3.5 times the analysis for twice the modules). A caller now passes such a run of
events up as one `Bundle`: the callee's entries as they are, and how the call wraps them (its step,
the module it imports, the caller's state). A caller above opens a bundle only where its own state
holds a key that settled one of them, or where it imported a module one of them sits in; there it
judges each event exactly as if it had been exposed alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional, Union

from cudalint.core.findings import Step
from cudalint.core.ir import Event
from cudalint.analysis.facts import seen

if TYPE_CHECKING:
    from cudalint.analysis.facts import Seen, State

# The call steps to an exposed event, outermost first, as a linked list: (step, rest) or None.
# Each caller prepends one step, sharing the callee's list; a tuple copied at every level made
# each summary's events cost the depth of the import chain above them (2 GB on 2,000 modules).
Link = Optional[tuple[Step, "Link"]]


@dataclass(frozen=True, slots=True)
class Exposed:
    """An event inside a function, with the steps that lead to it from the function's entry."""

    event: Event
    path: str
    link: Link  # call steps from the function's entry to the event, outermost first
    local: "Union[State, Seen]"  # facts the function itself established before the event
    # the project modules (paths) whose top level, run by an import on the way, holds the event: it
    # happens only where none of them was imported before (a module's top level runs once per process;
    # a later import, also a function-local one, finds it in sys.modules and runs nothing)
    fresh: int = 0  # (a bit per module: cudalint.analysis.facts.IMPORTED)
    # judged in a caller's state below (Analyzer.apply) from the callee's facts alone: a state lacking
    # these keys gets the same answers (cudalint.analysis.replay), at this level and every one above
    settled: Optional[frozenset[str]] = None

    count = 1  # (the events it stands for, as a Bundle's count)

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


@dataclass(frozen=True, slots=True)
class Wrap:
    """One call a bundle's events were passed up through, unjudged: what exposing each alone there
    would have added to it (Analyzer.apply)."""

    step: Step  # prepended to its link
    bit: int  # the module the call imports (0: a function call), added to its `fresh`
    here: "State"  # the caller's state at the call, put over its facts (cudalint.analysis.facts.seen)
    # what settled it there when it was settled for the whole summary (Replay.settled), else None: its own keys
    settled: Optional[frozenset[str]]


# the wraps of a bundle, outermost first, as a linked list: (wrap, rest) or None
Wraps = Optional[tuple[Wrap, "Wraps"]]


@dataclass(frozen=True, slots=True)
class Bundle:
    """The first `count` events of `inner` (a callee's entries, Exposed or Bundle, in order), each as
    exposing it through `wraps` one call at a time would have made it."""

    inner: tuple
    wraps: Wraps
    settled: frozenset[str]  # every key that settled one of them: a state lacking all passes it on whole
    fresh: int  # every module one of them sits in
    count: int


Entry = Union[Exposed, Bundle]


def wrapped(entries: list, wrap: Wrap, count: int) -> Entry:
    """`entries` (carried, in order) passed up through `wrap`, as one entry of `count` events."""
    if len(entries) == 1 and type(entries[0]) is Bundle:
        only: Bundle = entries[0]
        return Bundle(only.inner, (wrap, only.wraps), wrap.settled or only.settled, only.fresh | wrap.bit, count)
    settled: frozenset[str] = frozenset().union(*(e.settled for e in entries)) if wrap.settled is None else wrap.settled
    fresh = wrap.bit
    for e in entries:
        fresh |= e.fresh
    return Bundle(tuple(entries), (wrap, None), settled, fresh, count)


def opened(bundle: Bundle, done: int = 0) -> Iterator[Entry]:
    """The entries `bundle` stands for, one level down: its Exposed made as each caller on the way
    would have exposed them, its bundles wrapped the same way (still closed). `done`: the modules the
    caller's path imported already (cudalint.analysis.facts.imported). An event in one of them does
    not run again, and the caller skips it: it is not made (vllm's cold run: 15,713 of the 15,905
    events its opened bundles held)."""
    wraps: list[Wrap] = []
    node = bundle.wraps
    while node is not None:
        wraps.append(node[0])
        node = node[1]
    override = next((w.settled for w in wraps if w.settled is not None), None)  # (the outermost)
    inward = wraps[::-1]
    bits = 0
    for w in wraps:
        bits |= w.bit
    if done & bits:
        return  # (every event in it sits in a module imported on the way)
    views: dict[int, object] = {}
    left = bundle.count
    for entry in bundle.inner:
        if left <= 0:
            return
        if type(entry) is Bundle:
            inner: Bundle = entry
            outer = inner.wraps
            for w in inward:
                outer = (w, outer)
            count = min(inner.count, left)
            yield Bundle(inner.inner, outer, override or inner.settled, inner.fresh | bits, count)
            left -= count
            continue
        e: Exposed = entry
        if done & e.fresh:
            left -= 1
            continue
        link = e.link
        local = views.get(id(e.local))
        if local is None:
            local = e.local
            for w in inward:
                local = seen(w.here, local)
            views[id(e.local)] = local
        for w in inward:
            link = (w.step, link)
        yield Exposed(e.event, e.path, link, local, e.fresh | bits, override or e.settled)
        left -= 1


def events(entries: "tuple[Entry, ...] | list[Entry]") -> list[Exposed]:
    """Every event the entries stand for, bundles opened all the way (for tests)."""
    out: list[Exposed] = []
    stack = [iter(entries)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif type(entry) is Bundle:
            stack.append(opened(entry))
        else:
            out.append(entry)
    return out


# the events a summary exposes, at most, beyond those of its own function: past it, a callee's
# settled events are not passed up
CAP = 200


@dataclass
class Outbox:
    """What one walk exposes to its callers, in order (cudalint.analysis.flow.Summary.exposed)."""

    # kind -> (which events of it no check judges, the one fact their derivations depend on, what
    # else they depend on): cudalint.checks.fork.sparse_events
    rules: dict
    entries: list[Entry] = field(default_factory=list)
    count: int = 0  # the events `entries` stands for (a bundle stands for many)
    # the sparse events exposed since the last other exposed event: 0 none, 1 one, 2 one whose
    # state held its condition; and every sparse event exposed (see `add`)
    sparse: int = 0
    sparse_seen: set = field(default_factory=set)

    def add(self, exposed: Exposed) -> None:
        """Add to the events callers judge, unless it is a sparse event that adds nothing there. No
        check judges a sparse event; its derivations either depend on nothing but the event's data
        (the first exposure of the same data makes them: the first cause is kept), or make one fact, first
        cause kept, from one condition (the fork server started: cudalint.checks.fork.sparse_events).
        Of a run of sparse events with no other exposed event between (the condition cannot change in
        a caller's state along it), that one can come only from the run's first or from the first whose
        own state holds the condition. vllm: every importer of `vllm` exposed its two environment
        writes again, 1.3 million exposures of 30,000 events."""
        ev = exposed.event
        rule = self.rules.get(ev.kind)
        if rule is None or not rule[0](ev):
            self.sparse = 0
            self.entries.append(exposed)
            self.count += 1
            return
        has = exposed.local.get(rule[1]) is not None
        same = (ev.kind, rule[2](ev))
        if self.sparse == 0 or (self.sparse == 1 and has) or same not in self.sparse_seen:
            self.entries.append(exposed)
            self.count += 1
            self.sparse_seen.add(same)
            self.sparse = 2 if has or self.sparse == 2 else 1

    def is_sparse(self, entry: Entry) -> bool:
        """Exposed alone (`add`) if it is a sparse event. A bundle holds none."""
        if type(entry) is Bundle:
            return False
        rule = self.rules.get(entry.event.kind)
        return rule is not None and rule[0](entry.event)

    def add_bundle(self, entries: list[Entry], wrap: Wrap, count: int) -> None:
        self.entries.append(wrapped(entries, wrap, count))
        self.count += count
        self.sparse = 0

    def flush(self, run: list[Entry], counted: int, wrap: Wrap, views: dict[int, object]) -> int:
        """Expose the carried entries of `run` (`counted` events) through `wrap` as one, and empty it;
        0, what `run` stands for now. `views`: id(a callee's state) -> seen(wrap.here, it), shared
        by the caller's other events."""
        if not run:
            return 0
        if len(run) == 1 and type(run[0]) is Exposed:
            e = run[0]
            view = views.get(id(e.local))
            if view is None:
                view = views[id(e.local)] = seen(wrap.here, e.local)
            self.add(Exposed(e.event, e.path, (wrap.step, e.link), view, e.fresh | wrap.bit, wrap.settled or e.settled))
        else:
            self.add_bundle(run, wrap, counted)
        run.clear()
        return 0
