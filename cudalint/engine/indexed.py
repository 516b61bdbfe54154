"""Pass 0 of a run (cudalint.engine.runner): each file's place, and what the cache's index already
knows of it, before anything is read or parsed. A run whose files the index knows unchanged may be
answered whole from here (`reused_run`), without loading the catalogue, the checks or the IR.
"""
from __future__ import annotations

import os

from cudalint.core.findings import Finding
from cudalint.core.record import record
from cudalint.core.modnames import module_name
from cudalint.engine import run_keys
from cudalint.engine.fileinfo import FileInfo

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterable, Mapping, Optional, Sequence
    from cudalint.engine.cache import Cache


@record
class Indexed:
    """Pass 0: each file's place, and the keys the cache's index gives the files whose mtime and
    size are as it recorded them (`known`); the others must be read (`todo`)."""

    infos: list[FileInfo]
    keys: dict[str, str]
    known: list[FileInfo]
    todo: list[FileInfo]


def index_files(paths: Sequence[str], cache: Optional[Cache], texts: Optional[Mapping[str, str]] = None, uncached: Iterable[str] = ()) -> Indexed:
    """Pass 0 over `paths`: `texts` are contents given instead of the files' (never looked up), and
    `uncached` files are neither read from nor written to the cache."""
    texts = texts or {}
    uncached = set(uncached)
    packages: dict[str, str] = {}
    absolute = [os.path.abspath(p) for p in paths]
    infos = [_info(p, a, texts.get(p), p not in uncached, packages) for p, a in zip(paths, absolute)]
    keys: dict[str, str] = {}
    known: list[FileInfo] = []
    todo: list[FileInfo] = []
    for info, at in zip(infos, absolute):
        key = cache.lookup(info.path, info.module, at) if cache is not None and info.text is None else None
        if key is not None:
            keys[info.path] = key
            known.append(info)
        else:
            todo.append(info)
    return Indexed(infos=infos, keys=keys, known=known, todo=todo)


def reused_run(indexed: Indexed, cache: Cache, run_salt: str) -> Optional[list[Finding]]:
    """The findings of an earlier run over these same files, when the index knows every one of
    them unchanged: the run needs no summary, no catalogue and no analysis (nor their imports)."""
    if indexed.todo:
        return None
    reused = cache.get_run(run_keys.source_key(cache.salt, run_salt, indexed.infos, indexed.keys, {}))
    if reused is not None:
        cache.save_index()
    return reused


def _info(path: str, absolute: str, text: Optional[str], cached: bool, packages: dict[str, str]) -> FileInfo:
    modname, is_package = module_name(absolute, packages)
    data = text.encode("utf-8") if text is not None else None
    return FileInfo(path=path, module=modname, is_package=is_package, text=data, cached=cached)
