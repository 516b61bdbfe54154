"""action.yml: valid action metadata, and its own steps run in a shell as a GitHub runner runs them.

The steps are taken from action.yml itself: each `run` with its `env`, the `${{ inputs.* }}` and
`${{ github.* }}` expressions filled in, run by `bash --noprofile --norc -eo pipefail` (what GitHub
runs for `shell: bash`) in a temporary repository, with the variables a runner sets (GITHUB_ACTION_PATH,
GITHUB_WORKSPACE, RUNNER_TEMP, GITHUB_OUTPUT, GITHUB_PATH, GITHUB_ACTIONS, CI). The install step
pip-installs this checkout into a fresh virtualenv (its dependencies from the package index).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

yaml = pytest.importorskip("yaml")  # PyYAML (pre-commit's dependency)

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
SCHEMA = ROOT / "tests" / "data" / "github-action.schema.json"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
EXPR = re.compile(r"\$\{\{\s*([a-z]+)\.([\w-]+)\s*\}\}")


def metadata() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def test_action_yml_is_valid_action_metadata() -> None:
    meta = metadata()
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(meta, schema, cls=jsonschema.Draft7Validator)
    # every expression names a declared input or a step that exists; every script is in the repository
    text = ACTION.read_text(encoding="utf-8")
    for scope, name in EXPR.findall(text):
        assert scope in ("inputs", "github", "steps"), scope
        if scope == "inputs":
            assert name in meta["inputs"], name
    ids = {s.get("id") for s in meta["runs"]["steps"]}
    assert all(m in ids for m in re.findall(r"steps\.([\w-]+)\.outputs", text))
    for step in meta["runs"]["steps"]:
        for script in re.findall(r"\$GITHUB_ACTION_PATH/(\S+?)\"", step["run"]):
            assert (ROOT / script).is_file(), script


def test_the_schema_refuses_broken_metadata() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    meta = metadata()
    broken = [
        {k: v for k, v in meta.items() if k != "description"},
        {**meta, "runs": {"using": "composite", "steps": [{"run": "echo hi"}]}},  # a run step needs a shell
        {**meta, "inputs": {"paths": {"default": "."}}},  # an input needs a description
        {**meta, "outputs": {"x": {"description": "no value"}}},
    ]
    for doc in broken:
        assert list(jsonschema.Draft7Validator(schema).iter_errors(doc)), doc


def _fill(value: str, inputs: dict, github: dict) -> str:
    def one(m: re.Match) -> str:
        scope, name = m.groups()
        return {"inputs": inputs, "github": github}[scope][name]

    return EXPR.sub(one, value)


def run_action(tmp_path: Path, **given: str) -> tuple[list[subprocess.CompletedProcess], dict]:
    meta = metadata()
    inputs = {name: spec.get("default", "") for name, spec in meta["inputs"].items()}
    inputs.update(given)
    work = tmp_path / "repo"
    runner = tmp_path / "runner"
    for d in (work, runner):
        d.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "PYTHON", "CUDALINT_"))}
    env.update(
        GITHUB_ACTIONS="true",
        CI="true",
        GITHUB_ACTION_PATH=str(ROOT),
        GITHUB_WORKSPACE=str(work),
        RUNNER_TEMP=str(runner),
        GITHUB_OUTPUT=str(runner / "output"),
        GITHUB_PATH=str(runner / "path"),
        GITHUB_ENV=str(runner / "env"),
    )
    github = {"action_path": str(ROOT), "workspace": str(work)}
    subprocess.run(["git", "init", "-q", "."], cwd=work, check=True)
    (work / "src").mkdir()
    (work / "src" / "train.py").write_text(BAD, encoding="utf-8")
    results = []
    for step in meta["runs"]["steps"]:
        script = runner / f"step-{len(results)}.sh"
        script.write_text(_fill(step["run"], inputs, github), encoding="utf-8")
        step_env = {**env, **{k: _fill(str(v), inputs, github) for k, v in step.get("env", {}).items()}}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=work, env=step_env, capture_output=True, text=True, timeout=1200,
        )
        results.append(proc)
        if proc.returncode not in (0, 1):
            break
    outputs = dict(line.split("=", 1) for line in (runner / "output").read_text().splitlines()) if (runner / "output").exists() else {}
    return results, outputs


def test_the_steps_annotate_the_findings_and_write_sarif(tmp_path: Path) -> None:
    results, outputs = run_action(tmp_path, paths="src", **{"sarif-file": "cudalint.sarif", "python": sys.executable})
    install, lint = results
    assert install.returncode == 0, install.stdout + install.stderr
    assert install.stdout.strip() == "cudalint, version 0.1.0"
    assert (tmp_path / "runner" / "path").read_text().strip() == str(tmp_path / "runner" / "cudalint-venv" / "bin")
    assert lint.returncode == 1, lint.stdout + lint.stderr  # findings fail the job
    first = lint.stdout.splitlines()[0]
    assert first.startswith(
        "::error file=src/train.py,line=6,col=5,endLine=6,endColumn=45,title=CUD001::CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized"
    )
    assert outputs == {"sarif-file": "cudalint.sarif"}
    log = json.loads((tmp_path / "repo" / "cudalint.sarif").read_text())
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in log["runs"][0]["results"]] == [("CUD001", 6)]

    # the `args` input reaches cudalint; no sarif-file: none written, the output is empty
    results, outputs = run_action(tmp_path / "again", paths="src", args="--exit-zero --ignore CUD001", python=sys.executable)
    assert [r.returncode for r in results] == [0, 0], results[-1].stderr
    assert results[1].stdout == "" and outputs == {"sarif-file": ""}
