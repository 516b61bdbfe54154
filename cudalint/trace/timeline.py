"""`--trace --html FILE`: the run as one self-contained HTML page (no network, no external asset).

The page shows a time axis per process and thread with the environment writes, the first CUDA
initialization of each library, forks and spawns (a line from the parent's lane to the child's),
the spans of threads inside one llama.cpp context (overlaps in red), and, where NVML was sampled,
memory per physical GPU over time against the GPUs the program meant to use. Above it, the static
findings with their verdicts, each linked to the events that decided it (rows of the event table).

What must be readable without scripts (and by `chromium --dump-dom`) is plain HTML made here; the
drawing is done by a small inline script (timeline_assets.py) from compact JSON, with markers merged
per pixel so a trace of 100,000 events stays quick to open.
"""
from __future__ import annotations

import html
import json
import os
from functools import lru_cache
from typing import Any, Sequence

from cudalint.trace.correlate import TraceResult
from cudalint.trace.timeline_assets import CSS, SCRIPT

MAX_ROWS = 500  # rows of the event table (plus those a verdict links to); the timeline draws every event
KINDS = {"env": "e", "init": "i", "import": "m", "fork": "f", "child": "p", "proc": "p", "start": "p",
         "spawn": "s", "concurrent": "c", "concurrent_construct": "c", "llama_use": "u", "exit": "x",
         "uncaught": "x"}
LISTED = {"env", "init", "import", "fork", "child", "proc", "start", "spawn", "concurrent",
          "concurrent_construct", "uncaught", "exit", "start_failed", "hook_failed"}


@lru_cache(maxsize=4096)
def _rel(path: str, cwd: str) -> str:
    try:
        r = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if r.startswith(os.pardir + os.sep) else r


def _at(site: Any, cwd: str) -> str:
    if not isinstance(site, dict):
        return ""
    return f"{_rel(str(site.get('path')), cwd)}:{site.get('line')}"


def describe(e: dict[str, Any], cwd: str) -> str:
    """One line for an event: what happened and at which line of the program."""
    k = e.get("kind")
    at = _at(e.get("site"), cwd)
    where = f" at {at}" if at else ""
    if k == "env":
        if e.get("op") == "unset":
            return f"{e.get('key')} unset{where}"
        value = f"={e['value']!r}" if "value" in e else " written"
        return f"{e.get('key')}{value}{where}"
    if k == "init":
        return f"{e.get('call') or e.get('api')} initializes CUDA ({e.get('library') or '?'}){where}"
    if k == "import":
        return f"import {e.get('module')}{where or ' (before the program started)'}"
    if k == "fork":
        state = "initialized" if e.get("cuda_initialized") else "not initialized"
        return f"fork{where}, CUDA {state} in the parent"
    if k == "child":
        return f"forked child of pid {e.get('ppid')} starts"
    if k == "proc":
        return f"process started by pid {e.get('ppid')}: {' '.join(e.get('command') or e.get('argv') or [])}"
    if k == "start":
        return f"program starts: python {' '.join(str(a) for a in e.get('argv') or [])}"
    if k == "spawn":
        return f"starts pid {e.get('child')} ({e.get('via')}){where}: {' '.join(e.get('command') or [])}"
    if k in ("concurrent", "concurrent_construct"):
        ts = e.get("threads") or []
        names = " and ".join(f"{t.get('name')} ({_at(t.get('site'), cwd)})" for t in ts[:2])
        what = "inside one" if k == "concurrent" else "constructing"
        return f"threads {names} {what} {str(e.get('cls', '')).rsplit('.', 1)[-1]} at the same time"
    if k == "exit":
        return "process exits" + (", CUDA initialized" if e.get("cuda_initialized") else "")
    if k == "uncaught":
        return f"uncaught {e.get('error')}: {e.get('message', '')}"
    if k == "hook_failed":
        return f"no hook on {e.get('api')}: {e.get('error')}"
    if k == "llama_use":
        return f"{e.get('method')} on {str(e.get('cls', '')).rsplit('.', 1)[-1]}{where}"
    return str(k)


def _lanes(events: Sequence[dict[str, Any]]) -> tuple[dict[tuple[int, str], int], list[dict[str, Any]]]:
    procs: dict[int, dict[str, Any]] = {}
    lanes: dict[tuple[int, str], int] = {}
    for e in events:
        pid = e.get("pid")
        if not isinstance(pid, int) or e.get("source") == "nvml":
            continue
        p = procs.setdefault(pid, {"pid": pid, "ppid": None, "how": "", "threads": []})
        if e.get("kind") in ("start", "proc", "child") and p["ppid"] is None:
            p["ppid"] = e.get("ppid")
            p["how"] = {"start": "the program", "proc": "started (spawn, subprocess)", "child": "forked"}[e["kind"]]
            if e["kind"] == "proc":
                p["how"] += ": " + " ".join(e.get("command") or e.get("argv") or [])[:120]
        thread = str(e.get("thread") or "MainThread")
        if (pid, thread) not in lanes:
            lanes[(pid, thread)] = len(lanes)
            p["threads"].append(thread)
    return lanes, list(procs.values())


def data(result: TraceResult, events: Sequence[dict[str, Any]], cwd: str) -> dict[str, Any]:
    """The compact JSON the page's script draws."""
    lanes, procs = _lanes(events)
    times = [e["t"] for e in events if isinstance(e.get("t"), (int, float))]
    t0 = min(times) if times else 0.0

    def ms(t: Any) -> float:
        return round((float(t) - t0) * 1000, 2) if isinstance(t, (int, float)) else 0.0

    ev, spans, links, gpus = [], [], [], {}
    labels: dict[str, int] = {}  # each distinct text once: a long run repeats the same few events

    def text(s: str) -> int:
        i = labels.get(s)
        if i is None:
            i = labels[s] = len(labels)
        return i

    first_lib: set[tuple[int, str]] = set()
    last_fork: dict[int, tuple[int, float]] = {}
    spawned: dict[int, tuple[int, float]] = {}
    for e in events:
        k = e.get("kind")
        if e.get("source") == "nvml" or k == "nvml":
            for idx, mem in (e.get("gpus") or {}).items():
                gpus.setdefault(str(idx), []).append([ms(e.get("t")), mem])
            continue
        lane = lanes.get((e.get("pid"), str(e.get("thread") or "MainThread")))
        if lane is None:
            continue
        if k == "llama_span":
            spans.append([lane, ms(e.get("t0")), ms(e.get("t")), e.get("instance"),
                          text(f"{e.get('method')} at {_at(e.get('site'), cwd)}")])
            continue
        code = KINDS.get(k)
        if code is None:
            continue
        label = describe(e, cwd)
        if k == "init":
            key = (e["pid"], str(e.get("library")))
            if key not in first_lib:
                first_lib.add(key)
                code = "I"  # the first CUDA initialization of this library in this process
        ev.append([ms(e.get("t")), lane, code, e.get("seq", 0), text(label)])
        if code == "c":  # the other thread inside (or constructing) at that moment gets the mark too
            for t in e.get("threads") or ():
                other = lanes.get((e.get("pid"), str(t.get("name"))))
                if other is not None and other != lane:
                    ev.append([ms(e.get("t")), other, code, e.get("seq", 0), text(label)])
        if k == "fork":
            last_fork[e["pid"]] = (lane, ms(e.get("t")))
        elif k == "spawn" and isinstance(e.get("child"), int):
            spawned[e["child"]] = (lane, ms(e.get("t")))
        elif k == "child" and e.get("ppid") in last_fork:
            src, t = last_fork[e["ppid"]]
            links.append([src, t, lane, ms(e.get("t")), "fork"])
        elif k == "proc" and e["pid"] in spawned:
            src, t = spawned[e["pid"]]
            links.append([src, t, lane, ms(e.get("t")), "spawn"])
    expected = set(result.gpu.expected) if result.gpu is not None and result.gpu.expected is not None else None
    lane_labels = [""] * len(lanes)
    for (pid, thread), i in lanes.items():
        lane_labels[i] = f"pid {pid} · {thread}"
    return {
        "lanes": lane_labels,
        "labels": list(labels),
        "ev": ev,
        "spans": spans,
        "links": links,
        "gpus": [{"index": k, "expected": None if expected is None else int(k) in expected, "pts": v}
                 for k, v in sorted(gpus.items())],
        "end": ms(max(times)) if times else 0.0,
        "procs": procs,
    }


def _esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _verdict_rows(result: TraceResult, cwd: str) -> str:
    rows = []
    items = [(v.finding.code, v.finding.path, v.finding.line, v.status, v.finding.message, v.evidence, v.events)
             for v in result.verdicts]
    items += [(r.code, r.path, r.line, "confirmed, runtime only", r.message, r.evidence, r.events) for r in result.runtime]
    for code, path, line, status, message, evidence, seqs in items:
        links = " ".join(f'<a href="#ev-{s}" data-seq="{s}">event {s}</a>' for s in seqs) or "no event"
        cls = status.split(",")[0].replace(" ", "-")
        rows.append(f'<tr class="v-{cls}"><td>{_esc(code)}</td><td>{_esc(path)}:{line}</td>'
                    f'<td><span class="badge {cls}">{_esc(status)}</span></td><td>{_esc(message)}'
                    f'<div class="evidence">{_esc(evidence)}</div></td><td>{links}</td></tr>')
    if not rows:
        return '<p class="none">No static finding, and nothing found at run time.</p>'
    return ('<table class="findings"><thead><tr><th>code</th><th>where</th><th>verdict</th><th>finding and evidence</th>'
            '<th>decided by</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _event_rows(events: Sequence[dict[str, Any]], cwd: str, t0: float, wanted: set[int]) -> str:
    rows, shown, left = [], 0, 0
    for e in events:
        seq = e.get("seq", 0)
        if (e.get("kind") not in LISTED or e.get("source") == "nvml") and seq not in wanted:
            continue
        if shown >= MAX_ROWS and seq not in wanted:
            left += 1
            continue
        shown += 1
        t = (float(e.get("t", t0)) - t0) * 1000
        rows.append(f'<tr id="ev-{seq}" data-t="{t:.2f}"><td>{seq}</td><td>{t:.1f} ms</td><td>{e.get("pid")}</td>'
                    f'<td>{_esc(e.get("thread", ""))}</td><td>{_esc(e.get("kind"))}</td><td>{_esc(describe(e, cwd))}</td></tr>')
    more = f'<p class="none">{left} more events are not listed (keep them with --events FILE).</p>' if left else ""
    return ('<table class="events"><thead><tr><th>#</th><th>time</th><th>pid</th><th>thread</th><th>event</th>'
            '<th>what happened</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>" + more)


def _procs(procs: list[dict[str, Any]]) -> str:
    items = []
    for p in procs:
        parent = f", parent pid {p['ppid']}" if p.get("ppid") else ""
        items.append(f"<li>pid {p['pid']}{parent}: {_esc(p.get('how') or '')} "
                     f"(threads: {_esc(', '.join(p['threads']))})</li>")
    return "<ul class=procs>" + "".join(items) + "</ul>"


def _gpu_text(result: TraceResult) -> str:
    if result.gpu is None:
        return f'<p class="none">GPU memory: not sampled ({_esc(result.basis)}).</p>'
    tag = " [mismatch]" if result.gpu.mismatch else ""
    return f"<p>GPUs{tag}: {_esc(result.gpu.message)}</p>"


def page(result: TraceResult, events: Sequence[dict[str, Any]], command: list[str], cwd: str) -> str:
    d = data(result, events, cwd)
    times = [e["t"] for e in events if isinstance(e.get("t"), (int, float))]
    t0 = min(times) if times else 0.0
    wanted = {s for v in result.verdicts for s in v.events} | {s for r in result.runtime for s in r.events}
    payload = json.dumps(d, separators=(",", ":")).replace("</", "<\\/")
    counts = {}
    for v in result.verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    if result.runtime:
        counts["runtime only"] = len(result.runtime)
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no findings"
    title = f"cudalint trace: {' '.join(command)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title><style>{CSS}</style></head>
<body>
<header><h1>{_esc(title)}</h1>
<p class="status">The program {_esc(result.program.describe())}{_esc(f' (uncaught {result.program.uncaught})' if result.program.uncaught else '')}.
Evidence: {_esc(result.basis)}. <b>{_esc(summary)}</b>.</p></header>
<section><h2>Findings and verdicts</h2>{_verdict_rows(result, cwd)}</section>
<section><h2>Timeline</h2>
<p class="legend"><span class="k e">&#9670; environment write</span> <span class="k I">&#9679; first CUDA initialization of a library</span>
<span class="k i">&#9675; later initializing call</span> <span class="k f">&#9650; fork / spawn (line to the child)</span>
<span class="k c">&#9632; threads inside one llama.cpp context at once</span> <span class="k u">&#9644; a thread inside a llama.cpp context</span></p>
<div id="timeline" class="timeline"><canvas id="lanes" height="60"></canvas><div id="tip" class="tip" hidden></div></div>
<h3>Processes</h3>{_procs(d["procs"])}
<h3>GPU memory per physical GPU (NVML)</h3>{_gpu_text(result)}<canvas id="gpus" height="0"></canvas></section>
<section class="events"><h2>Events</h2>{_event_rows(events, cwd, t0, wanted)}</section>
<script type="application/json" id="trace-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
