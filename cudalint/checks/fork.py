"""CUD005 (fork after CUDA was initialized) and CUD006 (environment written between forkserver starts).

Which calls start children, with which start method, and which function the children run is
catalogue data (`starts_process`, `starts_on`, `child_work`, `start_method_arg`); the summarizer
turns it into "process", "child_work" and "start_method" events (cudalint.summary.labels).

The start method in effect is a gen-only fact too: `set_start_method` may be called once, so the
first call on a path decides ("start_method:<m>"); a context object carries its own method as a
value label. With no method in sight the default applies, which depends on the Python version the
project targets (`target-version`): fork on Linux before 3.14, forkserver from 3.14 (knowledge.md §8).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.analysis.callgraph import ProjectIndex
from cudalint.core.findings import Finding, Step
from cudalint.analysis.check_marks import event_only
from cudalint.analysis.flow import Analyzer, Exposed
from cudalint.analysis.facts import Fact

SERVER = "forkserver:started"
ENV_AFTER_SERVER = "env:after-forkserver"
METHODS = ("fork", "forkserver", "spawn")


def default_method(target_version: str) -> str:
    digits = "".join(ch for ch in target_version if ch.isdigit())
    minor = int(digits[1:]) if len(digits) > 1 and digits[0] == "3" else 10
    return "forkserver" if minor >= 14 else "fork"


def resolve(spec: str, lookup: Callable[[str], Optional[Fact]], target_version: str) -> tuple[Optional[str], str, Optional[Fact]]:
    """(method or None if unknown, how we know it, the set_start_method fact if one decided it)."""
    if spec in METHODS or spec == "exec":
        return spec, f"start method {spec!r}", None
    if spec != "default":
        return None, "", None
    for method in METHODS:
        fact = lookup(f"start_method:{method}")
        if fact is not None:
            return method, f"start method {method!r} set by {fact.cause[0]}", fact
    if lookup("start_method:?") is not None:
        return None, "", None
    method = default_method(target_version)
    why = (
        f"the default start method on Linux for target-version {target_version} ({method!r}"
        + ("; 'forkserver' from Python 3.14)" if method == "fork" else "; it was 'fork' before Python 3.14)")
    )
    return method, why, None


def _dedup(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    out: list[Step] = []
    for step in steps:
        if not (out and (out[-1].path, out[-1].line) == (step.path, step.line)):
            out.append(step)
    return tuple(out)


def derivations(target_version: str) -> dict[str, list]:
    # a derived fact's witness is the events themselves (where they are); the call chain to the
    # event being judged is added by the check, as for every other fact
    @event_only
    def start_method(ev, path, lookup) -> Iterable[tuple[str, Fact]]:
        method = ev.data[0] if ev.data and ev.data[0] in METHODS else "?"
        step = Step(path, ev.loc[0], f"{ev.text} sets the start method")
        return [(f"start_method:{method}", Fact((step,), (ev.text, path, ev.loc[0])))]

    def process(ev, path, lookup) -> Iterable[tuple[str, Fact]]:
        method, _, _ = resolve(ev.data[1], lookup, target_version)
        if method != "forkserver" or lookup(SERVER) is not None:
            return []
        step = Step(path, ev.loc[0], f"{ev.text} starts the fork server, with the environment as it is now")
        return [(SERVER, Fact((step,), (ev.text, path, ev.loc[0])))]

    def env_write(ev, path, lookup) -> Iterable[tuple[str, Fact]]:
        server = lookup(SERVER)
        if server is None:
            return []
        var = ev.data[0] or "the environment"
        step = Step(path, ev.loc[0], f"{var} is written after the fork server started")
        return [(ENV_AFTER_SERVER, Fact(server.steps + (step,), (ev.text, path, ev.loc[0])))]

    return {"start_method": [start_method], "process": [process], "env_write": [env_write]}


def sparse_events(judged_env: Optional[frozenset[str]]) -> dict[str, tuple[Callable, str]]:
    """The environment writes no check judges (a variable outside `judged_env`, cudalint.checks.watched):
    their derivations are cudalint.checks.env's `written` (from the event alone) and `env_write` above,
    which makes ENV_AFTER_SERVER, first cause kept, when SERVER holds (cudalint.analysis.flow.Analyzer.expose).
    None: every write is exposed."""
    if judged_env is None:
        return {}
    # (what `written` reads of the event: the name, whether it sets a value, the value)
    return {"env_write": (lambda ev: not ev.data or ev.data[0] not in judged_env, SERVER, lambda ev: ev.data[:4])}


def _judged_without_callers(index: ProjectIndex, exposed: Exposed) -> bool:
    """True when this judgment is made in a function's own walk (or a caller's) that the project
    calls from elsewhere: those callers judge again with the start method they set."""
    where = exposed.outermost or Step(exposed.path, exposed.event.loc[0], "")
    owner = index.owner(where.path, where.line)
    return bool(owner) and index.is_called(where.path, owner)


def checks(target_version: str, enabled: Callable[[str], bool]) -> list[tuple[str, Callable]]:
    def child_use(index: ProjectIndex, exposed: Exposed) -> Optional[tuple[Step, ...]]:
        ev = exposed.event
        mod = index.module(exposed.path)
        if mod is None:
            return None
        works = list(ev.data[2])
        if ev.data[3] == "pool":
            for work in index.events(mod, "child_work"):
                if work.data[0] == ev.loc[0]:
                    works.extend(work.data[1])
        for symbol in works:
            steps = index.cuda_use(mod, symbol)
            if steps is not None:
                return steps
        return None

    def fork_after_init(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        ev = exposed.event
        api, spec, _works, how = ev.data
        method, why, setter = resolve(spec, lookup, target_version)
        if method != "fork":
            return None
        init = lookup("init:driver")
        if init is None:
            return None
        index = analyzer.index
        if spec == "default" and setter is None and _judged_without_callers(index, exposed):
            return None
        if how == "fork":
            child: tuple[Step, ...] = ()
            child_says = "the child (where os.fork() returns 0) cannot use CUDA"
        else:
            found = child_use(index, exposed)
            if found is None:
                return None  # the children never touch CUDA (or we cannot see their work)
            child = found
            child_says = f"the child's CUDA use ({child[-1].path}:{child[-1].line}) fails"
        fork = Step(exposed.path, ev.loc[0], f"{ev.text} forks here ({why})")
        message = (
            f"{ev.text} forks after CUDA was initialized by {init.describe(exposed.path)}; {child_says} "
            f"('CUDA error: initialization error'); {why}. Use the 'spawn' start method, or initialize CUDA only in the children"
        )
        return Finding.at(
            "CUD005",
            exposed.path,
            ev.loc,
            message=message,
            witness=_dedup(init.steps + exposed.chain + (fork,) + child),
            severity="error",
        )

    def env_between_forkserver_starts(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        ev = exposed.event
        method, why, setter = resolve(ev.data[1], lookup, target_version)
        if method != "forkserver":
            return None
        written = lookup(ENV_AFTER_SERVER)
        if written is None:
            return None
        if ev.data[1] == "default" and setter is None and _judged_without_callers(analyzer.index, exposed):
            return None
        text, path, line = written.cause
        where = f"line {line}" if path == exposed.path else f"{path}:{line}"
        start = Step(exposed.path, ev.loc[0], f"{ev.text} starts a child from the fork server ({why})")
        message = (
            f"{ev.text} starts a forkserver child, but `{text}` ({where}) changed the environment after the fork "
            f"server started; the child gets the server's environment, not this one ({why}). Pass the value as an "
            "argument and set it in the child, or use the 'spawn' start method"
        )
        return Finding.at(
            "CUD006",
            exposed.path,
            ev.loc,
            message=message,
            witness=_dedup(written.steps + exposed.chain + (start,)),
            severity="error",
        )

    out: list[tuple[str, Callable]] = []
    if enabled("CUD005"):
        out.append(("process", fork_after_init))
    if enabled("CUD006"):
        out.append(("process", env_between_forkserver_starts))
    return out
