"""CUD001 and CUD002: an environment variable written after the library that reads it initialized.

Which variables, and what freezes each of them, is data: the `[[env]]` entries of the catalogue.
The fact keys are the flow engine's own: "init:driver" (any library's first cuInit),
"init:<library>:driver" (that library reached the driver), "init:<library>" (that library created a
context / its allocator) and "import:<module>".
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.core.catalogue import Catalogue, EnvVar, env_fact
from cudalint.core.findings import Finding, Step
from cudalint.checks.fork import _judged_without_callers
from cudalint.analysis.check_marks import event_only
from cudalint.analysis.flow import Exposed
from cudalint.analysis.facts import Fact

# process starts whose child gets the parent's environment as it is at the start (a child that
# execs or spawns a fresh interpreter initializes its own driver, from that environment)
_FRESH_CHILD = ("exec", "spawn")


def _reader(var: EnvVar, key: str) -> str:
    if var.reader:
        return var.reader
    if key == "init:driver":
        return "the CUDA driver"
    return key.split(":")[1]


def _message(var: EnvVar, key: str, cause: str) -> str:
    name = var.name
    reader = _reader(var, key)
    if key == "init:driver":
        return f"{name} is set after CUDA was initialized by {cause}; the driver read it then, so this write has no effect"
    if key.startswith("import:"):
        return f"{name} is set after {cause}; {reader} reads it at import, so this write has no effect"
    library = key.split(":")[1]
    return (
        f"{name} is set after {cause} initialized {library}'s CUDA support; "
        f"{reader} reads it once, at that initialization, so this write has no effect"
    )


def checks(catalogue: Catalogue, enabled: Callable[[str], bool]) -> Iterable[tuple[str, Callable]]:
    env = {name: var for name, var in catalogue.env_by_name.items() if enabled(var.rule)}
    if not env:
        return []

    def check_env_write(_analyzer, exposed: Exposed, lookup: Callable[[str], Optional[Fact]], _prefix) -> Optional[Finding]:
        ev = exposed.event
        name = ev.data[0]
        var = env.get(name)
        if var is None:
            return None
        for key in var.frozen_keys:
            fact = lookup(key)
            if fact is not None:
                break
        else:
            return None
        if _no_effect_here(ev, lookup, exposed.path) or _meant_for_child(_analyzer, exposed):
            return None
        if fact.unless and _judged_without_callers(_analyzer.index, exposed):
            return None  # the init depends on what callers did first (`import vllm`): they judge it
        reader = _reader(var, key)
        write = Step(exposed.path, ev.loc[0], f"{name} is written here, after {reader} read it")
        return Finding.at(
            var.rule,
            exposed.path,
            ev.loc,
            message=_message(var, key, fact.describe(exposed.path)),
            witness=fact.steps + exposed.chain + (write,),
            severity="error",
        )

    return [("env_write", check_env_write)]


def _no_effect_here(ev, lookup: Callable[[str], Optional[Fact]], path: str = "") -> bool:
    """The write changes nothing on this path: it is guarded by a read of the same variable and the
    variable was already written before (a second call, a second loop iteration), or it writes the
    literal value an earlier write already gave it (rules/CUD001.md, "Writes that are not reported")."""
    name = ev.data[0]
    guarded = len(ev.data) > 5 and ev.data[5] == "guarded"
    if guarded and lookup(f"env_set:{name}") is not None:
        return True
    value = ev.data[3] if len(ev.data) > 3 else ""
    earlier = lookup(env_fact(name, value)) if value else None
    # a write never makes itself useless: its own fact reaches it again only through an import cycle
    # (a module in progress is not run again), which once hid every such write in a cyclic project
    return earlier is not None and earlier.cause[1:] != (path, ev.loc[0])


def _meant_for_child(analyzer, exposed: Exposed) -> bool:
    """The function that writes then starts a process whose child execs or spawns a new interpreter
    (subprocess, os.system, a 'spawn' Process): the child inherits the value and its own driver
    reads it, so the write does what it was written for."""
    ev = exposed.event
    index = analyzer.index
    owner = index.owner(exposed.path, ev.loc[0])
    mod = index.module(exposed.path)
    if owner is None or mod is None:
        return False
    for proc in index.events(mod, "process"):
        if proc.loc[0] > ev.loc[0] and proc.data[1] in _FRESH_CHILD and index.owner(exposed.path, proc.loc[0]) == owner:
            return True
    return False


def derivations(names: Optional[frozenset[str]] = None) -> dict[str, list]:
    """Facts every environment write establishes, for the judgments above and for the catalogue's
    `unless_env`/`when_env` conditions: "env_set:V" (V holds some value) and "env_value:V=L".
    `names`: only for these variables (cudalint.checks.watched); None: for all."""

    @event_only
    def written(ev, path, lookup) -> Iterable[tuple[str, Fact]]:
        name = ev.data[0]
        if not name or not (ev.data[1] or ev.data[2]):  # `os.environ.pop(V)`: removes, sets nothing
            return []
        if names is not None and name not in names:
            return []
        fact = Fact((Step(path, ev.loc[0], f"{name} is written here"),), (ev.text, path, ev.loc[0]))
        out = [(f"env_set:{name}", fact)]
        if ev.data[3]:
            out.append((env_fact(name, ev.data[3]), fact))
        return out

    return {"env_write": [written]}
