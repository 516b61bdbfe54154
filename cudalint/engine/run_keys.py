"""The names of a whole run's input, under which the cache keeps what that input gave.

Two names, the cheaper to know first:
- the files' bytes (`source_key`): nothing changed since an earlier run, whose findings are taken;
- the files' summaries (`summary_key`): an edit that left its file's summary as it was (a comment,
  a blank line) names the same input as before, so the earlier findings are taken without reading
  a summary or running the analysis. This is the "early cutoff" of build systems (Shake, Bazel):
  a changed input whose product is unchanged stops the rebuild there. A summary's name is the key
  of the earliest bytes known to summarize the same (cudalint.engine.cache.Cache.names);
  two summaries get one name only when their encodings are equal, so a name never stands for a
  summary it does not hold.
"""
from __future__ import annotations

from cudalint.digest import hasher
from cudalint.core.deep import call_roomy as _deep
from cudalint.core.findings import Finding

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Optional, Union
    from cudalint.core.ir import ModuleIR
    from cudalint.engine.cache import Cache
    from cudalint.engine.fileinfo import FileInfo

_NAMES = ("utf-8", "surrogateescape")


def _run_hash(kind: str, salt: str, run_salt: str) -> Any:
    return hasher(f"{kind}\0{salt}\0{run_salt}".encode(*_NAMES))


def _add_problems(h: Any, problems: Mapping[str, Finding]) -> None:
    """The CUD900 findings of files the parser refused, into the run's hash."""
    if problems:  # (a run the cache answers whole has none: the generic encoder, with typing, is 6 ms)
        from cudalint.engine.serialize import dumps

        for path in sorted(problems):
            h.update(dumps(problems[path]))


def source_key(salt: str, run_salt: str, infos: "Iterable[FileInfo]", keys: Mapping[str, str], problems: Mapping[str, Finding]) -> str:
    """Names the files' bytes. What the checks judge follows from the configuration (in `run_salt`)
    and the catalogue (in `salt`), and a run the cache answers whole need not work it out
    (cudalint.engine.indexed.reused_run)."""
    h = _run_hash("bytes", salt, run_salt)
    for info in infos:
        # the module name too: it comes from `__init__.py` files that need not be among the inputs
        h.update(f"\0{info.path}\0{info.module}\0{keys.get(info.path, '')}".encode(*_NAMES))
    _add_problems(h, problems)
    return h.hexdigest()


def summary_key(
    salt: str,
    run_salt: str,
    infos: "Iterable[FileInfo]",
    names: Mapping[str, Optional[str]],
    problems: Mapping[str, Finding],
) -> Optional[str]:
    """What the analysis reads: each file's place and the name of its summary (or of its CUD900,
    when the parser refused it); None when a summary has no name."""
    h = _run_hash("summaries", salt, run_salt)
    for info in infos:
        if info.path in problems:
            continue
        name = "-"
        if info.path in names:
            name = names[info.path]
            if name is None:
                return None
        h.update(f"\0{info.path}\0{info.module}\0{info.is_package}\0{name}".encode(*_NAMES))
    _add_problems(h, problems)
    return h.hexdigest()


def same_summary(old: Optional[Union[ModuleIR, Finding]], new: Union[ModuleIR, Finding]) -> bool:
    """Whether two summaries say the same, field for field (the encoding the cache stores: `==` on
    the IR would not do, a Label compares by its origin alone and not by its text)."""
    if old is None:
        return False
    from cudalint.engine.serialize import dumps

    try:
        return dumps(old) == dumps(new)
    except (TypeError, ValueError, RecursionError):
        return False


def summary_names(
    cache: "Cache", infos: "list[FileInfo]", results: Mapping[str, Any], before: Mapping[str, tuple[str, str, str]], keys: Mapping[str, str]
) -> "tuple[dict[str, Optional[str]], dict[str, Optional[str]]]":
    """path -> the name of its summary (cudalint.engine.run_keys), and -> the name of its lean form
    (cudalint.summary.thread_free, `LEAN`), for the files the analysis reads. A file whose bytes
    changed keeps its old names when its new summary equals the old one; its old lean name alone
    when only the old lean form is kept and equals the new one stripped."""
    names: dict[str, Optional[str]] = {}
    lean_names: dict[str, Optional[str]] = {}
    for info in infos:
        path = info.path
        if path not in keys:
            continue  # (it cannot be read)
        if not info.cached:
            names[path] = lean_names[path] = None
            continue
        if path in before and path in results:
            old_key, old_name, old_lean = before[path]
            old = _deep(cache.find, old_key)
            if old is not None:
                if same_summary(old, results[path]):
                    cache.name_summary(path, keys[path], old_name, old_lean)
            elif type(results[path]) is not Finding:
                from cudalint.summary.thread_free import strip

                old = _deep(cache.get_lean, old_key)
                if old is None:
                    cache.misses += 1
                elif same_summary(old, _deep(strip, results[path])):
                    cache.name_summary(path, keys[path], None, old_lean)
        names[path], lean_names[path] = cache.names(path)
    return names, lean_names


# a run salt's suffix naming the runs in which no module made a llama.cpp context by the lean names
# of their summaries (`summary_names`): their findings hold for every run with the same lean names
LEAN = "\0lean"
