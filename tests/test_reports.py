"""Every place findings go: SARIF (validated against the official schema), GitHub annotations,
statistics, --output-file, colour only in a terminal."""
from __future__ import annotations

import json
import os
from collections import Counter
import pty
import select
import subprocess
import sys
from pathlib import Path

import jsonschema

from cudalint.core.registry import RULES, doc
from cudalint.output.sarif import DOCS_URL
from tests.fixture_expectations import FIXTURES

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
BAD = FIXTURES / "CUD001"


def run_cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "cudalint", *args], cwd=cwd, capture_output=True, text=True, env=environ)


def test_sarif_is_valid_sarif_2_1_0_and_carries_rules_paths_and_witnesses() -> None:
    proc = run_cli(["--format", "sarif", "fixtures"], FIXTURES.parent)
    assert proc.returncode == 1, proc.stderr
    log = json.loads(proc.stdout)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=str)
    assert not errors, errors[0]

    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)  # every registered code, nothing to add per rule
    for r in rules:
        assert r["name"] == RULES[r["id"]].name
        assert r["shortDescription"]["text"] == RULES[r["id"]].summary
        assert r["helpUri"] == DOCS_URL.format(code=r["id"]) and r["helpUri"].endswith(f"/rules/{r['id']}.md")
        assert r["help"]["markdown"] == doc(r["id"])
    cud001 = rules[[r["id"] for r in rules].index("CUD001")]
    assert cud001["fullDescription"]["markdown"].startswith("Finds writes to `CUDA_VISIBLE_DEVICES` or `CUDA_DEVICE_ORDER`")
    assert "`" not in cud001["fullDescription"]["text"]

    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == FIXTURES.parent.as_uri() + "/"
    lib = json.loads(run_cli(["--format", "json", "fixtures"], FIXTURES.parent).stdout)
    assert len(run["results"]) == len(lib)
    for res, f in zip(run["results"], lib):  # same order as every other format
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        uri = loc["artifactLocation"]["uri"]
        assert not uri.startswith(("/", "file:")) and uri == f["path"].replace(os.sep, "/")
        assert res["ruleId"] == f["code"] and res["message"]["text"] == f["message"]
        assert rules[res["ruleIndex"]]["id"] == f["code"]
        assert res["level"] == {"error": "error", "warning": "warning"}[f["severity"]]
        assert res.get("properties", {}).get("cell") == f.get("cell")
        if "cell" in f:  # the region is the .ipynb file's own line; the cell's position is in properties
            start = notebook_file_line(FIXTURES.parent / f["path"], f["cell"], f["line"])
            assert loc["region"]["startLine"] == start > 1
            assert (res["properties"]["cellLine"], res["properties"]["cellColumn"]) == (f["line"], f["column"])
        else:
            assert loc["region"] == {"startLine": f["line"], "startColumn": f["column"], "endLine": f["end_line"], "endColumn": f["end_column"]}
        if not f["witness"]:
            assert "codeFlows" not in res
            continue
        flow = res["codeFlows"][0]["threadFlows"][0]["locations"]
        assert [(s["location"]["physicalLocation"]["artifactLocation"]["uri"], s["location"]["physicalLocation"]["region"]["startLine"], s["location"]["message"]["text"]) for s in flow] == [
            (w["path"], notebook_file_line(FIXTURES.parent / w["path"], w["cell"], w["line"]) if "cell" in w else w["line"], w["note"])
            for w in f["witness"]
        ]


def notebook_file_line(path: Path, cell: int, line: int) -> int:
    """Independently of cudalint.inputs.nblines: the file line holding cell `cell`'s line `line` (nbformat's
    one-string-per-line layout, each string on its own line of the JSON file)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    wanted = nb["cells"][cell - 1]["source"][line - 1]
    text = path.read_text(encoding="utf-8").splitlines()
    cell_start = [i for i, t in enumerate(text, 1) if t.strip().startswith('"source"')][cell - 1]
    hits = [i for i, t in enumerate(text, 1) if i > cell_start and t.strip().rstrip(",") == json.dumps(wanted)]
    return hits[0]


def test_sarif_for_a_clean_run_is_valid_and_empty(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    proc = run_cli(["--format", "sarif", "ok.py"], tmp_path)
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    assert log["runs"][0]["results"] == []


def test_sarif_path_outside_the_run_directory_is_an_absolute_uri(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "my file.py").write_bytes((BAD / "bad_is_available_then_write.py").read_bytes())
    proc = run_cli(["--format", "sarif", "../my file.py"], tmp_path / "sub")
    res = json.loads(proc.stdout)["runs"][0]["results"][0]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": (tmp_path / "my file.py").as_uri()}
    assert "%20" in res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]


def test_github_annotations() -> None:
    proc = run_cli(["--format", "github", "bad_is_available_then_write.py"], BAD)
    assert proc.returncode == 1
    assert proc.stdout == (
        "::error file=bad_is_available_then_write.py,line=7,col=1,endLine=7,endColumn=41,title=CUD001::"
        "CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 6); "
        "the driver read it then, so this write has no effect"
        "%0A    bad_is_available_then_write.py:6: torch.cuda.is_available() initializes CUDA (calls cudaGetDeviceCount, "
        "which runs cuInit (unless PYTORCH_NVML_BASED_CUDA_CHECK=1 and NVML works))"
        "%0A    bad_is_available_then_write.py:7: CUDA_VISIBLE_DEVICES is written here, after the CUDA driver read it\n"
    )


def test_github_escapes_properties_and_data() -> None:
    import io

    from cudalint.core.findings import Finding
    from cudalint.output.report import github

    out = io.StringIO()
    github([Finding("CUD001", "a,b:c%.py", 1, 2, 1, 3, "50% done\r\nnext", severity="warning")], out)
    assert out.getvalue() == "::warning file=a%2Cb%3Ac%25.py,line=1,col=2,endLine=1,endColumn=3,title=CUD001::CUD001 50%25 done%0D%0Anext\n"


def test_statistics_counts_per_code() -> None:
    proc = run_cli(["--statistics", "."], BAD)
    assert proc.returncode == 1
    counts = Counter(f["code"] for f in json.loads(run_cli(["--format", "json", "."], BAD).stdout))
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    width = len(str(rows[0][1]))
    assert proc.stdout == "".join(f"{str(n).rjust(width)}\t{code}\t{RULES[code].name}\n" for code, n in rows)
    as_json = json.loads(run_cli(["--statistics", "--format", "json", "."], BAD).stdout)
    assert as_json == [{"code": code, "name": RULES[code].name, "count": n} for code, n in rows]


def test_output_file_gets_the_report_and_stdout_stays_empty(tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    proc = run_cli(["--format", "sarif", "--output-file", str(out), "bad_loop.py"], BAD)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(out.read_text())["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 7


def test_output_file_that_cannot_be_written_is_exit_2(tmp_path: Path) -> None:
    proc = run_cli(["--output-file", str(tmp_path / "no" / "such" / "dir" / "r.txt"), "bad_loop.py"], BAD)
    assert proc.returncode == 2
    assert "cannot write the report to" in proc.stderr and "No such file or directory" in proc.stderr


def _in_terminal(args: list[str], cwd: Path, **env: str) -> str:
    """Run the CLI with stdout on a pseudo-terminal (what a person at a terminal gets)."""
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(env)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "cudalint", *args], cwd=cwd, stdout=slave, stderr=slave, env=environ)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


def test_colour_in_a_terminal_only() -> None:
    coloured = _in_terminal(["bad_loop.py"], BAD)
    assert "\x1b[1;31mCUD001\x1b[0m" in coloured
    assert "\x1b[" not in _in_terminal(["bad_loop.py"], BAD, NO_COLOR="1")
    assert "\x1b[" not in run_cli(["bad_loop.py"], BAD).stdout  # a pipe
    assert "\x1b[" in _in_terminal(["bad_loop.py"], BAD, NO_COLOR="")  # NO_COLOR counts only when non-empty


def test_output_file_has_no_colour_even_from_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "r.txt"
    _in_terminal(["--output-file", str(out), "bad_loop.py"], BAD)
    assert out.read_text().startswith("bad_loop.py:7:5: CUD001 ")
    assert "\x1b[" not in out.read_text()
