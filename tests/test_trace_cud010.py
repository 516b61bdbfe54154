"""CUD010 at run time: the CUDA_VISIBLE_DEVICES children are started with (subprocess.Popen's audit
event) and the value a write of this process's own variable replaced, against its restriction."""
from __future__ import annotations

import os
import stat

from cudalint.trace.correlate import correlate
from tests.conftest import child_env, trace, write_program
from tests.support.static import finding

CHILD = "a child process's CUDA_VISIBLE_DEVICES is built from GPUs listed physically by nvidia-smi"
OWN = "this process's CUDA_VISIBLE_DEVICES is built from GPUs listed physically by GPUtil"


def site(line):
    return {"path": "/p/a.py", "line": line, "func": "f"}


def run(events, findings):
    events = [dict(e, seq=i, pid=1) for i, e in enumerate([{"kind": "start", "env": {}}, *events])]
    return correlate(list(findings), events, env_rules=[], cwd="/p", returncode=0)


def spawn(line, value, own):
    return {"kind": "spawn_env", "site": site(line), "value": value, "own": own}


def test_child_outside_the_restriction_confirms_inside_refutes():
    f = finding("CUD010", "a.py", 5, CHILD)
    r = run([spawn(6, "4", "4,5"), spawn(6, "0", "4,5")], [f])
    assert [(v.status, v.evidence) for v in r.verdicts] == [(
        "confirmed", "CUDA_VISIBLE_DEVICES='0' was given to a child at a.py:6 while this process was restricted to '4,5': 0 is outside it")]
    r = run([spawn(6, "4", "4,5"), spawn(6, "5", "4,5")], [f])
    assert r.verdicts[0].status == "refuted"
    assert r.verdicts[0].evidence == "every CUDA_VISIBLE_DEVICES given to a child at a.py:5 stayed inside this process's restriction ('4,5')"


def test_unrestricted_run_refutes_and_far_children_are_not_matched():
    f = finding("CUD010", "a.py", 5, CHILD)
    r = run([spawn(5, "0", None)], [f])
    assert r.verdicts[0].status == "refuted" and "this run was not restricted" in r.verdicts[0].evidence
    r = run([spawn(16, "0", "3"), spawn(4, "0", "3")], [f])  # past the window, and above the line
    assert [(v.status, v.evidence) for v in r.verdicts] == [("not reached", "no CUDA_VISIBLE_DEVICES was given to a child at a.py:5")]


def test_own_write_is_judged_against_the_value_it_replaced():
    f = finding("CUD010", "a.py", 3, OWN)
    write = {"kind": "env", "op": "set", "key": "CUDA_VISIBLE_DEVICES", "value": "0", "site": site(3)}
    assert run([dict(write, old="2,3")], [f]).verdicts[0].status == "confirmed"
    assert run([dict(write, old=None)], [f]).verdicts[0].status == "refuted"
    assert run([dict(write, old="0,1")], [f]).verdicts[0].status == "refuted"


def test_launcher_escaping_its_restriction_is_confirmed_end_to_end(tmp_path):
    # nvidia-smi is the one test double: a script that lists two GPUs, as the real tool does
    # without a driver to ask (the program and the analysis are real)
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nprintf '0\\n1\\n'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    write_program(tmp_path, """
        import os
        import subprocess
        import sys

        cmd = ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"]
        for gpu in subprocess.check_output(cmd).decode().split():
            child = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
            subprocess.run([sys.executable, "-c", "pass"], env=child, check=True)
    """)
    env = child_env(PATH=f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}", CUDA_VISIBLE_DEVICES="1")
    r = trace(tmp_path, ["prog.py"], env=env)
    assert r.verdicts() == [("CUD010", 7, "confirmed")], r.stderr
    assert r.report["findings"][0]["evidence"] == (
        "CUDA_VISIBLE_DEVICES='0' was given to a child at prog.py:8 while this process was restricted to '1': 0 is outside it")
    r = trace(tmp_path, ["prog.py"], env=child_env(PATH=f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert r.verdicts() == [("CUD010", 7, "refuted")]
