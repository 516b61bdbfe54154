"""What the cache's encoding costs: every summary of a corpus written as the cache writes it and read
back (cudalint.engine.serialize), and one cache entry file per summary (cudalint.core.cache_files).

    python benchmarks/cache_codec.py --corpus DIR [--runs 5]

The summaries are made once, in this process; the rows are CPU seconds of this process (medians
of `--runs`), the size of what is written, and the time to write every entry into an empty folder.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.setrecursionlimit(20000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=5)
    opts = ap.parse_args()

    from cudalint.core import cache_files
    from cudalint.core.catalogue import load_catalogue
    from cudalint.core.ir import ModuleIR
    from cudalint.engine.serialize import dumps, loads
    from cudalint.summary.from_bytes import _summarize_bytes

    cat = load_catalogue()
    files = sorted(opts.corpus.rglob("*.py"))
    made = [_summarize_bytes(str(p), p.read_bytes(), "m", p.name == "__init__.py", cat) for p in files]
    made = [m for m in made if isinstance(m, ModuleIR)]

    def cpu(fn) -> float:
        times = []
        for _ in range(opts.runs):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return statistics.median(times)

    texts = [dumps(m) for m in made]
    print(f"{opts.corpus}: {len(made)} summaries, {sum(map(len, texts)) / 1e6:.1f} MB as written")
    print(f"  dumps  {cpu(lambda: [dumps(m) for m in made]):.3f} s")
    print(f"  loads  {cpu(lambda: [loads(t) for t in texts]):.3f} s")

    def write_all() -> None:
        with tempfile.TemporaryDirectory(prefix="cudalint-codec-") as tmp:
            for i, text in enumerate(texts):
                cache_files.write(Path(tmp), f"v1/{i % 256:02x}/{i:064x}.json", text)

    print(f"  write  {cpu(write_all):.3f} s ({len(texts)} entries, signed, into an empty folder)")


if __name__ == "__main__":
    main()
