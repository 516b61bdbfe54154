"""What the flow engine makes and carries, and no more (cudalint.checks.watched, Analyzer.expose):
facts only for the imports and variables something reads, and each environment write no check
judges exposed to callers only where a caller's derivation could use it. Each economy is paired
with the finding it must keep."""
from __future__ import annotations

from pathlib import Path

from cudalint.analysis.flow import Analyzer
from cudalint.api import lint_paths
from tests.flow_projects import analyze


def _analyze(tmp_path: Path, files: dict[str, str]) -> Analyzer:
    return analyze(tmp_path, files)


def _codes(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [f"{Path(f.path).name}:{f.line}: {f.code}" for f in lint_paths([str(tmp_path / n) for n in files]).findings]


def test_facts_only_for_what_is_read(tmp_path: Path) -> None:
    an = _analyze(tmp_path, {"m.py": 'import os\nimport numpy\nimport cupy\n\nos.environ["FOO"] = "1"\nos.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'})
    keys = set(an.module_summary(an.project.modules[0]).out)
    assert "import:cupy" in keys and "import:numpy" not in keys  # (CUPY_* variables are frozen by `import cupy`)
    assert {"env_set:CUDA_VISIBLE_DEVICES", "env_value:CUDA_VISIBLE_DEVICES=0", "env_value:PYTORCH_NVML_BASED_CUDA_CHECK=1"} <= keys
    assert not any("FOO" in k for k in keys)


def test_an_unwatched_import_still_counts_where_it_freezes_a_variable(tmp_path: Path) -> None:
    # the shape of fixtures/CUD001/bad_other_libraries.py: `import cupy` freezes CUPY_* variables
    files = {"m.py": 'import os\nimport numpy\nimport cupy\n\nos.environ["CUPY_ACCELERATORS"] = "cub"\n'}
    assert _codes(tmp_path, files) == ["m.py:5: CUD002"]  # (a library-level setting read at import)


def test_repeated_unjudged_writes_are_exposed_once_each(tmp_path: Path) -> None:
    """vllm's shape: every `import vllm...` line sets PYTORCH_NVML_BASED_CUDA_CHECK and
    TORCHINDUCTOR_COMPILE_THREADS again (the catalogue's `sets_env`): a caller needs one of each."""
    text = (
        "import os\n\n\ndef setup():\n"
        '    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"\n'
        '    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"\n'
        '    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"\n'
        '    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"\n'
        '    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "2"\n'
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        '    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"\n'
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
    )
    an = _analyze(tmp_path, {"m.py": text})
    summary = next(s for (path, q), s in an.summaries.items() if q == "setup")
    exposed = [(e.event.loc[0], e.event.data[0]) for e in summary.exposed]
    # lines 5, 6, 9 (another value), both judged writes, and 11: a judged write began a new run
    assert exposed == [(5, "PYTORCH_NVML_BASED_CUDA_CHECK"), (6, "TORCHINDUCTOR_COMPILE_THREADS"), (9, "TORCHINDUCTOR_COMPILE_THREADS"), (10, "CUDA_VISIBLE_DEVICES"), (11, "TORCHINDUCTOR_COMPILE_THREADS"), (12, "CUDA_VISIBLE_DEVICES")]


def test_a_write_after_the_fork_server_started_in_the_caller_is_still_found(tmp_path: Path) -> None:
    """The fork server starts in the caller, the callee writes unjudged variables in a run: the
    first one is the cause (fixtures/CUD006/bad_set_forkserver.py's shape, with other variables)."""
    text = (
        "import multiprocessing\nimport os\n\n\ndef serve(name):\n    print(name)\n\n\ndef configure():\n"
        '    os.environ["OMP_NUM_THREADS"] = "4"\n'
        '    os.environ["OMP_NUM_THREADS"] = "4"\n'
        '    os.environ["NCCL_DEBUG"] = "INFO"\n\n\n'
        "def start_two():\n"
        '    multiprocessing.Process(target=serve, args=("a",)).start()\n'
        "    configure()\n"
        '    multiprocessing.Process(target=serve, args=("b",)).start()\n\n\n'
        'if __name__ == "__main__":\n    multiprocessing.set_start_method("forkserver")\n    start_two()\n'
    )
    assert _codes(tmp_path, {"m.py": text}) == ["m.py:18: CUD006"]
    (finding,) = lint_paths([str(tmp_path / "m.py")]).findings
    assert '`os.environ["OMP_NUM_THREADS"] = "4"` (line 10)' in finding.message


# a chain of importers over one module that writes CUDA_VISIBLE_DEVICES (the shape of the generated
# import-cycle project, benchmarks/adversarial.py): each importer judges the write again in its own state
_CHAIN = {
    "base.py": 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\n',
    "mid1.py": "import base\n",
    "mid2.py": "import mid1\nimport base\n",
    "top.py": "import torch\n\ntorch.cuda.init()\nimport mid2\n",
}


def test_a_local_check_judges_each_event_once(tmp_path: Path, monkeypatch) -> None:
    from cudalint.checks import device_values

    values: list[str] = []
    real = device_values.visible_devices_problem
    monkeypatch.setattr(device_values, "visible_devices_problem", lambda v: values.append(v) or real(v))
    an = _analyze(tmp_path, _CHAIN)
    assert values == ["0,1"]  # (CUD007's check of a valid value: a property of the write alone, judged once)
    codes = sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values())
    assert codes == [("base.py", 3, "CUD001")]  # (the write after top.py's init: still judged in each state)


# ---------- facts carried through calls ------------------------------------------------------------

def test_a_fact_crossing_calls_shares_its_witness_and_shows_it_whole() -> None:
    """Each call a fact crosses adds one step (Fact.later), shared with the callee's fact; the
    witness is the whole chain, innermost cause first."""
    from cudalint.analysis.facts import Fact
    from cudalint.core.findings import Step

    made = Fact((Step("m.py", 3, "init here"),), ("torch.cuda.init()", "m.py", 3), ("env_value:X=1",))
    one = made.later(Step("a.py", 7, "calls f()"))
    two = one.later(Step("b.py", 9, "calls g()"))
    assert [(s.path, s.line) for s in two.steps] == [("m.py", 3), ("a.py", 7), ("b.py", 9)]
    assert two.added[1] is one.added and two.made is made.made and made.steps == made.made
    assert two.unless == ("env_value:X=1",) and two.surely().unless == () and two.surely().steps == two.steps


def test_an_initialization_made_sure_on_a_later_line_holds_in_every_caller(tmp_path: Path) -> None:
    """`torch.cuda.is_available()` initializes unless PYTORCH_NVML_BASED_CUDA_CHECK=1; the
    `torch.cuda.init()` after it initializes whatever the caller set. The caller that set the
    variable still writes CUDA_VISIBLE_DEVICES too late; the witness keeps the first cause."""
    files = {
        "lib.py": "import torch\n\n\ndef setup():\n    torch.cuda.is_available()\n    torch.cuda.init()\n",
        "main.py": (
            'import os\nimport lib\n\nos.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"\nlib.setup()\n'
            'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        ),
    }
    an = analyze(tmp_path, files)
    found = sorted((Path(f.path).name, f.line, f.code) for f in an.findings.values())
    assert found == [("main.py", 6, "CUD001")]
    (finding,) = an.findings.values()
    assert [(Path(s.path).name, s.line) for s in finding.witness] == [("lib.py", 5), ("main.py", 5), ("main.py", 6)]


def test_the_summarizer_asks_about_the_environment_only_where_the_text_can_name_it() -> None:
    """`is_env` and the environment reads of every call and assignment are skipped in a module whose
    text holds none of the mappings' names nor `getenv` (cudalint.summary.summarize, `env_possible`),
    unless a catalogued call returns the environment (tests/test_settings.py keeps that finding)."""
    from cudalint.core.catalogue import build, catalogue_files, load_catalogue, parse_catalogue_text
    from cudalint.summary.summarize import _Summarizer

    cat = load_catalogue()

    def possible(text: str, catalogue=cat) -> bool:
        return _Summarizer(text, "m.py", "m", catalogue, False).env_possible

    assert not possible("import torch\nx = torch.cuda.device_count()\n")
    assert possible("from os import environ as E\n") and possible("from os import getenv\n") and possible("x = os.environb\n")
    os_toml = next(p for p in catalogue_files() if p.endswith("os.toml"))
    bundled_os = parse_catalogue_text(Path(os_toml).read_text(encoding="utf-8"), os_toml)
    returns_env = parse_catalogue_text('[[api]]\nname = "lib.env"\nreturns = "os.environ"\nevidence = "[EMP] test"\n', "lib.toml")
    assert not possible("import lib\n", build([bundled_os]))
    assert possible("import lib\n", build([bundled_os, returns_env]))
