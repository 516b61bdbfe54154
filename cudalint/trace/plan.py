"""What the child must hook, computed once in the parent from the catalogue.

The catalogue is the one list of library behaviour (the analyzer reads the same entries); this module
only selects the entries the tracer can act on and flattens them to JSON, so the child starts without
parsing TOML. Entries the tracer cannot hook are listed with the reason, for `--format json`.
"""
from __future__ import annotations

import os
import zlib

TYPE_CHECKING = False  # typing's import is start-up time the program waits for
if TYPE_CHECKING:
    from typing import Any, Sequence

    from cudalint.core.catalogue import Api, Catalogue


def _conds(conds: tuple[tuple[tuple[str, ...], str], ...]) -> list[list[Any]]:
    return [[list(slots), pattern] for slots, pattern in conds]


def build_plan(cat: Catalogue) -> dict[str, Any]:
    """{"init": [...], "touch": [...], "construct": [...], "env": [...], "frozen_imports": [...],
    "skipped": [...]}: initializing calls/probes/imports, `touches_context` methods, `llama_context`
    classes, variables read once, modules whose import freezes one, entries the tracer cannot hook."""
    init: list[dict[str, Any]] = []
    touch: list[str] = []
    construct: list[str] = []
    skipped: list[dict[str, str]] = []
    seen: set[str] = set()
    for api in cat.apis:
        if api.initializes:
            if api.kind == "method":
                # `x.cuda()` on any receiver has no single object to wrap; the probes
                # (torch.cuda._lazy_init) that every such path goes through record it instead
                skipped.append({"name": "." + api.name, "why": "method on any receiver; covered by probes"})
            elif api.is_glob:
                skipped.append({"name": api.name, "why": "glob name; no single object to wrap"})
            else:
                entry = _init_entry(api)
                key = repr(sorted(entry.items()))
                if key not in seen:
                    seen.add(key)
                    init.append(entry)
        if api.get("touches_context") and api.name not in touch:
            touch.append(api.name)
        if api.get("llama_context") and api.name not in construct:
            construct.append(api.name)
    env = [{"name": e.name, "frozen_by": e.frozen_by, "rule": e.rule, "library": e.library} for e in cat.env]
    frozen_imports = sorted({e.frozen_by.split(":", 1)[1] for e in cat.env if e.frozen_by.startswith("import:")})
    return {"init": init, "touch": touch, "construct": construct, "env": env,
            "frozen_imports": frozen_imports, "skipped": skipped}


def _init_entry(api: Api) -> dict[str, Any]:
    return {
        "name": api.name,
        "kind": api.kind,
        "init": api.init,
        "library": api.library,
        "note": api.note,
        "match": _conds(api.match),
        "unless": _conds(api.unless),
        # environment conditions (`import vllm` sets PYTORCH_NVML_BASED_CUDA_CHECK=1, after which
        # is_available() does not initialize): checked against os.environ at the call
        "unless_env": [list(p) for p in api.get("unless_env") or ()],
        "when_env": [list(p) for p in api.get("when_env") or ()],
    }


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cudalint")


_KEYS = {"init": list, "touch": list, "construct": list, "env": list, "frozen_imports": list, "skipped": list}


def load_plan(path: str) -> dict[str, Any]:
    import marshal

    with open(path, "rb") as fh:
        return marshal.load(fh)


def _valid(path: str) -> bool:
    """A cached plan is untrusted: a truncated or foreign file is a miss, recomputed."""
    try:
        data = load_plan(path)
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if not isinstance(data, dict) or any(not isinstance(data.get(k), t) for k, t in _KEYS.items()):
        return False
    return all(isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("frozen_by"), str)
               for e in data["env"]) and all(isinstance(e, dict) and isinstance(e.get("name"), str)
                                             and isinstance(e.get("kind"), str) for e in data["init"])


def cached_plan(extra: Sequence[str] = ()) -> str:
    """The path of the plan file, cached by the catalogue files' names, sizes and mtimes.

    Parsing the TOML catalogue costs ~45 ms of start-up (tomllib and the loader); with the cache the
    parent does not even read the plan before starting the program. The file is `marshal` data (a
    builtin module: the traced program imports nothing to read it), so the Python version is part
    of the key; any change to a catalogue file changes it too."""
    from cudalint import __version__
    from cudalint.core.catalogue_source import catalogue_files

    files = catalogue_files() + [os.path.abspath(p) for p in extra]
    import sys

    key = [__version__, sys.version]
    for f in files:
        try:
            st = os.stat(f)
            key.append(f"{f}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            key.append(f"{f}\0missing")
    raw = "\n".join(key).encode()
    digest = f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}"  # hashlib would cost the start-up more
    path = os.path.join(_cache_dir(), f"trace-plan-{digest}.marshal")
    if os.path.exists(path) and _valid(path):
        return path
    import marshal

    from cudalint.core.catalogue import load_catalogue

    data = build_plan(load_catalogue(tuple(extra)))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "wb") as fh:
            marshal.dump(data, fh)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the whole file or none
        return path
    except OSError:  # a read-only home: a private copy, same result
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix="cudalint-plan-", suffix=".marshal")
        with os.fdopen(fd, "wb") as fh:
            marshal.dump(data, fh)
        return tmp
