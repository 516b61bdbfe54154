"""Load `rules/catalogue/*.toml`: what each library call does, as data.

The analyzer and the tracer both read the catalogue through `load_catalogue`; the schema is
documented in `rules/catalogue/README.md`.
"""
from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

# CatalogueError and catalogue_files live where a run that needs no catalogue can reach them cheaply
from cudalint.core.catalogue_source import CatalogueError, catalogue_files, digest_of, read_sources  # noqa: F401
from cudalint.core.catalogue_pack import file_key, shipped
from cudalint.core.record import factory, record

if TYPE_CHECKING:
    from cudalint.fspath import PathLike

INIT_LEVELS = ("driver", "context", "none", "lazy")
KINDS = ("call", "method", "import", "probe", "attribute", "env_read")
EFFECT_FIELDS = {
    "exits": bool,
    "env_write": dict,
    "env_mapping": bool,
    "forks": bool,
    "starts_process": str,
    "starts_thread": bool,
    "starts_task": bool,
    "lock": bool,
    "llama_context": bool,
    "touches_context": bool,
    "nvml_index_source": bool,
    "cuda_ordinal_sink": str,
    "sets_start_method": bool,
    "returns": str,
    "device_arg": str,
    "device_ok": list,
    # threads (CUD101/CUD102): see rules/catalogue/README.md
    "thread_target": str,
    "thread_many": bool,
    "thread_waits": bool,
    "concurrency": str,
    "endpoint": str,
    "handlers": str,
    "thread_methods": str,
    "singleton": str,
    "lock_count": str,
    "streams": str,
    "concurrent_use": str,
    "concurrent_limit": str,
    "concurrent_inputs": str,
    "reruns_script": bool,
    # CUD004/CUD005/CUD006 data flow (rules/catalogue/README.md)
    "cuda_ordinal_source": bool,
    "nvml_index_sink": str,
    "index_attribute": str,
    "index_container": str,
    "output_file": str,
    "gpu_offload": str,
    "workers": str,
    "executor": str,
    "ordinal_map": bool,
    "child_work": str,
    "child_args": str,
    "child_uses_cuda": bool,
    "spawn_seen_init": list,
    "spawn_when_env": dict,
    "env_arg": str,
    "command_arg": str,
    "shell_when": str,
    "starts_on": str,
    "start_method_arg": str,
    # environment-dependent effects (rules/catalogue/README.md): what a call or an import writes,
    # and the variables that switch an entry's `init` off or on
    "sets_env": dict,
    "unless_env": dict,
    "when_env": dict,
    # CUD008: the call answers whether or how many GPUs there are
    "gpu_presence": bool,
}
# `runtime_state` describes the call's answer, not an effect: it is no event kind, and no file needs
# judging for it
API_FIELDS = {"name", "kind", "init", "note", "evidence", "match", "unless", "library", "runtime_state"} | set(EFFECT_FIELDS)
ENV_FIELDS = {"name", "frozen_by", "also_frozen_by", "reader", "rule", "note", "evidence", "library"}


@record
class Api:
    name: str
    kind: str = "call"
    library: str = ""
    init: str | None = None
    note: str = ""
    evidence: str = ""
    # ((("0", "device"), "cuda*"), ...): argument slots and the glob their literal must match
    match: tuple[tuple[tuple[str, ...], str], ...] = ()
    unless: tuple[tuple[tuple[str, ...], str], ...] = ()
    effects: tuple[tuple[str, Any], ...] = ()
    source: str = ""
    # the call answers whether state the program sets up itself exists (a process group, CUDA's own
    # state): False in a fresh process, so what it guards does not run at import (summary/import_state)
    runtime_state: bool = False

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.effects:
            if k == key:
                return v
        return default

    @property
    def initializes(self) -> bool:
        return self.init in ("driver", "context")

    @property
    def is_glob(self) -> bool:
        return any(ch in self.name for ch in "*?[")


@record
class EnvVar:
    name: str
    frozen_by: str
    rule: str = "CUD001"
    library: str = ""
    note: str = ""
    evidence: str = ""
    source: str = ""
    also_frozen_by: tuple[str, ...] = ()  # other facts that freeze it too (pycuda.autoprimaryctx)
    reader: str = ""  # who reads it, for messages ("CuPy", "PyTorch's CUDA caching allocator")

    @property
    def frozen_keys(self) -> tuple[str, ...]:
        return (self.frozen_by,) + self.also_frozen_by


@record
class Library:
    name: str
    import_roots: tuple[str, ...]
    source: str = ""


@record(not_compared=("by_name", "globs", "methods", "imports", "env_by_name", "digest", "_named", "_glob_roots"))
class Catalogue:
    libraries: tuple[Library, ...]
    apis: tuple[Api, ...]
    env: tuple[EnvVar, ...]
    by_name: Mapping[str, tuple[Api, ...]] = factory(dict)
    globs: tuple[Api, ...] = ()
    methods: Mapping[str, tuple[Api, ...]] = factory(dict)
    imports: Mapping[str, tuple[Api, ...]] = factory(dict)
    env_by_name: Mapping[str, EnvVar] = factory(dict)
    # names the files it was made from (catalogue_source.digest_of); "" when made from text
    digest: str = ""
    _named: dict = factory(dict)  # calls_named's answers
    _glob_roots: Optional[tuple] = None  # (`_globs_for`)

    def calls_named(self, qualname: str) -> tuple[Api, ...]:
        """Entries (kind call) for a resolved qualified name, exact entries first, then globs."""
        got = self._named.get(qualname)
        if got is None:
            exact = self.by_name.get(qualname, ())
            got = exact + tuple(a for a in self._globs_for(qualname) if fnmatch.fnmatchcase(qualname, a.name)) if self.globs else exact
            if len(self._named) < 100_000:  # (the names of one run's files; bounded all the same)
                self._named[qualname] = got
        return got

    def _globs_for(self, qualname: str) -> tuple[Api, ...]:
        """The globs that may match `qualname`, in their order: one whose text before its first
        wildcard holds a dot (`torch.*`, `transformers.*.from_pretrained`) matches only names of
        that first part; the others (`*`, `pynvml*`) may match any. Every glob tried on every
        name was a fortieth of the summarizers' time (49,000 matches on lightning)."""
        if self._glob_roots is None:
            roots = [_glob_root(a.name) for a in self.globs]
            anywhere = tuple(a for a, root in zip(self.globs, roots) if root is None)
            by_root = {r: tuple(a for a, root in zip(self.globs, roots) if root is None or root == r) for r in roots if r is not None}
            object.__setattr__(self, "_glob_roots", (by_root, anywhere))
        by_root, anywhere = self._glob_roots  # type: ignore[misc]
        return by_root.get(qualname.split(".", 1)[0], anywhere)

    def library_of(self, qualname: str) -> str | None:
        root = qualname.split(".", 1)[0]
        for lib in self.libraries:
            if root in lib.import_roots:
                return lib.name
        return None

    def context_methods(self) -> dict[str, tuple[str, ...]]:
        """Class -> the methods that use its llama.cpp/ggml context (`touches_context` entries).

        The tracer wraps these to see two threads inside one instance at once (CUD101 at run time).
        """
        out: dict[str, list[str]] = {}
        for api in self.apis:
            if api.get("touches_context") and api.kind == "call" and "." in api.name:
                cls, _, method = api.name.rpartition(".")
                out.setdefault(cls, []).append(method)
        return {cls: tuple(dict.fromkeys(ms)) for cls, ms in out.items()}

    def trigger_words(self) -> frozenset[str]:
        """Identifiers whose absence from a file proves the file has no catalogue effect."""
        words: set[str] = set()
        for api in self.apis:
            if api.kind == "probe":
                continue
            last = api.name.rsplit(".", 1)[-1].lstrip(".")
            if api.kind == "import":
                last = api.name.split(".")[-1]
            if not any(ch in last for ch in "*?["):
                words.add(last)
            else:
                # a glob's last component says nothing; its last fixed component (`numpy` of
                # `jax.numpy.*`, which every import of it names) and its argument patterns do
                fixed = [p for p in api.name.split(".") if not any(ch in p for ch in "*?[")]
                if len(fixed) > 1:
                    words.add(fixed[-1])
                for slots, _ in api.match:
                    words.update(s for s in slots if not s.isdigit())
        words.update(e.name for e in self.env)
        return frozenset(w for w in words if w)


def env_fact(var: str, value: str) -> str:
    """The flow fact an environment write establishes, as `unless_env`/`when_env` name it:
    "env_set:V" for the pattern "*" (any value), else "env_value:V=L"."""
    return f"env_set:{var}" if value == "*" else f"env_value:{var}={value}"


def _slots(key: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in key.split("|") if part.strip())


def _conditions(value: Any, where: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise CatalogueError(f"{where}: expected a table of argument patterns, got {type(value).__name__}")
    out = []
    for key, pattern in value.items():
        if not isinstance(pattern, str):
            raise CatalogueError(f"{where}: pattern for {key!r} must be a string")
        out.append((_slots(key), pattern))
    return tuple(out)


def _api(raw: Mapping[str, Any], library: str, source: str, index: int) -> Api:
    where = f"{source}: [[api]] #{index + 1}"
    unknown = set(raw) - API_FIELDS
    if unknown:
        raise CatalogueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise CatalogueError(f"{where}: `name` is required and must be a string")
    where = f"{source}: [[api]] {name}"
    kind = raw.get("kind", "method" if name.startswith(".") else "call")
    if kind not in KINDS:
        raise CatalogueError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    init = raw.get("init")
    if init is not None and init not in INIT_LEVELS:
        raise CatalogueError(f"{where}: init must be one of {', '.join(INIT_LEVELS)}, not {init!r}")
    effects = []
    for key, typ in EFFECT_FIELDS.items():
        if key in raw:
            if not isinstance(raw[key], typ):
                raise CatalogueError(f"{where}: `{key}` must be {typ.__name__}")
            value = raw[key]
            if isinstance(value, dict):
                value = tuple(sorted(value.items()))
            elif isinstance(value, list):
                value = tuple(value)
            effects.append((key, value))
    runtime_state = raw.get("runtime_state", False)
    if not isinstance(runtime_state, bool):
        raise CatalogueError(f"{where}: `runtime_state` must be bool")
    return Api(
        name=name.lstrip(".") if kind in ("method", "attribute") else name,
        kind=kind,
        library=str(raw.get("library", library)),
        init=init,
        note=str(raw.get("note", "")),
        evidence=str(raw.get("evidence", "")),
        match=_conditions(raw.get("match"), where),
        unless=_conditions(raw.get("unless"), where),
        effects=tuple(effects),
        source=source,
        runtime_state=runtime_state,
    )


def _env(raw: Mapping[str, Any], library: str, source: str) -> EnvVar:
    unknown = set(raw) - ENV_FIELDS
    name = raw.get("name")
    where = f"{source}: [[env]] {name}"
    if unknown:
        raise CatalogueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if not isinstance(name, str) or not isinstance(raw.get("frozen_by"), str):
        raise CatalogueError(f"{where}: `name` and `frozen_by` are required strings")
    frozen_by = raw["frozen_by"]
    also = raw.get("also_frozen_by", [])
    if not isinstance(also, list) or not all(isinstance(k, str) for k in also):
        raise CatalogueError(f"{where}: `also_frozen_by` must be a list of strings")
    for key in [frozen_by, *also]:
        if not (key.startswith("init:") or key.startswith("import:")):
            raise CatalogueError(f"{where}: frozen_by must be init:<library|driver> or import:<module>, not {key!r}")
    return EnvVar(
        name=name,
        frozen_by=frozen_by,
        rule=str(raw.get("rule", "CUD001")),
        library=str(raw.get("library", library)),
        note=str(raw.get("note", "")),
        evidence=str(raw.get("evidence", "")),
        source=source,
        also_frozen_by=tuple(also),
        reader=str(raw.get("reader", "")),
    )


def parse_catalogue_text(text: str, source: str) -> tuple[Library, list[Api], list[EnvVar]]:
    return _from_data(_toml(text, source), source)


def _toml(text: str, source: str) -> dict:
    from cudalint.core.tomlreader import tomllib  # (a run that finds the parsed catalogue in the cache never needs it)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{source}: not valid TOML: {exc}") from None


def _from_data(data: dict, source: str) -> tuple[Library, list[Api], list[EnvVar]]:
    unknown = set(data) - {"library", "api", "env"}
    if unknown:
        raise CatalogueError(f"{source}: unknown table(s) {', '.join(sorted(unknown))}")
    lib_raw = data.get("library", {})
    name = str(lib_raw.get("name", os.path.splitext(os.path.basename(source))[0]))
    roots = lib_raw.get("import_roots", [name])
    library = Library(name=name, import_roots=tuple(roots), source=source)
    apis = [_api(raw, name, source, i) for i, raw in enumerate(data.get("api", []))]
    env = [_env(raw, name, source) for raw in data.get("env", [])]
    return library, apis, env


def build(parts: Iterable[tuple[Library, list[Api], list[EnvVar]]], digest: str = "") -> Catalogue:
    libraries: list[Library] = []
    apis: list[Api] = []
    env: list[EnvVar] = []
    for lib, lib_apis, lib_env in parts:
        libraries.append(lib)
        apis.extend(lib_apis)
        env.extend(lib_env)
    by_name: dict[str, list[Api]] = {}
    methods: dict[str, list[Api]] = {}
    imports: dict[str, list[Api]] = {}
    globs: list[Api] = []
    for api in apis:
        if api.kind == "method":
            methods.setdefault(api.name, []).append(api)
        elif api.kind == "import":
            imports.setdefault(api.name, []).append(api)
        elif api.kind == "call":
            if api.is_glob:
                globs.append(api)
            else:
                by_name.setdefault(api.name, []).append(api)
    return Catalogue(
        libraries=tuple(libraries),
        apis=tuple(apis),
        env=tuple(env),
        by_name={k: tuple(v) for k, v in by_name.items()},
        globs=tuple(globs),
        methods={k: tuple(v) for k, v in methods.items()},
        imports={k: tuple(v) for k, v in imports.items()},
        env_by_name={e.name: e for e in env},
        digest=digest,
    )


def load_catalogue(extra: Iterable[PathLike] = (), cache_dir: Optional[PathLike] = None) -> Catalogue:
    """The bundled catalogue plus the user's files (`extend-catalogue`), in that order.
    `cache_dir`: where the files' parsed TOML is kept as JSON (tomllib is pure Python: parsing the
    catalogue was a tenth of a run that the cache otherwise answers)."""
    return _load(tuple(os.fspath(p) for p in extra), os.fspath(cache_dir) if cache_dir is not None else None)


# what a cached entry of the wrong shape raises when it is made into a catalogue: a miss, not an error
_SHAPE_ERRORS = (CatalogueError, TypeError, ValueError, AttributeError, KeyError)


def _glob_root(pattern: str) -> Optional[str]:
    """The first dotted part of every name `pattern` matches, when the text before its first
    wildcard holds a dot ("torch.*": "torch"); None: it may match any name ("*", "pynvml*")."""
    literal = re.split(r"[*?[]", pattern, maxsplit=1)[0]
    return literal.split(".", 1)[0] if "." in literal else None


@lru_cache(maxsize=8)
def _load(extra: tuple[str, ...], cache_dir: Optional[str] = None) -> Catalogue:
    sources = read_sources(extra)
    digest = digest_of(sources)
    whole = _whole_cached(digest, len(sources), cache_dir)
    if whole is not None:
        try:
            return build([_from_data(parsed, path) for (path, _), parsed in zip(sources, whole)], digest)
        except _SHAPE_ERRORS:
            pass
    parts, tables = [], []
    for path, data in sources:
        parsed = shipped(data) or _parsed_cached(data, cache_dir)
        if parsed is not None:
            try:
                parts.append(_from_data(parsed, path))
                tables.append(parsed)
                continue
            except _SHAPE_ERRORS:
                pass  # a cached entry of the wrong shape is a miss: parse the file itself
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CatalogueError(f"{path}: cannot read catalogue: not UTF-8 ({exc.reason})") from None
        parsed = _toml(text, path)
        if cache_dir is not None:
            _keep(_parsed_file(data), parsed, cache_dir)
        parts.append(_from_data(parsed, path))
        tables.append(parsed)
    if cache_dir is not None:
        _keep(_whole_file(digest), tables, cache_dir)
    return build(parts, digest)


def _parsed_file(data: bytes) -> str:
    return f"catalogue/{file_key(data)}.json"


def _parsed_cached(data: bytes, cache_dir: Optional[str]) -> Optional[dict]:
    """The parsed TOML of `data`, kept by `_keep`."""
    value = _cached(_parsed_file(data), cache_dir)
    return value if isinstance(value, dict) else None


def _whole_file(digest: str) -> str:
    return f"catalogue/all-{digest}.json"


def _whole_cached(digest: str, count: int, cache_dir: Optional[str]) -> Optional[list]:
    """Every file's parsed TOML in one entry, named by all the files' paths and bytes (`digest_of`):
    one read instead of one per file (31 reads and signatures were 1.5 ms of a run with one file
    touched, one is 0.7)."""
    value = _cached(_whole_file(digest), cache_dir)
    if not isinstance(value, list) or len(value) != count or not all(isinstance(v, dict) for v in value):
        return None
    return value


def _cached(name: str, cache_dir: Optional[str]) -> Any:
    """Entry `name` as this machine's cudalint wrote it, or None (cudalint.core.cache_files: a planted
    or damaged entry is a miss)."""
    if cache_dir is None:
        return None
    from cudalint.core import cache_files

    return cache_files.read(cache_dir, name)


def _keep(name: str, value: Any, cache_dir: str) -> None:
    """Write `value` as plain JSON at `name`; a failure only costs time."""
    from cudalint.core import cache_files

    cache_files.write_json(cache_dir, name, value)  # (a TOML date has no JSON form: what holds one is parsed each time)
