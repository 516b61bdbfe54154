"""A generated project with every import shape that once made cudalint's run grow with the number
of import paths instead of the number of modules (issue 16: vllm took 24 GB, transformers 6.5 GB).

    python benchmarks/adversarial.py DIR [--modules 2000] [--per-package 50]

The shapes, all at once:
- a top package whose `__init__` star-imports every subpackage, and subpackages whose `__init__`
  star-imports every module in them (transformers, diffusers: "the `__init__` imports everything");
- every module star-imports the top package: one import cycle through the whole project;
- a re-export chain per subpackage (`m3` star-imports `m2`, which star-imports `m1`, ...), as deep
  as the subpackage is long (vllm's `from vllm.x import *` layers);
- cross-package imports in both directions, and calls across them (more cycles);
- modules that initialize CUDA at their top level or in a function, and modules that set
  CUDA_VISIBLE_DEVICES afterwards, so the analysis has findings to carry through all of it.

`make bench` lints it next to the real corpora (per-line cost against timm's, peak memory), and
tests/test_scale_shapes.py lints small ones every way (cold, warm, touched, serial, workers).
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

TOP = "adv"


def _module(pkg: int, idx: int, per_package: int, packages: int, rng: random.Random) -> str:
    lines = ["import os", "import torch", f"from {TOP} import *"]
    if idx > 0:
        lines.append(f"from {TOP}.p{pkg}.m{idx - 1} import *")  # the re-export chain
    other_pkg = rng.randrange(packages)
    other_idx = rng.randrange(per_package)
    lines.append(f"from {TOP}.p{other_pkg} import m{other_idx} as other")  # a cross edge, both ways over all
    if idx + 1 < per_package:
        lines.append(f"from .m{idx + 1} import helper_{pkg}_{idx + 1}")  # a forward edge: a cycle in the package
    lines.append("")
    lines.append(f"def helper_{pkg}_{idx}(x):")
    lines.append("    y = other.helper_{}_{}(x) if x > 3 else x".format(other_pkg, other_idx))
    if idx % 5 == 0:
        lines.append("    return torch.zeros(3, device='cuda') + y")
    else:
        lines.append("    return y + 1")
    lines.append("")
    lines.append(f"def worker_{pkg}_{idx}(n):")
    lines.append("    total = 0")
    lines.append("    for i in range(n):")
    lines.append(f"        total += helper_{pkg}_{idx}(i)")
    if idx + 1 < per_package:
        lines.append(f"        total += helper_{pkg}_{idx + 1}(i)")
    lines.append("    return total")
    lines.append("")
    if idx % 13 == 0:
        lines.append("torch.cuda.init()")  # CUDA initialized when this module is imported
    if idx % 11 == 3:
        lines.append(f"worker_{pkg}_{idx}(2)")
    if idx % 17 == 5:
        lines.append("os.environ['CUDA_VISIBLE_DEVICES'] = '0'")  # after whatever ran before it
    lines.append("")
    lines.append("class Model{}{}:".format(pkg, idx))
    lines.append("    def __init__(self):")
    lines.append(f"        self.x = worker_{pkg}_{idx}(1)")
    lines.append("")
    return "\n".join(lines) + "\n"


def generate(root: Path, modules: int = 2000, per_package: int = 50, seed: int = 0) -> int:
    """Write the project under `root` (root/adv/...); return its number of lines."""
    rng = random.Random(seed)
    packages = max(1, (modules + per_package - 1) // per_package)
    top = root / TOP
    top.mkdir(parents=True, exist_ok=True)
    total = 0

    def write(path: Path, text: str) -> None:
        nonlocal total
        path.write_text(text)
        total += text.count("\n")

    write(top / "__init__.py", "".join(f"from .p{k} import *\n" for k in range(packages)))
    made = 0
    for k in range(packages):
        pkg = top / f"p{k}"
        pkg.mkdir(exist_ok=True)
        count = min(per_package, modules - made)
        write(pkg / "__init__.py", "".join(f"from .m{j} import *\n" for j in range(count)))
        for j in range(count):
            write(pkg / f"m{j}.py", _module(k, j, count, packages, rng))
        made += count
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--modules", type=int, default=2000)
    ap.add_argument("--per-package", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    opts = ap.parse_args()
    lines = generate(opts.root, opts.modules, opts.per_package, opts.seed)
    print(f"{opts.root / TOP}: {opts.modules} modules, {lines} lines")


if __name__ == "__main__":
    main()
