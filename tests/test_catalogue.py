"""The bundled catalogue (rules/catalogue/*.toml): it parses, every entry cites evidence, and the
surprising facts from shared/knowledge.md are encoded exactly."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalint.core.catalogue import load_catalogue, parse_catalogue_text, catalogue_files

TAGS = ("[SRC]", "[DOC]", "[ISSUE]", "[EMP]", "[UNCONFIRMED]")


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def entries(cat, name, kind="call"):
    return [a for a in cat.apis if a.name == name and a.kind == kind]


def one(cat, name, kind="call", match=None):
    """The single entry named `name` whose match conditions equal `match` (a dict or None = no match)."""
    want = tuple((tuple(k.split("|")), v) for k, v in (match or {}).items())
    found = [a for a in entries(cat, name, kind) if a.match == want]
    assert len(found) == 1, f"expected one {kind} entry {name} with match={match}, got {found}"
    return found[0]


def cond(api_conditions):
    """{slot: pattern} flattened over every slot alternative."""
    out = {}
    for slots, pattern in api_conditions:
        for s in slots:
            out[s] = pattern
    return out


# --- every file parses, every entry carries evidence -------------------------------------------


def test_every_file_parses():
    files = [Path(p) for p in catalogue_files() if p.endswith(".toml")]
    names = {p.name for p in files}
    for expected in (
        "torch.toml", "cupy.toml", "jax.toml", "tensorflow.toml", "numba.toml", "pycuda.toml",
        "llama_cpp.toml", "cuda_driver.toml", "os.toml", "subprocess.toml", "multiprocessing.toml",
        "threading.toml", "nvml.toml",
    ):
        assert expected in names
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert text.lstrip().startswith("#"), f"{path.name} must start with an evidence comment block"
        parse_catalogue_text(text, str(path))


def test_every_api_entry_has_evidence(cat):
    for api in cat.apis:
        assert api.evidence.strip(), f"{api.source}: {api.name} has no evidence"
        assert any(t in api.evidence for t in TAGS), f"{api.source}: {api.name} evidence lacks a tag"


def test_every_env_entry_has_evidence(cat):
    for env in cat.env:
        assert env.evidence.strip(), f"{env.source}: {env.name} has no evidence"
        assert any(t in env.evidence for t in TAGS), f"{env.source}: {env.name} evidence lacks a tag"


def test_every_init_entry_has_a_note(cat):
    for api in cat.apis:
        if api.init is not None or api.kind in ("call", "method", "import"):
            assert api.note.strip(), f"{api.source}: {api.name} has no note"


# --- torch ------------------------------------------------------------------------------------


def test_torch_is_available_initializes_the_driver(cat):
    assert one(cat, "torch.cuda.is_available").init == "driver"


def test_torch_device_count_is_not_an_init(cat):
    api = one(cat, "torch.cuda.device_count")
    assert api.init == "none"
    assert "NVML" in api.note or "nvml" in api.note.lower()


def test_torch_device_string_is_not_an_init(cat):
    api = one(cat, "torch.device")
    assert api.init == "none"
    assert api.get("cuda_ordinal_sink")


def test_torch_device_int_is_a_driver_init(cat):
    api = one(cat, "torch.device", match={"0": "<int>"})
    assert api.init == "driver"
    assert "144152" in api.evidence


@pytest.mark.parametrize("name", ["torch.cuda.amp.GradScaler", "torch.amp.GradScaler"])
def test_gradscaler_is_a_driver_init_unless_disabled(cat, name):
    found = entries(cat, name)
    assert found
    for api in found:
        assert api.init == "driver"
        assert cond(api.unless).get("enabled") == "False"


@pytest.mark.parametrize("name", ["torch.autocast", "torch.amp.autocast"])
def test_autocast_is_a_driver_init_for_cuda_only(cat, name):
    api = one(cat, name, match={"0|device_type": "cuda*"})
    assert api.init == "driver"
    assert cond(api.unless).get("enabled") == "False"


def test_cuda_amp_autocast_is_always_cuda(cat):
    api = one(cat, "torch.cuda.amp.autocast")
    assert api.init == "driver"
    assert cond(api.unless).get("enabled") == "False"


def test_cuda_method_is_a_context_init(cat):
    api = one(cat, "cuda", kind="method")
    assert api.init == "context"
    assert cat.methods["cuda"]


def test_to_cuda_method_is_a_context_init(cat):
    assert one(cat, "to", kind="method", match={"0|device": "cuda*"}).init == "context"


def test_tensor_factory_glob(cat):
    hits = [a for a in cat.calls_named("torch.zeros") if a.init == "context"]
    assert hits and cond(hits[0].match).get("device") == "cuda*"


@pytest.mark.parametrize(
    "name", ["torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
             "torch.cuda.seed", "torch.cuda.seed_all"],
)
def test_seeding_is_lazy(cat, name):
    assert one(cat, name).init == "lazy"


@pytest.mark.parametrize("name", ["torch.cuda.utilization", "torch.cuda.temperature",
                                  "torch.cuda.power_draw", "torch.cuda.clock_rate",
                                  "torch.cuda.list_gpu_processes"])
def test_nvml_helpers_init_only_without_device(cat, name):
    assert one(cat, name, match={"0|device": "<none>"}).init == "context"
    assert one(cat, name).init == "none"


def test_cudnn(cat):
    assert one(cat, "torch.backends.cudnn.is_available").init == "none"
    assert one(cat, "torch.backends.cudnn.version").init == "context"


def test_torch_probes(cat):
    assert one(cat, "torch.cuda._lazy_init", kind="probe").init == "context"
    assert one(cat, "torch._C._cuda_getDeviceCount", kind="probe").init == "driver"
    assert one(cat, "torch._C._cuda_init", kind="probe").init == "context"


def test_torch_set_device_is_an_ordinal_sink(cat):
    api = one(cat, "torch.cuda.set_device")
    assert api.init == "context"
    assert api.get("cuda_ordinal_sink") == "0|device"


def test_pytorch_alloc_conf(cat):
    env = cat.env_by_name["PYTORCH_CUDA_ALLOC_CONF"]
    assert (env.frozen_by, env.rule) == ("init:torch", "CUD002")


# --- llama.cpp ---------------------------------------------------------------------------------


def test_llama_constructor_initializes_and_owns_a_context(cat):
    api = one(cat, "llama_cpp.Llama")
    assert api.init == "context"
    assert api.get("llama_context") is True
    assert api.get("cuda_ordinal_sink") == "main_gpu"


def test_import_llama_cpp_is_not_an_init(cat):
    assert not any(name == "llama_cpp" or name.startswith("llama_cpp.") for name in cat.imports)


def test_llama_backend_init_and_constants(cat):
    assert one(cat, "llama_cpp.llama_backend_init").init == "driver"
    assert one(cat, "llama_cpp.llama_supports_gpu_offload").init == "driver"
    assert one(cat, "llama_cpp.llama_max_devices").init == "none"


@pytest.mark.parametrize("method", ["__call__", "create_completion", "create_chat_completion",
                                    "create_chat_completion_openai_v1", "generate", "eval", "sample",
                                    "embed", "create_embedding", "reset", "save_state", "load_state"])
def test_llama_methods_touch_the_context(cat, method):
    api = one(cat, f"llama_cpp.Llama.{method}")
    assert api.get("touches_context") is True
    assert api.init is None


def test_unified_memory_is_not_frozen(cat):
    assert "GGML_CUDA_ENABLE_UNIFIED_MEMORY" not in cat.env_by_name
    assert cat.env_by_name["LLAMA_CPP_LIB_PATH"].frozen_by == "import:llama_cpp"


# --- cupy ---------------------------------------------------------------------------------------


def test_cupy_device_with_argument_is_not_an_init(cat):
    api = one(cat, "cupy.cuda.Device")
    assert api.init == "none"
    assert api.get("cuda_ordinal_sink")


def test_cupy_device_without_argument_is_an_init(cat):
    assert one(cat, "cupy.cuda.Device", match={"0|device": "<none>"}).init == "context"


def test_cupy_device_use_is_a_context_init(cat):
    assert one(cat, "cupy.cuda.Device.use").init == "context"
    assert one(cat, "cupy.cuda.Device.__enter__").init == "context"


def test_cupy_availability(cat):
    for name in ("cupy.is_available", "cupy.cuda.is_available", "cupy.cuda.runtime.getDeviceCount"):
        assert one(cat, name).init == "driver"
    assert one(cat, "cupy.RawKernel").init == "lazy"


# --- other libraries ------------------------------------------------------------------------------


def test_pycuda_autoinit_import_is_a_context_init(cat):
    api = one(cat, "pycuda.autoinit", kind="import")
    assert api.init == "context"
    assert cat.imports["pycuda.autoinit"]


def test_numba_is_available_is_a_driver_init(cat):
    assert one(cat, "numba.cuda.is_available").init == "driver"


def test_jax_devices_is_a_context_init(cat):
    assert one(cat, "jax.devices").init == "context"
    assert any(a.init == "context" for a in cat.calls_named("jax.numpy.zeros"))


def test_tensorflow(cat):
    assert one(cat, "tensorflow.config.list_physical_devices").init == "driver"
    assert one(cat, "tensorflow.test.is_built_with_cuda").init == "none"


def test_nvml_sources_never_init(cat):
    for name in ("pynvml.nvmlDeviceGetCount", "GPUtil.getGPUs", "GPUtil.getAvailable",
                 "GPUtil.getFirstAvailable", "gpustat.new_query"):
        api = one(cat, name)
        assert api.init == "none"
        assert api.get("nvml_index_source") is True


# --- driver-wide environment ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"])
def test_driver_env(cat, name):
    env = cat.env_by_name[name]
    assert env.frozen_by == "init:driver"
    assert env.rule == "CUD001"


def test_env_rules_are_known(cat):
    for env in cat.env:
        assert re.fullmatch(r"CUD00\d", env.rule), env


# --- python runtime -------------------------------------------------------------------------------


def test_os_effects(cat):
    assert one(cat, "os.environ").get("env_mapping") is True
    assert dict(one(cat, "os.putenv").get("env_write")) == {"key": "0|key", "value": "1|value"}
    for name in ("sys.exit", "os._exit", "builtins.exit", "builtins.quit"):
        assert one(cat, name).get("exits") is True
    assert one(cat, "os.fork").get("forks") is True


def test_process_and_thread_effects(cat):
    assert one(cat, "subprocess.run").get("starts_process") == "exec"
    assert one(cat, "multiprocessing.Process").get("starts_process") == "context"
    assert one(cat, "torch.multiprocessing.spawn").get("starts_process") == "spawn"
    assert one(cat, "multiprocessing.set_start_method").get("sets_start_method") is True
    assert one(cat, "threading.Thread").get("starts_thread") is True
    assert one(cat, "anyio.Lock").get("lock") is True


# ---- the shipped pack of parsed TOML (cudalint.core.catalogue_pack) ---------------------------

def test_the_shipped_pack_is_what_the_catalogue_files_make_now() -> None:
    """rules/catalogue-parsed.json is generated; after an edit of a catalogue file, `make catalogue`
    writes it again (a stale pack only costs time: the edited file is parsed)."""
    from cudalint.core.catalogue_pack import pack_path, packed
    from cudalint.core.catalogue_source import read_sources

    with open(pack_path(), encoding="utf-8") as fh:
        assert fh.read() == packed(read_sources()), "rules/catalogue-parsed.json is stale: run `make catalogue`"


def test_the_pack_answers_by_bytes_and_a_file_it_lacks_is_parsed(tmp_path: Path, monkeypatch) -> None:
    from cudalint.core import catalogue, catalogue_pack
    from cudalint.core.catalogue import _load
    from cudalint.core.catalogue_source import read_sources

    sources = read_sources()
    first_path, first = sources[0]
    assert catalogue_pack.shipped(first) is not None
    assert catalogue_pack.shipped(first + b"\n# edited\n") is None  # (other bytes: not in the pack)
    # the catalogue made from the pack is the one made from the files
    _load.cache_clear()
    with_pack = load_catalogue()
    parsed = []
    monkeypatch.setattr(catalogue, "shipped", lambda data: parsed.append(data) and None)
    _load.cache_clear()
    assert load_catalogue() == with_pack
    assert len(parsed) == len(sources)
    # a user's file with a bundled file's bytes is the same tables; an edited one is its own
    monkeypatch.undo()
    mine = tmp_path / "mine.toml"
    mine.write_bytes(first + b'\n[[api]]\nname = "mylib.init"\ninit = "driver"\nevidence = "[EMP] ours"\n')
    _load.cache_clear()
    extended = load_catalogue([mine])
    assert [a.name for a in extended.apis if a.source == str(mine)][-1] == "mylib.init"
    _load.cache_clear()


@pytest.mark.parametrize("text", ["", "{", "[]", '{"format": 1, "tables": []}', '{"format": 2, "tables": {}}'])
def test_a_missing_or_broken_pack_means_the_files_are_parsed(tmp_path: Path, monkeypatch, text: str) -> None:
    from cudalint.core import catalogue_pack
    from cudalint.core.catalogue import _load
    from cudalint.core.catalogue_source import read_sources

    _load.cache_clear()
    reference = load_catalogue()
    pack = tmp_path / "pack.json"
    if text:
        pack.write_text(text)
    monkeypatch.setattr(catalogue_pack, "pack_path", lambda: str(pack))
    catalogue_pack._tables.cache_clear()
    try:
        assert catalogue_pack.shipped(read_sources()[0][1]) is None
        _load.cache_clear()
        assert load_catalogue() == reference
    finally:
        monkeypatch.undo()
        catalogue_pack._tables.cache_clear()
        _load.cache_clear()


def test_calls_named_tries_only_the_globs_that_may_match_and_finds_what_all_of_them_find() -> None:
    """`calls_named` tries a glob whose literal head holds a dot only on names of that first part
    (`Catalogue._globs_for`); its answer is the one every glob tried on the name gives."""
    import fnmatch

    from hypothesis import given, settings, strategies as st

    from cudalint.core.catalogue import _glob_root, build, parse_catalogue_text

    assert [_glob_root(p) for p in ("*", "torch.*", "pynvml.nvml*", "pynvml*", "a.*.b", "[t]orch.*", "t?rch.x", "x.y.z*")] == [None, "torch", "pynvml", None, "a", None, None, "x"]
    text = "\n".join(
        f'[[api]]\nname = "{name}"\ninit = "none"\nevidence = "[EMP] test"\n'
        for name in ("*", "torch.*", "torch.cuda.*", "pynvml.nvml*", "pynvml*", "a.*.b", "[t]orch.x", "t?rch.y", "torch.cuda.init")
    )
    cat = build([parse_catalogue_text(text, "globs.toml")])
    parts = st.sampled_from(["torch", "t0rch", "torch.cuda", "pynvml", "pynvmlx", "nvml", "a", "b", "x", "cuda", "init", "y", ""])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(parts, min_size=1, max_size=4))
    def check(words: list) -> None:
        name = ".".join(words)
        everyone = cat.by_name.get(name, ()) + tuple(a for a in cat.globs if fnmatch.fnmatchcase(name, a.name))
        assert cat.calls_named(name) == everyone

    check()
