"""A cache of module summaries, keyed by file content, cudalint's version and the catalogue.

Like ruff's `.ruff_cache`: unchanged files are not parsed again, and their summaries serve the
cross-module analysis and the flake8 plugin alike. Entries are plain JSON (see cudalint.engine.serialize),
signed and written atomically by cudalint.core.cache_files: the cache is untrusted input, and an entry that
is missing, planted, damaged or of the wrong shape is a miss, never a changed result.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from cudalint import __version__
from cudalint.core import cache_files
from cudalint.core.findings import Finding
from cudalint.engine.serialize import dumps, loads
from cudalint.fingerprint import code_fingerprint

if TYPE_CHECKING:  # (a run the cache answers whole imports neither: cudalint.core.catalogue_source)
    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR

CACHE_DIR_NAME = ".cudalint_cache"
_FORMAT = "2"  # 2: positional objects (cudalint.engine.serialize)


def catalogue_fingerprint(catalogue: "Catalogue") -> str:
    """The catalogue decides what a summary contains, so it is part of every key: the digest of the
    files it was made from (the same as `catalogue_source.catalogue_digest` of them), else its entries."""
    if catalogue.digest:
        return catalogue.digest
    h = hashlib.sha256()
    for api in catalogue.apis:
        h.update(repr(api).encode())
    for env in catalogue.env:
        h.update(repr(env).encode())
    return h.hexdigest()[:16]


def _index_key(path: str, absolute: Optional[str] = None) -> str:
    # summaries hold the path as it was given, so the same file named two ways has two entries
    return (absolute or os.path.abspath(path)) + "\0" + path


_SHARDS = "0123456789abcdef"  # the first digit of a key (a sha256 in hex)


def scan_digest(scan: list) -> str:
    """A scan's content, in 20 bytes (what a selection depends on)."""
    return hashlib.sha1(json.dumps(scan, sort_keys=True, separators=(",", ":")).encode(), usedforsecurity=False).hexdigest()


def _entry_shape(hit: object) -> bool:
    """An index entry as `Cache.remember` writes it: [mtime_ns, size, key, scan digest, summary name,
    module name]."""
    return (
        isinstance(hit, list)
        and len(hit) == 6
        and type(hit[0]) is int
        and type(hit[1]) is int
        and cache_files.is_key(hit[2])
        and cache_files.is_key(hit[3])
        and cache_files.is_key(hit[4])
        and isinstance(hit[5], str)
    )


def _stamp(path: Path) -> Optional[tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def default_cache_dir() -> Path:
    env = os.environ.get("CUDALINT_CACHE_DIR")
    return Path(env) if env else Path.cwd() / CACHE_DIR_NAME


@dataclass
class Cache:
    directory: Path
    salt: str  # version + catalogue fingerprint
    hits: int = 0
    misses: int = 0
    runs_reused: int = 0
    shards_read: int = 0  # scans files read from disk
    _index: Optional[dict] = field(default=None, repr=False)
    _index_dirty: bool = field(default=False, repr=False)
    _scans: Optional[dict] = field(default=None, repr=False)  # shard -> {key: scan}; None: not read
    _scans_stamps: dict = field(default_factory=dict, repr=False)  # shard -> its file's stamp when read
    _dirty_shards: set = field(default_factory=set, repr=False)

    @classmethod
    def open(cls, directory: Optional[Path], catalogue: "Catalogue") -> "Cache":
        return cls.for_digest(directory, catalogue_fingerprint(catalogue))

    @classmethod
    def for_digest(cls, directory: Optional[Path], catalogue_digest: str) -> "Cache":
        """The cache for the catalogue `catalogue_digest` names, which need not be loaded."""
        directory = directory or default_cache_dir()
        return cls(directory=directory, salt=f"{_FORMAT}:{__version__}:{code_fingerprint()}:{catalogue_digest}")

    def key(self, path: str, modname: str, data: bytes) -> str:
        return self.make_key(self.salt, path, modname, data)

    @staticmethod
    def make_key(salt: str, path: str, modname: str, data: bytes) -> str:
        h = hashlib.sha256()
        h.update(salt.encode())
        h.update(b"\0")
        h.update(path.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(modname.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    @staticmethod
    def _file(key: str) -> str:
        return f"v1/{key[:2]}/{key}.json"

    def get(self, key: str) -> Optional[Union[ModuleIR, Finding]]:
        from cudalint.core.ir import ModuleIR

        value = cache_files.read(self.directory, self._file(key), loads) if cache_files.is_key(key) else None
        if not isinstance(value, (ModuleIR, Finding)):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: Union[ModuleIR, Finding]) -> None:
        if not cache_files.is_key(key):
            return
        try:
            payload = dumps(value)
        except (RecursionError, TypeError, ValueError):
            return  # an IR nested too deeply for json: the cache is an optimization, never a failure
        cache_files.write(self.directory, self._file(key), payload)

    # ---------- the index: path -> (mtime_ns, size, key), like ruff's mtime check ---------------
    # An unchanged stat stands for unchanged bytes, so a warm run hashes nothing; a mismatch falls
    # back to reading and hashing the file. The index only names keys: entries stay content-keyed.
    # The scans (cudalint.scan.select) sit apart, keyed by content, read only by a run that cannot
    # reuse an earlier run's findings: a warm run reads a few bytes per file. They are split in 16
    # files by the key's first digit, so a run that edited one file rewrites a sixteenth of them.
    def _index_file(self, suffix: str = ".idx") -> str:
        return "index/" + hashlib.sha256(self.salt.encode()).hexdigest()[:16] + suffix

    def _read_json(self, name: str) -> dict:
        data = cache_files.read(self.directory, name)
        return data if isinstance(data, dict) else {}

    def _load_index(self) -> dict:
        if self._index is None:
            self._index = self._read_json(self._index_file())
        return self._index

    def _shard(self, shard: str) -> dict:
        """The scans whose keys start with `shard`, read on first use."""
        if self._scans is None:
            self._scans = {}
        got = self._scans.get(shard)
        if got is None:
            target = self._index_file(f".scans-{shard}")
            self._scans_stamps[shard] = _stamp(self.directory / target)
            got = self._scans[shard] = self._read_json(target)
            self.shards_read += 1
        return got

    def _entry(self, path: str, absolute: Optional[str] = None) -> Optional[list]:
        """The index's [mtime_ns, size, key, scan digest, summary name, module name] for `path`
        (`absolute`: its absolute path, when known), if it has that shape."""
        hit = self._load_index().get(_index_key(path, absolute))
        if _entry_shape(hit):
            return hit
        return None

    # A summary's name (cudalint.engine.run_keys): the key of the earliest bytes of this file whose
    # summary is known equal to the summary of the key recorded now. An edit that leaves the summary
    # as it was (a comment, a blank line at the end) keeps the name, and a run over the same names
    # reuses an earlier run's findings without reading a summary.
    def summary_name(self, path: str) -> Optional[str]:
        hit = self._entry(path)
        return hit[4] if hit is not None else None

    def previous(self, path: str) -> Optional[tuple[str, str]]:
        """(key, summary name) the index records for `path`, whatever its stamp says."""
        hit = self._entry(path)
        return (hit[2], hit[4]) if hit is not None else None

    def name_summary(self, path: str, key: str, name: str) -> None:
        """Record that the summary of `key` (the key the index has for `path`) is the one `name` names."""
        hit = self._entry(path)
        if hit is not None and hit[2] == key and cache_files.is_key(name) and hit[4] != name:
            hit[4] = name
            self._index_dirty = True

    # ---------- selections: which files a set of scans makes the prefilter choose ------------------
    # A file edited without changing what its scan says (a comment, a body without catalogued
    # calls) leaves the selection as it was: a run that finds it here reads no scan at all.
    @staticmethod
    def _selection_file(key: str) -> str:
        return f"selections/{key}.json"

    def get_selection(self, key: str) -> Optional[tuple[set[str], set[str]]]:
        """(chosen paths, paths that do not parse) recorded for `key`."""
        if not cache_files.is_key(key):
            return None
        value = self._read_json(self._selection_file(key))
        chosen, broken = value.get("chosen"), value.get("broken")
        if not isinstance(chosen, list) or not isinstance(broken, list) or not all(isinstance(p, str) for p in chosen + broken):
            return None
        return set(chosen), set(broken)

    def put_selection(self, key: str, chosen: set[str], broken: set[str]) -> None:
        self._write(self._selection_file(key), {"chosen": sorted(chosen), "broken": sorted(broken)})

    def lookup(self, path: str, modname: str) -> Optional[str]:
        """The key recorded for `path` if its mtime and size are unchanged and it was recorded under
        the module name `modname`. A key names the bytes AND the module name (`make_key`), and a file's
        stamp vouches for its bytes only: the name comes from the `__init__.py` files above it, which
        may have come or gone while the file stayed as it was (a stale key would give the summary of
        a module that no longer exists, cudalint.core.modnames.module_name)."""
        known = self.known(path, modname)
        return known[0] if known is not None else None

    def known(self, path: str, modname: str, absolute: Optional[str] = None) -> Optional[tuple[str, str]]:
        """`lookup`'s key, and the digest of the scan recorded with it (cudalint.engine.cache.scan_digest)."""
        hit = self._entry(path, absolute)
        if hit is None or hit[5] != modname:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if [st.st_mtime_ns, st.st_size] != hit[0:2]:
            return None
        return hit[2], hit[3]

    def scan_of(self, key: str) -> Optional[list]:
        """The scan recorded for content `key` (cudalint.engine.tasks._scan_raw's form), if any."""
        from cudalint.scan.scanner import SCAN_FIELDS

        hit = self._shard(key[:1]).get(key) if cache_files.is_key(key) else None
        return hit if isinstance(hit, list) and len(hit) == SCAN_FIELDS else None

    def remember(self, path: str, modname: str, stamp: tuple[int, int], key: str, scan: list) -> str:
        """Record the file's key (of its bytes under the module name `modname`) and scan; returns the
        scan's digest."""
        index = self._load_index()
        old = index.get(_index_key(path))
        if _entry_shape(old) and old[2] != key:
            self._dirty_shards.add(old[2][:1])  # where the file's old scan goes from
        digest = scan_digest(scan)
        same = _entry_shape(old) and old[2] == key
        index[_index_key(path)] = [stamp[0], stamp[1], key, digest, old[4] if same else key, modname]
        if cache_files.is_key(key):
            self._shard(key[:1])[key] = scan
            self._dirty_shards.add(key[:1])
        self._index_dirty = True
        return digest

    def save_index(self, forget_scans: bool = False) -> None:
        """Write the index and the scans changed since it was read. `forget_scans`: and let go of
        the scans held in memory (read again from disk if asked for)."""
        self._save_index()
        if forget_scans:
            self._scans = None
            self._scans_stamps.clear()

    def _save_index(self) -> None:
        if self._index_dirty:
            # another run sharing the cache may have written entries for other paths meanwhile
            mine = self._index or {}
            merged = self._read_json(self._index_file())
            merged.update(mine)
            self._index = merged
            live = {v[2] for v in merged.values() if _entry_shape(v)}
            for shard in sorted(self._dirty_shards & set(_SHARDS)):
                target = self._index_file(f".scans-{shard}")
                scans = self._shard(shard)
                if _stamp(self.directory / target) != self._scans_stamps.get(shard):
                    scans = {**self._read_json(target), **scans}  # another run wrote it meanwhile
                kept = self._scans[shard] = {k: v for k, v in scans.items() if k in live}  # type: ignore[index]  # edited files' old scans go
                self._write(target, kept)
            self._write(self._index_file(), merged)
            self._index_dirty = False
            self._dirty_shards.clear()

    # ---------- whole-run results: findings for a set of keys and a configuration -----------------
    @staticmethod
    def _run_file(key: str) -> str:
        return f"runs/{key}.run"

    def get_run(self, key: str) -> Optional[list[Finding]]:
        """The findings an earlier run with this exact input reported (decoded and checked)."""
        findings = cache_files.read(self.directory, self._run_file(key), loads) if cache_files.is_key(key) else None
        if not isinstance(findings, list) or not all(isinstance(f, Finding) for f in findings):
            return None
        self.runs_reused += 1
        return findings

    def put_run(self, key: str, findings: list[Finding]) -> None:
        if not cache_files.is_key(key):
            return
        try:
            payload = dumps(findings)
        except (RecursionError, TypeError, ValueError):
            return
        cache_files.write(self.directory, self._run_file(key), payload)

    # ---------- proven fixes (cudalint.fixes.fix_cache): plain JSON, shape-checked by the reader ----------
    def get_fixes(self, key: str) -> object:
        return cache_files.read(self.directory, f"fixes/{key}.json") if cache_files.is_key(key) else None

    def put_fixes(self, key: str, value: list) -> None:
        if cache_files.is_key(key):
            self._write(f"fixes/{key}.json", value)

    def _write(self, name: str, value: object) -> None:
        try:
            payload = json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogateescape")  # one shot: json.dump never uses the C encoder
        except (RecursionError, ValueError, TypeError):
            return  # data nested too deeply for json: the cache is an optimization, never a failure
        cache_files.write(self.directory, name, payload)
