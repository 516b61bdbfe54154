"""The checks: each judges one kind of IR event given the facts that hold before it.

`build_checks` returns {event kind: [check, ...]} for the rules that are enabled; the flow engine
(cudalint.analysis.flow) calls them wherever such an event happens, in its own function's state and again in
every caller's state.
"""
from __future__ import annotations

from typing import Callable, Optional

from cudalint.core.catalogue import Catalogue
from cudalint.checks import device_values, env, fork, gpu_enumeration, gpu_index, library_fork, monkeypatch, watched
from cudalint.analysis.flow import Check, Derive


def build_checks(catalogue: Catalogue, enabled: Callable[[str], bool], target_version: str = "py310") -> dict[str, list[Check]]:
    checks: dict[str, list[Check]] = {}
    for module in (env, device_values, monkeypatch, library_fork):
        for kind, check in module.checks(catalogue, enabled):
            checks.setdefault(kind, []).append(check)
    for kind, check in gpu_index.checks(enabled) + gpu_enumeration.checks(enabled):
        checks.setdefault(kind, []).append(check)
    for kind, check in fork.checks(target_version, enabled):
        checks.setdefault(kind, []).append(check)
    return checks


def build_derive(target_version: str = "py310", catalogue: Optional[Catalogue] = None) -> dict[str, list[Derive]]:
    """Facts derived at events from the facts before them (start method, fork server, env after it,
    a read of CUDA_VISIBLE_DEVICES). With the catalogue, a write makes facts only for the variables
    something reads (cudalint.checks.watched)."""
    out: dict[str, list[Derive]] = {}
    names = watched.env_names(catalogue) if catalogue is not None else None
    for part in (fork.derivations(target_version), env.derivations(names), gpu_enumeration.derivations()):
        for kind, derives in part.items():
            out.setdefault(kind, []).extend(derives)
    return out


def build_sparse(catalogue: Catalogue) -> dict:
    """The events the flow may expose sparsely (cudalint.checks.fork.sparse_events)."""
    return fork.sparse_events(watched.judged_env_names(catalogue))


def project_checks(analyzer, enabled: Callable[[str], bool], catalogue: Catalogue | None = None) -> list:
    """Checks that look at the whole project after the flow ran (CUD003; the thread model: CUD101/CUD102)."""
    from cudalint.checks import import_time, llama

    out = import_time.check(analyzer) if enabled("CUD003") else []
    if catalogue is not None:
        out.extend(llama.check(analyzer.project, catalogue, enabled))
    return out


def init_keys(event) -> list[str]:
    """The facts an initializing call establishes: the driver, and the library's own init."""
    _api, library, level, *_ = event.data
    keys = ["init:driver", f"init:{library}:driver"]
    if level == "context":
        keys.append(f"init:{library}")
    return keys
