"""A callee's event judged again in a caller's state, skipped where that state cannot change the answer.

Every caller judges the events its callee exposes in its own state (cudalint.analysis.flow.Analyzer.apply),
and derives their facts there again. On a generated project of 2,000 modules in import cycles that was
360,000 judgments of 240 environment writes, nearly all of which read only the callee's own facts and
found nothing: the same question asked once per import path.

A check is a function of the event, its path, the callee's facts (`Exposed.local`), the facts it looks
up, and where the event was reached from (`Exposed.link`); a derivation of the same minus the link. A
lookup answers from the caller's state first, else from the callee's, where that fact's conditions
(`Fact.unless`) are absent from the caller's state (cudalint.analysis.facts.seen_from). So when no key a
judgment looked up, and no condition of a fact it got, is in the caller's state, every answer came from
the callee's facts alone; any other caller whose state lacks them all gets the same answers, in the same
order, and the same verdict. What is remembered, per callee summary, is that every check of every event
was decided (a finding is reported once per event: cudalint.analysis.flow.Analyzer.judge) or found
nothing, and every derivation made only what the callee made itself, with the keys all of them read.
A check that asked where the event was reached from settles nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Union

from cudalint.analysis.facts import Fact, holds

if TYPE_CHECKING:
    from cudalint.analysis.facts import Seen, State
    from cudalint.analysis.flow import Exposed

# the attributes of an Exposed that are the same for every nested judgment of one callee event
# (`nested` is True for all of them); any other (link, chain, outermost, fresh) depends on the caller
_SAME_IN_EVERY_CALLER = frozenset({"event", "path", "local", "nested"})


class Reads:
    """The lookup a nested judgment gets (`seen_from(here, local, key)`), noting every key it was
    asked and the conditions of the callee's facts it answered with."""

    __slots__ = ("here", "local", "keys")

    def __init__(self, here: "State", local: "Union[State, Seen]"):
        self.here = here
        self.local = local
        self.keys: list[str] = []

    def __call__(self, key: str) -> Optional[Fact]:
        self.keys.append(key)
        mine = self.here.get(key)
        if mine is not None:
            return mine
        fact = self.local.get(key)
        if fact is not None and fact.unless:
            self.keys.extend(fact.unless)
            return holds(fact, self.here)
        return fact

    def callee_only(self) -> bool:
        """The caller's state held none of the keys read: every answer was the callee's."""
        return self.here.keys().isdisjoint(self.keys)


class Watched:
    """The Exposed a check sees in a nested judgment, noting whether it read anything that depends on
    the caller. A check reads its event through attribute access only (it never copies or compares it)."""

    __slots__ = ("_exposed", "linked")

    def __init__(self, exposed: "Exposed"):
        self._exposed = exposed
        self.linked = False

    def __getattr__(self, name: str):
        if name not in _SAME_IN_EVERY_CALLER:
            self.linked = True
        return getattr(self._exposed, name)


class Replay:
    """Per callee summary, the events that any caller's state lacking some keys leaves as they were
    (cudalint.analysis.flow.Analyzer.apply): a bit per event of `summary.exposed`, and the keys read
    by all of them. The summary is kept alive here, so its id is not reused. Kept per summary, not
    in a memo per event and check: most exposed events are judged once, in their one importer's
    walk, and such a memo was 250 MB on a generated project of 2,000 modules.

    A bit per event, not the whole summary or nothing: in an import cycle nearly every importer has
    already imported some module the callee's events sit in (they do not run again there, and are
    not judged), and one event that read the caller's state kept the others from settling. The
    generated project of benchmarks/adversarial.py judged 97,000 environment writes, 11 of them to a
    finding. What settled an event also travels up with it (`Exposed.settled`)."""

    def __init__(self) -> None:
        self._settled: dict[int, tuple[object, int, frozenset[str]]] = {}
        self._keys: dict[frozenset[str], frozenset[str]] = {}  # one copy of each set (most are alike)

    def settled(self, summary: object, state: "State") -> tuple[int, frozenset[str]]:
        """The events of the callee's summary (bit i: `summary.exposed[i]`) each of which is decided,
        or found nothing and derives only the callee's own facts, in any state lacking the keys they
        read, as `state` does; and those keys (a state that gains one of them, as the caller's does
        along the call, settles none)."""
        got = self._settled.get(id(summary))
        if got is None or got[0] is not summary or not state.keys().isdisjoint(got[2]):
            return 0, frozenset()
        return got[1], got[2]

    def settle(self, summary: object, events: int, keys: set[str]) -> None:
        """Add `events` (bits), settled by a state lacking `keys`. Events settled before stay
        settled with their keys: the union is kept, and only when it settles an event more (a wider
        set of keys is needed by fewer states)."""
        got = self._settled.get(id(summary))
        if got is not None and got[0] is summary:
            if not events & ~got[1]:
                return
            events |= got[1]
            keys = keys | got[2]
        self._settled[id(summary)] = (summary, events, self.keys(keys))

    def keys(self, keys: "Iterable[str]") -> frozenset[str]:
        """One copy of each set of keys (most are alike)."""
        frozen = frozenset(keys)
        return self._keys.setdefault(frozen, frozen)
