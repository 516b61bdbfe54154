#!/usr/bin/env python
"""Overhead of `cudalint --trace` (not a test): a CPU-bound torch program, traced vs. untraced.

    PYTHONPATH=. python benchmarks/trace_overhead.py [--repeat 5] [--seconds 3]

Reports the median wall time of each, their ratio (goal: < 1.05), and the start-up cost: tracing
an empty program vs. running it (goal: < 150 ms). The traced run includes everything the user waits
for: the parent process, the hooks, the report. Then the cost of tracing child processes: a program
that starts --children spawn children (multiprocessing, each importing torch and doing a short piece
of the same work) and as many `subprocess` runs of an empty python, traced vs. untraced: the extra
time per child.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORK = textwrap.dedent("""
    import os, sys, time
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = int(sys.argv[1])
    a = torch.randn(96, 96)
    model = torch.nn.Sequential(torch.nn.Linear(96, 96), torch.nn.ReLU(), torch.nn.Linear(96, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(n):
        # a training-loop shape: many small ops, Python in between, a few catalogue calls
        if step % 100 == 0:
            torch.cuda.is_available()
            torch.cuda.device_count()
        x = a @ a.T
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(float(loss.detach()))
""")


CHILDREN = textwrap.dedent("""
    import multiprocessing as mp
    import subprocess
    import sys

    def child(steps):
        import torch
        torch.set_num_threads(1)
        a = torch.randn(64, 64)
        for _ in range(steps):
            a = (a @ a.T).tanh()
        return float(a.sum())

    if __name__ == "__main__":
        n = int(sys.argv[1])
        ctx = mp.get_context("spawn")
        with ctx.Pool(2) as pool:
            print(sum(pool.map(child, [200] * n)))
        for _ in range(n):
            subprocess.run([sys.executable, "-c", "pass"], check=True)
""")


CPU: dict[str, list[float]] = {}


def timed(cmd: list[str], cwd: str, tag: str = "") -> float:
    """Wall time; the CPU time (user+sys of every process it started) goes to CPU[tag]: on a busy
    machine the wall time is noisy, the CPU time much less."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(tag, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0, help="approximate untraced run time")
    ap.add_argument("--children", type=int, default=4, help="spawn children and subprocesses per run")
    args = ap.parse_args()
    py = sys.executable
    trace = [py, "-m", "cudalint.trace", "-o", os.devnull]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "work.py"), "w") as fh:
            fh.write(WORK)
        with open(os.path.join(tmp, "empty.py"), "w") as fh:
            fh.write("pass\n")
        with open(os.path.join(tmp, "children.py"), "w") as fh:
            fh.write(CHILDREN)
        # calibrate the step count to about --seconds
        t = timed([py, "work.py", "200"], tmp)
        steps = max(200, int(200 * args.seconds / max(t - 0.5, 0.05)))
        plain, traced, e_plain, e_traced, c_plain, c_traced = [], [], [], [], [], []
        for _ in range(args.repeat):  # interleaved, so drift hits both equally
            plain.append(timed([py, "work.py", str(steps)], tmp, "plain"))
            traced.append(timed([*trace, "work.py", str(steps)], tmp, "traced"))
            for _ in range(4):  # start-up is short and noisy: more samples
                e_plain.append(timed([py, "empty.py"], tmp, "e_plain"))
                e_traced.append(timed([*trace, "empty.py"], tmp, "e_traced"))
            c_plain.append(timed([py, "children.py", str(args.children)], tmp, "c_plain"))
            c_traced.append(timed([*trace, "children.py", str(args.children)], tmp, "c_traced"))
    mp, mt = statistics.median(plain), statistics.median(traced)
    sp, st = statistics.median(e_plain), statistics.median(e_traced)
    print(f"python {sys.version.split()[0]}, torch program, {steps} steps, {args.repeat} runs each (median)")
    print(f"untraced {mp:.3f} s   traced {mt:.3f} s   ratio {mt / mp:.3f}   (goal < 1.05)")
    cp, ct = statistics.median(CPU["plain"]), statistics.median(CPU["traced"])
    print(f"CPU time: untraced {cp:.3f} s   traced {ct:.3f} s   ratio {ct / cp:.3f}")
    print(f"start-up: empty program {sp * 1000:.0f} ms untraced, {st * 1000:.0f} ms traced, "
          f"+{(st - sp) * 1000:.0f} ms   (goal < 150 ms); CPU +"
          f"{(statistics.median(CPU['e_traced']) - statistics.median(CPU['e_plain'])) * 1000:.0f} ms")
    # the minimum is the least disturbed run: on a shared machine it is closer to the real cost
    print(f"best runs: work ratio {min(traced) / min(plain):.3f}; start-up "
          f"+{(min(e_traced) - min(e_plain)) * 1000:.0f} ms ({min(e_plain) * 1000:.0f} -> {min(e_traced) * 1000:.0f} ms)")
    cp_, ct_ = statistics.median(c_plain), statistics.median(c_traced)
    kids = 3 + args.children  # two pool workers, the resource tracker, the subprocesses
    print(f"children: {args.children} spawn-pool tasks + {args.children} subprocesses: untraced {cp_:.2f} s, "
          f"traced {ct_:.2f} s, ratio {ct_ / cp_:.2f}, +{(ct_ - cp_) * 1000 / kids:.0f} ms per child process "
          f"({kids}); CPU +{(statistics.median(CPU['c_traced']) - statistics.median(CPU['c_plain'])) * 1000 / kids:.0f} ms "
          "per child")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
