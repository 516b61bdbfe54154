"""`--trace --html`: the timeline page opened in a real browser (Debian's chromium, headless), from a
torch trace and a llama-cpp-python trace. Each test takes a screenshot (its path is printed in the
test output), checks the page's rendered text (`--dump-dom`, after the page's script ran) and that
the page made no network request (chromium's net log: requests made for a page carry its
`file://` isolation key; chromium's own background requests carry none)."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import write_program

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (`make test` installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(page: Path, work: Path, *args: str) -> tuple[str, list[str]]:
    """(stdout, URLs the page requested) of one headless run on `page`."""
    profile = work / f"profile-{len(list(work.glob('profile-*')))}"
    profile.mkdir()
    netlog = profile.parent / (profile.name + ".netlog.json")
    p = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--log-net-log={netlog}",
                        "--net-log-capture-mode=IncludeSensitive", *args, page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, page_requests(netlog)


def page_requests(netlog: Path) -> list[str]:
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e["type"] == start and "url" in e.get("params", {})
            and "file://" in str(e["params"].get("network_isolation_key", ""))]


def _open(page: Path, work: Path, shot: Path) -> str:
    _, requests = _chromium(page, work, "--window-size=1400,1100", f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 10_000
    dom, more = _chromium(page, work, "--dump-dom")
    assert requests == [] and more == []
    return dom


def _text(dom: str) -> str:
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", dom, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _report(capsys, name: str, shot: Path) -> None:
    with capsys.disabled():
        print(f"\ntimeline screenshot ({name}): {shot}")


def test_the_net_log_check_sees_a_page_request(tmp_path):
    """The check below can fail: a page that fetches something is caught."""
    leak = tmp_path / "leak.html"
    leak.write_text('<html><body><img src="http://example.invalid/x.png"></body></html>')
    _, requests = _chromium(leak, tmp_path, "--dump-dom")
    assert requests == ["http://example.invalid/x.png"]


TORCH_PROG = """
    import multiprocessing as mp
    import os
    import torch

    def child():
        torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"

    if __name__ == "__main__":
        torch.cuda.is_available()
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        p = mp.get_context("spawn").Process(target=child)
        p.start()
        p.join()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
"""


def test_torch_trace_timeline_in_chromium(tmp_path, tracer, capsys):
    pytest.importorskip("torch")
    write_program(tmp_path, TORCH_PROG)
    page = tmp_path / "timeline.html"
    r = tracer(tmp_path, ["prog.py"], extra=["--html", str(page)])
    assert r.returncode == 1, r.stderr[-2000:]
    source = page.read_text()
    assert "http://" not in source and "https://" not in source and " src=" not in source
    shot = tmp_path / "torch-timeline.png"
    dom = _open(page, tmp_path, shot)
    _report(capsys, "torch", shot)
    text = _text(dom)
    assert "cudalint trace: python prog.py" in text
    assert "The program exited with status 0." in text
    # the static findings with their verdicts, linked to the events that decided them
    assert re.search(r"CUD001 prog\.py:7 confirmed .*? event \d+ event \d+", text)
    assert re.search(r"CUD005 prog\.py:15 confirmed", text)
    link = re.search(r'<a href="#ev-(\d+)" data-seq="\d+">event \d+</a>', dom)
    assert link and f'id="ev-{link.group(1)}"' in dom
    # processes: the program, the spawned child (linked to its parent), the forked child
    assert re.search(r"pid \d+, parent pid \d+: started \(spawn, subprocess\): \S+( -\S+)* -c <multiprocessing spawn>", text)
    assert re.search(r"pid \d+, parent pid \d+: forked", text)
    assert "torch.cuda.is_available() initializes CUDA (torch) at prog.py:10" in text
    assert "CUDA_VISIBLE_DEVICES='1' at prog.py:7" in text
    assert "GPU memory: not sampled (call order only (no NVIDIA driver on this machine))." in text
    # the script ran and drew every event
    drawn = int(re.search(r'data-drawn="(\d+)"', dom).group(1))
    assert drawn >= 8


LLAMA_PROG = """
    import sys
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from llama_cpp import Llama

    llm = Llama(model_path=sys.argv[1], n_ctx=128, verbose=False)
    lock = threading.Lock()

    def locked(prompt):
        with lock:
            return llm(prompt, max_tokens=4)

    def free(prompt):
        return llm(prompt, max_tokens=16)

    threads = [threading.Thread(target=locked, args=(p,), name=f"locked-{p}") for p in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ThreadPoolExecutor(max_workers=4) as pool:   # the shape of tests/test_trace_llama.py's SHARED
        print(len(list(pool.map(free, ["hello", "world", "a b", "the"] * 4))))
"""


def test_llama_trace_timeline_in_chromium(tmp_path, tracer, capsys, tiny_gguf):
    pytest.importorskip("llama_cpp")
    write_program(tmp_path, LLAMA_PROG)
    page = tmp_path / "timeline.html"
    r = tracer(tmp_path, ["prog.py", tiny_gguf], extra=["--html", str(page)])
    assert r.returncode == 1, r.stderr[-2000:]
    shot = tmp_path / "llama-timeline.png"
    dom = _open(page, tmp_path, shot)
    _report(capsys, "llama-cpp-python", shot)
    text = _text(dom)
    # the analyzer's two findings: the locked use refuted by this run, the pool's confirmed
    assert re.search(r"CUD101 prog\.py:11 refuted .*? ran in 2 thread\(s\) \(locked-a, locked-b\) .*?event \d+", text)
    assert re.search(r"CUD101 prog\.py:14 confirmed .*?event \d+", text), text[:3000]
    assert re.search(r"threads ThreadPoolExecutor-0_\d \(prog\.py:14\) and ThreadPoolExecutor-0_\d \(prog\.py:14\) "
                     r"inside one Llama at the same time", text)
    assert "locked-a" in text and "locked-b" in text  # their lanes' events are listed
    for seq in re.findall(r'data-seq="(\d+)"', dom):  # every "decided by" link has its row
        assert f'id="ev-{seq}"' in dom
    spans = json.loads(re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', dom, re.S)
                       .group(1).replace("<\\/", "</"))["spans"]
    assert len({s[0] for s in spans}) >= 2  # spans of at least two threads inside the context
