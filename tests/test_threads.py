"""The thread model's pieces: the catalogue's context methods (the tracer's input), lock scoping in
`flatten`, and the summarizer's thread events."""
from __future__ import annotations

import ast

from cudalint.core.catalogue import load_catalogue
from cudalint.summary.summarize import summarize
from cudalint.analysis.thread_model import flatten


def _ir(src: str):
    return summarize(ast.parse(src), src, "m.py", "m", load_catalogue())


def test_context_methods_for_the_tracer():
    methods = load_catalogue().context_methods()
    assert set(methods["llama_cpp.Llama"]) == {
        "__call__", "create_completion", "create_chat_completion", "create_chat_completion_openai_v1",
        "generate", "eval", "sample", "embed", "create_embedding", "reset", "save_state", "load_state",
    }
    assert "invoke" in methods["langchain_community.llms.LlamaCpp"]
    assert "generate" in methods["ctransformers.LLM"]
    assert "tokenize" not in methods["llama_cpp.Llama"]  # llama.h: tokenization is thread-safe


def test_lock_is_held_only_inside_the_with_and_between_acquire_and_release():
    ir = _ir(
        "import threading\nfrom llama_cpp import Llama\nllm = Llama()\nlock = threading.Lock()\n"
        "def f():\n    with lock:\n        llm('a')\n    llm('b')\n    lock.acquire()\n    try:\n        llm('c')\n"
        "    finally:\n        lock.release()\n    llm('d')\n"
        "    if x:\n        lock.acquire()\n    llm('e')\n"
    )
    sites = flatten(ir.functions["f"].body)[0]
    held = {s.event.loc[0]: bool(s.held) for s in sites if s.event.kind == "llama_use"}
    assert held == {7: True, 8: False, 11: True, 14: False, 17: False}


def test_stream_bound_then_iterated_outside_the_lock():
    ir = _ir(
        "from llama_cpp import Llama\nllm = Llama()\ndef f(lock):\n    with lock:\n        s = llm('p', stream=True)\n"
        "    for c in s:\n        print(c)\n"
    )
    kinds = [(e.event.kind, e.event.data, bool(e.held)) for e in flatten(ir.functions["f"].body)[0] if e.event.kind.startswith("llama")]
    assert kinds == [("llama_use", ("__call__", "v::llm", "bound:s"), True), ("llama_iter", ("v::llm", "s"), False)]


def test_thread_start_names_target_args_and_multiplicity():
    ir = _ir(
        "import threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def work(m):\n    pass\nwith ThreadPoolExecutor(4) as ex:\n    ex.map(work, [1])\n"
        "threading.Thread(target=work, args=(llm,)).start()\n"
    )
    starts = [e.event.data for e in flatten(ir.top)[0] if e.event.kind == "thread_start"]
    assert starts[0][:2] == ("concurrent.futures.ThreadPoolExecutor.map", ":work") and starts[0][4] == "1"
    assert starts[1][:2] == ("threading.Thread", ":work") and starts[1][4] == "" and starts[1][6] == ("v::llm",)


def test_calling_an_instance_is_not_constructing_it():
    ir = _ir("from llama_cpp import Llama\nllm = Llama()\nllm('hi')\n")
    inits = [e.event.loc[0] for e in flatten(ir.top)[0] if e.event.kind in ("init", "llama_new")]
    assert inits == [2, 2]


def test_a_module_says_whether_it_makes_a_llama_context():
    """`ModuleIR.makes_llama`: without it anywhere in a project, the thread model is not built."""
    assert _ir("from llama_cpp import Llama\nllm = Llama(model_path='m.gguf')\n").makes_llama
    assert _ir("import llama_cpp\ndef load():\n    return llama_cpp.Llama.from_pretrained('r', 'f')\n").makes_llama
    # using one that another module made, threads and locks: no
    assert not _ir("from models import llm\nimport threading\nthreading.Thread(target=llm, args=('a',)).start()\n").makes_llama
    assert not _ir("from llama_cpp import Llama\ndef f(llm: Llama):\n    return llm('hi')\n").makes_llama
