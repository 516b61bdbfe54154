"""CUD004's search for where a GPU index came from (cudalint.checks.gpu_index.resolve): lazy, only
towards the numbering a check wants, each label set's reachable numberings asked once per run.

The shapes are fixtures/CUD004/bad_through_parameters.py's (an index handed down through parameters,
as the multi-GPU launchers that build `Worker(gpu_id)` per free GPU do), made wide and deep: a
device helper called from many places through several layers of callers, as transformers'
`.to(device)` helpers are (575 sinks there made 494,521 calls of the old, exhaustive search).
"""
from __future__ import annotations

from pathlib import Path

from cudalint.checks import gpu_index

from tests.flow_projects import analyze

SINK = "import torch\n\ndef place(model, gpu):\n    return model.to(f'cuda:{gpu}')\n"


def _layers(width: int, depth: int, source: str = "") -> dict[str, str]:
    """`place` called by `width` functions of layer 1, each called by all `width` of layer 2 ...:
    width ** depth paths from the top layer to the sink. `source`: what the top layer passes."""
    files = {"sink.py": SINK}
    lines = ["from sink import place", "import pynvml", "import torch", ""]
    for level in range(1, depth + 1):
        for k in range(width):
            lines.append(f"def f{level}_{k}(model, gpu):")
            if level == 1:
                lines.append("    return place(model, gpu)")
            else:
                lines += [f"    f{level - 1}_{j}(model, gpu)" for j in range(width)]
            lines.append("")
    lines.append("def main(model):")
    lines.append(f"    g = {source or 'torch.cuda.current_device()'}")
    lines += [f"    f{depth}_{k}(model, g)" for k in range(width)]
    files["layers.py"] = "\n".join(lines) + "\n"
    return files


# one caller passes a CUDA ordinal, the other an NVML index
TWO_CALLERS = {
    "sink.py": SINK,
    "callers.py": (
        "import pynvml\nimport torch\nfrom sink import place\n\n"
        "def ordinal(model):\n    place(model, torch.cuda.current_device())\n\n"
        "def physical(model):\n    place(model, pynvml.nvmlDeviceGetCount() - 1)\n"
    ),
}


def _counting(monkeypatch) -> list[int]:
    calls = [0]
    passed = gpu_index._passed

    def counted(*args):
        calls[0] += 1
        return passed(*args)

    monkeypatch.setattr(gpu_index, "_passed", counted)
    return calls


def test_a_wide_deep_fan_of_callers_without_an_nvml_index_is_asked_once_per_label(tmp_path: Path, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    an = analyze(tmp_path, _layers(width=4, depth=5))
    assert [f.code for f in an.findings.values()] == []
    # 21 parameters (place + 4 per layer) at depths 1..6: listing every path was 4 ** 5 = 1,024 of them
    assert 0 < calls[0] <= 21 * 7, calls[0]


def test_the_nvml_index_at_the_top_of_the_fan_is_found_through_the_first_path(tmp_path: Path) -> None:
    an = analyze(tmp_path, _layers(width=3, depth=3, source="pynvml.nvmlDeviceGetCount() - 1"))
    assert [(f.code, Path(f.path).name, f.line) for f in an.findings.values()] == [("CUD004", "sink.py", 4)]
    steps = [(Path(s.path).name, s.line) for s in list(an.findings.values())[0].witness]
    # main -> f3_0 -> f2_0 -> f1_0 -> place: the first caller of each, in line order
    assert steps == [("layers.py", 45), ("layers.py", 46), ("layers.py", 30), ("layers.py", 15), ("layers.py", 6), ("sink.py", 4)], steps


def test_a_sink_wanting_nvml_skips_a_branch_that_only_holds_cuda_ordinals(tmp_path: Path) -> None:
    an = analyze(tmp_path, TWO_CALLERS)
    assert [(f.code, Path(f.path).name, f.line) for f in an.findings.values()] == [("CUD004", "sink.py", 4)]
    assert [(Path(s.path).name, s.line) for s in list(an.findings.values())[0].witness] == [("callers.py", 9), ("sink.py", 4)]


def test_numberings_are_those_the_search_can_give(tmp_path: Path) -> None:
    an = analyze(tmp_path, TWO_CALLERS)
    index = an.index
    mod = index.module(str(tmp_path / "sink.py"))
    sink = next(ev for ev in index.events(mod, "gpu_index"))
    labels = sink.data[2]
    assert gpu_index.numberings(index, mod, labels) == {"nvml", "cuda"}
    assert gpu_index.numberings(index, mod, labels, depth=8) == frozenset()  # past the depth: nothing
    assert [k for k, _ in gpu_index.resolve(index, mod, labels)] == ["cuda", "nvml"]  # line order of the callers
    assert [k for k, _ in gpu_index.resolve(index, mod, labels, want=frozenset({"nvml"}))] == ["nvml"]
    assert list(gpu_index.resolve(index, mod, labels, depth=8)) == []


def test_the_search_stops_eight_calls_away_and_in_a_recursion(tmp_path: Path) -> None:
    # nine layers of one caller each: the NVML index is nine calls above the sink, past the limit
    far = analyze(tmp_path / "far", _layers(width=1, depth=9, source="pynvml.nvmlDeviceGetCount() - 1"))
    assert list(far.findings.values()) == []
    mod = far.index.module(str(tmp_path / "far" / "sink.py"))
    labels = next(iter(far.index.events(mod, "gpu_index"))).data[2]
    assert gpu_index.numberings(far.index, mod, labels) == frozenset()  # (not even looked for past the limit)
    near = analyze(tmp_path / "near", _layers(width=1, depth=7, source="pynvml.nvmlDeviceGetCount() - 1"))
    assert [f.code for f in near.findings.values()] == ["CUD004"]
    # a parameter handed around a recursion: each label set at each depth is asked once
    loop = {
        "sink.py": SINK,
        "walk.py": (
            "import pynvml\nfrom sink import place\n\n"
            "def down(model, gpu, n):\n    return up(model, gpu, n - 1) if n else place(model, gpu)\n\n"
            "def up(model, gpu, n):\n    return down(model, gpu, n)\n\n"
            "def main(model):\n    down(model, pynvml.nvmlDeviceGetCount() - 1, 3)\n"
        ),
    }
    found = analyze(tmp_path / "loop", loop)
    assert [(f.code, Path(f.path).name, f.line) for f in found.findings.values()] == [("CUD004", "sink.py", 4)]
