"""CUD010: GPUs enumerated physically (nvidia-smi, NVML, GPUtil) and handed out as
CUDA_VISIBLE_DEVICES without a look at this process's own CUDA_VISIBLE_DEVICES.

A process may itself have been restricted (a scheduler, a container, a user). nvidia-smi and NVML
list every GPU of the machine regardless, so a layout built from them gives children (or this
process) GPUs outside the restriction, or more GPUs than it has. The code is fine when, on the path
to the write, it reads CUDA_VISIBLE_DEVICES (and, presumably, enumerates only when it is unset):
the read is a gen-only fact ("env_read" events, cudalint.summary.child_env), judged like CUD005's start
method, in every caller's state.

Judged:
- "child_env": CUDA_VISIBLE_DEVICES in an environment built for a child, from NVML indices or from
  CUDA ordinals (`range(torch.cuda.device_count())` counts the visible GPUs, but the child reads
  the number as a physical index);
- "env_write": this process's own CUDA_VISIBLE_DEVICES from NVML indices (CUDA ordinals written to
  the own variable are the launcher's business: `CUDA_VISIBLE_DEVICES = LOCAL_RANK` is the usual
  per-rank setup).
Mapping through UUIDs or PCI bus ids carries no index label, so it is never flagged.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.checks.fork import _judged_without_callers
from cudalint.checks.gpu_index import _dedup, resolve
from cudalint.core.findings import Finding, Step
from cudalint.analysis.check_marks import event_only, judges
from cudalint.analysis.flow import Analyzer, Exposed
from cudalint.analysis.facts import Fact
from cudalint.core.ir import iter_events

CVD = "CUDA_VISIBLE_DEVICES"
READ = "env_read:CUDA_VISIBLE_DEVICES"


def derivations() -> dict[str, list]:
    @event_only
    def env_read(ev, path, lookup) -> Iterable[tuple[str, Fact]]:
        if ev.data[0] != CVD:
            return []
        step = Step(path, ev.loc[0], f"{ev.text} reads this process's CUDA_VISIBLE_DEVICES")
        return [(READ, Fact((step,), (ev.text, path, ev.loc[0])))]

    return {"env_read": [env_read]}


def child_start(index, step: Step) -> bool:
    """The step is a process start handing the value to the child's work (cudalint.summary.child_args)."""
    mod = index.module(step.path)
    return mod is not None and any(
        ev.loc[0] == step.line and len(ev.data) > 2 and ev.data[2] == "child" for ev in index.events(mod, "call_args")
    )


def parent_reads(index, step: Step) -> bool:
    """The function that starts the child reads CUDA_VISIBLE_DEVICES (anywhere in its body: the
    child's own walk cannot see the parent's path; a read in the parent's callers is not seen)."""
    mod = index.module(step.path)
    owner = index.owner(step.path, step.line) if mod is not None else None
    if owner is None:
        return False
    body = mod.top if owner == "" else mod.functions[owner].body
    return any(ev.kind == "env_read" and ev.data[0] == CVD for ev in iter_events(body))


def checks(enabled: Callable[[str], bool]) -> list[tuple[str, Callable]]:
    if not enabled("CUD010"):
        return []

    def judge(analyzer: Analyzer, exposed: Exposed, lookup, child: bool) -> Optional[Finding]:
        ev = exposed.event
        found = ev.data[2] if child else (ev.data[4] if len(ev.data) > 4 else ())
        if not found or lookup(READ) is not None:
            return None
        index = analyzer.index
        mod = index.module(exposed.path)
        if mod is None:
            return None
        wanted = ("nvml", "cuda") if child else ("nvml",)
        for kind, steps in resolve(index, mod, found):
            # a child's work writing its own variable from what its parent chose (`Process(target=work,
            # args=(gpu,))`): the parent's layout, judged like an environment built for a child
            in_child = not child and any(child_start(index, st) for st in steps)
            if kind not in wanted and not (in_child and kind == "cuda"):
                continue
            if in_child and any(parent_reads(index, st) for st in steps if child_start(index, st)):
                continue  # the parent looked at its own restriction where it chose the layout
            if _judged_without_callers(index, exposed):
                return None  # the callers judge it, with what they read before the call
            origin = steps[0].note.split(" gives ")[0].split(" is a ")[0]
            where = f"line {steps[0].line}" if steps[0].path == exposed.path else f"{steps[0].path}:{steps[0].line}"
            if kind == "nvml":
                what = f"GPUs listed physically by {origin} ({where}), which sees every GPU of the machine"
            else:
                what = (
                    f"CUDA ordinals ({origin}, {where}), which count only the visible GPUs, while the child "
                    "reads the number as a physical index"
                )
            whose = "a child process's" if child else ("the child process's own" if in_child else "this process's")
            message = (
                f"{whose} CUDA_VISIBLE_DEVICES is built from {what}, and nothing on this path reads this process's own "
                "CUDA_VISIBLE_DEVICES; when the process was restricted (a scheduler, a container, a user) "
                f"{'the children escape' if child or in_child else 'it escapes'} the restriction or the layout fails. Read CUDA_VISIBLE_DEVICES "
                "first and enumerate only when it is unset, or map through GPU UUIDs"
            )
            note = "handed to a child as its CUDA_VISIBLE_DEVICES" if child else "written to CUDA_VISIBLE_DEVICES"
            return Finding.at(
                "CUD010",
                exposed.path,
                ev.loc,
                message=message,
                witness=_dedup(exposed.chain + steps + (Step(exposed.path, ev.loc[0], note),)),
                severity="error",
            )
        return None

    @judges(lambda ev: bool(ev.data[2]))
    def check_child(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        return judge(analyzer, exposed, lookup, child=True)

    @judges(lambda ev: bool(ev.data) and ev.data[0] == CVD and len(ev.data) > 4 and bool(ev.data[4]))
    def check_own(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        return judge(analyzer, exposed, lookup, child=False)

    return [("child_env", check_child), ("env_write", check_own)]
