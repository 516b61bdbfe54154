"""What selecting CUD adds to flake8, in instructions: the flake8 rows of `make bench` without the
machine's noise.

On the 2-core machines this project is measured on, one process's CPU time for a fixed loop swings
by a factor of two from one second to the next, and the flake8 rows of `bench.py` (wall time,
paired run by run, median of three) move by ten points between runs of the same commit. Callgrind
counts the instructions a command executes, whatever else the machine does: the same commit gives
the same count. It does not count what an instruction costs (a cache miss, a page fault) nor the
time one core waits for the other, so its ratios are not the wall ratios: lightning at 868744e gave
cold +21.0 % in instructions where the wall ratio was +29 % (seven paired rounds). What it tells
without noise is whether a change made cudalint's share bigger or smaller.

For each corpus, three commands under `valgrind --tool=callgrind` (the first two at once, the third
after the second: the counts do not depend on it), every process of each counted (cudalint's
forked workers too):

    flake8 --jobs 1 --select E,F,W CORPUS                       base
    flake8 --jobs 1 --select E,F,W,CUD CORPUS, empty cache       cold
    flake8 --jobs 1 --select E,F,W,CUD CORPUS, cold's cache      warm

`--jobs 1` keeps flake8's own checks in one process; the plugin's analysis still uses cudalint's
worker processes (cudalint.flake8_plugin.analyze_early), as in a real run. A forked child's callgrind
file also holds every instruction its parent ran before the fork (callgrind's manual, "Forking
Programs"): just before cudalint starts its workers, a probe forks a child that exits at once, and
its count (the parent's so far) is taken off each worker's.

    python benchmarks/flake8_instructions.py [--corpus NAME_OR_DIR ...]

About 50 times slower than the commands themselves (lightning: 25 minutes on 2 cores). None of this
is a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import FLAKE8_CORPORA, ROOT, compile_cudalint, copy_corpus, resolve_corpus  # noqa: E402


# flake8's own entry point, with the probe above put before cudalint's pool
DRIVER = """
import os, sys
from cudalint.engine import runner

def _probed(workers, _executor=runner._executor):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    with open(os.path.join(os.environ["CUDALINT_PROBE_DIR"], "probe.pid"), "w") as fh:
        fh.write(str(pid))
    return _executor(workers)

runner._executor = _probed
from flake8.main.cli import main
sys.argv[0] = "flake8"
main()
"""


def _count(out: Path) -> int:
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"{out}: no instruction total in it (callgrind died?)")


def instructions(folder: Path, parent: int) -> int:
    """The instructions of the processes callgrind wrote files for in `folder` (`parent`'s and those
    it forked), a forked worker's without what it inherited (the probe's count)."""
    counts = {int(out.name.split(".")[1]): _count(out) for out in folder.glob("cg.*")}
    own = counts.pop(parent)
    if not counts:
        return own
    probe_file = folder / "probe.pid"
    if not probe_file.exists():
        raise SystemExit(f"{folder}: {len(counts)} forked processes and no probe")
    inherited = counts.pop(int(probe_file.read_text()))
    return own + sum(c - inherited for c in counts.values())


def measure(corpus: Path, tmp: Path) -> dict[str, int]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    cache = tmp / "cache"
    runs = {"base": "E,F,W", "cold": "E,F,W,CUD"}
    procs = {}

    def start(name: str, select: str) -> None:
        folder = tmp / name
        folder.mkdir()
        cmd = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/cg.%p",
            sys.executable, "-c", DRIVER, "--jobs", "1", "--select", select, corpus.name,
        ]
        run_env = dict(env, CUDALINT_CACHE_DIR=str(cache), CUDALINT_PROBE_DIR=str(folder))
        procs[name] = subprocess.Popen(cmd, cwd=corpus.parent, env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for name, select in runs.items():
        start(name, select)
    procs["cold"].wait()
    start("warm", "E,F,W,CUD")  # (the cache the cold run left)
    for name, proc in procs.items():
        if proc.wait() not in (0, 1):  # (flake8 exits with 1 when it reports something)
            raise SystemExit(f"flake8 under callgrind ({name}) on {corpus} exited with {proc.returncode}")
    return {name: instructions(tmp / name, procs[name].pid) for name in ("base", "cold", "warm")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", help="a directory of Python sources, or the name of a release under ~/.cache/cudalint-realworld [default: lightning and ultralytics]")
    opts = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    chosen = [resolve_corpus(c) for c in (opts.corpus or [Path(n) for n in FLAKE8_CORPORA])]
    missing = [str(c) for c in chosen if not c.is_dir()]
    if missing:
        raise SystemExit(f"no such corpus: {', '.join(missing)} (../shared/realworld/fetch.sh downloads the releases)")
    # (else the runs with CUD would count compiling cudalint's modules, flake8's were compiled by pip)
    compile_cudalint()
    rows = []
    for src in chosen:
        corpus = copy_corpus(src, None)
        with tempfile.TemporaryDirectory(prefix="cudalint-instructions-") as tmp:
            got = measure(corpus, Path(tmp))
        shutil.rmtree(corpus, ignore_errors=True)
        rows.append((src.name, got))
        print(f"{src.name}: base {got['base']:,}  cold {got['cold']:,}  warm {got['warm']:,}", flush=True)
    print("\n| corpus | flake8 E,F,W (instructions) | +CUD cold | +CUD warm |")
    print("|---|---|---|---|")
    for name, got in rows:
        base = got["base"]
        print(f"| {name} | {base / 1e9:.2f} G | {got['cold'] / base - 1:+.1%} | {got['warm'] / base - 1:+.1%} |")


if __name__ == "__main__":
    main()
