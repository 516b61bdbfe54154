"""What making summaries lean at once saves (cudalint.summary.thread_free), and that it changes nothing
else: every file of a corpus parsed alone, summarized whole and summarized lean, the three
interleaved file by file in one process (on the 2-core machines this project is measured on, one
process's speed swings by a factor of two within seconds: interleaving gives each form the same
share of every swing), and each lean summary compared byte for byte with its whole one stripped.

    python benchmarks/lean_summaries.py --corpus DIR [--corpus DIR ...] [--runs 3]

Prints, per corpus: the modules, how many make a llama.cpp context, how many lean summaries differ
from their whole ones stripped (0 expected), and the seconds of parse, whole and lean (sums over the
runs), with lean / whole for parse and summary together and for the summary alone.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudalint.core.catalogue import load_catalogue  # noqa: E402
from cudalint.core.ir import ModuleIR  # noqa: E402
from cudalint.core.modnames import module_name  # noqa: E402
from cudalint.engine.serialize import dumps  # noqa: E402
from cudalint.inputs import source  # noqa: E402
from cudalint.summary.from_bytes import _summarize_bytes  # noqa: E402
from cudalint.summary.thread_free import strip  # noqa: E402


def corpus_dir(name: str) -> Path:
    given = Path(name)
    return given if given.is_dir() else Path.home() / ".cache" / "cudalint-realworld" / name


def measure(root: Path, runs: int) -> dict:
    catalogue = load_catalogue()
    files = []
    for path in sorted(root.rglob("*.py")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        modname, is_package = module_name(path.resolve())
        files.append((str(path), data, modname, is_package))
    out = {"modules": 0, "makes_llama": 0, "differ": 0, "parse": 0.0, "whole": 0.0, "lean": 0.0}
    for path, data, modname, is_package in files:  # (once: the comparison)
        whole = _summarize_bytes(path, data, modname, is_package, catalogue)
        if isinstance(whole, ModuleIR):
            lean = _summarize_bytes(path, data, modname, is_package, catalogue, lean=True)
            out["modules"] += 1
            out["makes_llama"] += whole.makes_llama
            out["differ"] += dumps(strip(whole)) != dumps(lean)
    clock = time.perf_counter
    gc.disable()  # (as in a lint run: cudalint.entry.run)
    for run in range(runs):
        for i, (path, data, modname, is_package) in enumerate(files):
            order = ("parse", "whole", "lean") if (i + run) % 2 else ("lean", "whole", "parse")
            for form in order:
                start = clock()
                if form == "parse":
                    source.parse(source.decode(path, data))
                else:
                    _summarize_bytes(path, data, modname, is_package, catalogue, lean=form == "lean")
                out[form] += clock() - start
        gc.collect()
    gc.enable()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", required=True, help="a directory, or the name of a release under ~/.cache/cudalint-realworld")
    ap.add_argument("--runs", type=int, default=3)
    opts = ap.parse_args()
    print(f"{'corpus':<24} {'modules':>7} {'llama':>5} {'differ':>6} {'parse s':>8} {'whole s':>8} {'lean s':>8} {'lean/whole':>10} {'summary only':>12}")
    for name in opts.corpus:
        r = measure(corpus_dir(name), opts.runs)
        ratio = r["lean"] / r["whole"] if r["whole"] else float("nan")
        alone = (r["lean"] - r["parse"]) / (r["whole"] - r["parse"]) if r["whole"] > r["parse"] else float("nan")
        print(f"{os.path.basename(os.path.normpath(name)):<24} {r['modules']:>7} {r['makes_llama']:>5} {r['differ']:>6} {r['parse']:>8.2f} {r['whole']:>8.2f} {r['lean']:>8.2f} {ratio:>10.3f} {alone:>12.3f}")


if __name__ == "__main__":
    main()
