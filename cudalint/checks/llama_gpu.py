"""CUD103: separate GPU-offloaded llama.cpp contexts decoding on several threads at once, with no one
lock held around all of them.

CUD101 is about one context shared by threads. Here every thread may have its own context (a
`Llama` made in the thread's function, a worker object per thread, or two global models used from
two threads), which llama.cpp allows on the CPU; but its CUDA backend has failed when several
contexts decode at once (the LLamaSharp report: "operation not permitted when stream is capturing";
its fix was one global lock around decoding). The thread model (`cudalint.analysis.threads`) says which uses
may overlap and which locks each holds; the catalogue's `gpu_offload` argument, read where the
context was created ("llama_new" events), says whether it runs on the GPU.
"""
from __future__ import annotations

from typing import Optional

from cudalint.core.findings import Finding, Step
from cudalint.core.ir import iter_events
from cudalint.core.project import Project
from cudalint.analysis.thread_model import Use
from cudalint.analysis.threads import concurrent
from cudalint.analysis.thread_model import sequential


def _offloaded(project: Project) -> dict[tuple[str, int], str]:
    """(path, line) of each context creation -> "1" (GPU offload), "0" or "" (unknown)."""
    out: dict[tuple[str, int], str] = {}
    for mod in project.modules:
        if not mod.makes_llama:
            continue
        bodies = [mod.top] + [fn.body for fn in mod.functions.values()]
        for body in bodies:
            for ev in iter_events(body):
                if ev.kind == "llama_new" and len(ev.data) > 1:
                    out[(mod.path, ev.loc[0])] = ev.data[1]
    return out


def _program(use: Use) -> str:
    """The module whose run leads to the use: two scripts side by side are two processes."""
    return use.ctx.steps[0].path if use.ctx.steps else use.path


def _overlap(a: Use, b: Use) -> bool:
    """May these two uses run at the same moment (on two threads of one program)?"""
    if _program(a) != _program(b):
        return False
    return (a.ctx.id != b.ctx.id and not sequential(a.ctx, b.ctx)) or a.ctx.many


def _separate(a: Use, b: Use) -> bool:
    """Do these uses touch two different contexts? (One context shared is CUD101's business.)"""
    if a.obj.identity != b.obj.identity:
        return True
    return not concurrent(a, b)  # one ref, but each thread made its own (a local, a per-thread instance)


def check(project: Project, uses: list[Use]) -> list[Finding]:
    gpu = _offloaded(project)

    def on_gpu(use: Use) -> bool:
        return gpu.get((use.obj.created.path, use.obj.created.line)) == "1"

    gpu_uses = [u for u in uses if on_gpu(u)]
    out: dict[tuple, Finding] = {}
    for use in sorted(gpu_uses, key=lambda u: (u.path, u.event.loc, u.ctx.id == "main", not u.ctx.many, u.ctx.id)):
        key = ("CUD103", use.path, use.event.loc[0], use.event.loc[1])
        if key in out:
            continue
        other: Optional[Use] = next(
            (o for o in [use] + gpu_uses if _overlap(use, o) and _separate(use, o) and not (use.locks & o.locks)), None
        )
        if other is None:
            continue
        ev = use.event
        cls = use.obj.cls.rsplit(".", 1)[-1]
        created = use.obj.created
        where = f"line {created.line}" if created.path == use.path else f"{created.path}:{created.line}"
        if other is use or (other.ctx.id == use.ctx.id and other.obj.created == created):
            others = f"runs on {use.ctx.how}, several at once, each with its own {cls} (created at {where})"
        else:
            made = other.obj.created
            there = f"line {made.line}" if made.path == use.path else f"{made.path}:{made.line}"
            others = (
                f"runs on {use.ctx.how} with the {cls} created at {where}, while {other.ctx.how} decode with the one "
                f"created at {there}"
            )
        guard = "with no lock held" if not use.locks else "under a lock the other threads do not take"
        message = (
            f"separate GPU-offloaded llama.cpp contexts decode at the same time: {ev.text} {others}, {guard}; "
            "llama.cpp's CUDA backend has failed under concurrent decoding of several contexts ('operation not "
            "permitted when stream is capturing'). Hold one global lock around every decode"
        )
        note = f"{ev.text} decodes on the GPU here, {guard}"
        out[key] = Finding.at(
            "CUD103",
            use.path,
            ev.loc,
            message=message,
            witness=(Step(created.path, created.line, f"the {cls} is created here with GPU offload"),) + use.ctx.steps + (Step(use.path, ev.loc[0], note),),
            severity="warning",
        )
    return list(out.values())
