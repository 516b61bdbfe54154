"""CUD001 and CUD002: an environment variable written after the library that reads it initialized.

Which variables, and what freezes each of them, is data: the `[[env]]` entries of the catalogue.
The fact keys are the flow engine's own: "init:driver" (any library's first cuInit),
"init:<library>:driver" (that library reached the driver), "init:<library>" (that library created a
context / its allocator) and "import:<module>".
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.catalogue import Catalogue, EnvVar
from cudalint.findings import Finding, Step
from cudalint.flow import Exposed, Fact


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
