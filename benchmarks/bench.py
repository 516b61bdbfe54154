"""`make bench`: cudalint against libcst's parser and the peers, side by side, on a corpus no one here wrote.

Every figure comes from a fresh subprocess (wall time; peak RSS of the largest process, from
wait4). The corpus is copied to benchmarks/.corpus/ first, so the warm run after "touching one
file" does not write into an installed package. Targets (issue 7) are printed next to the ratios;
none of this is a test.

    python benchmarks/bench.py [--corpus DIR] [--limit N] [--runs N] [--no-peers] [--no-scale] [--profile]

Each timed row is the median of `--runs` runs (3 by default; peak memory: the largest), so one
noisy run moves no ratio. TorchFix, which has no target here, runs once.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS_COPY = HERE / ".corpus"
# two venvs: flake8 runs every installed plugin, and TorchFix installs one (the 11 s -> 76 s)
REALWORLD = Path.home() / ".cache" / "cudalint-realworld"  # ../shared/realworld/fetch.sh puts the releases here
PEER_VENVS = {"torchfix": HERE / ".venv-torchfix", "flake8": HERE / ".venv-flake8"}


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MB of the largest process in the tree, exit code, stdout)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return wall, usage.ru_maxrss / 1024, proc.returncode, text


def torch_dir() -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('torch').origin))"],
        capture_output=True, text=True, check=True,
    )
    return Path(out.stdout.strip())


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def copy_corpus(src: Path, limit: int | None) -> Path:
    dest = CORPUS_COPY / src.name
    if dest.exists():
        shutil.rmtree(dest)
    files = corpus_files(src)
    if limit:
        files = files[:limit]
    for f in files:
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    # keep the package structure (module names) of the files kept
    for d in [dest] + [p for p in dest.rglob("*") if p.is_dir()]:
        init = src / d.relative_to(dest) / "__init__.py"
        if init.is_file() and not (d / "__init__.py").exists():
            shutil.copyfile(init, d / "__init__.py")
    return dest


PARSE_ONLY = """
import sys, libcst
from pathlib import Path
n = 0
for p in sorted(Path(sys.argv[1]).rglob("*.py")):
    try:
        libcst.parse_module(p.read_bytes())
    except Exception:
        n += 1
print(n)
"""


def compile_cudalint() -> None:
    """Byte-compile cudalint, as `pip install` does: the benchmark runs it from the source tree, and
    with PYTHONDONTWRITEBYTECODE set (these machines set it) every run would compile its modules
    again (about 40 ms, a third of a warm run), while libcst's were compiled when pip installed it."""
    import compileall

    compileall.compile_dir(str(ROOT / "cudalint"), quiet=1)


def cudalint(args: list[str], cache: Path, cwd: Path) -> list:
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDALINT_CACHE_DIR=str(cache))
    # run from the corpus's parent: a corpus such as torch has modules named like the stdlib's
    return list(run([sys.executable, "-m", "cudalint", "--format", "json", "--no-gitignore", *args], cwd=cwd, env=env))


def count(out: str) -> int:
    import json

    try:
        return len(json.loads(out))
    except ValueError:
        return -1


def gen_module(lines: int) -> str:
    block = [
        "import os",
        "import torch",
        "def f{i}(x):",
        "    y = x + {i}",
        "    if y > 3:",
        "        return torch.zeros(3, device='cuda')",
        "    for k in range(y):",
        "        y += k",
        "    return y",
        "",
    ]
    out = []
    i = 0
    while len(out) < lines:
        out.extend(line.format(i=i) for line in block)
        i += 1
    out.append("os.environ['CUDA_VISIBLE_DEVICES'] = '0'")
    return "\n".join(out) + "\n"


def gen_tree(root: Path, files: int) -> int:
    total = 0
    for i in range(files):
        d = root / f"pkg{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "__init__.py").touch()
        if i % 10 == 0:
            text = gen_module(40)
        else:
            text = "\n".join(f"def g{j}(a, b):\n    return a * b + {j}\n" for j in range(10)) + "\n"
        (d / f"m{i}.py").write_text(text)
        total += text.count("\n")
    return total


def peer_bin(name: str) -> Path | None:
    venv = PEER_VENVS[name]
    py = venv / "bin" / "python"
    if py.exists():
        return py.parent
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(HERE / f"requirements-{name}.txt")], check=True)
    except subprocess.CalledProcessError:
        print(f"(could not create {venv}; its rows are skipped)")
        return None
    return py.parent


def median_of(runs: int, once) -> tuple[float, float, str]:
    """(median wall, largest peak RSS, the output of the last run) of `once()` called `runs` times;
    `once(i)` returns run()'s (wall, MB, exit code, stdout). Every run must print the same."""
    results = [once(i) for i in range(runs)]
    outs = {r[3] for r in results}
    if len(outs) > 1:
        print("  (the runs of this row printed different findings)")
    walls = sorted(r[0] for r in results)
    return walls[len(walls) // 2], max(r[1] for r in results), results[-1][3]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, help="a directory of Python sources, or the name of one under ~/.cache/cudalint-realworld (vllm, transformers, ...) [default: the installed torch]")
    ap.add_argument("--limit", type=int, help="only the first N files (by path) of the corpus")
    ap.add_argument("--runs", type=int, default=3, help="runs per timed row; the median is shown [default: 3]")
    ap.add_argument("--no-peers", action="store_true", help="skip TorchFix and flake8")
    ap.add_argument("--no-scale", action="store_true", help="skip the generated 50,000-line module and 10,000-file tree")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of a serial cold run")
    ap.add_argument("--serial", action="store_true", help="also time a serial run (-j 1)")
    opts = ap.parse_args()
    runs = max(1, opts.runs)

    src = opts.corpus or torch_dir()
    if not src.exists() and (REALWORLD / src.name).is_dir():  # --corpus vllm: the downloaded release
        src = REALWORLD / src.name
    corpus = copy_corpus(src, opts.limit)
    files = corpus_files(corpus)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    cores = len(os.sched_getaffinity(0))
    print(f"corpus: {src} -> {corpus}: {len(files)} files, {lines} lines; {cores} cores; Python {sys.version.split()[0]}")
    print(f"each row: the median wall time of {runs} run(s), the largest peak memory")
    rows: list[tuple[str, float, float, str]] = []
    compile_cudalint()

    def row(name: str, wall: float, mem: float, note: str = "") -> None:
        rows.append((name, wall, mem, note))
        print(f"  {name:<44} {wall:8.2f} s {mem:8.0f} MB  {note}", flush=True)

    parse, mem, out = median_of(runs, lambda i: run([sys.executable, "-c", PARSE_ONLY, str(corpus)]))
    row("libcst parse_module alone (1 process)", parse, mem, f"{out.strip()} unparsable")

    with tempfile.TemporaryDirectory(prefix="cudalint-bench-") as tmp:
        caches = [Path(tmp) / f"cache{i}" for i in range(runs)]
        cache = caches[-1]  # the warm runs use the last cold run's cache
        cold, cmem, out = median_of(runs, lambda i: cudalint([corpus.name], caches[i], corpus.parent))
        row("cudalint cold (empty cache)", cold, cmem, f"{count(out)} findings")
        warm, wmem, out2 = median_of(runs, lambda i: cudalint([corpus.name], cache, corpus.parent))
        row("cudalint warm, nothing changed", warm, wmem, f"{count(out2)} findings")
        touched = next((p for p in files if p.name == "functional.py"), files[len(files) // 2])

        def touch_and_run(i: int) -> tuple:
            with open(touched, "a") as fh:
                fh.write(f"\n# touched by the benchmark ({i + 1})\n")
            return cudalint([corpus.name], cache, corpus.parent)

        one, omem, out3 = median_of(runs, touch_and_run)
        row("cudalint warm, one file touched", one, omem, f"{touched.relative_to(corpus)}; {count(out3)} findings")
        nocache, nmem, out4 = median_of(runs, lambda i: cudalint(["--no-cache", corpus.name], cache, corpus.parent))
        row("cudalint --no-cache", nocache, nmem, f"{count(out4)} findings")
        out5 = out4
        if opts.serial:
            serial, smem, out5 = median_of(runs, lambda i: cudalint(["--no-cache", "-j", "1", corpus.name], cache, corpus.parent))
            row("cudalint --no-cache -j 1 (serial)", serial, smem, f"{count(out5)} findings")
        # the touched file got comments at its end: no finding moves
        same = out == out2 == out3 == out4 == out5
        print(f"  findings identical cold/warm/touched/no-cache{'/serial' if opts.serial else ''}: {same}")

        scale = {}
        if not opts.no_scale:
            big = Path(tmp) / "big"
            big.mkdir()
            (big / "big.py").write_text(gen_module(50_000))
            w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", big.name], cache, big.parent))
            row("generated module, 50,000 lines", w, m)
            scale["module"] = w / 50_000
            tree = Path(tmp) / "tree"
            tree_lines = gen_tree(tree, 10_000)
            w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", tree.name], cache, tree.parent))
            row(f"generated tree, 10,000 files ({tree_lines} lines)", w, m)
            scale["tree"] = w / tree_lines
            # issue 16: import cycles, star imports, re-export chains, __init__ fan-out (benchmarks/adversarial.py)
            sys.path.insert(0, str(HERE))
            from adversarial import generate

            adv = Path(tmp) / "adversarial"
            adv_lines = generate(adv, modules=2000)
            w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", "adv"], cache, adv))
            row(f"generated import cycles, 2,000 modules ({adv_lines} lines)", w, m)
            scale["cycles"] = w / adv_lines

    peers = {}
    if not opts.no_peers:
        tf = peer_bin("torchfix")
        if tf is not None:
            w, m, _, _ = run([str(tf / "torchfix"), corpus.name], cwd=corpus.parent)
            row("TorchFix", w, m)
        bindir = peer_bin("flake8")
        if bindir is not None:
            py = bindir / "python"
            flake8 = [str(bindir / "flake8"), "--select", "B", "--jobs", str(cores), corpus.name]
            w, m, _ = median_of(runs, lambda i: run(flake8, cwd=corpus.parent))
            row("flake8 --select B (bugbear)", w, m)
            peers["bugbear"] = w
            plugin = (ROOT / "cudalint" / "flake8_plugin.py").is_file()
            if plugin:
                env = dict(os.environ, PYTHONPATH=str(ROOT))
                # with cudalint importable, flake8 finds its entry point and runs it
                subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
                try:
                    w, m, _ = median_of(runs, lambda i: run(flake8, cwd=corpus.parent, env=env))
                finally:
                    subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", "cudalint"], check=False)
                row("flake8 --select B, cudalint plugin installed", w, m)
                peers["plugin"] = w
            else:
                print("  (cudalint's flake8 plugin has not landed: cudalint/flake8_plugin.py is missing; row skipped)")

    print("\nratios (targets from issue 7):")
    print(f"  cold / libcst parse alone         {cold / parse:6.3f}   (target <= 0.5)")
    print(f"  warm, unchanged / cold            {warm / cold:6.3f}   (target <= 0.05)")
    print(f"  warm, one file touched / cold     {one / cold:6.3f}   (target <= 0.10)")
    print(f"  peak memory, cold                 {cmem:6.0f} MB (target < 400 MB, largest process)")
    per_line = cold / lines
    for name, value in scale.items():
        print(f"  time per line, generated {name:<7} {value / per_line:6.3f} x the corpus's (target <= 2)")
    if "plugin" in peers:
        print(f"  flake8 with plugin / without      {peers['plugin'] / peers['bugbear']:6.3f}   (target <= 1.10)")

    if opts.profile:
        import cProfile
        import pstats

        sys.path.insert(0, str(ROOT))
        from cudalint.api import lint_paths

        prof = cProfile.Profile()
        prof.enable()
        from cudalint.config import Config

        lint_paths([str(corpus)], Config(respect_gitignore=False), jobs=1)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
