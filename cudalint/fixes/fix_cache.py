"""The proven fixes of a run, kept in the cache beside its findings.

Proving a fix means planning it over the project's summaries and linting the project again with it
applied (cudalint.fixes.apply): on DeepSpeed one CUD004 finding cost a warm `--format json` run 1.7 s
of its 1.9 s. The proofs depend on the findings, the configuration and the bytes of the files, which
the cache's index names: when each file's key is known, the fixes an earlier run proved are taken.
An entry of the wrong shape is a miss (the cache is untrusted input, cudalint.core.cache_files).
"""
from __future__ import annotations

import json
import os

from cudalint.core.findings import Finding
from cudalint.digest import hasher
from cudalint.inputs import source
from cudalint.core.modnames import module_name
from cudalint.fixes.fixinfo import Edit, FixInfo, fixes_for

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Mapping, Optional, Sequence


def cached_fixes(findings: Sequence[Finding], files: Sequence[str], config, texts: Optional[Mapping[str, str]] = None, cache=None) -> dict[tuple, FixInfo]:
    """`fixes_for`, from the cache when the same input was proven before."""
    name = _key(findings, files, config, cache) if cache is not None and not texts else None
    if name is not None:
        got = _decode(cache.get_fixes(name))
        if got is not None:
            return got
    fixes = fixes_for(findings, files, config, dict(texts or {}), cache=cache)
    if name is not None:
        cache.put_fixes(name, [[*k, f.message, f.applicability, [[e.content, e.row, e.column, e.end_row, e.end_column] for e in f.edits]] for k, f in fixes.items()])
    return fixes


def _key(findings: Sequence[Finding], files: Sequence[str], config, cache) -> Optional[str]:
    h = hasher(f"fixes\0{cache.salt}\0{config!r}".encode("utf-8", "surrogateescape"))
    for f in findings:
        h.update(json.dumps(f.to_json(), sort_keys=True).encode("utf-8", "surrogateescape"))
    packages: dict[str, str] = {}
    for path in files:
        module = module_name(os.path.abspath(path), packages)[0]
        key = cache.lookup(path, module)
        if key is None:  # not in the index (a notebook, a file that changed since): its bytes' key
            data = source.read_bytes(path)
            if isinstance(data, Finding):
                return None  # unreadable, or not a file to read: prove again
            key = cache.key(path, module, data)
        h.update(f"\0{path}\0{key}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _decode(value: Any) -> Optional[dict[tuple, FixInfo]]:
    if not isinstance(value, list):
        return None
    out: dict[tuple, FixInfo] = {}
    for row in value:
        if not (isinstance(row, list) and len(row) == 7 and isinstance(row[0], str) and type(row[1]) is int and type(row[2]) is int):
            return None
        path, line, column, code, message, applicability, edits = row
        if not (isinstance(code, str) and isinstance(message, str) and isinstance(applicability, str) and isinstance(edits, list)):
            return None
        made = []
        for e in edits:
            if not (isinstance(e, list) and len(e) == 5 and isinstance(e[0], str) and all(type(x) is int for x in e[1:])):
                return None
            made.append(Edit(*e))
        out[(path, line, column, code)] = FixInfo(message, tuple(made), applicability)
    return out
