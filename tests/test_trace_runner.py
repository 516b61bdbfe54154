"""The program runs as it would without cudalint; the tracer's exit status; signals; -m; and the
hooks installed from a user catalogue file (no second list of APIs in the tracer)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from tests.conftest import child_env, write_program
from tests.support.static import finding

SHOW = """
    import os
    import sys
    print(repr(sys.argv), __name__, os.getcwd(), sys.path[0] == os.path.dirname(os.path.realpath(__file__)))
    print("stdin:", sys.stdin.read().strip())
    print("to stderr", file=sys.stderr)
    print("CUDALINT_TRACE" in os.environ)
"""


def test_program_sees_what_python_would_give_it(tmp_path, tracer):
    write_program(tmp_path, SHOW)
    plain = subprocess.run([sys.executable, "prog.py", "--flag", "x y"], cwd=tmp_path, input="hello\n",
                           capture_output=True, text=True, env=child_env())
    r = tracer(tmp_path, ["prog.py", "--flag", "x y"], stdin="hello\n")
    assert r.stdout == plain.stdout
    assert r.stdout.splitlines()[0] == f"['prog.py', '--flag', 'x y'] __main__ {tmp_path} True"
    assert r.stdout.splitlines()[-1] == "False"  # the tracer's own variable is gone
    assert "to stderr" in r.stderr
    assert r.returncode == 0


def test_module_mode(tmp_path, tracer):
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("import sys\nprint(sys.argv, __name__)\n")
    r = tracer(tmp_path, ["app.main", "a"], module=True)
    plain = subprocess.run([sys.executable, "-m", "app.main", "a"], cwd=tmp_path, capture_output=True, text=True,
                           env=child_env())
    assert r.stdout == plain.stdout == f"['{pkg / 'main.py'}', 'a'] __main__\n"
    assert r.report["program"]["command"] == ["python", "-m", "app.main", "a"]


def test_program_that_cannot_start_gives_2(tmp_path, tracer):
    r = tracer(tmp_path, ["missing.py"])
    assert r.returncode == 2 and r.report == {}
    r = tracer(tmp_path, ["no_such_module"], module=True)
    assert r.returncode == 2
    assert "No module named no_such_module" in r.stderr


def test_exit_status_and_uncaught_exception_are_reported(tmp_path, tracer):
    write_program(tmp_path, "import sys\nsys.exit(3)\n")
    r = tracer(tmp_path, ["prog.py"])
    # nothing confirmed: the program's own failure is the tracer's status (CI must see it)
    assert r.returncode == 3
    assert r.report["program"]["status"] == "exited with status 3"
    assert r.report["exit_status"] == 3
    write_program(tmp_path, "def f():\n    raise ValueError('boom')\nf()\n")
    r = tracer(tmp_path, ["prog.py"])
    assert r.returncode == 1
    assert r.report["program"]["status"] == "exited with status 1"
    assert r.report["program"]["uncaught"] == "ValueError"
    # the traceback is the program's, without cudalint or runpy frames
    assert r.stderr.startswith("Traceback (most recent call last):\n  File \"" + str(tmp_path / "prog.py"))
    assert "cudalint" not in r.stderr and "runpy" not in r.stderr


def _start_traced(tmp_path, prog: str):
    write_program(tmp_path, prog)
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "cudalint.trace", "--format", "json", "-o", str(report), "prog.py"],
                            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc, report


WAIT = """
    import os, sys, time
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    try:
        print("ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
"""


def test_sigterm_reaches_the_program(tmp_path):
    proc, report = _start_traced(tmp_path, WAIT)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    data = json.loads(report.read_text())
    assert data["program"]["status"] == "was killed by SIGTERM"
    assert proc.returncode == 128 + signal.SIGTERM  # as a shell reports a killed program


def test_sigint_reaches_the_program_as_keyboard_interrupt(tmp_path):
    proc, report = _start_traced(tmp_path, WAIT)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert out == "interrupted\n"
    assert "KeyboardInterrupt" in err
    assert json.loads(report.read_text())["program"]["status"] == "was killed by SIGINT"
    assert proc.returncode == 130


FAKE_CATALOGUE = """
[library]
name = "fakellm"
import_roots = ["fakellm"]

[[api]]
name = "fakellm.Model"
init = "context"
llama_context = true
note = "loads the model on the GPU"

[[api]]
name = "fakellm.Model.run"
touches_context = true

[[api]]
name = "fakellm.Model.stream"
touches_context = true
"""

FAKE_LIB = """
import threading
inside = threading.Barrier(2, timeout=10)
building = threading.Barrier(2, timeout=10)

class Model:
    def __init__(self, path):
        if path.startswith("sync"):
            building.wait()    # both threads are constructing at the same time
        self.path = path

    def run(self, prompt):
        inside.wait()          # both threads are inside run() at the same time
        return prompt.upper()

    def stream(self, prompt):
        for ch in prompt:
            got = yield ch
            if got:
                yield got
"""


def _fake_library(tmp_path):
    """A stand-in llama library in a site-packages folder, and the user catalogue that describes it."""
    lib = tmp_path / "site-packages" / "fakellm"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(FAKE_LIB)
    (tmp_path / "fake.toml").write_text(FAKE_CATALOGUE)
    return lib


def test_hooks_come_from_the_catalogue_and_see_generators(tmp_path, tracer):
    lib = _fake_library(tmp_path)
    write_program(tmp_path, """
        import os
        import threading
        from fakellm import Model

        m = Model("x.gguf")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"

        def worker(p):
            m.run(p)

        threads = [threading.Thread(target=worker, args=(p,), name=f"w{p}") for p in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        gen = m.stream("hi")
        print(next(gen), gen.send("X"), list(gen))
    """)
    env = child_env()
    env["PYTHONPATH"] += ":" + str(lib.parent)
    static = [finding("CUD001", "prog.py", 6, "CUDA_VISIBLE_DEVICES is set after CUDA was initialized"),
              finding("CUD101", "prog.py", 9, "Model `m` is used from several threads without a lock")]
    r = tracer(tmp_path, ["prog.py"], static, extra=["--catalogue", str(tmp_path / "fake.toml")], env=env)
    assert r.stdout == "h X ['i']\n"  # send() reaches the wrapped generator
    assert r.returncode == 1
    assert r.verdicts() == [("CUD001", 6, "confirmed"), ("CUD101", 9, "confirmed")]
    assert r.report["findings"][0]["evidence"] == (
        "fakellm.Model('x.gguf') ran at prog.py:5 before CUDA_VISIBLE_DEVICES='1' was written at prog.py:6")
    ev = r.report["findings"][1]["evidence"]
    assert ev in (
        "threads 'wa' (run at prog.py:9) and 'wb' (run at prog.py:9) were inside the same Model at the same time",
        "threads 'wb' (run at prog.py:9) and 'wa' (run at prog.py:9) were inside the same Model at the same time")


def test_secrets_in_other_variables_are_not_recorded(tmp_path):
    write_program(tmp_path, """
        import os
        os.environ["API_TOKEN"] = "s3cret"
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """)
    events = tmp_path / "events.jsonl"
    subprocess.run([sys.executable, "-m", "cudalint.trace", "-o", os.devnull, "--events", str(events), "prog.py"],
                   cwd=tmp_path, env=child_env(), check=True)
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    env = [(e["key"], e.get("value"), e["site"]["line"]) for e in lines if e["kind"] == "env"]
    assert env == [("API_TOKEN", None, 2), ("CUDA_VISIBLE_DEVICES", "0", 3)]
    assert "s3cret" not in events.read_text()


def test_text_report(tmp_path):
    write_program(tmp_path, "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    from tests.support.static import write_findings
    f = write_findings(str(tmp_path), [finding("CUD001", "prog.py", 2, "CUDA_VISIBLE_DEVICES is set after CUDA was initialized")])
    p = subprocess.run([sys.executable, "-m", "cudalint.trace", "--findings", f, "prog.py"], cwd=tmp_path,
                       env=child_env(), capture_output=True, text=True)
    assert p.returncode == 0
    assert p.stdout == ""  # the program's stdout is the program's: the report goes to stderr
    assert p.stderr == (
        "cudalint trace: `python prog.py` exited with status 0\n"
        "evidence: call order only (no NVIDIA driver on this machine)\n"
        "prog.py:2:1: CUD001 [refuted] CUDA_VISIBLE_DEVICES is set after CUDA was initialized\n"
        "    CUDA_VISIBLE_DEVICES='0' was written at prog.py:2 before any CUDA initialization; nothing initialized CUDA\n"
        "1 refuted\n")


def test_concurrent_construction_is_reported(tmp_path, tracer):
    lib = _fake_library(tmp_path)
    write_program(tmp_path, """
        import threading
        from fakellm import Model

        def load(name):
            Model(name)

        threads = [threading.Thread(target=load, args=(f"sync-{i}",)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """)
    env = child_env()
    env["PYTHONPATH"] += ":" + str(lib.parent)
    r = tracer(tmp_path, ["prog.py"], [], extra=["--catalogue", str(tmp_path / "fake.toml")], env=env)
    assert r.returncode == 1
    assert r.runtime() == [("CUD101", "prog.py", 5)]
    assert r.report["runtime_findings"][0]["message"] == "Model objects are constructed in several threads at the same time"


def test_find_spec_availability_checks_are_not_imports(tmp_path, tracer):
    lib = tmp_path / "site-packages" / "cupy"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    write_program(tmp_path, """
        import importlib.util
        import os
        has_cupy = importlib.util.find_spec("cupy") is not None
        os.environ["CUPY_ACCELERATORS"] = "cub"
        import cupy
        os.environ["CUPY_ACCELERATORS"] = "cutensor"
    """)
    env = child_env()
    env["PYTHONPATH"] += ":" + str(lib.parent)
    r = tracer(tmp_path, ["prog.py"], [], env=env)
    assert r.runtime() == [("CUD002", "prog.py", 6)]
    assert r.report["runtime_findings"][0]["evidence"] == (
        "import cupy at prog.py:5 before CUPY_ACCELERATORS='cutensor' was written at prog.py:6")
    assert r.report["runtime_findings"][0]["message"] == (
        "CUPY_ACCELERATORS is written after import cupy read it; the change has no effect")


def test_cudalint_cli_entry_point(tmp_path, capsys, monkeypatch):
    """`cudalint --trace ...` hands its argv to run_from_cli (the main CLI's wiring)."""
    from cudalint.trace import run_from_cli

    write_program(tmp_path, "print('hi')\n")
    monkeypatch.chdir(tmp_path)
    assert run_from_cli(["--trace", "--format", "json", "-o", "r.json", "prog.py"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["program"]["command"] == ["python", "prog.py"]
    assert run_from_cli(["--trace=prog.py"]) == 0
    assert run_from_cli(["--trace"]) == 2


def test_evidence_survives_sigkill(tmp_path):
    write_program(tmp_path, """
        import os, time
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        print(os.getpid(), flush=True)
        time.sleep(60)
    """)
    report, events = tmp_path / "report.json", tmp_path / "events.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "cudalint.trace", "--format", "json", "-o", str(report),
                             "--events", str(events), "prog.py"],
                            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, text=True)
    os.kill(int(proc.stdout.readline()), signal.SIGKILL)
    proc.communicate(timeout=30)
    assert json.loads(report.read_text())["program"]["status"] == "was killed by SIGKILL"
    assert proc.returncode == 128 + signal.SIGKILL
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    assert [(e["key"], e["value"], e["site"]["line"]) for e in lines if e["kind"] == "env"] == [
        ("CUDA_VISIBLE_DEVICES", "0", 2)]
