"""`[tool.cudalint]` and `--config`, through the real command line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudalint.inputs.settings import SettingsError, resolve

BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


def cudalint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def found(proc: subprocess.CompletedProcess) -> list[tuple[str, int, str]]:
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["path"], f["line"], f["code"]) for f in json.loads(proc.stdout))


def project(tmp_path: Path, settings: str, files: dict[str, str]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n' + settings, encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            '[tool.cudalint]\nselct = ["CUD001"]\n',
            "cudalint: pyproject.toml: [tool.cudalint] unknown key 'selct' (did you mean 'select'?); known keys: "
            "select, extend-select, ignore, exclude, extend-exclude, per-file-ignores, extend-catalogue, target-version, respect-gitignore\n",
        ),
        (
            '[tool.cudalint]\nignore = "CUD001"\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'ignore' must be a list of strings, got a string ('CUD001')\n",
        ),
        (
            '[tool.cudalint]\ntarget-version = "3.10"\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'target-version' must be one of py310, py311, py312, py313, py314, "
            "got a string ('3.10')\n",
        ),
        (
            '[tool.cudalint]\nper-file-ignores = ["tests/*"]\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'per-file-ignores' must be a table of glob = [codes], got a list (['tests/*'])\n",
        ),
        (
            '[tool.cudalint]\nper-file-ignores = { "tests/*" = "CUD001" }\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'per-file-ignores' 'tests/*' must be a list of strings, got a string ('CUD001')\n",
        ),
        (
            '[tool.cudalint]\nignore = ["CUD02"]\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'ignore': 'CUD02' is no rule code or prefix; known codes: "
            "CUD001, CUD002, CUD003, CUD004, CUD005, CUD006, CUD007, CUD008, CUD009, CUD010, CUD101, CUD102, CUD103, CUD900\n",
        ),
        (
            '[tool.cudalint]\nrespect-gitignore = "yes"\n',
            "cudalint: pyproject.toml: [tool.cudalint] 'respect-gitignore' must be true or false, got a string ('yes')\n",
        ),
    ],
)
def test_bad_settings_name_the_key_and_exit_2(tmp_path: Path, settings: str, message: str) -> None:
    proj = project(tmp_path, settings, {"t.py": BAD})
    proc = cudalint(proj, "t.py")
    assert proc.returncode == 2
    assert proc.stderr == message
    assert proc.stdout == ""


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_on_the_command_line_is_a_usage_error(tmp_path: Path, option: str) -> None:
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    proc = cudalint(tmp_path, option, "CUD001,XYZ", "t.py")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cudalint: {option}: 'XYZ' is no rule code or prefix; known codes: CUD001, ")
    assert proc.stdout == ""


def test_invalid_toml_is_a_usage_error(tmp_path: Path) -> None:
    proj = project(tmp_path, "[tool.cudalint]\nselect = [\n", {"t.py": BAD})
    proc = cudalint(proj, "t.py")
    assert proc.returncode == 2
    assert proc.stderr.startswith("cudalint: pyproject.toml: invalid TOML: ")


def test_select_and_ignore_from_the_file_and_the_command_line_wins(tmp_path: Path) -> None:
    proj = project(tmp_path, '[tool.cudalint]\nignore = ["CUD001"]\n', {"t.py": BAD})
    assert found(cudalint(proj, "--format", "json", ".")) == []
    # --ignore replaces the file's ignore list
    assert found(cudalint(proj, "--format", "json", "--ignore", "CUD002", ".")) == [("t.py", 6, "CUD001")]


def test_settings_are_found_from_the_linted_path_upwards(tmp_path: Path) -> None:
    proj = project(tmp_path / "proj", '[tool.cudalint]\nignore = ["CUD001"]\n', {"src/app/t.py": BAD})
    # run from outside the project: the path given decides which pyproject.toml applies
    assert found(cudalint(tmp_path, "--format", "json", "proj/src/app")) == []
    # a pyproject.toml without [tool.cudalint] on the way up is passed over
    (proj / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n', encoding="utf-8")
    assert found(cudalint(tmp_path, "--format", "json", "proj/src/app/t.py")) == []


def test_exclude_and_extend_exclude(tmp_path: Path) -> None:
    proj = project(
        tmp_path,
        '[tool.cudalint]\nexclude = ["generated/"]\nextend-exclude = ["*_old.py"]\n',
        {"generated/t.py": BAD, "t_old.py": BAD, "t.py": BAD},
    )
    assert found(cudalint(proj, "--format", "json", ".")) == [("t.py", 6, "CUD001")]


def test_per_file_ignores_are_anchored_at_the_config_file(tmp_path: Path) -> None:
    proj = project(
        tmp_path,
        '[tool.cudalint]\nper-file-ignores = { "legacy/*" = ["CUD001"], "conftest.py" = ["CUD"] }\n',
        {"legacy/old.py": BAD, "tests/conftest.py": BAD, "new.py": BAD},
    )
    assert found(cudalint(proj, "--format", "json", ".")) == [("new.py", 6, "CUD001")]
    # the same result when run from a sub-folder
    assert found(cudalint(proj / "legacy", "--format", "json", ".")) == []


CATALOGUE = """\
[library]
name = "ourgpu"
import_roots = ["ourgpu"]

[[api]]
name = "ourgpu.start"
init = "driver"
note = "our wrapper calls cuInit"
evidence = "[SRC] ourgpu/__init__.py"
"""


def test_extend_catalogue_is_relative_to_the_config_file(tmp_path: Path) -> None:
    user = 'import os\n\nimport ourgpu\n\nourgpu.start()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
    proj = project(tmp_path, '[tool.cudalint]\nextend-catalogue = ["lint/gpu.toml"]\n', {"lint/gpu.toml": CATALOGUE, "app/t.py": user})
    assert found(cudalint(proj / "app", "--format", "json", ".")) == [("t.py", 6, "CUD001")]
    # without the extra catalogue the call means nothing
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    assert found(cudalint(proj / "app", "--config", "../empty.toml", "--format", "json", ".")) == []


def test_missing_extend_catalogue_is_a_usage_error(tmp_path: Path) -> None:
    proj = project(tmp_path, '[tool.cudalint]\nextend-catalogue = ["nope.toml"]\n', {"t.py": BAD})
    proc = cudalint(proj, "t.py")
    assert proc.returncode == 2
    assert proc.stderr.startswith("cudalint: ") and "nope.toml" in proc.stderr and "Traceback" not in proc.stderr


def test_config_option_reads_a_cudalint_toml(tmp_path: Path) -> None:
    proj = project(tmp_path, '[tool.cudalint]\nignore = ["CUD001"]\n', {"t.py": BAD})
    other = tmp_path / "ci" / "cudalint.toml"
    other.parent.mkdir()
    other.write_text('select = ["CUD"]\ntarget-version = "py314"\n', encoding="utf-8")
    # --config replaces discovery: the pyproject's ignore no longer applies
    assert found(cudalint(proj, "--format", "json", "--config", "ci/cudalint.toml", ".")) == [("t.py", 6, "CUD001")]
    other.write_text('selct = ["CUD"]\n', encoding="utf-8")
    proc = cudalint(proj, "--config", "ci/cudalint.toml", ".")
    assert proc.returncode == 2 and proc.stderr.startswith("cudalint: ci/cudalint.toml: unknown key 'selct'")
    proc = cudalint(proj, "--config", "ci/missing.toml", ".")
    assert proc.returncode == 2 and "missing.toml" in proc.stderr


def test_target_version_from_file_and_command_line(tmp_path: Path) -> None:
    proj = project(tmp_path, '[tool.cudalint]\ntarget-version = "py312"\n', {"t.py": BAD})
    config, path = resolve([str(proj / "t.py")])
    assert (config.target_version, path) == ("py312", str(proj / "pyproject.toml"))
    config, _ = resolve([str(proj / "t.py")], overrides={"target_version": "py314"})
    assert config.target_version == "py314"
    proc = cudalint(proj, "--target-version", "py39", "t.py")
    assert proc.returncode == 2 and "py39" in proc.stderr


def test_resolve_rejects_what_the_cli_rejects(tmp_path: Path) -> None:
    project(tmp_path, '[tool.cudalint]\nselect = [1]\n', {})
    with pytest.raises(SettingsError, match=r"'select' must be a list of strings"):
        resolve([str(tmp_path)])


def test_a_warm_cache_follows_the_extend_catalogues_bytes(tmp_path: Path) -> None:
    """The cache names the catalogue by its files' bytes (cudalint.core.catalogue_source): a run the
    cache answers whole never loads it, so an edit to it must still name another run."""
    user = 'import os\n\nimport ourgpu\n\nourgpu.start()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
    proj = project(tmp_path, '[tool.cudalint]\nextend-catalogue = ["gpu.toml"]\n', {"gpu.toml": CATALOGUE, "t.py": user})
    assert found(cudalint(proj, "--format", "json", ".")) == [("t.py", 6, "CUD001")]
    assert found(cudalint(proj, "--format", "json", ".")) == [("t.py", 6, "CUD001")]  # warm: the same
    (proj / "gpu.toml").write_text(CATALOGUE.replace('init = "driver"', 'init = "none"'), encoding="utf-8")
    assert found(cudalint(proj, "--format", "json", ".")) == []
    # a catalogue that cannot be used is a usage error, cache or not, --fix or not
    (proj / "gpu.toml").write_text(CATALOGUE.replace('init = "driver"', 'init = "sometimes"'), encoding="utf-8")
    for args in ((".",), ("--fix", ".")):
        proc = cudalint(proj, *args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("cudalint: ") and "gpu.toml" in proc.stderr and "Traceback" not in proc.stderr


def test_a_catalogued_call_that_returns_the_environment_is_followed_where_no_text_names_it(tmp_path: Path) -> None:
    """A module whose text never says `environ` or `getenv` cannot name the process environment
    through its own imports and names, and the summarizer skips asking (cudalint.summary.summarize,
    `env_possible`); a catalogued call that returns it (`returns = "os.environ"`) still makes the
    name it is bound to the environment."""
    catalogue = CATALOGUE + '\n[[api]]\nname = "ourgpu.process_env"\nreturns = "os.environ"\nevidence = "[EMP] test"\n'
    user = 'import ourgpu\n\nsettings = ourgpu.process_env()\nourgpu.start()\nsettings["CUDA_VISIBLE_DEVICES"] = "1"\n'
    proj = project(tmp_path, '[tool.cudalint]\nextend-catalogue = ["gpu.toml"]\n', {"gpu.toml": catalogue, "t.py": user})
    assert found(cudalint(proj, "--format", "json", ".")) == [("t.py", 5, "CUD001")]
