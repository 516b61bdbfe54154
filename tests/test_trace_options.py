"""Every bad option is one line and exit 2 before the program starts; a damaged plan cache is a
miss; the report never touches the program's stdout; SARIF; the program replacing os.write or
os.putenv does not hang the tracer nor change its evidence."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import child_env, write_program
from tests.support.static import finding, write_findings

# the program leaves a marker: an option error must be reported before it runs
MARKER_PROG = "open('ran.marker', 'w').close()\nprint('program ran')\n"


def _trace(tmp_path, *args, env=None):
    return subprocess.run([sys.executable, "-m", "cudalint.trace", *args], cwd=tmp_path, env=env or child_env(),
                          capture_output=True, text=True, timeout=120)


def _bad_findings(tmp_path):
    (tmp_path / "not-json.json").write_text("{oops")
    (tmp_path / "shape.json").write_text(json.dumps({"findings": {"code": "CUD001"}}))
    (tmp_path / "entry.json").write_text(json.dumps([{"code": "CUD001", "path": "prog.py", "line": "two",
                                                      "message": "m"}]))
    (tmp_path / "nested.json").write_text(json.dumps([5]))
    (tmp_path / "bad.toml").write_text("[[api]]\nname = 3\n")


CASES = [
    (["--findings", "missing.json"], "cudalint: --findings missing.json: no such file"),
    (["--findings", "not-json.json"], "cudalint: --findings not-json.json: not JSON (Expecting property name "
                                      "enclosed in double quotes: line 1 column 2 (char 1))"),
    (["--findings", "shape.json"], "cudalint: --findings shape.json: expected a list of findings or "
                                   "{\"findings\": [...]}, as `cudalint --format json` writes"),
    (["--findings", "entry.json"], "cudalint: --findings entry.json: finding 1: `line` must be int"),
    (["--findings", "nested.json"], "cudalint: --findings nested.json: finding 1: expected an object, got int"),
    (["-o", "nowhere/report.txt"], "cudalint: --output nowhere/report.txt: folder {tmp}/nowhere does not exist"),
    (["--output-file", "nowhere/r.json"], "cudalint: --output nowhere/r.json: folder {tmp}/nowhere does not exist"),
    (["--html", "nowhere/t.html"], "cudalint: --html nowhere/t.html: folder {tmp}/nowhere does not exist"),
    (["--events", "."], "cudalint: --events .: is a folder, not a file"),
    (["--catalogue", "missing.toml"], "cudalint: --catalogue missing.toml: no such file"),
    (["--format", "xml"], "cudalint: --format xml: unknown format (text, json or sarif)"),
    (["--format"], "cudalint: --format needs a value"),
    (["--frobnicate"], "cudalint: --frobnicate: unknown option of --trace (the program's own options come after it)"),
]


@pytest.mark.parametrize("args,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_option_is_one_line_and_exit_2_before_the_program_runs(tmp_path, args, message):
    _bad_findings(tmp_path)
    write_program(tmp_path, MARKER_PROG)
    p = _trace(tmp_path, *args, *([] if args == ["--format"] else ["prog.py"]))
    assert (p.returncode, p.stderr, p.stdout) == (2, message.replace("{tmp}", str(tmp_path)) + "\n", "")
    assert not (tmp_path / "ran.marker").exists()


def test_bad_catalogue_content_is_reported_before_the_program_runs(tmp_path):
    _bad_findings(tmp_path)
    write_program(tmp_path, MARKER_PROG)
    p = _trace(tmp_path, "--catalogue", "bad.toml", "prog.py")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("cudalint: --catalogue: ") and p.stderr.count("\n") == 1
    assert "bad.toml" in p.stderr
    assert not (tmp_path / "ran.marker").exists()


def test_damaged_plan_cache_is_a_miss(tmp_path):
    env = child_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    write_program(tmp_path, "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nprint('ok')\n")
    f = write_findings(str(tmp_path), [])
    assert _trace(tmp_path, "--findings", f, "prog.py", env=env).returncode == 0
    (plan,) = (tmp_path / "cache" / "cudalint").glob("trace-plan-*.marshal")
    for damage in (plan.read_bytes()[:40], b"", b"\xff\x00garbage", b"N"):  # truncated, empty, foreign, None
        plan.write_bytes(damage)
        p = _trace(tmp_path, "--findings", f, "--format", "json", "prog.py", env=env)
        assert (p.returncode, p.stdout) == (0, "ok\n"), p.stderr
        assert json.loads(p.stderr)["program"]["status"] == "exited with status 0"


BINARY = """
    import sys
    sys.stdout.buffer.write(bytes(range(256)) * 4)
    sys.stdout.buffer.write(b"no newline at the end\\x00\\xff")
"""


def test_binary_stdout_is_byte_for_byte_what_python_gives(tmp_path):
    write_program(tmp_path, BINARY)
    plain = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, env=child_env())
    for fmt in ("text", "json", "sarif"):
        traced = subprocess.run([sys.executable, "-m", "cudalint.trace", "--format", fmt, "prog.py"], cwd=tmp_path,
                                capture_output=True, env=child_env())
        assert traced.returncode == 0
        assert traced.stdout == plain.stdout
        assert b"cudalint trace" in traced.stderr or b'"program"' in traced.stderr or b"sarif" in traced.stderr


def test_sarif_carries_verdicts_as_result_properties(tmp_path):
    write_program(tmp_path, "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    f = write_findings(str(tmp_path), [finding("CUD001", "prog.py", 2, "CUDA_VISIBLE_DEVICES is set after CUDA was initialized"),
                                       finding("CUD004", "prog.py", 1, "NVML index used as a CUDA ordinal")])
    p = _trace(tmp_path, "--format", "sarif", "--output-file", "out.sarif", "--findings", f, "prog.py")
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    doc = json.loads((tmp_path / "out.sarif").read_text())
    assert doc["version"] == "2.1.0"
    results = doc["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["properties"]["cudalintVerdict"])
            for r in results] == [("CUD004", 1, "not checked"), ("CUD001", 2, "refuted")]
    assert results[1]["properties"]["cudalintEvidence"] == (
        "CUDA_VISIBLE_DEVICES='0' was written at prog.py:2 before any CUDA initialization; nothing initialized CUDA")
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "prog.py", "uriBaseId": "%SRCROOT%"}


REPLACES_OS = """
    import os
    import threading

    real_write, real_putenv = os.write, os.putenv
    log = []

    def write(fd, data):
        os.environ["LOGGED"] = str(len(log))   # an environment write from inside os.write
        log.append(data)
        return real_write(fd, data)

    def putenv(key, value):
        log.append(key)
        return real_putenv(key, value)

    def broken(*args):
        raise RuntimeError("no writes here")

    os.write = write
    os.putenv = putenv
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    os.write = broken
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.write = write
    print("done", len(log))
"""


def test_program_replacing_os_write_and_putenv(tmp_path):
    write_program(tmp_path, REPLACES_OS)
    events = tmp_path / "ev.jsonl"
    p = subprocess.run([sys.executable, "-m", "cudalint.trace", "-o", os.devnull, "--events", str(events),
                        "--findings", write_findings(str(tmp_path), []), "prog.py"],
                       cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=60)
    plain = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=child_env(), capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (0, plain.stdout)
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    env = [(e["key"], e.get("value"), e["site"]["line"]) for e in lines if e["kind"] == "env"]
    # every write is recorded once, at the program's line (not inside its replacement of putenv),
    # and none of the tracer's own writes went through the program's os.write
    assert env == [("CUDA_VISIBLE_DEVICES", "1", 21), ("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 23)]
    assert not any(e["kind"] == "env" and e["key"] == "LOGGED" for e in lines)
