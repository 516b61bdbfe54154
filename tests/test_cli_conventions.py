"""The command line as a ruff user runs it: each option in a subprocess, exact output and exit status."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from cudalint.core.registry import RULES
from tests.fixture_expectations import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
BAD_FIRST_LINE = "t.py:6:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 5)"
# the library-initializes-CUDA line only: no fix can move it (torch.cuda.init() is the cause)
UNFIXABLE = 'import os\nimport torch\n\ntorch.cuda.init()\nvalue = os.environ.get("X", "0")\nos.environ["CUDA_VISIBLE_DEVICES"] = value\n'
SCHEMA = ROOT / "cudalint" / "schemas" / "findings.schema.json"


def cudalint(cwd: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [environ.get("PYTHONPATH")])])
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, env=environ, input=stdin, timeout=300
    )


@pytest.fixture()
def bad(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    return tmp_path


def cross_module(tmp_path: Path, marker: bool = True) -> Path:
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", proj)
    if marker:
        (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    return proj


# ---------- named files inside their project (#17 part 5) ------------------------------------
@pytest.mark.parametrize("marker", [True, False], ids=["pyproject", "no-marker"])
def test_a_named_file_is_judged_inside_its_project(tmp_path: Path, marker: bool) -> None:
    """gpus.py's finding is caused by serve.py, which nobody named: it is found, and only gpus.py is reported."""
    proj = cross_module(tmp_path, marker)
    proc = cudalint(proj, "gpus.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "gpus.py:5:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() "
        "(utils/device.py:3); the driver read it then, so this write has no effect",
        "    utils/device.py:3: torch.cuda.is_available() initializes CUDA (calls cudaGetDeviceCount, which runs cuInit "
        "(unless PYTORCH_NVML_BASED_CUDA_CHECK=1 and NVML works))",
        "    serve.py:4: import utils.device runs utils/device.py's top level",
        '    serve.py:7: choose("1") calls choose()',
        "    gpus.py:5: CUDA_VISIBLE_DEVICES is written here, after the CUDA driver read it",
        "Found 1 finding in 1 file (1 checked).",
    ]


def test_a_named_file_from_another_folder_keeps_its_spelling(tmp_path: Path) -> None:
    proj = cross_module(tmp_path)
    proc = cudalint(tmp_path, "proj/gpus.py", "--format", "json")
    assert [(f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout)] == [("proj/gpus.py", 5, "CUD001")]
    assert json.loads(proc.stdout)[0]["witness"][1]["path"] == "proj/serve.py"
    absolute = cudalint(tmp_path, str(proj / "gpus.py"), "--format", "json")
    assert [f["path"] for f in json.loads(absolute.stdout)] == [str(proj / "gpus.py")]


def test_a_named_file_in_a_package_without_marker_uses_the_package_root(tmp_path: Path) -> None:
    """No pyproject/setup.cfg/.git: the folder that holds the top-level package is the project."""
    app = tmp_path / "work" / "app"
    (app / "gpu").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "gpu" / "__init__.py").write_text("")
    (app / "gpu" / "init.py").write_text("import torch\n\ntorch.cuda.init()\n")
    (app / "gpu" / "env.py").write_text('import os\n\n\ndef pick():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n')
    (tmp_path / "work" / "main.py").write_text("import app.gpu.init\nfrom app.gpu.env import pick\n\npick()\n")
    proc = cudalint(app / "gpu", "env.py", "--select", "CUD001")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("env.py:5:5: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() (")


def test_force_exclude_applies_exclude_to_named_files(bad: Path) -> None:
    assert cudalint(bad, "--exclude", "t.py", "t.py").returncode == 1  # named files are linted (ruff's default)
    proc = cudalint(bad, "--exclude", "t.py", "--force-exclude", "t.py")
    assert (proc.returncode, proc.stdout) == (0, "All checks passed (0 files checked).\n")


def test_a_missing_path_is_an_error(bad: Path) -> None:
    proc = cudalint(bad, "srcc/")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "cudalint: srcc/: no such file or directory\n")


# ---------- exit status, verbosity, colour ---------------------------------------------------
def test_exit_zero_quiet_and_silent(bad: Path) -> None:
    loud = cudalint(bad, "t.py")
    assert loud.returncode == 1 and loud.stdout.endswith("Found 1 finding in 1 file (1 checked).\n")
    zero = cudalint(bad, "t.py", "--exit-zero")
    assert zero.returncode == 0 and zero.stdout == loud.stdout
    quiet = cudalint(bad, "t.py", "-q")
    assert quiet.returncode == 1 and quiet.stdout.startswith(BAD_FIRST_LINE) and "Found" not in quiet.stdout
    silent = cudalint(bad, "t.py", "--silent")
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    clean = cudalint(bad, "pyproject.toml", "-q")
    assert (clean.returncode, clean.stdout) == (0, "")


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, False),  # a pipe
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins
        (("--color", "always"), {"NO_COLOR": "1"}, True),  # the option wins over both
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        (("--color", "auto"), {"FORCE_COLOR": "1"}, True),
    ],
)
def test_color(bad: Path, args: tuple, env: dict, coloured: bool) -> None:
    proc = cudalint(bad, "t.py", *args, **env)
    assert proc.returncode == 1
    assert ("\x1b[1;31mCUD001\x1b[0m" in proc.stdout) is coloured
    assert ("\x1b[" in proc.stdout) is coloured


def test_show_source_draws_the_line_and_each_witness_line(bad: Path) -> None:
    proc = cudalint(bad, "t.py", "--show-source")
    assert proc.stdout.splitlines()[1:9] == [
        "  |",
        "5 | if torch.cuda.is_available():",
        '6 |     os.environ["CUDA_VISIBLE_DEVICES"] = "1"',
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ CUD001",
        "  |",
        "    t.py:5: torch.cuda.is_available() initializes CUDA (calls cudaGetDeviceCount, which runs cuInit (unless PYTORCH_NVML_BASED_CUDA_CHECK=1 and NVML works))",
        "    5 | if torch.cuda.is_available():",
        "    t.py:6: CUDA_VISIBLE_DEVICES is written here, after the CUDA driver read it",
    ]


# ---------- stdin ----------------------------------------------------------------------------
def test_stdin_with_a_filename_is_judged_as_that_file_in_its_project(tmp_path: Path) -> None:
    """An editor pipes its unsaved buffer: the write moved to the top of gpus.py is still after serve.py's import."""
    proj = cross_module(tmp_path)
    buffer = 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
    proc = cudalint(proj, "-", "--stdin-filename", "gpus.py", "--format", "json", stdin=buffer)
    found = json.loads(proc.stdout)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in found] == [("gpus.py", 3, 1, "CUD001")]
    assert [(w["path"], w["line"]) for w in found[0]["witness"]] == [("utils/device.py", 3), ("serve.py", 4), ("serve.py", 5), ("gpus.py", 3)]
    assert (proj / "gpus.py").read_text().startswith("import os\n\n\ndef choose")  # the file on disk was not read for it
    clean = cudalint(proj, "-", "--stdin-filename", "gpus.py", stdin="x = 1\n")
    assert (clean.returncode, clean.stdout) == (0, "All checks passed (1 file checked).\n")


def test_stdin_without_a_filename(tmp_path: Path) -> None:
    proc = cudalint(tmp_path, "-", stdin=BAD)
    assert proc.returncode == 1
    assert proc.stdout.startswith("-:6:5: CUD001 ")


# ---------- selection ------------------------------------------------------------------------
def test_extend_select_and_per_file_ignores_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cudalint]\nselect = ["CUD002"]\n', encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    assert cudalint(tmp_path, ".").returncode == 0  # select = CUD002 only
    proc = cudalint(tmp_path, ".", "--extend-select", "CUD001", "--format", "json")
    assert sorted(f["path"] for f in json.loads(proc.stdout)) == ["t.py", "tests/t.py"]
    proc = cudalint(tmp_path, ".", "--extend-select", "CUD001", "--per-file-ignores", "tests/*:CUD001", "--format", "json")
    assert [f["path"] for f in json.loads(proc.stdout)] == ["t.py"]
    wrong = cudalint(tmp_path, ".", "--per-file-ignores", "tests/*")
    assert wrong.returncode == 2 and "expected GLOB:CODES" in wrong.stderr
    typo = cudalint(tmp_path, ".", "--extend-select", "CUD09")
    assert typo.returncode == 2 and "--extend-select: 'CUD09' is no rule code or prefix" in typo.stderr


def test_extend_select_in_the_settings_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cudalint]\nselect = ["CUD002"]\nextend-select = ["CUD001"]\n', encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    assert cudalint(tmp_path, "t.py").stdout.startswith(BAD_FIRST_LINE)


def test_show_settings_and_show_files(bad: Path) -> None:
    (bad / "pyproject.toml").write_text('[tool.cudalint]\nignore = ["CUD003"]\nexclude = ["gen/"]\n', encoding="utf-8")
    (bad / "gen").mkdir()
    (bad / "gen" / "x.py").write_text("")
    (bad / "b.py").write_text("")
    proc = cudalint(bad, "--show-settings", "--select", "CUD0", "--no-cache")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == "Settings path: pyproject.toml"
    assert 'select = ["CUD0"]' in lines and 'ignore = ["CUD003"]' in lines and 'exclude = ["gen/"]' in lines
    assert 'target-version = "py310"' in lines and "Cache dir: (no cache)" in lines
    files = cudalint(bad, "--show-files")
    assert (files.returncode, files.stdout) == (0, "b.py\nt.py\n")


def test_list_rules_and_rule_docs(tmp_path: Path) -> None:
    listed = cudalint(tmp_path, "--list-rules")
    assert [line.split()[0] for line in listed.stdout.splitlines()] == list(RULES)
    assert listed.stdout.splitlines()[0].split()[:3] == ["CUD001", "cuda-visible-devices-after-init", "error"]
    one = cudalint(tmp_path, "rule", "cud001")
    assert one.returncode == 0 and one.stdout == (ROOT / "rules" / "CUD001.md").read_text(encoding="utf-8")
    every = cudalint(tmp_path, "rule", "--all")
    assert every.returncode == 0
    assert all((ROOT / "rules" / f"{c}.md").read_text(encoding="utf-8").rstrip("\n") in every.stdout for c in RULES)
    as_json = json.loads(cudalint(tmp_path, "rule", "--all", "--output-format", "json").stdout)
    assert [r["code"] for r in as_json] == list(RULES) and as_json[0]["url"].endswith("/rules/CUD001.md")
    assert cudalint(tmp_path, "rule", "CUD999").returncode == 2


def test_help_lists_trace_and_trace_must_come_first(tmp_path: Path) -> None:
    helped = cudalint(tmp_path, "--help")
    assert "  --trace " in helped.stdout
    late = cudalint(tmp_path, ".", "--trace")
    assert late.returncode == 2 and "--trace must come first" in late.stderr


# ---------- suppression ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("directive", "silenced"),
    [
        ("# cudalint: noqa\n", True),
        ("# cudalint: noqa: CUD001\n", True),
        ("# cudalint: noqa: CUD0\n", True),  # a prefix, as in --ignore
        ("# cudalint: noqa: CUD002\n", False),
        ("x = 1  # cudalint: noqa\n", False),  # only on a line of its own
        ("# noqa\n", False),  # a bare noqa on its own line is a line suppression (ruff), not flake8's file-level
    ],
)
def test_file_level_suppression(tmp_path: Path, directive: str, silenced: bool) -> None:
    (tmp_path / "t.py").write_text(directive + BAD, encoding="utf-8")
    proc = cudalint(tmp_path, "t.py")
    assert proc.returncode == (0 if silenced else 1), proc.stdout


def test_add_noqa_suppresses_every_finding_in_place(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "u.py").write_text(UNFIXABLE.replace("= value\n", "= value  # noqa: CUD007\n"), encoding="utf-8")
    proc = cudalint(tmp_path, ".", "--add-noqa")
    assert (proc.returncode, proc.stderr) == (0, "Added 2 noqa directives.\n")
    assert (tmp_path / "t.py").read_text() == BAD.replace('"1"\n', '"1"  # noqa: CUD001\n')
    assert (tmp_path / "u.py").read_text().endswith('os.environ["CUDA_VISIBLE_DEVICES"] = value  # noqa: CUD007, CUD001\n')
    assert cudalint(tmp_path, ".").returncode == 0
    again = cudalint(tmp_path, ".", "--add-noqa")
    assert again.stderr == "Added 0 noqa directives.\n"


def test_add_noqa_leaves_links_alone(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(BAD, encoding="utf-8")
    os.link(tmp_path / "real.py", tmp_path / "t.py")
    proc = cudalint(tmp_path, "t.py", "--add-noqa")
    assert "t.py: not edited: a symbolic link or a file with several hard links" in proc.stderr
    assert (tmp_path / "real.py").read_text() == BAD


def test_baseline_reports_only_new_findings(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    made = cudalint(tmp_path, ".", "--format", "json", "-o", "cudalint-baseline.json")
    assert made.returncode == 1
    (tmp_path / "t.py").write_text("# moved down a line\n" + BAD, encoding="utf-8")
    assert cudalint(tmp_path, ".", "--baseline", "cudalint-baseline.json").returncode == 0
    (tmp_path / "u.py").write_text(BAD, encoding="utf-8")
    proc = cudalint(tmp_path, ".", "--baseline", "cudalint-baseline.json", "-q")
    assert proc.returncode == 1 and proc.stdout.startswith("u.py:6:5: CUD001 ") and "t.py" not in proc.stdout.replace("u.py", "")
    missing = cudalint(tmp_path, ".", "--baseline", "nope.json")
    assert missing.returncode == 2
    assert missing.stderr == "cudalint: nope.json: no such baseline file; create it with `cudalint --format json -o nope.json PATHS`\n"


# ---------- JSON -----------------------------------------------------------------------------
def test_json_findings_have_url_and_fix_and_follow_the_schema(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "u.py").write_text(UNFIXABLE, encoding="utf-8")
    found = json.loads(cudalint(tmp_path, ".", "--format", "json").stdout)
    jsonschema.validate(found, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft7Validator)
    by_path = {f["path"]: f for f in found}
    assert by_path["t.py"]["url"] == "https://github.com/cudalint/cudalint/blob/main/rules/CUD001.md"
    assert by_path["t.py"]["fix"] == {
        "applicability": "safe",
        "message": "Test `device_count() > 0` instead of `is_available()`",
        "edits": [{"content": "if torch.cuda.device_count() > 0:\n", "location": {"row": 5, "column": 1}, "end_location": {"row": 6, "column": 1}}],
    }
    assert by_path["u.py"]["fix"] is None
    # the fix is what --fix writes
    cudalint(tmp_path, "t.py", "--fix")
    assert (tmp_path / "t.py").read_text() == BAD.replace("torch.cuda.is_available()", "torch.cuda.device_count() > 0")


def test_json_of_the_fixtures_follows_the_schema() -> None:
    found = json.loads(cudalint(ROOT, "--format", "json", "fixtures").stdout)
    jsonschema.validate(found, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft7Validator)
    assert any("cell" in f for f in found) and all(f["url"].endswith(f"/rules/{f['code']}.md") for f in found)


# ---------- notebooks in GitHub annotations ---------------------------------------------------
def test_github_annotations_point_at_the_notebooks_own_line(tmp_path: Path) -> None:
    nb = FIXTURES / "CUD001" / "bad_notebook_cells.ipynb"
    shutil.copy(nb, tmp_path / "nb.ipynb")
    proc = cudalint(tmp_path, "nb.ipynb", "--format", "github")
    lines = (tmp_path / "nb.ipynb").read_text().splitlines()
    target = next(i for i, t in enumerate(lines, 1) if 'os.environ[\\"CUDA_VISIBLE_DEVICES\\"]' in t)
    assert proc.stdout.startswith(f"::error file=nb.ipynb,line={target},endLine={target},title=CUD001::cell 4, line 2: CUD001 ")


# cudalint.entry.run: a module-level object whose finalizer prints (the interpreter's teardown
# would run it), then the entry; `setup` decides what the process holds when the run ends
_EXIT_DRIVER = """
import sys
class Torn:
    def __del__(self):
        sys.stderr.write("torn down\\n")
held = Torn()
{setup}
from cudalint.entry import run
sys.argv[0] = "cudalint"
run()
"""


@pytest.mark.parametrize(
    "setup,torn",
    [
        ("", False),  # nothing left to do: the process ends at once after its streams are flushed
        ("import atexit; atexit.register(lambda: sys.stderr.write('atexit ran\\n'))", True),
        ("import threading, time; threading.Thread(target=lambda: (time.sleep(0.3), sys.stderr.write('thread done\\n'))).start()", True),
    ],
)
def test_the_console_entry_ends_at_once_only_when_nothing_is_left(bad: Path, setup: str, torn: bool) -> None:
    """`cudalint.entry.run` skips the interpreter's teardown (6-9 ms of a warm run) only when no
    atexit callback and no other thread is left; the report, flushed first, and the exit status are
    those of `main()`. A warm run (a cold one starts workers, and multiprocessing registers a
    callback) of a report of 80 findings, more than a pipe's buffer."""
    for i in range(1, 80):
        (bad / f"t{i}.py").write_text(BAD, encoding="utf-8")
    args = ("--cache-dir", str(bad / "c"), "--format", "json", ".")
    want = cudalint(bad, *args)
    driver = [sys.executable, "-c", _EXIT_DRIVER.format(setup=setup), *args]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT)
    got = subprocess.run(driver, cwd=bad, capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == want.returncode == 1
    assert got.stdout == want.stdout and len(json.loads(got.stdout)) == 80 and len(got.stdout) > 65536
    assert ("torn down" in got.stderr) is torn, got.stderr
    assert ("atexit ran" in got.stderr) is ("atexit" in setup)
    assert ("thread done" in got.stderr) is ("thread" in setup)
    missing = subprocess.run([*driver[:3], "nowhere.py"], cwd=bad, capture_output=True, text=True, env=env, timeout=300)
    assert missing.returncode == 2 and missing.stderr.splitlines()[0] == "cudalint: nowhere.py: no such file or directory"


# cudalint.entry.run: each command says whether the cycle collector runs while it does
_GC_DRIVER = """
import gc, sys
import cudalint.command, cudalint.cli, cudalint.trace
def spy(name, real):
    def call(*args, **kwargs):
        sys.stderr.write(f"{name}: collector {'on' if gc.isenabled() else 'off'}\\n")
        return real(*args, **kwargs)
    return call
cudalint.command.main = spy("lint", cudalint.command.main)
cudalint.cli.main = spy("click", cudalint.cli.main)
cudalint.trace.run_from_cli = spy("trace", lambda args: 0)
from cudalint.entry import main, run
sys.argv[0] = "cudalint"
if sys.argv[1] == "--in-process":
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
    sys.stderr.write(f"after: collector {'on' if gc.isenabled() else 'off'}\\n")
else:
    run()
"""


@pytest.mark.parametrize(
    "args,said",
    [
        # what the lint command's imports and start make lives until the process ends
        (("--format", "json", "."), ["lint: collector off"]),
        (("--trace", "x.py"), ["trace: collector on"]),  # the traced program runs in this process
        (("rule", "CUD001"), ["click: collector on"]),  # click's commands (the language server lives long)
        (("--in-process", "--format", "json", "."), ["lint: collector on", "after: collector on"]),  # main() alone: as it was
    ],
)
def test_only_the_lint_command_of_the_console_entry_runs_without_the_cycle_collector(bad: Path, args, said) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDALINT_CACHE_DIR=str(bad / "c"))
    got = subprocess.run([sys.executable, "-c", _GC_DRIVER, *args], cwd=bad, capture_output=True, text=True, env=env, timeout=300)
    assert [line for line in got.stderr.splitlines() if "collector" in line] == said, got.stderr
