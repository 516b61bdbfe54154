"""What a check's answer (or a derivation's facts) depends on, declared by the check, so the flow engine (cudalint.analysis.flow)
asks it no more often than that requires. Each mark is an attribute on the check function.
"""
from __future__ import annotations

from typing import Callable

from cudalint.core.ir import Event


def local(fn):
    """Marks a check whose answer depends on its event and the event's path alone (not on the facts,
    the call steps or the caller): judged once per event. A generated project of 2,000 modules in
    import cycles judged each environment write's value again in every importer's state: 360,000
    judgments of 240 writes."""
    fn.local = True
    return fn


def own_only(fn):
    """Marks a check that finds nothing in a caller's state (it judges an event where it is written):
    callers do not judge the event for it, nor expose the event to their callers for it."""
    fn.nested = False
    return fn


def judges(wants: Callable[[Event], bool]):
    """Marks a check that finds nothing, in any state, for an event `wants(event)` rejects (a write of
    another variable than the one it checks): such an event is decided at its first judgment."""

    def mark(fn):
        fn.wants = wants
        return fn

    return mark


def event_only(fn):
    """Marks a derivation that makes its facts from the event and its path alone (it looks nothing up):
    in a caller's state it makes what it made in the callee's walk, where those facts already are."""
    fn.event_only = True
    return fn

