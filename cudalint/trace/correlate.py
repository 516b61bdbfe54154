"""Static findings + runtime events -> verdicts. A pure function: no I/O, no clock.

Per rule (the finding's location is the place the tracer also records):
* CUD001 (a frozen variable written after CUDA init; location = the write): **confirmed** if a
  write of that variable at the finding's line happened after an event that freezes it
  (catalogue `frozen_by`: any driver/context init, one library's init, or an import) in the same
  process or in its parent before the fork; **refuted** if it ran and nothing had frozen it;
  **not reached** if no write happened at that line.
* CUD005 (fork after init; location = the fork / `Process.start()`): a fork event from that line
  with CUDA initialized in the parent confirms; forks from it with CUDA not initialized refute.
* CUD010 (CUDA_VISIBLE_DEVICES from a physical enumeration; location = where the child's variable, or
  this process's, gets its value): a child started (subprocess.Popen's audit event) at that line
  or in the next `CHILD_WINDOW` lines of the file (the `env=` copy is usually filled just above the
  Popen call) with a device outside this process's own restriction confirms; children that stayed
  inside it, or a run with no restriction at all, refute; for this process's own variable, the
  value the write replaced is the restriction.
* CUD101 (one Llama used from several threads without a lock; location = the unguarded call): a
  `concurrent` event with that line among its call sites confirms; if the line ran but no overlap
  was seen it is refuted *for this run* (races depend on timing; the evidence says so).
* CUD103 (separate GPU contexts decoding at once; location = a decode call): a `concurrent_separate`
  event (two threads inside two different contexts at the same time) with that line among its call
  sites confirms; if the line ran but no such overlap was seen it is refuted for this run.
Other codes are "not checked": the tracer records nothing that could decide them.

Events that break a rule at a place with no static finding become runtime-only findings.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from cudalint.core.findings import Finding
from cudalint.trace.nvml import Gpu, describe, expected_gpus

CONFIRMED, REFUTED, NOT_REACHED, NOT_CHECKED = "confirmed", "refuted", "not reached", "not checked"
INIT_LEVELS = ("driver", "context")


@dataclass(frozen=True)
class Verdict:
    finding: Finding
    status: str
    evidence: str
    events: tuple[int, ...] = ()  # `seq` of the events that decided it (the timeline links them)


@dataclass(frozen=True)
class RuntimeFinding:
    code: str
    path: str
    line: int
    message: str
    evidence: str
    events: tuple[int, ...] = ()


@dataclass(frozen=True)
class GpuCheck:
    expected: tuple[int, ...] | None
    used: tuple[int, ...]
    mismatch: bool
    message: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProgramExit:
    returncode: int | None
    signal: str | None
    started: bool = True
    uncaught: str | None = None

    def describe(self) -> str:
        if not self.started:
            return "could not be started"
        if self.signal:
            return f"was killed by {self.signal}"
        return f"exited with status {self.returncode}"


@dataclass(frozen=True)
class TraceResult:
    verdicts: tuple[Verdict, ...]
    runtime: tuple[RuntimeFinding, ...]
    gpu: GpuCheck | None
    program: ProgramExit
    basis: str
    static_note: str = ""
    events: int = 0
    skipped_hooks: tuple[str, ...] = field(default=())

    @property
    def confirmed(self) -> bool:
        return (any(v.status == CONFIRMED for v in self.verdicts) or bool(self.runtime)
                or bool(self.gpu and self.gpu.mismatch))


def _seqs(*events: dict[str, Any] | None) -> tuple[int, ...]:
    return tuple(e["seq"] for e in events if e is not None and "seq" in e)


# -- helpers ------------------------------------------------------------------------------------
def _real(path: str, cwd: str) -> str:
    return os.path.realpath(os.path.join(cwd, path))


def _at(site: dict[str, Any] | None, cwd: str) -> str:
    if not site:
        return "<library code>"
    path = site["path"]
    try:
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".." + os.sep):
            path = rel
    except ValueError:
        pass
    return f"{path}:{site['line']}"


def _same_line(site: dict[str, Any] | None, real_path: str, line: int) -> bool:
    return bool(site) and site["line"] == line and os.path.realpath(site["path"]) == real_path


class _Timeline:
    """Which earlier events a process can see: its own, and its parent's before it was forked."""

    def __init__(self, events: Sequence[dict[str, Any]]) -> None:
        self.events = events
        self.born: dict[int, tuple[int, int]] = {}  # pid -> (ppid, seq of the child event)
        for e in events:
            if e["kind"] == "child":
                self.born.setdefault(e["pid"], (e["ppid"], e["seq"]))

    def visible(self, pid: int, seq: int) -> Iterable[dict[str, Any]]:
        limits = {pid: seq}
        p, s = pid, seq
        while p in self.born:
            parent, born_seq = self.born[p]
            if parent in limits:
                break
            limits[parent] = min(born_seq, s)
            p, s = parent, limits[parent]
        for e in self.events:
            lim = limits.get(e["pid"])
            if lim is not None and e["seq"] < lim:
                yield e


def _freezer(tl: _Timeline, write: dict[str, Any], frozen_by: str) -> dict[str, Any] | None:
    """The earliest event that had fixed this variable before the write, if any."""
    how, _, what = frozen_by.partition(":")
    probe = write.get("driver")  # the libcuda probe at the moment of the write, where a driver exists
    if how == "init" and what == "driver" and probe is not None:
        if probe != "initialized":
            return None
        first = next((e for e in tl.visible(write["pid"], write["seq"])
                      if e["kind"] == "init" and e.get("init") in INIT_LEVELS), None)
        return first or {"kind": "probe", "site": None}
    for e in tl.visible(write["pid"], write["seq"]):
        if how == "init" and e["kind"] == "init" and e.get("init") in INIT_LEVELS:
            if what == "driver" or e.get("library") == what:
                return e
        if how == "import" and e["kind"] == "import" and e.get("module") == what:
            return e
    return None


def _cause(e: dict[str, Any], cwd: str) -> str:
    if e["kind"] == "probe":
        return "the libcuda probe found the driver initialized (by a call the catalogue does not list)"
    if e["kind"] == "import":
        where = "(before the program started)" if e.get("preloaded") else f"at {_at(e.get('site'), cwd)}"
        return f"import {e['module']} {where}"
    text = f"{e.get('call') or e['api']} ran at {_at(e.get('site'), cwd)}"
    caller = e.get("caller")
    if caller and e.get("site") and (caller["path"], caller["line"]) != (e["site"]["path"], e["site"]["line"]):
        text += f" (called from {caller['path']}:{caller['line']})"
    return text


def _written(w: dict[str, Any], cwd: str) -> str:
    if w.get("op") == "unset":
        return f"{w['key']} was unset at {_at(w.get('site'), cwd)}"
    value = f"={w['value']!r}" if "value" in w else ""
    return f"{w['key']}{value} was written at {_at(w.get('site'), cwd)}"


def _cause_not_run(f: Finding, tl: _Timeline, cwd: str) -> str | None:
    """The witness's first step is the cause (the initializing call or import; the steps after it
    are the calls leading out of it). If no CUDA initialization or import came from that line in
    any process, the path the finding describes was not taken in this run: not reached, not refuted."""
    if len(f.witness) < 2:
        return None
    cause = f.witness[0]
    real = _real(cause.path, cwd)
    if (real, cause.line) == (_real(f.path, cwd), f.line):
        return None
    for e in tl.events:
        if e["kind"] in ("init", "import"):
            s = e.get("site")
            if s and s["line"] == cause.line and os.path.realpath(s["path"]) == real:
                return None
            for path, line in e.get("stack", ()):
                if line == cause.line and os.path.realpath(path) == real:
                    return None
    return (f"the witness's first step, {os.path.relpath(real, cwd)}:{cause.line} ({cause.note}), never ran "
            "in this run, so the path the finding describes was not taken")


# -- per rule -----------------------------------------------------------------------------------
def _env_vars_for(f: Finding, env_rules: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rules = [e for e in env_rules if e.get("rule", "CUD001") == f.code]
    named = [e for e in rules if e["name"] in f.message or any(e["name"] in s.note for s in f.witness)]
    return named or rules


def _cud001(f: Finding, tl: _Timeline, env_rules, cwd: str) -> Verdict:
    real = _real(f.path, cwd)
    rules = {e["name"]: e for e in _env_vars_for(f, env_rules)}
    writes = [e for e in tl.events if e["kind"] == "env" and e["key"] in rules and _same_line(e.get("site"), real, f.line)]
    if not writes:
        return Verdict(f, NOT_REACHED, f"{os.path.relpath(real, cwd)}:{f.line} never ran")
    for w in writes:
        cause = _freezer(tl, w, rules[w["key"]]["frozen_by"])
        if cause is not None:
            return Verdict(f, CONFIRMED, f"{_cause(cause, cwd)} before {_written(w, cwd)}", _seqs(cause, w))
    w = writes[0]
    missing = _cause_not_run(f, tl, cwd)
    if missing is not None:
        return Verdict(f, NOT_REACHED, f"{_written(w, cwd)}, but {missing}", _seqs(w))
    later = next((e for e in tl.events if e["kind"] == "init" and e["seq"] > w["seq"] and e.get("init") in INIT_LEVELS), None)
    tail = f"; the first, {_cause(later, cwd)}, came later" if later else "; nothing initialized CUDA"
    return Verdict(f, REFUTED, f"{_written(w, cwd)} before any CUDA initialization{tail}", _seqs(w, later))


CHILD_WINDOW = 10


def _outside(value: str, own: str | None) -> list[str]:
    """The devices `value` names that the restriction `own` does not (all of them: none when unset)."""
    if own is None:
        return []
    allowed = {t.strip() for t in own.split(",") if t.strip()}
    return [t.strip() for t in value.split(",") if t.strip() and t.strip() not in allowed]


def _cud010(f: Finding, tl: _Timeline, cwd: str) -> Verdict:
    real = _real(f.path, cwd)
    where = f"{os.path.relpath(real, cwd)}:{f.line}"
    if f.message.startswith("this process's"):
        runs = [(e, e.get("old")) for e in tl.events if e["kind"] == "env" and e["key"] == "CUDA_VISIBLE_DEVICES"
                and e.get("op") == "set" and _same_line(e.get("site"), real, f.line)]
        what = "written"
    else:
        runs = [(e, e.get("own")) for e in tl.events if e["kind"] == "spawn_env" and e.get("site")
                and os.path.realpath(e["site"]["path"]) == real and f.line <= e["site"]["line"] <= f.line + CHILD_WINDOW]
        what = "given to a child"
    if not runs:
        return Verdict(f, NOT_REACHED, f"no CUDA_VISIBLE_DEVICES was {what} at {where}")
    for e, own in runs:
        out = _outside(e.get("value", ""), own)
        if out:
            return Verdict(f, CONFIRMED, f"CUDA_VISIBLE_DEVICES={e.get('value')!r} was {what} at {_at(e.get('site'), cwd)} "
                                         f"while this process was restricted to {own!r}: {', '.join(out)} {'is' if len(out) == 1 else 'are'} outside it")
    e, own = runs[0]
    if all(o is None for _, o in runs):
        return Verdict(f, REFUTED, f"CUDA_VISIBLE_DEVICES={e.get('value')!r} was {what} at {_at(e.get('site'), cwd)}, but this "
                                   "run was not restricted (CUDA_VISIBLE_DEVICES unset); run it under a restriction to decide")
    return Verdict(f, REFUTED, f"every CUDA_VISIBLE_DEVICES {what} at {where} stayed inside this process's restriction ({own!r})")


def _cud005(f: Finding, tl: _Timeline, cwd: str) -> Verdict:
    real = _real(f.path, cwd)
    forks = [e for e in tl.events if e["kind"] == "fork" and _same_line(e.get("site"), real, f.line)]
    if not forks:
        return Verdict(f, NOT_REACHED, f"no fork from {os.path.relpath(real, cwd)}:{f.line}")
    bad = next((e for e in forks if e.get("cuda_initialized")), None)
    if bad is not None:
        return Verdict(f, CONFIRMED, _fork_text(bad, cwd), _seqs(bad))
    missing = _cause_not_run(f, tl, cwd)
    if missing is not None:
        return Verdict(f, NOT_REACHED, f"the fork at {_at(forks[0]['site'], cwd)} ran, but {missing}", _seqs(forks[0]))
    return Verdict(f, REFUTED, f"fork at {_at(forks[0]['site'], cwd)} ran with CUDA not initialized ({forks[0].get('evidence')})",
                   _seqs(forks[0]))


def _fork_text(e: dict[str, Any], cwd: str) -> str:
    first = e.get("first_init")
    why = f"{first['call']} ran at {_at(first['site'], cwd)}" if first else "CUDA was initialized"
    return f"{why} before the fork at {_at(e.get('site'), cwd)} ({e.get('evidence')})"


def _conc_text(e: dict[str, Any], cwd: str) -> str:
    a, b = e["threads"][:2]
    cls = e["cls"].rsplit(".", 1)[-1]
    what = "constructing" if e["kind"] == "concurrent_construct" else "inside"
    return (f"threads {a['name']!r} ({a['method']} at {_at(a['site'], cwd)}) and {b['name']!r} "
            f"({b['method']} at {_at(b['site'], cwd)}) were {what} the same {cls} at the same time"
            if e["kind"] == "concurrent" else
            f"threads {a['name']!r} ({_at(a['site'], cwd)}) and {b['name']!r} ({_at(b['site'], cwd)}) "
            f"were constructing {cls} objects at the same time")


def _cud101(f: Finding, tl: _Timeline, cwd: str) -> Verdict:
    real = _real(f.path, cwd)
    for e in tl.events:
        if e["kind"] in ("concurrent", "concurrent_construct") and any(
                _same_line(t.get("site"), real, f.line) for t in e["threads"]):
            return Verdict(f, CONFIRMED, _conc_text(e, cwd), _seqs(e))
    uses = [e for e in tl.events if e["kind"] == "llama_use" and _same_line(e.get("site"), real, f.line)]
    if not uses:
        return Verdict(f, NOT_REACHED, f"{os.path.relpath(real, cwd)}:{f.line} never ran")
    threads = sorted({e["thread"] for e in uses})
    return Verdict(f, REFUTED, f"ran in {len(threads)} thread(s) ({', '.join(threads)}) "
                               "but no two were inside the same context at once in this run", _seqs(*uses))


def _cud103(f: Finding, tl: _Timeline, cwd: str) -> Verdict:
    real = _real(f.path, cwd)
    for e in tl.events:
        if e["kind"] == "concurrent_separate" and any(_same_line(t.get("site"), real, f.line) for t in e["threads"]):
            a, b = e["threads"][:2]
            return Verdict(f, CONFIRMED, f"threads {a['name']!r} ({a['method']} at {_at(a['site'], cwd)}) and {b['name']!r} "
                                         f"({b['method']} at {_at(b['site'], cwd)}) were inside two different contexts at the same time")
    uses = [e for e in tl.events if e["kind"] == "llama_use" and _same_line(e.get("site"), real, f.line)]
    if not uses:
        return Verdict(f, NOT_REACHED, f"{os.path.relpath(real, cwd)}:{f.line} never ran")
    return Verdict(f, REFUTED, "ran, but no two threads were inside different contexts at once in this run")


# -- the whole ----------------------------------------------------------------------------------
def correlate(
    findings: Sequence[Finding],
    events: Sequence[dict[str, Any]],
    *,
    env_rules: Sequence[dict[str, Any]],
    cwd: str,
    returncode: int | None,
    signal_name: str | None = None,
    nvml_why: str = "",
    static_note: str = "",
) -> TraceResult:
    tl = _Timeline(events)
    verdicts = []
    for f in sorted(findings, key=Finding.sort_key):
        if f.code in {e.get("rule", "CUD001") for e in env_rules}:
            verdicts.append(_cud001(f, tl, env_rules, cwd))
        elif f.code == "CUD005":
            verdicts.append(_cud005(f, tl, cwd))
        elif f.code == "CUD010":
            verdicts.append(_cud010(f, tl, cwd))
        elif f.code == "CUD101":
            verdicts.append(_cud101(f, tl, cwd))
        elif f.code == "CUD103":
            verdicts.append(_cud103(f, tl, cwd))
        else:
            verdicts.append(Verdict(f, NOT_CHECKED, f"the tracer records nothing that decides {f.code}"))

    static_at = {(f.code, _real(f.path, cwd), f.line) for f in findings}

    def has_static(code: str, site: dict[str, Any] | None) -> bool:
        return bool(site) and (code, os.path.realpath(site["path"]), site["line"]) in static_at

    runtime: dict[tuple[str, str, int], RuntimeFinding] = {}

    def add(code: str, site: dict[str, Any] | None, message: str, evidence: str, seqs: tuple[int, ...] = ()) -> None:
        path, line = (site["path"], site["line"]) if site else ("<library code>", 0)
        key = (code, path, line)
        if key not in runtime and not has_static(code, site):
            rel = _at(site, cwd).rsplit(":", 1)[0] if site else path
            runtime[key] = RuntimeFinding(code, rel, line, message, evidence, seqs)

    env_by_name = {e["name"]: e for e in env_rules}
    for e in events:
        if e["kind"] == "env" and e["key"] in env_by_name:
            rule = env_by_name[e["key"]]
            cause = _freezer(tl, e, rule["frozen_by"])
            if cause is not None:
                how, _, what = rule["frozen_by"].partition(":")
                when = ("CUDA was initialized" if (how, what) == ("init", "driver")
                        else f"{what} initialized CUDA" if how == "init" else f"import {what} read it")
                add(rule.get("rule", "CUD001"), e.get("site"),
                    f"{e['key']} is written after {when}; the change has no effect",
                    f"{_cause(cause, cwd)} before {_written(e, cwd)}", _seqs(cause, e))
        elif e["kind"] == "fork" and e.get("cuda_initialized"):
            add("CUD005", e.get("site"), "fork after CUDA was initialized in the parent; CUDA is unusable in the child",
                _fork_text(e, cwd), _seqs(e))
        elif e["kind"] in ("concurrent", "concurrent_construct"):
            sites = [t.get("site") for t in e["threads"]]
            if any(has_static("CUD101", s) for s in sites):
                continue
            cls = e["cls"].rsplit(".", 1)[-1]
            msg = (f"one {cls} is used from several threads at the same time without a lock"
                   if e["kind"] == "concurrent" else f"{cls} objects are constructed in several threads at the same time")
            add("CUD101", sites[-1], msg, _conc_text(e, cwd), _seqs(e))

    gpu, basis = _gpu_check(events, nvml_why)
    started = not any(e["kind"] == "start_failed" for e in events)
    uncaught = next((e["error"] for e in events if e["kind"] == "uncaught"), None)
    skipped = tuple(sorted({e["api"] for e in events if e["kind"] == "hook_failed"}))
    return TraceResult(
        verdicts=tuple(verdicts),
        runtime=tuple(sorted(runtime.values(), key=lambda r: (r.path, r.line, r.code))),
        gpu=gpu,
        program=ProgramExit(returncode, signal_name, started, uncaught),
        basis=basis,
        static_note=static_note,
        events=len(events),
        skipped_hooks=skipped,
    )


def _root_pid(events: Sequence[dict[str, Any]]) -> int | None:
    return next((e["pid"] for e in events if e["kind"] == "start"), None)


def final_env(events: Sequence[dict[str, Any]], name: str) -> str | None:
    """The traced program's last value of `name` (main process)."""
    root = _root_pid(events)
    value = None
    for e in events:
        if e["pid"] != root:
            continue
        if e["kind"] in ("start", "exit"):
            value = e["env"].get(name)
        elif e["kind"] == "env" and e["key"] == name:
            value = e.get("value") if e["op"] == "set" else None
    return value


def _gpu_check(events: Sequence[dict[str, Any]], nvml_why: str) -> tuple[GpuCheck | None, str]:
    summary = next((e for e in reversed(events) if e["kind"] == "nvml_summary"), None)
    if summary is None:
        why = nvml_why or "NVML was not sampled"
        return None, f"call order only ({why})"
    devices = [Gpu(**d) for d in summary.get("devices", [])]
    seen = set(summary.get("used", {}))
    for e in events:  # the program's own look at exit (a short run can end between two polls)
        if e["kind"] == "nvml":
            seen.update(e.get("gpus", {}))
    used = tuple(sorted(int(k) for k in seen))
    cvd = final_env(events, "CUDA_VISIBLE_DEVICES")
    order = final_env(events, "CUDA_DEVICE_ORDER")
    expected, notes = expected_gpus(cvd, devices, order)
    basis = "NVML (GPU contexts of the process) and call order"
    if not used:
        return GpuCheck(tuple(sorted(expected)) if expected is not None else None, (), False,
                        "the process held no GPU context", tuple(notes)), basis
    if expected is None:
        return GpuCheck(None, used, False, f"the process used {describe(set(used))}", tuple(notes)), basis
    mismatch = not set(used) <= expected
    shown = f"CUDA_VISIBLE_DEVICES={cvd!r}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset"
    message = (f"expected {describe(expected)} only ({shown}); the process used {describe(set(used))}"
               if mismatch else f"the process used {describe(set(used))}, as {shown} selects")
    return GpuCheck(tuple(sorted(expected)), used, mismatch, message, tuple(notes)), basis
