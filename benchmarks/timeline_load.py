#!/usr/bin/env python
"""How long the `--trace --html` page takes to open (not a test): a synthetic trace of N events
(default 100,000: environment writes, initializing calls, forks, llama.cpp spans in 8 threads of 3
processes, NVML samples of 2 GPUs), written by the real page code, opened in headless chromium.

    PYTHONPATH=. python benchmarks/timeline_load.py [--events 100000] [--runs 3]

Prints the page size, the time to write it, and the median of --runs of the page's own time from
navigation start until its script has drawn everything (`performance.now()`; goal < 2 s), plus the
whole browser run (start-up included) for reference.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudalint.trace import timeline  # noqa: E402
from cudalint.trace.correlate import correlate  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def synthetic(n: int) -> list[dict]:
    events, t = [], 1_700_000_000.0
    site = {"path": "/p/train.py", "line": 10, "func": "main"}
    for pid in (100, 101, 102):
        events.append({"kind": "start" if pid == 100 else "proc", "pid": pid, "ppid": 100 if pid != 100 else 1,
                       "t": t, "thread": "MainThread", "env": {}, "argv": ["train.py"], "command": ["python", "-c", "x"]})
    i = 0
    while len(events) < n:
        i += 1
        t += 0.0005
        pid = (100, 101, 102)[i % 3]
        thread = f"worker-{i % 8}"
        r = i % 10
        if r < 6:
            events.append({"kind": "llama_span", "pid": pid, "thread": thread, "t": t, "t0": t - 0.002,
                           "instance": 7 + pid, "method": "__call__", "site": site})
        elif r < 8:
            events.append({"kind": "env", "pid": pid, "thread": thread, "t": t, "op": "set", "key": "CUDA_VISIBLE_DEVICES",
                           "value": str(i % 4), "site": site})
        elif r == 8:
            events.append({"kind": "init", "pid": pid, "thread": thread, "t": t, "init": "driver", "library": "torch",
                           "call": "torch.cuda.is_available()", "api": "torch.cuda.is_available", "site": site})
        else:
            events.append({"kind": "nvml", "source": "nvml", "pid": 1, "t": t, "gpus": {"0": (i % 97) << 20, "1": (i % 13) << 20}})
    for seq, e in enumerate(events):
        e["seq"] = seq
    return events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium is not installed (make chromium)")
    events = synthetic(args.events)
    result = correlate([], events, env_rules=[], cwd="/p", returncode=0)
    t = time.perf_counter()
    html = timeline.page(result, events, ["python", "train.py"], "/p")
    write_s = time.perf_counter() - t
    page_ms, wall = [], []
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "timeline.html")
        with open(page, "w", encoding="utf-8") as fh:
            fh.write(html)
        for run in range(args.runs):
            profile = os.path.join(tmp, f"profile-{run}")
            os.mkdir(profile)
            t = time.perf_counter()
            out = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", "file://" + page],
                                 capture_output=True, text=True, timeout=300).stdout
            wall.append(time.perf_counter() - t)
            m = re.search(r'data-ms="(\d+)"', out)
            drawn = re.search(r'data-drawn="(\d+)"', out)
            if not m or not drawn:
                sys.exit("the page's script did not finish")
            page_ms.append(int(m.group(1)))
    print(f"{len(events)} events, page {len(html) / 1e6:.1f} MB, written in {write_s:.2f} s")
    print(f"open until drawn (median of {args.runs}): {statistics.median(page_ms) / 1000:.2f} s (goal < 2 s); "
          f"whole headless chromium run {statistics.median(wall):.2f} s")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
