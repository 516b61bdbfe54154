"""Every process below the traced program is traced into the same events file, with its pid and its
parent's, and the verdicts use its events: multiprocessing spawn and forkserver children,
ProcessPoolExecutor workers, `subprocess` of python, torch.multiprocessing.spawn and torchrun's
workers. Real torch (CPU wheel); the analyzer's own findings."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import child_env, write_program

pytest.importorskip("torch")  # guard for running outside `make test` only; CI installs torch

WORK = """
    import os
    import sys
    import torch

    def work(rank=0, *_):
        torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)
        print("child", rank, os.environ.get("PYTHONPATH") == os.environ.get("EXPECT_PP"), flush=True)
        return rank

"""

MAINS = {
    "spawn": """
        if __name__ == "__main__":
            import multiprocessing as mp
            p = mp.get_context("spawn").Process(target=work, args=(1,))
            p.start()
            p.join()
    """,
    "forkserver": """
        if __name__ == "__main__":
            import multiprocessing as mp
            p = mp.get_context("forkserver").Process(target=work, args=(1,))
            p.start()
            p.join()
    """,
    "pool": """
        if __name__ == "__main__":
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor
            with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
                print(list(pool.map(work, [1])))
    """,
    "torch-spawn": """
        if __name__ == "__main__":
            import torch.multiprocessing as tmp
            tmp.spawn(work, nprocs=1)
    """,
    "subprocess": """
        if __name__ == "__main__":
            import subprocess
            if len(sys.argv) > 1:
                work(1)
            else:
                env = dict(os.environ, EXTRA="1")   # an explicit environment, as launchers pass
                subprocess.run([sys.executable, __file__, "child"], env=env, check=True)
                subprocess.run([sys.executable, __file__, "child"], check=True)
    """,
}


def _events(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("how", sorted(MAINS))
def test_child_that_initializes_then_sets_cvd_is_confirmed(tmp_path, tracer, how):
    write_program(tmp_path, textwrap.dedent(WORK) + textwrap.dedent(MAINS[how]))
    env = child_env(EXPECT_PP=child_env()["PYTHONPATH"])
    r = tracer(tmp_path, ["prog.py"], extra=["--events", str(tmp_path / "ev.jsonl")], env=env)
    assert r.returncode == 1, r.stderr[-3000:]
    # the child sees the PYTHONPATH it would see untraced
    assert "child 1 True" in r.stdout or "child 0 True" in r.stdout, r.stdout
    assert r.verdicts() == [("CUD001", 7, "confirmed")]
    assert r.report["findings"][0]["evidence"] == (
        f"torch.cuda.is_available() ran at prog.py:6 before CUDA_VISIBLE_DEVICES='{0 if how == 'torch-spawn' else 1}' "
        "was written at prog.py:7")
    events = _events(tmp_path / "ev.jsonl")
    root = next(e["pid"] for e in events if e["kind"] == "start")
    writes = [e for e in events if e["kind"] == "env" and e["key"] == "CUDA_VISIBLE_DEVICES"]
    assert writes and all(e["pid"] != root for e in writes)
    procs = {e["pid"]: e for e in events if e["kind"] in ("proc", "child")}
    # every writing process is known, with its parent, up to the program's own process
    for w in writes:
        pid, chain = w["pid"], []
        while pid != root:
            chain.append(pid)
            pid = procs[pid]["ppid"]
            assert len(chain) < 5
    # the parent recorded where it started its child (pid linked)
    spawns = {e["child"]: e for e in events if e["kind"] == "spawn"}
    assert any(p in spawns for p in procs)
    if how == "subprocess":
        assert len(writes) == 2  # explicit env= and inherited environment both carry the tracer


def test_torchrun_workers_are_traced(tmp_path, tracer):
    write_program(tmp_path, textwrap.dedent(WORK) + textwrap.dedent("""
        if __name__ == "__main__":
            work(int(os.environ["LOCAL_RANK"]))
    """))
    r = tracer(tmp_path, ["torch.distributed.run", "--standalone", "--nproc-per-node=2", "prog.py"], module=True,
               extra=["--events", str(tmp_path / "ev.jsonl")], timeout=300)
    assert r.returncode == 1, r.stderr[-3000:]
    assert sorted(x for x in r.stdout.splitlines() if x.startswith("child")) == ["child 0 False", "child 1 False"]
    # torchrun's own module is not the user's: the workers' file is linted and its finding confirmed
    assert r.verdicts() == [("CUD001", 7, "confirmed")]
    events = _events(tmp_path / "ev.jsonl")
    writers = {e["pid"] for e in events if e["kind"] == "env" and e["key"] == "CUDA_VISIBLE_DEVICES"}
    assert len(writers) == 2


def test_untraced_view_of_the_environment(tmp_path):
    """The tracer's variables are in the C environment only: os.environ shows what python shows."""
    write_program(tmp_path, """
        import os, subprocess, sys
        print(sorted(k for k in os.environ if k.startswith("CUDALINT_TRACE")), os.environ.get("PYTHONPATH"))
        subprocess.run([sys.executable, "-c", "import os; print(sorted(k for k in os.environ if 'CUDALINT_TRACE' in k), "
                        "os.environ.get('PYTHONPATH'))"], check=True)
    """)
    env = child_env()
    plain = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    traced = subprocess.run([sys.executable, "-m", "cudalint.trace", "-o", os.devnull, "prog.py"], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert traced.stdout == plain.stdout == f"[] {env['PYTHONPATH']}\n" * 2
