"""CUD001 and CUD002: an environment variable written after the library that reads it initialized.

Which variables, and what freezes each of them, is data: the `[[env]]` entries of the catalogue.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.catalogue import Catalogue
from cudalint.findings import Finding, Step
from cudalint.flow import Exposed, Fact


def _frozen_key(frozen_by: str) -> str:
    # "init:driver" | "init:<library>" | "import:<module>" are the flow engine's fact keys as they are
    return frozen_by


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
        fact = lookup(_frozen_key(var.frozen_by))
        if fact is None:
            return None
        reader = "the CUDA driver" if var.frozen_by == "init:driver" else (
            f"{var.frozen_by.split(':', 1)[1]}" if var.frozen_by.startswith("init:") else f"import {var.frozen_by.split(':', 1)[1]}"
        )
        when = "initialized" if var.frozen_by.startswith("init:") else "ran"
        write = Step(exposed.path, ev.loc[0], f"{name} is written here, after {reader} read it")
        cause = fact.describe(exposed.path)
        message = (
            f"{name} is set after CUDA was initialized by {cause}; the driver read it then, so this write has no effect"
            if var.frozen_by == "init:driver"
            else f"{name} is set after {reader} {when} ({cause}); it is read only once, so this write has no effect"
        )
        return Finding(
            code=var.rule,
            path=exposed.path,
            line=ev.loc[0],
            column=ev.loc[1],
            end_line=ev.loc[2],
            end_column=ev.loc[3],
            message=message,
            witness=fact.steps + exposed.chain + (write,),
            severity="error",
        )

    return [("env_write", check_env_write)]
