"""CUD005 for libraries that fork their own workers (catalogue `child_uses_cuda`): the call starts
children with fork (`starts_process = "fork"`) whose work, inside the library, uses CUDA, so there
is no project function for `cudalint.checks.fork` to inspect.

vLLM's `LLM(...)` is the case: its engine and workers start with `VLLM_WORKER_MULTIPROC_METHOD`
(default fork), and it switches to spawn only when `torch.cuda.is_initialized()` (vllm 0.33.0
vllm/utils/system_utils.py `_maybe_force_spawn`, vllm/utils/platform_utils.py `cuda_is_initialized`).
Any CUDA initialization that creates no torch context is unseen: CuPy, Numba, PyCUDA, llama.cpp,
TensorFlow, JAX, ONNX Runtime's CUDA provider, the driver API, and torch's own driver-level calls
(`torch.cuda.is_available()`/`device_count()` run cuInit without creating torch's context:
vllm-project/vllm#9469). Catalogue fields: `spawn_seen_init` (libraries whose context-level
initialization, `init:<library>`, is torch's context: then it spawns), `spawn_when_env` (variables
that make it spawn).
"""
from __future__ import annotations

from typing import Callable, Optional

from cudalint.core.catalogue import Catalogue, env_fact
from cudalint.checks.gpu_index import _dedup
from cudalint.core.findings import Finding, Step
from cudalint.analysis.flow import Analyzer, Exposed


def checks(catalogue: Catalogue, enabled: Callable[[str], bool]) -> list[tuple[str, Callable]]:
    if not enabled("CUD005"):
        return []

    catalogue_libraries = sorted({a.library for a in catalogue.apis if a.library})

    def forks_after_unseen_init(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        ev = exposed.event
        if ev.data[1] != "fork":
            return None
        api = next((a for a in catalogue.calls_named(ev.data[0]) if a.get("child_uses_cuda")), None)
        if api is None:
            return None
        if any(lookup(env_fact(var, str(val))) is not None for var, val in dict(api.get("spawn_when_env") or ()).items()):
            return None
        if any(lookup(f"init:{lib}") is not None for lib in api.get("spawn_seen_init") or ()):
            return None  # torch's CUDA context exists: the library sees it and spawns its workers
        found = next(
            ((lib, f) for lib in catalogue_libraries if lib != api.library and (f := lookup(f"init:{lib}:driver")) is not None),
            None,
        )
        if found is None or found[1].unless:
            # a conditional initialization (torch.cuda.is_available() unless `import vllm` switched it to
            # NVML) is settled against the caller's whole state, not the order of the two: the
            # vllm-project/vllm#9469 order (is_available() first, then `import vllm`) is not told apart
            return None
        lib, init = found
        short = ev.data[0].rsplit(".", 1)[-1]
        fork = Step(exposed.path, ev.loc[0], f"{ev.text} starts its workers with fork; they use CUDA")
        message = (
            f"{ev.text} starts its worker processes with fork after CUDA was initialized by {init.describe(exposed.path)}; "
            f"{short}() switches to spawn only when torch has created its CUDA context (torch.cuda.is_initialized()), which this "
            "initialization does not, "
            "so the workers' CUDA fails ('CUDA error: initialization error'). Set VLLM_WORKER_MULTIPROC_METHOD=spawn before "
            f"{short}(...), or create it before anything else touches the GPU"
        )
        return Finding.at("CUD005", exposed.path, ev.loc, message=message, witness=_dedup(init.steps + exposed.chain + (fork,)), severity="error")

    return [("process", forks_after_unseen_init)]
