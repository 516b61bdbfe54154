"""The analysis gaps of issue #17 closed as mechanisms: a call concurrent by itself (catalogue
`concurrent_use`), GPU enumerations handed to children in more ways (CUD010), one context taken from
a container by several threads (CUD101), CUDA objects kept on `self` across a fork (CUD005).
Exact codes, lines and messages, through the public API on small projects."""
from __future__ import annotations

from pathlib import Path

from cudalint.api import lint_paths
from cudalint.inputs.config import Config


def _lint(tmp_path: Path, src: str, name: str = "app.py", select: tuple = ()) -> list:
    (tmp_path / name).write_text(src, encoding="utf-8")
    config = Config(select=tuple(select)) if select else Config()
    return [(f.code, f.line, f.message) for f in lint_paths([str(tmp_path)], config=config, jobs=1).findings]


BATCH = '''\
from langchain_community.chat_models import ChatLlamaCpp

llm = ChatLlamaCpp(model_path="m.gguf", n_gpu_layers=-1)
out = llm.batch(["a", "b"])
'''


def test_batch_alone_is_cud101_with_the_exact_message(tmp_path):
    assert _lint(tmp_path, BATCH) == [
        (
            "CUD101",
            4,
            "one ChatLlamaCpp (created at line 3) is used from several threads: .batch() runs on the worker threads "
            ".batch() starts for its inputs, several at once, with no lock held; a llama.cpp context must be used by "
            "one thread at a time (hold one shared lock around every use)",
        )
    ]


def test_batch_made_serial_by_its_config_or_one_input_is_clean(tmp_path):
    for call in ('llm.batch(["a", "b"], {"max_concurrency": 1})', 'llm.batch(["a", "b"], config=dict(max_concurrency=1))', 'llm.batch(["a"])'):
        assert _lint(tmp_path, BATCH.replace('llm.batch(["a", "b"])', call)) == [], call


def test_batch_with_a_larger_limit_or_unknown_inputs_is_reported(tmp_path):
    for call in ('llm.batch(["a", "b"], {"max_concurrency": 2})', "llm.batch(prompts)", 'llm.batch([*prompts])'):
        found = _lint(tmp_path, "prompts = []\n" + BATCH.replace('llm.batch(["a", "b"])', call))
        assert [(c, line) for c, line, _ in found] == [("CUD101", 5)], call


def test_a_lock_held_around_batch_does_not_keep_its_own_threads_apart(tmp_path):
    src = BATCH.replace('out = llm.batch(["a", "b"])', 'import threading\nlock = threading.Lock()\nwith lock:\n    out = llm.batch(["a", "b"])')
    assert [(c, line) for c, line, _ in _lint(tmp_path, src)] == [("CUD101", 7)]


def test_concurrent_use_is_catalogue_data():
    from cudalint.core.catalogue import load_catalogue

    cat = load_catalogue()
    names = {a.name for a in cat.apis if a.get("concurrent_use")}
    assert {"langchain_community.chat_models.ChatLlamaCpp.batch", "langchain_community.chat_models.ChatLlamaCpp.abatch"} <= names
    assert all(a.get("touches_context") for a in cat.apis if a.get("concurrent_use"))


CHILD = '''\
import multiprocessing as mp
import os

import pynvml


def work(gpu):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)


def launch():
    pynvml.nvmlInit()
    for gpu in range(pynvml.nvmlDeviceGetCount()):
        mp.Process(target=work, args=(gpu,)).start()
'''


def test_a_child_setting_its_own_variable_from_the_parents_enumeration(tmp_path):
    (tmp_path / "app.py").write_text(CHILD, encoding="utf-8")
    found = lint_paths([str(tmp_path)], config=Config(select=("CUD010",)), jobs=1).findings
    assert [(f.code, f.line) for f in found] == [("CUD010", 8)]
    assert found[0].message.startswith(
        "the child process's own CUDA_VISIBLE_DEVICES is built from GPUs listed physically by pynvml.nvmlDeviceGetCount() (line 13)"
    )
    assert [(s.line, s.note) for s in found[0].witness][1] == (14, "mp.Process(target=work, args=(gpu,)) starts a child process with it as `gpu`")


def test_a_child_is_clean_when_the_parent_reads_its_restriction(tmp_path):
    src = CHILD.replace("    pynvml.nvmlInit()\n", '    pynvml.nvmlInit()\n    os.environ.get("CUDA_VISIBLE_DEVICES")\n')
    assert _lint(tmp_path, src, select=("CUD010",)) == []


def test_pool_and_executor_arguments_reach_the_work(tmp_path):
    for start in ("pool.map(work, range(pynvml.nvmlDeviceGetCount()))", "pool.starmap(work, zip(range(pynvml.nvmlDeviceGetCount())))",
                  "pool.apply_async(work, (pynvml.nvmlDeviceGetCount() - 1,))"):
        src = CHILD.replace("    for gpu in range(pynvml.nvmlDeviceGetCount()):\n        mp.Process(target=work, args=(gpu,)).start()\n",
                            f"    with mp.Pool(2) as pool:\n        {start}\n")
        assert [(c, line) for c, line, _ in _lint(tmp_path, src, select=("CUD010",))] == [("CUD010", 8)], start


def test_scratch_env_given_to_popen_by_name_or_inline(tmp_path):
    src = (
        "import subprocess\nimport GPUtil\n\n\ndef a(cmd):\n    g = GPUtil.getFirstAvailable()[0]\n"
        '    env = {"CUDA_VISIBLE_DEVICES": str(g)}\n    subprocess.run(cmd, env=env)\n\n\n'
        'def b(cmd):\n    g = GPUtil.getFirstAvailable()[0]\n    subprocess.Popen(cmd, None, None, None, None, None, None, True, False, None, {"CUDA_VISIBLE_DEVICES": str(g)})\n\n\n'
        'def unused(cmd):\n    g = GPUtil.getFirstAvailable()[0]\n    env = {"CUDA_VISIBLE_DEVICES": str(g)}\n    print(env)\n'
    )
    assert [(c, line) for c, line, _ in _lint(tmp_path, src, select=("CUD010",))] == [("CUD010", 7), ("CUD010", 13)]


def test_one_context_repeated_in_a_list_reaches_every_worker(tmp_path):
    src = (
        "from concurrent.futures import ThreadPoolExecutor\nfrom llama_cpp import Llama\n\nllm = Llama(model_path='m.gguf')\n\n\n"
        "def ask(m, p):\n    return m.create_completion(p)\n\n\n"
        "with ThreadPoolExecutor(4) as ex:\n    list(ex.map(ask, [llm] * 3, ['a', 'b', 'c']))\n"
    )
    assert _lint(tmp_path, src, select=("CUD101",)) == [
        (
            "CUD101",
            8,
            "one Llama (created at line 4) is used from several threads: .create_completion() runs on threads of map(...), "
            "several at once, with no lock held; a llama.cpp context must be used by one thread at a time (hold one shared "
            "lock around every use)",
        )
    ]
    distinct = src.replace("[llm] * 3", "[Llama(model_path='m.gguf') for _ in range(3)]")
    assert _lint(tmp_path, distinct, select=("CUD101",)) == []


def test_dict_element_per_request_is_shared_but_thread_per_key_is_not(tmp_path):
    base = (
        "import threading\nfrom fastapi import FastAPI\nfrom llama_cpp import Llama\n\nmodels = {}\nfor n in ['a', 'b']:\n"
        "    models[n] = Llama(model_path=n)\napp = FastAPI()\n\n\n"
    )
    endpoint = base + "@app.post('/c')\ndef c(name: str):\n    return models[name].create_completion('p')\n"
    assert [(c, line) for c, line, _ in _lint(tmp_path, endpoint, select=("CUD101",))] == [("CUD101", 13)]
    per_key = base + "def go(m):\n    m.create_completion('p')\n\n\nfor n in ['a', 'b']:\n    threading.Thread(target=go, args=(models[n],)).start()\n"
    assert _lint(tmp_path, per_key, select=("CUD101",)) == []


SELF_MODEL = '''\
import multiprocessing as mp

import torch


class Worker:
    def __init__(self):
        self.net = torch.nn.Linear(4, 2).cuda()

    def work(self, x):
        return self.net(x)

    def run(self):
        mp.Process(target=self.work, args=(1,)).start()


Worker().run()
'''


def test_a_gpu_object_kept_on_self_is_used_by_the_forked_child(tmp_path):
    assert _lint(tmp_path, SELF_MODEL, select=("CUD005",)) == [
        (
            "CUD005",
            14,
            "mp.Process(target=self.work, args=(1,)).start() forks after CUDA was initialized by torch.nn.Linear(4, 2).cuda() "
            "(line 8); the child's CUDA use (" + str(tmp_path / "app.py") + ":11) fails ('CUDA error: initialization error'); the "
            "default start method on Linux for target-version py310 ('fork'; 'forkserver' from Python 3.14). Use the 'spawn' "
            "start method, or initialize CUDA only in the children",
        )
    ]
    cpu_attr = SELF_MODEL.replace("return self.net(x)", "return x * 2")
    assert _lint(tmp_path, cpu_attr, select=("CUD005",)) == []


VLLM = '''\
import cupy
from vllm import LLM


def main():
    cupy.cuda.runtime.getDeviceCount()
    return LLM(model="m")
'''


def test_vllm_forks_after_an_initialization_torch_does_not_record(tmp_path):
    assert _lint(tmp_path, VLLM, select=("CUD005",)) == [
        (
            "CUD005",
            7,
            'LLM(model="m") starts its worker processes with fork after CUDA was initialized by cupy.cuda.runtime.getDeviceCount() '
            "(line 6); LLM() switches to spawn only when torch has created its CUDA context (torch.cuda.is_initialized()), which "
            "this initialization does not, so the workers' CUDA fails ('CUDA error: initialization error'). Set "
            "VLLM_WORKER_MULTIPROC_METHOD=spawn before LLM(...), or create it before anything else touches the GPU",
        )
    ]


def test_vllm_spawns_after_a_torch_context_or_when_told_to(tmp_path):
    torch_first = VLLM.replace("import cupy\n", "import cupy\nimport torch\n").replace(
        "    cupy.cuda.runtime.getDeviceCount()\n", "    cupy.cuda.runtime.getDeviceCount()\n    torch.ones(1).cuda()\n"
    )
    assert _lint(tmp_path, torch_first, select=("CUD005",)) == []
    told = VLLM.replace("import cupy\n", "import os\nimport cupy\n").replace(
        "    return LLM", '    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"\n    return LLM'
    )
    assert _lint(tmp_path, told, select=("CUD005",)) == []
    assert _lint(tmp_path, VLLM.replace("    cupy.cuda.runtime.getDeviceCount()\n", ""), select=("CUD005",)) == []
