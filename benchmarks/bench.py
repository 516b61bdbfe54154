"""`make bench`: cudalint against libcst's parser and the peers, side by side, on a corpus no one here wrote.

Every figure comes from a fresh subprocess (wall time; peak RSS of the largest process, from
wait4). The corpus is copied to $TMPDIR/cudalint-bench-corpus/ first, so the warm run after "touching one
file" does not write into an installed package. Targets (issue 16) are printed in the table at the end;
none of this is a test.

    python benchmarks/bench.py [--corpus NAME_OR_DIR ...] [--limit N] [--runs N] [--parse-runs N]
                               [--no-peers] [--no-scale] [--serial] [--profile]

Without --corpus: every release of issue 16 that ../shared/realworld/fetch.sh downloaded (timm,
transformers, vllm, diffusers, deepspeed, lightning, ultralytics), then the generated projects, then
flake8 with CUD selected against without it on lightning and ultralytics, then one table.

Each timed row is the median of `--runs` runs (3 by default; peak memory: the largest), so one
noisy run moves no ratio. TorchFix, which has no target here, runs once.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# outside this repository: inside it, every copy would belong to cudalint's own project (its
# pyproject.toml and .gitignore), and the flake8 plugin would judge each file alone
CORPUS_COPY = Path(tempfile.gettempdir()) / "cudalint-bench-corpus"
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
    got = list(run([sys.executable, "-m", "cudalint", "--format", "json", "--no-gitignore", *args], cwd=cwd, env=env))
    if got[2] not in (0, 1):  # (a run that failed is no figure: the 4,000-module project once ended in a RecursionError)
        raise SystemExit(f"cudalint {' '.join(args)} in {cwd} exited with {got[2]}")
    return got


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


def median_of(runs: int, once, check_same: bool = True) -> tuple[float, float, str]:
    """(median wall, largest peak RSS, the output of the last run) of `once()` called `runs` times;
    `once(i)` returns run()'s (wall, MB, exit code, stdout). Every run must print the same."""
    results = [once(i) for i in range(runs)]
    outs = {r[3] for r in results}
    if check_same and len(outs) > 1:
        print("  (the runs of this row printed different findings)")
    walls = sorted(r[0] for r in results)
    return walls[len(walls) // 2], max(r[1] for r in results), results[-1][3]


# issue 16's corpora, in the order of the table; timm first: the per-line cost is measured against it
CORPORA = ("timm", "transformers", "vllm", "diffusers", "deepspeed", "lightning", "ultralytics")
FLAKE8_CORPORA = ("lightning", "ultralytics")


def resolve_corpus(given: Path) -> Path:
    if not given.exists() and (REALWORLD / given.name).is_dir():  # --corpus vllm: the downloaded release
        return REALWORLD / given.name
    return given


def bench_corpus(src: Path, opts, runs: int, row) -> dict:
    """The rows of one corpus: libcst's parse alone, then cudalint cold, warm, with the cache restored
    onto new mtimes, one file touched, one edited, no cache."""
    corpus = copy_corpus(src, opts.limit)
    files = corpus_files(corpus)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    print(f"\ncorpus {src.name}: {src} -> {corpus}: {len(files)} files, {lines} lines")
    out: dict = {"name": src.name, "files": len(files), "lines": lines}
    parse, mem, text = median_of(opts.parse_runs or runs, lambda i: run([sys.executable, "-c", PARSE_ONLY, str(corpus)]))
    row("libcst parse_module alone (1 process)", parse, mem, f"{text.strip()} unparsable")
    out["parse"] = parse
    with tempfile.TemporaryDirectory(prefix="cudalint-bench-") as tmp:
        caches = [Path(tmp) / f"cache{i}" for i in range(runs)]
        cache = caches[-1]  # the warm runs use the last cold run's cache
        cold, cmem, o1 = median_of(runs, lambda i: cudalint([corpus.name], caches[i], corpus.parent))
        row("cudalint cold (empty cache)", cold, cmem, f"{count(o1)} findings")
        warm, wmem, o2 = median_of(runs, lambda i: cudalint([corpus.name], cache, corpus.parent))
        row("cudalint warm, nothing changed", warm, wmem, f"{count(o2)} findings")

        def restore_and_run(i: int) -> tuple:
            # a cache restored by CI onto a fresh checkout: every file's mtime is new, its bytes the same
            for p in files:
                os.utime(p)
            return cudalint([corpus.name], cache, corpus.parent)

        restored, rmem, o_restored = median_of(runs, restore_and_run)
        row("cudalint, cache restored (every mtime new)", restored, rmem, f"{count(o_restored)} findings")
        touched = next((p for p in files if p.name == "functional.py"), files[len(files) // 2])

        def append_and_run(text: str):
            def once(i: int) -> tuple:
                with open(touched, "a") as fh:
                    fh.write(text.format(i + 1))
                return cudalint([corpus.name], cache, corpus.parent)

            return once

        # a comment: the file's summary stays as it was (cudalint.engine.run_keys)
        one, omem, o3 = median_of(runs, append_and_run("\n# touched by the benchmark ({})\n"))
        row("cudalint warm, one file touched", one, omem, f"{touched.relative_to(corpus)}; {count(o3)} findings")
        # a function more: the summary changes, so every other one is read back from the cache and
        # the whole project analyzed again
        edit, emem, o_edit = median_of(runs, append_and_run("\n\ndef _edited_by_the_benchmark_{}(x):\n    return x\n"))
        row("cudalint warm, one file edited", edit, emem, f"{touched.relative_to(corpus)}; {count(o_edit)} findings")
        nocache, nmem, o4 = median_of(runs, lambda i: cudalint(["--no-cache", corpus.name], cache, corpus.parent))
        row("cudalint --no-cache", nocache, nmem, f"{count(o4)} findings")
        outs = [o1, o2, o_restored, o3, o_edit, o4]
        if opts.serial:
            serial, smem, o5 = median_of(runs, lambda i: cudalint(["--no-cache", "-j", "1", corpus.name], cache, corpus.parent))
            row("cudalint --no-cache -j 1 (serial)", serial, smem, f"{count(o5)} findings")
            outs.append(o5)
    # the touched file got comments and functions that do nothing at its end: no finding moves
    same = all(o == outs[0] for o in outs)
    print(f"  findings identical cold/warm/restored/touched/edited/no-cache{'/serial' if opts.serial else ''}: {same}")
    out.update(cold=cold, warm=warm, restored=restored, touched=one, edited=edit, mem=max(cmem, wmem, rmem, omem, emem, nmem), findings=count(o1), same=same)
    if not opts.keep_copies:
        shutil.rmtree(corpus, ignore_errors=True)
    return out


def bench_flake8(src: Path, runs: int, row) -> dict:
    """flake8 as a plugin user runs it: `--select E,F,W,CUD` against `--select E,F,W`, same flake8,
    same plugins installed, paired run by run (base, cold, warm, base, cold, warm, ...: in blocks of
    runs, the machine's drift between blocks moved lightning's warm figure from +7 % to +14 %); cold
    = an empty cudalint cache, warm = the cache the first cold run left."""
    corpus = copy_corpus(src, None)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    flake8 = [sys.executable, "-m", "flake8", "--jobs", str(len(os.sched_getaffinity(0))), corpus.name]
    print(f"\nflake8 on {src.name} ({len(corpus_files(corpus))} files)")
    out: dict = {"name": src.name}
    with tempfile.TemporaryDirectory(prefix="cudalint-flake8-") as tmp:
        cold_env = lambda i: dict(env, CUDALINT_CACHE_DIR=str(Path(tmp) / f"c{i}"))  # noqa: E731
        with_cud = flake8[:3] + ["--select", "E,F,W,CUD"] + flake8[3:]
        rounds = [
            (run(flake8[:3] + ["--select", "E,F,W"] + flake8[3:], cwd=corpus.parent, env=env), run(with_cud, cwd=corpus.parent, env=cold_env(i)), run(with_cud, cwd=corpus.parent, env=cold_env(0)))
            for i in range(runs)
        ]
        (base, bmem), (cold, cmem), (warm, wmem) = ((sorted(r[k][0] for r in rounds)[runs // 2], max(r[k][1] for r in rounds)) for k in range(3))
        row("flake8 --select E,F,W", base, bmem)
        row("flake8 --select E,F,W,CUD, cold cudalint cache", cold, cmem)
        row("flake8 --select E,F,W,CUD, warm cudalint cache", warm, wmem)
    shutil.rmtree(corpus, ignore_errors=True)
    out.update(base=base, cold=cold, warm=warm, rounds={k: paired([(r[0][0], r[i][0]) for r in rounds]) for k, i in (("cold", 1), ("warm", 2))})
    return out


def paired(times: list[tuple[float, float]]) -> tuple[float, float, float]:
    """(median, lowest, highest) of each round's own ratio, CUD's time over the base's: the machine's
    speed drifts between rounds by more than the cudalint part of flake8's run (2026-11-29: a 3.3 s
    base one round, 4.8 s the next), which the ratio of the two medians keeps and a round's own ratio
    mostly cancels."""
    ratios = sorted(b / a for a, b in times)
    return statistics.median(ratios), ratios[0], ratios[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, action="append", help="a directory of Python sources, or the name of a release under ~/.cache/cudalint-realworld (timm, vllm, ...); repeatable [default: those of issue 16 that are downloaded, else the installed torch]")
    ap.add_argument("--limit", type=int, help="only the first N files (by path) of each corpus")
    ap.add_argument("--runs", type=int, default=3, help="runs per timed row; the median is shown [default: 3]")
    ap.add_argument("--parse-runs", type=int, help="runs of the libcst row (slow on the big corpora) [default: --runs]")
    ap.add_argument("--no-peers", action="store_true", help="skip the flake8 rows")
    ap.add_argument("--flake8-runs", type=int, help="rounds of the flake8 rows (base, cold, warm each) [default: --runs]")
    ap.add_argument("--torchfix", action="store_true", help="also time TorchFix once on the first corpus (installs it into benchmarks/.venv-torchfix)")
    ap.add_argument("--no-scale", action="store_true", help="skip the generated projects (50,000-line module, 10,000-file tree, 2,000 and 4,000 modules in import cycles)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of a serial cold run of the first corpus")
    ap.add_argument("--serial", action="store_true", help="also time a serial run (-j 1)")
    ap.add_argument("--keep-copies", action="store_true", help="keep the copies (in $TMPDIR/cudalint-bench-corpus/) afterwards")
    opts = ap.parse_args()
    runs = max(1, opts.runs)
    given = opts.corpus or [REALWORLD / n for n in CORPORA if (REALWORLD / n).is_dir()] or [torch_dir()]
    sources = [resolve_corpus(g) for g in given]
    cores = len(os.sched_getaffinity(0))
    print(f"{len(sources)} corpora; {cores} cores; Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}")
    print(f"each row: the median wall time of {runs} run(s), the largest peak memory (of the largest process)")
    compile_cudalint()

    def row(name: str, wall: float, mem: float, note: str = "") -> None:
        print(f"  {name:<48} {wall:8.2f} s {mem:8.0f} MB  {note}", flush=True)

    results = [bench_corpus(src, opts, runs, row) for src in sources]

    scale: dict[str, tuple[float, float]] = {}
    if not opts.no_scale:
        print("\ngenerated projects")
        with tempfile.TemporaryDirectory(prefix="cudalint-bench-") as tmp:
            cache = Path(tmp) / "cache"
            big = Path(tmp) / "big"
            big.mkdir()
            (big / "big.py").write_text(gen_module(50_000))
            w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", big.name], cache, big.parent))
            row("generated module, 50,000 lines", w, m)
            scale["module"] = (w / 50_000, m)
            tree = Path(tmp) / "tree"
            tree_lines = gen_tree(tree, 10_000)
            w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", tree.name], cache, tree.parent))
            row(f"generated tree, 10,000 files ({tree_lines} lines)", w, m)
            scale["tree"] = (w / tree_lines, m)
            # issue 16: import cycles, star imports, re-export chains, __init__ fan-out (benchmarks/adversarial.py)
            sys.path.insert(0, str(HERE))
            from adversarial import generate

            # at twice the size too: the work must grow with the modules, not with the paths through them
            for modules in (2000, 4000):
                adv = Path(tmp) / f"adversarial{modules}"
                adv_lines = generate(adv, modules=modules)
                w, m, _ = median_of(runs, lambda i: cudalint(["--no-cache", "adv"], cache, adv))
                row(f"generated import cycles, {modules:,} modules ({adv_lines} lines)", w, m)
                scale[f"cycles {modules}"] = (w / adv_lines, m)

    flake8_rows = []
    if not opts.no_peers:
        chosen = [s for s in sources if s.name in FLAKE8_CORPORA] or sources[:1]
        flake8_rows = [bench_flake8(src, max(1, opts.flake8_runs or runs), row) for src in chosen]
        tf = peer_bin("torchfix") if opts.torchfix else None
        if tf is not None:
            first = copy_corpus(sources[0], opts.limit)
            w, m, _, _ = run([str(tf / "torchfix"), first.name], cwd=first.parent)
            row(f"TorchFix on {sources[0].name} (no target; once)", w, m)

    base = next((r for r in results if r["name"] == "timm"), results[0])
    base_cost = base["cold"] / max(base["lines"], 1)
    print(f"\ntargets (issue 16); per-line cost against {base['name']}'s in this run")
    print(f"  {'corpus':<14} {'files':>6} {'lines':>9} {'cold s':>8} {'cold/parse':>10} {'warm/cold':>9} {'touch/cold':>10} {'edit/cold':>9} {'per line':>8} {'peak MB':>8}  same")
    for r in results:
        per_line = r["cold"] / max(r["lines"], 1) / base_cost
        print(
            f"  {r['name']:<14} {r['files']:>6} {r['lines']:>9} {r['cold']:>8.1f} {r['cold'] / r['parse']:>10.3f} {r['warm'] / r['cold']:>9.3f}"
            f" {r['touched'] / r['cold']:>10.3f} {r['edited'] / r['cold']:>9.3f} {per_line:>7.2f}x {r['mem']:>8.0f}  {r['same']}"
        )
    print(f"  {'(targets)':<14} {'':>6} {'':>9} {'':>8} {'<= 0.5':>10} {'<= 0.05':>9} {'<= 0.10':>10} {'(none)':>9} {'<= 2':>8} {'< 400':>8}")
    print("  (touched: a comment added, the file's summary unchanged; edited: a function added, every summary read back and the project analyzed again)")
    for name, (cost, mem) in scale.items():
        print(f"  generated {name:<11} per line {cost / base_cost:6.2f}x {base['name']}'s (target <= 2), {mem:.0f} MB (target < 400)")
    for r in flake8_rows:
        print(f"  flake8 +CUD on {r['name']:<12} cold {r['cold'] / r['base']:6.3f}x (target <= 1.25)   warm {r['warm'] / r['base']:6.3f}x (target <= 1.10)")
        (cm, clo, chi), (wm, wlo, whi) = r["rounds"]["cold"], r["rounds"]["warm"]
        print(f"  {'':<14}{'rounds':>13} cold {cm:6.3f}x ({clo:.2f}-{chi:.2f}){'':>17}warm {wm:6.3f}x ({wlo:.2f}-{whi:.2f})  (median of the rounds' own ratios, lowest-highest)")

    if opts.profile:
        import cProfile
        import pstats

        sys.path.insert(0, str(ROOT))
        from cudalint.api import lint_paths
        from cudalint.inputs.config import Config

        prof = cProfile.Profile()
        prof.enable()
        lint_paths([str(sources[0])], Config(respect_gitignore=False), jobs=1)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
