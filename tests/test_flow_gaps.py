"""The analysis gaps of issue #17 closed as mechanisms: a call concurrent by itself (catalogue
`concurrent_use`), GPU enumerations handed to children in more ways (CUD010), one context taken from
a container by several threads (CUD101), CUDA objects kept on `self` across a fork (CUD005).
Exact codes, lines and messages, through the public API on small projects."""
from __future__ import annotations

from pathlib import Path

from cudalint.api import lint_paths
from cudalint.config import Config


def _lint(tmp_path: Path, src: str, name: str = "app.py", select: tuple = ()) -> list:
    (tmp_path / name).write_text(src, encoding="utf-8")
    config = Config(select=list(select)) if select else Config()
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
    from cudalint.catalogue import load_catalogue

    cat = load_catalogue()
    names = {a.name for a in cat.apis if a.get("concurrent_use")}
    assert {"langchain_community.chat_models.ChatLlamaCpp.batch", "langchain_community.chat_models.ChatLlamaCpp.abatch"} <= names
    assert all(a.get("touches_context") for a in cat.apis if a.get("concurrent_use"))
