"""What code for a newer Python costs: `source.parse` on a corpus, and the libcst fallback (cudalint.inputs.newsyntax).

    python benchmarks/newsyntax.py --corpus DIR [--against OTHER_CHECKOUT] [--runs 7]

Row 1 is the fast path (CPython's `ast` alone), timed for this checkout and, with `--against`, for
another one in alternating rounds, so that load on a shared machine hits both alike. Row 2 is the
fallback: every file with a 3.12 `type` statement put first, which CPython before 3.12 refuses.
Times are CPU seconds of this process (medians), which a busy machine disturbs less than wall time.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def corpus(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(root).parts))


def load(tree: Path):
    """cudalint.inputs.source of the checkout at `tree` (each checkout imported afresh)."""
    for name in [m for m in sys.modules if m == "cudalint" or m.startswith("cudalint.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        return importlib.import_module("cudalint.inputs.source")
    finally:
        sys.path.pop(0)


def timed(source_module, sources: list) -> float:
    start = time.process_time()
    for src in sources:
        source_module.parse(src)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="a directory of Python sources")
    ap.add_argument("--against", type=Path, help="another cudalint checkout to compare the fast path with")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    files = corpus(args.corpus)
    trees = {"this checkout": ROOT, **({f"{args.against}": args.against} if args.against else {})}
    fast: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            src = load(tree)
            sources = [s for s in (src.read(str(p)) for p in files) if isinstance(s, src.Source)]
            fast[name].append(timed(src, sources))
    src = load(ROOT)
    sources = [s for s in (src.read(str(p)) for p in files) if isinstance(s, src.Source)]
    newer = [src.Source(s.path, "type _CudalintBench = int\n" + s.text) for s in sources]
    fallback = [timed(src, newer) for _ in range(max(1, args.runs // 3))]
    lines = sum(s.text.count("\n") for s in sources)
    print(f"corpus: {args.corpus}: {len(sources)} files, {lines} lines; Python {sys.version.split()[0]}; {os.cpu_count()} cores")
    for name, times in fast.items():
        print(f"  fast path (ast), {name:<40} {statistics.median(times):8.3f} s CPU  ({', '.join(f'{t:.3f}' for t in times)})")
    if args.against:
        ratio = statistics.median(fast["this checkout"]) / statistics.median(fast[f"{args.against}"])
        print(f"  fast path, this checkout / other                {ratio:8.3f}")
    if sys.version_info < (3, 12):
        base = statistics.median(fast["this checkout"])
        print(f"  fallback (libcst + rewrite + ast), every file   {statistics.median(fallback):8.3f} s CPU  ({statistics.median(fallback) / base:.1f}x the fast path)")
    else:
        print("  fallback: not measured (this Python reads `type` statements itself)")


if __name__ == "__main__":
    main()
