"""What the flow engine knows at a point of a path: facts with their witnesses, states, and how they join.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Union

from cudalint.core.findings import Step


# Steps callers added to a fact (`Fact.later`), the outermost first, as a linked list: (step, rest)
# or None. Each caller prepends one, sharing the callee's list: a tuple copied at every level made
# a fact cost the depth of the import chain above it at every call and import it crossed (on the
# generated import cycles of benchmarks/adversarial.py, facts of 220 steps: 15 million steps copied).
Added = Optional[tuple[Step, "Added"]]


@dataclass(frozen=True, eq=False)
class Fact:
    """Why a fact holds: the witness steps, innermost cause first (`steps`); `cause` names it for
    messages. Compared by identity: its steps are a linked list no one should walk to compare."""

    made: tuple[Step, ...]  # the steps where it was made, innermost cause first
    cause: tuple[str, str, int]  # (code text, path, line) of what made it true, for messages
    # facts that, had they held when the walk that made this fact began, would have prevented it:
    # `torch.cuda.is_available()` initializes only while PYTORCH_NVML_BASED_CUDA_CHECK is not "1"
    # ("env_value:...=1", set by `import vllm`). A walk knows its own facts, not its callers': the
    # condition is settled where the function is called (`Analyzer.apply`, the checks' lookups).
    unless: tuple[str, ...] = ()
    added: Added = None  # the call and import steps to it since, outermost first

    @property
    def steps(self) -> tuple[Step, ...]:
        """The whole witness, innermost cause first (built on each use: for findings)."""
        if self.added is None:
            return self.made
        out = []
        link = self.added
        while link is not None:
            out.append(link[0])
            link = link[1]
        out.reverse()
        return self.made + tuple(out)

    def later(self, step: Step) -> "Fact":
        """The fact as the caller sees it after the call `step`."""
        return Fact(self.made, self.cause, self.unless, (step, self.added))

    def surely(self) -> "Fact":
        """The same fact, holding whatever the callers did (its conditions dropped)."""
        return Fact(self.made, self.cause, (), self.added)

    def describe(self, here: str) -> str:
        text, path, line = self.cause
        return f"{text} (line {line})" if path == here else f"{text} ({path}:{line})"


State = dict  # fact key -> Fact; treated as immutable (copied on write)

# The project modules whose top level already ran on a path: one frozenset of paths under this key
# (not one fact per module), because the set is as large as the import closure and a state is
# copied at every import, call and exposed event: per-module facts made each copy, each exposed
# event's saved state and each summary's facts grow with the number of modules (vllm: 24 GB).
# The set is an int, a bit per module (cudalint.analysis.flow.Analyzer.bit): as frozensets of paths
# they were 57 of the analysis's 143 MB on vllm (10,000 sets of a few hundred modules each).
# A set is shared between the states that do not add to it, and joins by union.
IMPORTED = "imported"
_NONE = 0


def imported(state: State) -> int:
    return state.get(IMPORTED, _NONE)


def _union(a: int, b: int) -> int:
    if a is b:
        return a
    both = a | b
    if both == a:
        return a
    if both == b:
        return b
    return both


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
                fact = state[k].surely()
            if new is None:
                new = dict(state)
            new[k] = fact
    return state if new is None else new


def add_imported(state: State, paths: int) -> State:
    have = imported(state)
    both = _union(have, paths)
    if both is have:
        return state
    new = dict(state)
    new[IMPORTED] = both
    return new


@dataclass(frozen=True, slots=True)
class Seen:
    """The facts an event inside a callee saw, as `join([here, inner])` would hold them, without
    copying either: `here` is the caller's state at the call, `inner` what the callee saw (a state,
    or another Seen one call deeper); the callee's facts count where they hold from the call
    (cudalint.analysis.facts.holds). A copy per exposed event and caller was 48 million entries on vllm."""

    here: State
    inner: "Union[State, Seen]"
    depth: int = 1

    def get(self, key: str) -> Optional[Fact]:
        if key == IMPORTED:
            return None
        # From the outermost call inwards: the first fact without conditions is the answer (it holds
        # wherever it was made, and a caller's fact replaces an inner one unless only the caller's is
        # conditional). Only a conditional fact on the way needs the levels merged from the inside.
        node: Union[State, Seen] = self
        conditional = False
        while type(node) is Seen:
            mine = node.here.get(key)  # type: ignore[union-attr]
            if mine is not None:
                if not mine.unless:
                    return mine
                conditional = True
            node = node.inner  # type: ignore[union-attr]
        fact = node.get(key)  # type: ignore[union-attr]
        if not conditional and (fact is None or not fact.unless):
            return fact
        return self._merged(key)

    def _merged(self, key: str) -> Optional[Fact]:
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
    if not here or (len(here) == 1 and IMPORTED in here):
        return inner  # nothing of the caller's to put over the callee's (a module's top level starts empty)
    depth = inner.depth + 1 if type(inner) is Seen else 1  # type: ignore[union-attr]
    chain = Seen(here, inner, depth)
    return chain if depth < _FLATTEN else flatten(chain)


def flatten(chain: "Union[State, Seen]") -> State:
    """The one state a chain stands for: `Seen.get` for every key, merged a level at a time from the
    innermost call outwards (a lookup per key walked the whole chain once per key)."""
    levels: list[State] = []
    node: Union[State, Seen] = chain
    while type(node) is Seen:
        levels.append(node.here)  # type: ignore[union-attr]
        node = node.inner  # type: ignore[union-attr]
    flat = {k: v for k, v in node.items() if k != IMPORTED}  # type: ignore[union-attr]
    for here in reversed(levels):
        if not here:
            continue
        gone = [k for k, f in flat.items() if f.unless and holds(f, here) is None]
        for k in gone:
            del flat[k]
        for k, mine in here.items():
            if k == IMPORTED:
                continue
            fact = flat.get(k)
            if not (fact is not None and mine.unless and not fact.unless):
                flat[k] = mine
    return flat
