"""The rule codes cudalint knows, and their docs in `rules/CODE.md`."""
from __future__ import annotations

import os
from cudalint.core.record import record
from cudalint.resources import rules_dir

DOC_SECTIONS = (
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## How --trace confirms it",
    "## References",
)


@record
class Rule:
    code: str
    name: str
    summary: str
    severity: str = "error"


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("CUD001", "cuda-visible-devices-after-init", "CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER set after CUDA was initialized"),
        Rule("CUD002", "init-time-variable-set-too-late", "a variable a library reads once (at import or at its CUDA initialization) set after that happened"),
        Rule("CUD003", "cuda-initialized-at-import", "a project module initializes CUDA at import time, and other modules import it", "warning"),
        Rule("CUD004", "gpu-index-wrong-numbering", "an NVML/nvidia-smi GPU index used as a CUDA ordinal, or the reverse"),
        Rule("CUD005", "fork-after-cuda-init", "a child process forked after CUDA was initialized, whose work uses CUDA"),
        Rule("CUD006", "env-write-between-forkserver-starts", "the environment changed between forkserver starts: later children do not see it"),
        Rule("CUD007", "invalid-device-value", "a non-string written to os.environ, or a device value CUDA or the library will not parse as intended"),
        Rule("CUD008", "availability-monkeypatch", "a CUDA availability/initializing API replaced by assignment (torch.cuda.is_available = lambda: False)", "warning"),
        Rule("CUD009", "notebook-shell-export", "`!export VAR=...` in a notebook: it runs in a subshell and does not change the kernel's environment"),
        Rule("CUD010", "gpu-enumeration-ignores-visible-devices", "GPUs listed with nvidia-smi/NVML/GPUtil and handed out as CUDA_VISIBLE_DEVICES without reading this process's own CUDA_VISIBLE_DEVICES"),
        Rule("CUD101", "llama-context-shared-across-threads", "one llama.cpp context (Llama, LlamaCpp, ctransformers LLM) used from several threads without a common lock"),
        Rule("CUD102", "llama-context-created-concurrently", "a llama.cpp context created on several threads at once without a lock", severity="warning"),
        Rule("CUD103", "llama-contexts-decode-concurrently-on-gpu", "separate GPU-offloaded llama.cpp contexts decoding on several threads at once without one global lock", severity="warning"),
        Rule("CUD900", "unreadable-file", "a file that cannot be read, decoded or parsed"),
    )
}


def doc_path(code: str) -> str:
    return os.path.join(rules_dir(), f"{code.upper()}.md")


def doc(code: str) -> str:
    with open(doc_path(code), encoding="utf-8") as fh:
        return fh.read()
