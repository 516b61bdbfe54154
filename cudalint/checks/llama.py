"""CUD101 and CUD102: a llama.cpp context used, or created, by several threads at once without a lock
(and CUD103, separate GPU contexts decoding at once: cudalint.checks.llama_gpu, on the same model).

The thread model (which code runs on which threads, what each ref holds, which locks are held) is
`cudalint.analysis.threads`; this module only turns its uses and creations into findings.
"""
from __future__ import annotations

from typing import Callable

from cudalint.core.catalogue import Catalogue
from cudalint.core.findings import Finding, Step
from cudalint.core.project import Project
from cudalint.analysis.thread_model import Use
from cudalint.analysis.threads import analyze, concurrent, sequential


def _name(use: Use) -> str:
    if use.method == "__iter__":
        return "iterating the stream"
    if use.method == "__call__":
        return "calling it"
    return f".{use.method}()"


def _started(made) -> bool:
    """Created on threads some code starts (not the main thread, not a one-worker pool's thread)."""
    return made.ctx.parent is not None and not made.ctx.id.startswith("serial:")


def check(project: Project, catalogue: Catalogue, enabled: Callable[[str], bool]) -> list[Finding]:
    want101, want102, want103 = enabled("CUD101"), enabled("CUD102"), enabled("CUD103")
    if not (want101 or want102 or want103) or not any(m.makes_llama for m in project.modules):
        return []  # (no llama.cpp context can exist: the thread model would find nothing)
    model = analyze(project, catalogue)
    out: dict[tuple, Finding] = {}
    if want101:
        by_obj: dict = {}
        for use in model.uses:
            by_obj.setdefault(use.obj.identity, []).append(use)
        for uses in by_obj.values():
            # at a site reached several ways, explain it through a thread rather than the main thread
            for use in sorted(uses, key=lambda u: (u.path, u.event.loc, u.ctx.id == "main", not u.ctx.many, u.ctx.id)):
                candidates = [use] + [o for o in uses if o is not use]
                other = next((o for o in candidates if concurrent(use, o) and not (use.locks & o.locks)), None)
                if other is None:
                    continue
                key = ("CUD101", use.path, use.event.loc[0], use.event.loc[1])
                if key in out:
                    continue
                ev = use.event
                cls = use.obj.cls.rsplit(".", 1)[-1]
                created = use.obj.created
                where = f"line {created.line}" if created.path == use.path else f"{created.path}:{created.line}"
                guard = "with no lock held" if not use.locks else "under a lock the other threads do not take"
                if other is use or other.ctx.id == use.ctx.id:
                    others = f"on {use.ctx.how}, several at once"
                elif other.ctx.how == use.ctx.how:
                    others = f"on {use.ctx.how}, while other {other.ctx.how} use it too"
                else:
                    others = f"on {use.ctx.how}, while it is also used on {other.ctx.how}"
                message = (
                    f"one {cls} (created at {where}) is used from several threads: {_name(use)} runs {others}, {guard}; "
                    "a llama.cpp context must be used by one thread at a time (hold one shared lock around every use)"
                )
                what = f"iterating {ev.text}" if use.method == "__iter__" and ev.kind == "llama_iter" else ev.text
                note = f"{what} uses the llama context here, {guard}"
                out[key] = Finding.at(
                    "CUD101",
                    use.path,
                    ev.loc,
                    message=message,
                    witness=(created,) + use.ctx.steps + (Step(use.path, ev.loc[0], note),),
                    severity="error",
                )
    if want102:
        creations = sorted(model.creations, key=lambda c: (c.path, c.event.loc, c.ctx.id))
        for made in creations:
            if made.locks:
                continue
            ev = made.event
            other = None
            if not made.ctx.many:
                # the same loader started twice (`ex.submit(load, a); ex.submit(load, b)`, two
                # listeners): two thread starts whose work overlaps, each creating a context
                other = next((o for o in creations if o.event is ev and o.ctx.id != made.ctx.id and not o.locks and _started(o) and _started(made) and not sequential(o.ctx, made.ctx)), None)
                if other is None:
                    continue
            key = ("CUD102", made.path, ev.loc[0], ev.loc[1])
            if key in out:
                continue
            cls = ev.data[0].rsplit(".", 1)[-1]
            where = f"{made.ctx.how}, several at once" if other is None else f"{made.ctx.how} and, at the same time, on {other.ctx.how}"
            extra = () if other is None else tuple(s for s in other.ctx.steps if s not in made.ctx.steps)
            out[key] = Finding.at(
                "CUD102",
                made.path,
                ev.loc,
                message=(
                    f"{cls}(...) is created on {where}, with no lock held; "
                    "llama.cpp backend initialization and model loading are not thread-safe (create it once, or under a lock)"
                ),
                witness=made.ctx.steps + extra + (Step(made.path, ev.loc[0], f"{ev.text} creates a llama context here"),),
                severity="warning",
            )
    found = list(out.values())
    if want103:
        from cudalint.checks import llama_gpu

        found.extend(llama_gpu.check(project, model.uses))
    return found
