"""What the cache's encoding of summaries costs: every summary of a corpus written as the cache
writes it and read back, in the form the cache uses (pickle under an allowlist:
cudalint.engine.summary_codec) beside the JSON form it used before (cudalint.engine.serialize, which
still writes the run results and compares summaries); and the pickled summaries written as the
cache writes them, appended to one pack (cudalint.core.cache_packs), beside one signed file each
as it did before 2026-11-28 (cudalint.core.cache_files).

    python benchmarks/cache_codec.py --corpus DIR [--runs 5]

The summaries are made once, in this process; the rows are CPU seconds of this process (medians
of `--runs`, the cycle collector off as in a lint run: cudalint.entry.run), the size of what is
written, the memory that holding every summary read back takes (what tracemalloc counts in a forked
child that reads them all and keeps them), and the time to write every entry into an empty folder.
"""
from __future__ import annotations

import argparse
import gc
import os
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

    from cudalint.core import cache_files, cache_packs
    from cudalint.core.catalogue import load_catalogue
    from cudalint.core.ir import ModuleIR
    from cudalint.engine import serialize, summary_codec
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

    def held_by(loads, texts: list) -> float:
        """MB that a forked child holds once it has read every entry back."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            import tracemalloc

            tracemalloc.start()
            kept = [loads(t) for t in texts]
            os.write(write, f"{tracemalloc.get_traced_memory()[0] / 1e6:.1f}".encode())
            kept.clear()
            os._exit(0)
        os.close(write)
        grown = float(os.read(read, 64) or b"nan")
        os.close(read)
        os.waitpid(pid, 0)
        return grown

    gc.disable()
    print(f"{opts.corpus}: {len(made)} summaries")
    for label, codec in (("pickle (the cache's)", summary_codec), ("JSON (before 2026-11-27)", serialize)):
        texts = [codec.dumps(m) for m in made]
        grown = held_by(codec.loads, texts)
        print(f"  {label}: {sum(map(len, texts)) / 1e6:.1f} MB as written, {grown:.0f} MB held once read")
        print(f"    dumps  {cpu(lambda: [codec.dumps(m) for m in made]):.3f} s")
        print(f"    loads  {cpu(lambda: [codec.loads(t) for t in texts]):.3f} s")

    texts = [summary_codec.dumps(m) for m in made]

    def into_packs() -> None:
        with tempfile.TemporaryDirectory(prefix="cudalint-codec-") as tmp:
            for i, text in enumerate(texts):
                cache_packs.append(tmp, cache_packs.SUMMARIES, f"{i:064x}", text)
            cache_packs.close_all()

    def into_files() -> None:
        with tempfile.TemporaryDirectory(prefix="cudalint-codec-") as tmp:
            for i, text in enumerate(texts):
                cache_files.write(Path(tmp), f"v2/{i % 256:02x}/{i:064x}.pickle", text)

    print(f"  writing the {len(texts)} pickled summaries, signed, into an empty folder (CPU, this process and the kernel):")
    print(f"    one pack (the cache's)            {cpu(into_packs):.3f} s")
    print(f"    a file each (before 2026-11-28)   {cpu(into_files):.3f} s")


if __name__ == "__main__":
    main()
